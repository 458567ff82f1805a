import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// A migration of several stores interrupted between the stores' commits is finished by the next
/// open (even with migration turned off), or refused with a clear reason under another model.
@Suite struct InterruptedMigrationTests {
    static func model(_ version: String, extra: Bool) throws -> ObjectModel {
        let field = extra ? #", {"name": "added", "type": "string", "default": "new"}"# : ""
        return try ObjectModel.load(
            json: Array(
                """
                {"name": "Pair", "version": "\(version)", "entities": [
                  {"name": "Left", "attributes": [{"name": "name", "type": "string"}\(field)]},
                  {"name": "Right", "attributes": [{"name": "name", "type": "string"}\(field)]}
                ], "configurations": [{"name": "L", "entities": ["Left"]}, {"name": "R", "entities": ["Right"]}]}
                """.utf8))
    }

    static func descriptions(_ folder: TemporaryDirectory, migrate: Bool) -> [StoreDescription] {
        ["L", "R"].map { (name: String) in
            StoreDescription(
                type: .sqlite, configuration: name, url: folder.file("\(name).sqlite"),
                options: StoreOptions(migrate: migrate))
        }
    }

    static func close(_ coordinator: StoreCoordinator) {
        for store in coordinator.stores { coordinator.remove(store) }
    }

    @Test func aMigrationStoppedBetweenTheStoresIsFinishedOnTheNextOpen() throws {
        let folder = TemporaryDirectory()
        let v1 = try Self.model("1", extra: false)
        let v2 = try Self.model("2", extra: true)
        do {
            let coordinator = StoreCoordinator(model: v1)
            try coordinator.addStores(Self.descriptions(folder, migrate: false))
            let root = ObjectContext(coordinator: coordinator)
            try root.insert("Left", values: ["name": .string("l")])
            try root.insert("Right", values: ["name": .string("r")])
            try root.save()
            Self.close(coordinator)
        }
        // The migration to v2 stops after the first store committed.
        do {
            let coordinator = StoreCoordinator(model: v2)
            coordinator.crashPoints.stop.withLock { $0 = { $0 == .betweenMigrationCommits } }
            #expect(throws: StoreError.self) { try coordinator.addStores(Self.descriptions(folder, migrate: true)) }
            Self.close(coordinator)
        }
        let states = try Self.descriptions(folder, migrate: false).map {
            try #require(try SQLiteStoreKind().storedState(of: $0))
        }
        let migrated = states.filter { $0.metadata.modelVersion == "2" }
        #expect(migrated.count == 1, "one store migrated, one not")
        #expect(migrated.first?.migrationRecord != nil, "the first store keeps the record")
        // Opening with the old model says what happened instead of "different model".
        do {
            try StoreCoordinator(model: v1).addStores(Self.descriptions(folder, migrate: false))
            Issue.record("the old model opened a half-migrated pair")
        } catch {
            #expect(error.code == .incompatibleModel)
            #expect(error.message.contains("interrupted"), "\(error.message)")
        }
        // Opening with v2, even with migration off, finishes it.
        let coordinator = StoreCoordinator(model: v2)
        try coordinator.addStores(Self.descriptions(folder, migrate: false))
        for entity in ["Left", "Right"] {
            let rows = try coordinator.fetch(FetchRequest(entityName: entity))
            #expect(rows.count == 1)
            #expect(rows.first?[attribute: "added"] == .string("new"))
        }
        Self.close(coordinator)
        let after = try Self.descriptions(folder, migrate: false).map {
            try #require(try SQLiteStoreKind().storedState(of: $0))
        }
        #expect(after.allSatisfy { $0.metadata.modelVersion == "2" && $0.migrationRecord == nil })
    }
}
