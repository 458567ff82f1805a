import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// A store opened with a model bundle migrates as Core Data's automatic lightweight migration
/// does: one inferred step from the store's version to the model, whatever the versions between
/// change (a bundle's versions have no order of their own either: real bundles name them
/// `Model_v9`, `Model_course_info_v18`, `Model 2`). Mapping models add their own steps, with
/// inferred steps between them.
@Suite struct BundleOrderMigrationTests {
    static func item(_ attributes: [String]) -> XcodeEntity {
        XcodeEntity("Item", attributes: attributes.map { XcodeAttribute($0, "String", optional: true) })
    }

    /// Writes a store with `version` of the bundle holding `versions`, one object with every
    /// attribute set; then opens it with the bundle's current version.
    static func migrate(
        from version: String, versions: [XcodeModelVersion], current: String, in folder: TemporaryDirectory
    ) throws -> AttributeValues {
        let bundle = try XcodeModelWriter.writeBundle(
            named: "Shop", versions: versions, current: current, in: folder.url)
        let history = try ObjectModel.loadCoreDataModelVersions(at: bundle)
        let old = try ObjectModel.load(contentsOf: bundle.appendingPathComponent("\(version).xcdatamodel"))
        let url = folder.file("shop.sqlite")
        let writer = StoreCoordinator(model: old)
        let store = try writer.addStore(type: .sqlite, url: url, options: StoreOptions(durability: .normal))
        let names = old.attributes(of: "Item").map(\.name)
        let values = Dictionary(uniqueKeysWithValues: names.map { ($0, AttributeValue.string("\($0) value")) })
        _ = try writer.save(SaveRequest(inserts: [StoreRow(id: .temporary(entity: "Item"), attributes: values)]))
        writer.remove(store)

        let model = try ObjectModel.load(contentsOf: bundle)
        let reader = StoreCoordinator(model: model)
        let opened = try reader.addStore(
            type: .sqlite, url: url,
            options: StoreOptions(durability: .normal, migrate: true, modelHistory: history))
        defer { reader.remove(opened) }
        let rows = try reader.fetch(FetchRequest(entityName: "Item"))
        let first = try #require(rows.first)
        return first.attributes
    }

    @Test func aVersionSortedBetweenTheStoresAndTheModelsDropsNothingBothHave() throws {
        // By name: Model_a_v2, Model_b_v1, Model_c_v3. Stepping through them in that order would
        // go v2 → v1 (dropping `note`) → v3 (adding it back, empty).
        let versions = [
            XcodeModelVersion("Model_a_v2", identifier: "2", entities: [Self.item(["title", "note"])]),
            XcodeModelVersion("Model_b_v1", identifier: "1", entities: [Self.item(["title"])]),
            XcodeModelVersion("Model_c_v3", identifier: "3", entities: [Self.item(["title", "note", "rank"])]),
        ]
        let folder = TemporaryDirectory()
        let values = try Self.migrate(from: "Model_a_v2", versions: versions, current: "Model_c_v3", in: folder)
        #expect(values["note"] == .string("note value"))
        #expect(values["title"] == .string("title value"))
        #expect(values["rank"] == nil || values["rank"] == .null)
    }

    @Test func aStoreVersionSortedAfterTheModelsIsMigratedNotRefused() throws {
        // By name the current version comes first: the store's version is not newer for that.
        let versions = [
            XcodeModelVersion("Model_a_current", identifier: "3", entities: [Self.item(["title", "note", "rank"])]),
            XcodeModelVersion("Model_z_v2", identifier: "2", entities: [Self.item(["title", "note"])]),
        ]
        let folder = TemporaryDirectory()
        let values = try Self.migrate(from: "Model_z_v2", versions: versions, current: "Model_a_current", in: folder)
        #expect(values["note"] == .string("note value"))
    }

    @Test func aChangeOfAVersionBetweenThatTheModelUndoesIsNotNeeded() throws {
        // Version 2 changes `note` to a date, which no inferred mapping converts; version 3 removes
        // it. The one step from version 1 to 3 drops it and keeps the rest.
        let versions = [
            XcodeModelVersion("Model", identifier: "1", entities: [Self.item(["title", "note"])]),
            XcodeModelVersion(
                "Model 2", identifier: "2",
                entities: [
                    XcodeEntity(
                        "Item",
                        attributes: [
                            XcodeAttribute("title", "String", optional: true),
                            XcodeAttribute("note", "Date", optional: true),
                        ])
                ]),
            XcodeModelVersion("Model 3", identifier: "3", entities: [Self.item(["title", "rank"])]),
        ]
        let folder = TemporaryDirectory()
        let values = try Self.migrate(from: "Model", versions: versions, current: "Model 3", in: folder)
        #expect(values["title"] == .string("title value"))
        #expect(values["note"] == nil)
        let history = try ObjectModel.loadCoreDataModelVersions(at: folder.file("Shop.xcdatamodeld"))
        let plan = MigrationPlanner.plan(
            storedHashes: MigrationPlanner.hashes(of: history[0], configuration: nil)!, storedVersion: "1",
            recorded: nil, configuration: nil, model: history[2], history: history, url: nil)
        #expect(plan.steps.map { "\($0.fromVersion ?? "?")→\($0.toVersion ?? "?")" } == ["1→3"])
        #expect(plan.isPossible)
    }

    @Test func mappingModelsMakeTheirStepsWithInferredStepsBetween() throws {
        let folder = TemporaryDirectory()
        let bundle = try NotebookMappingFixture.write(in: folder.url)
        let history = try ObjectModel.loadCoreDataModelVersions(at: bundle)
        let mappings = try MappingModel.discover(near: bundle).map { try MappingModel.load(contentsOf: $0) }
        let hashes = { (model: ObjectModel) in MigrationPlanner.hashes(of: model, configuration: nil)! }
        func steps(from start: Int, to end: Int) -> [String] {
            MigrationPlanner.plan(
                storedHashes: hashes(history[start]), storedVersion: history[start].version, recorded: nil,
                configuration: nil, model: history[end], history: history, url: nil
            ).using(mappings).steps.map {
                "\($0.fromVersion ?? "?")→\($0.toVersion ?? "?")\($0.mappingModel.map { " (\($0.name))" } ?? "")"
            }
        }
        // Notes (1) → Notes 2 mapped, Notes 2 → Notes 3 inferred, Notes 3 → Notes 4 mapped.
        #expect(steps(from: 0, to: 3) == ["1→2 (Notes-Notes 2)", "2→3", "3→4 (Notes 3-Notes 4)"])
        #expect(steps(from: 1, to: 3) == ["2→3", "3→4 (Notes 3-Notes 4)"])
        #expect(steps(from: 0, to: 2) == ["1→2 (Notes-Notes 2)", "2→3"])
        #expect(steps(from: 2, to: 3) == ["3→4 (Notes 3-Notes 4)"])
        #expect(steps(from: 1, to: 2) == ["2→3"])
    }
}
