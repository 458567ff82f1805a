import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// An import of a Core Data store runs the mapping models of its migration steps: the WAL store
/// `scripts/coredata-fixtures.py` writes with version `Zoo` (see ``CoreDataImportTests``),
/// imported as `Zoo 2` through a `Zoo-Zoo 2` mapping model written as Xcode writes them
/// (``XcodeMappingWriter``) instead of the inferred step.
@Suite(.serialized) struct MappingImportTests {
    /// The `Zoo` → `Zoo 2` mapping: every concrete entity to itself, Keeper.fullName from
    /// `$source.name`, and Visit.rating the constant 5 (where the inferred step gives the default, 3).
    static let zooToZoo2 = XcodeMappingModel(
        bundle: "Zoo.xcdatamodeld", from: "Zoo", to: "Zoo 2",
        entityMappings: [
            XcodeEntityMapping(
                "Cat", to: "Cat",
                attributes: ["ageWeeks", "born", "indoor", "name", "photo", "tag", "toy", "traits", "weight"].map {
                    .named($0)
                },
                relationships: ["enclosure", "friendOf", "friends", "keepers"].map { .named($0) }),
            XcodeEntityMapping(
                "Dog", to: "Dog",
                attributes: ["born", "lives", "name", "photo", "tag", "toy", "traits", "weight"].map { .named($0) },
                relationships: ["enclosure", "friendOf", "friends", "keepers"].map { .named($0) }),
            XcodeEntityMapping(
                "Puppy", to: "Puppy",
                attributes: ["ageWeeks", "born", "lives", "name", "photo", "tag", "toy", "traits", "weight"].map {
                    .named($0)
                },
                relationships: ["enclosure", "friendOf", "friends", "keepers"].map { .named($0) }),
            XcodeEntityMapping(
                "Enclosure", to: "Enclosure",
                attributes: ["area", "capacity", "label", "opened", "site"].map { .named($0) },
                relationships: [.named("residents")]),
            XcodeEntityMapping(
                "Keeper", to: "Keeper",
                attributes: [.value("fullName", .keyPath("source", "name")), .named("shifts")],
                relationships: [.named("animals"), .named("favourite")]),
            XcodeEntityMapping(
                "Visit", to: "Visit", attributes: [.named("note"), .value("rating", .constant(.integer(5)))]),
        ])

    @Test func anImportRunsTheMappingModelsOfItsSteps() throws {
        let folder = TemporaryDirectory()
        let expected = try CoreDataImportTests.fixtures(in: folder)
        let source = folder.file("zoo-v1-wal.sqlite")
        let before = try CoreDataImportTests.digest(source)
        let mapping = try MappingModel.load(
            contentsOf: try XcodeMappingWriter.write(Self.zooToZoo2, named: "Zoo-Zoo 2", in: folder.url))
        let model = try ObjectModel.load(contentsOf: CoreDataImportTests.zoo)
        let versions = try ObjectModel.loadCoreDataModelVersions(at: CoreDataImportTests.zoo)
        let targets = ["Park": folder.file("out/park.sqlite"), "Log": folder.file("out/log.sqlite")]
        let report = try CoreDataImporter.importStore(
            at: source, model: model, versions: versions, targets: targets,
            options: CoreDataImportOptions(chunkSize: 4, mappingModels: [mapping]))
        #expect(report.outcome == .imported && report.sourceVersion == "Zoo" && report.targetVersion == "Zoo 2")
        #expect(try CoreDataImportTests.digest(source) == before)

        let stores = targets.map { StoreDescription(type: .sqlite, configuration: $0.key, url: $0.value) }
        let container = try PersistentContainer(model: model, stores: stores)
        let written = try #require(expected["zoo-v1-wal.sqlite"]?.objectValue?["objects"]?.objectValue)
        var objects: [String: JSONValue] = [:]
        // The ordered many-to-many relationships, compared on their own below.
        var ordered: [(entity: String, pk: Int64, key: String, want: [Int64])] = []
        for (entity, items) in written {
            objects[entity] = .array(
                (items.arrayValue ?? []).map { item in
                    var members = item.objectValue ?? [:]
                    // A mapping step makes new destination objects, as Core Data's does: each
                    // starts at version 1.
                    members["_version"] = .integer(1)
                    if entity == "Keeper" { members["fullName"] = members.removeValue(forKey: "name") }
                    // The mapping's constant, not version 2's default (3).
                    if entity == "Visit" { members["rating"] = .integer(5) }
                    for key in ["animals", "friends", "friendOf"] {
                        guard let value = members.removeValue(forKey: key), case .integer(let pk)? = members["_id"]
                        else { continue }
                        let want = (value.arrayValue ?? []).compactMap { $0.doubleValue.map { Int64($0) } }
                        ordered.append((entity, pk, key, want))
                    }
                    return .object(members)
                })
        }
        try CoreDataImportTests.expectObjects(objects, in: container)
        #expect(ordered.count == 4 + 21 * 2)
        var got: [String: [Int64]] = [:]
        for (entity, pk, key, want) in ordered {
            let id = try #require(container.coordinator.objectID(of: entity, primaryKey: pk))
            let related = try container.viewContext.object(with: id).objectIDs(forKey: key).compactMap(\.primaryKey)
            #expect(Set(related) == Set(want), "\(entity) \(pk).\(key): \(related)")
            got["\(entity) \(pk).\(key)"] = related
        }
        // Each ordered side keeps its own order, whichever side's entity mapping linked a pair
        // first.
        for (entity, pk, key, want) in ordered {
            #expect(got["\(entity) \(pk).\(key)"] == want, "\(entity) \(pk).\(key)")
        }
    }
}
