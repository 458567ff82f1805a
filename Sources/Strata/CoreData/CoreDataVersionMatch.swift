import Foundation

/// Which version of a model wrote a Core Data store, and why that one.
public struct CoreDataVersionMatch: Sendable {
    /// The version (its ``ObjectModel/name`` is the version's name, `Model 2` say).
    public var model: ObjectModel
    /// Why it was chosen, in a sentence.
    public var reason: String
}

extension CoreDataStoreFile {
    /// Entity names whose hash differs from `model`'s, or that only one side has.
    public func hashDifferences(from model: ObjectModel) -> [String] {
        let computed = model.coreDataVersionHashes
        return Set(computed.keys).union(versionHashes.keys).filter { computed[$0] != versionHashes[$0] }.sorted()
    }

    /// The version of `versions` (the versions of an `.xcdatamodeld`, or one model) that wrote
    /// the store: the one whose Core Data entity version hashes are the store's
    /// `NSStoreModelVersionHashes`; when several have the same hashes, the one whose version
    /// identifier the store recorded (`NSStoreModelVersionIdentifiers`). A store of one
    /// configuration matches a version holding its entities with the same hashes.
    /// - Parameters:
    ///   - versions: the candidate versions, as loaded from an `.xcdatamodeld`.
    ///   - chosen: a version name that overrides the comparison.
    /// - Throws: `.incompatibleModel` when no version matches or several do, naming them.
    public func identifyVersion(among versions: [ObjectModel], chosen: String? = nil) throws(StoreError)
        -> CoreDataVersionMatch
    {
        let names = versions.map(\.name).joined(separator: ", ")
        if let chosen {
            guard let model = versions.first(where: { $0.name == chosen || $0.version == chosen }) else {
                throw StoreError(
                    .incompatibleModel, "the model has no version '\(chosen)' (it has: \(names))", storeURL: url)
            }
            let differences = hashDifferences(from: model)
            return CoreDataVersionMatch(
                model: model,
                reason: "chosen with --source-version"
                    + (differences.isEmpty
                        ? " (its hashes are the store's)"
                        : "; its hashes differ from the store's for \(differences.joined(separator: ", "))"))
        }
        let exact = versions.filter { hashDifferences(from: $0).isEmpty }
        let partial = versions.filter { model in
            let computed = model.coreDataVersionHashes
            return !versionHashes.isEmpty && versionHashes.allSatisfy { computed[$0.key] == $0.value }
        }
        let candidates = exact.isEmpty ? partial : exact
        let what = exact.isEmpty ? "holds the store's entities with the same hashes" : "has the store's entity hashes"
        if candidates.count == 1 {
            return CoreDataVersionMatch(model: candidates[0], reason: "the only version that \(what)")
        }
        if candidates.count > 1 {
            let recorded = Set(versionIdentifiers)
            let byIdentifier = candidates.filter { recorded.contains($0.version ?? "") }
            if byIdentifier.count == 1 {
                return CoreDataVersionMatch(
                    model: byIdentifier[0],
                    reason:
                        "\(candidates.map(\.name).joined(separator: ", ")) have the store's entity hashes; the store records version identifier '\(byIdentifier[0].version ?? "")'"
                )
            }
            throw StoreError(
                .incompatibleModel,
                "versions \(candidates.map(\.name).joined(separator: ", ")) all match the store (the same entity hashes"
                    + (versionIdentifiers.isEmpty
                        ? ")" : " and no version identifier tells them apart: the store records \(versionIdentifiers))")
                    + "; choose one with --source-version", storeURL: url)
        }
        let closest = versions.min { hashDifferences(from: $0).count < hashDifferences(from: $1).count }
        throw StoreError(
            .incompatibleModel,
            "no version of the model (\(names)) wrote this store"
                + (closest.map {
                    "; the closest, \($0.name), differs for \(hashDifferences(from: $0).joined(separator: ", "))"
                } ?? "")
                + "; give the .xcdatamodeld with every version, or choose one with --source-version",
            storeURL: url)
    }
}
