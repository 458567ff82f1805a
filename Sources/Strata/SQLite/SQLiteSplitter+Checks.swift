import Foundation

/// What a split checks before it writes anything: its arguments, its source, and where every
/// entity's objects go.
extension SQLiteSplitter {
    /// Checks that `targets` names a distinct file for every configuration of `model` and nothing
    /// else, that `options` skips only targets and copies in positive chunks.
    /// - Returns: the model's configurations, in its order.
    static func checkTargets(
        _ targets: [String: URL], of model: ObjectModel, source: URL, options: SplitOptions
    ) throws(StoreError) -> [String] {
        let configurations = model.configurations.map(\.name)
        guard !configurations.isEmpty else {
            throw StoreError(
                .invalidRequest, "the model declares no configurations; there is nothing to split into",
                storeURL: source)
        }
        let unknown = targets.keys.filter { !configurations.contains($0) }.sorted()
        guard unknown.isEmpty else {
            throw StoreError(
                .unknownConfiguration,
                "the model has no configuration \(unknown.map { "'\($0)'" }.joined(separator: ", ")) (it has: \(configurations.joined(separator: ", ")))"
            )
        }
        let missing = configurations.filter { targets[$0] == nil }
        guard missing.isEmpty else {
            throw StoreError(
                .invalidRequest,
                "every configuration needs a target store; missing: \(missing.joined(separator: ", ")) (skip one with --skip, which still needs its path)"
            )
        }
        let unknownSkips = options.skip.filter { targets[$0] == nil }.sorted()
        guard unknownSkips.isEmpty else {
            throw StoreError(.invalidRequest, "cannot skip \(unknownSkips.joined(separator: ", ")): no such target")
        }
        guard options.chunkSize > 0 else { throw StoreError(.invalidRequest, "the chunk size must be positive") }
        var seen: [String: String] = [canonical(source): "the source"]
        for configuration in configurations {
            let path = canonical(targets[configuration]!)
            if let other = seen[path] {
                throw StoreError(
                    .duplicateStore,
                    "\(targets[configuration]!.path) is both \(other) and the target of '\(configuration)'; every store needs its own file",
                    storeURL: targets[configuration])
            }
            seen[path] = "the target of '\(configuration)'"
        }
        return configurations
    }

    /// Checks that the source is a Default store (every configuration in one file) written with
    /// `model`.
    /// - Returns: the source's store UUID.
    static func checkSource(_ file: SQLiteConnection, at source: URL, model: ObjectModel) throws(StoreError) -> String {
        guard let values = SQLiteStore.metadataValues(in: file) else {
            throw StoreError(.incompatibleModel, "the source is not a Strata store", storeURL: source)
        }
        let metadata = try SQLiteStore.metadata(from: values, url: source)
        if let configuration = metadata.configuration {
            throw StoreError(
                .invalidRequest,
                "the store is already split: it holds only configuration '\(configuration)'; there is nothing to split",
                storeURL: source)
        }
        let modelHashes = model.entityVersionHashes
        guard metadata.entityHashes == modelHashes else {
            throw StoreError(
                .incompatibleModel,
                SQLiteStore.describeDifferences(stored: metadata.entityHashes, model: modelHashes)
                    + "; split it with the model it was written with (or migrate a copy of it first)",
                storeURL: source)
        }
        return metadata.identifier
    }

    /// Checks that every entity with objects goes to exactly one store: not to several written
    /// configurations (the split could not tell which), and not to none (its objects would be lost).
    static func checkEveryEntityHasOneStore(
        model: ObjectModel, source: SQLiteConnection, sourceSchema: SQLiteSchema, options: SplitOptions
    ) throws(StoreError) {
        for entity in model.entityNames {
            let holders = model.configurations(containing: entity)
            let written = holders.filter { !options.skip.contains($0) }
            if written.count > 1 {
                throw StoreError(
                    .invalidRequest,
                    "entity '\(entity)' belongs to configurations \(written.joined(separator: ", ")); a split cannot tell which store its objects go to (skip all but one)",
                    entity: entity)
            }
            if holders.isEmpty, let table = sourceSchema.table(for: entity) {
                let rows = sqliteCount(
                    source, "SELECT count(*) FROM \(quote(table.name)) WHERE \"_entity\" = ?", [.text(entity)])
                if rows > 0 {
                    throw StoreError(
                        .invalidRequest,
                        "entity '\(entity)' belongs to no configuration; its \(rows) objects would be lost",
                        entity: entity)
                }
            }
        }
    }
}
