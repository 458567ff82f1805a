import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// A model bundle's versions have no order of their own: real bundles name them `Model_v9`,
/// `Model_course_info_v18`, `Model 2`, and sorting names put a shipping app's versions out of
/// order. A store opened with the bundle keeps every value the store's version and the model
/// share, as Core Data's one inferred step keeps them.
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
}
