import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Lightweight migrations Core Data infers that change how values and links are held: a Boolean
/// becoming a number and a number a Boolean; on SQLite files and PostgreSQL stores alike.
@Suite struct InferredShapeMigrationTests {
    static var stores: [StoreUnderTest] { InferredMigrationTests.stores }

    static func open(_ kind: StoreUnderTest, _ url: URL, _ model: ObjectModel, migrate: Bool) throws(StoreError)
        -> any PersistentStore
    {
        try InferredMigrationTests.open(kind, url, model, migrate: migrate)
    }

    static func url(_ kind: StoreUnderTest, _ folder: TemporaryDirectory, _ name: String) throws -> URL {
        kind == .sqlite ? folder.file("\(name).sqlite") : try folder.postgreSQLURL(name: name)
    }

    /// A model with one entity, `Flag`, of `attributes` (JSON objects).
    static func flags(_ version: String, _ attributes: String) throws -> ObjectModel {
        try ObjectModel.load(
            json: Array(
                #"{"name": "Flags", "version": "\#(version)", "entities": [{"name": "Flag", "attributes": [\#(attributes)]}]}"#
                    .utf8))
    }

    // MARK: Booleans and numbers

    @Test(arguments: stores)
    func booleansBecomeNumbersAndNumbersBooleans(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let url = try Self.url(kind, folder, "flags")
        let v1 = try Self.flags(
            "1",
            #"""
            {"name": "silenced", "type": "boolean"}, {"name": "level", "type": "integer32"},
            {"name": "ratio", "type": "double"}, {"name": "amount", "type": "decimal"}
            """#)
        let values: [AttributeValues] = [
            ["silenced": .boolean(true), "level": .integer(0), "ratio": .double(0), "amount": .decimal(0)],
            [
                "silenced": .boolean(false), "level": .integer(5), "ratio": .double(0.5),
                "amount": .decimal(Decimal(string: "2.5")!),
            ],
            ["silenced": .null, "level": .integer(-3), "ratio": .null, "amount": .null],
        ]
        var ids: [ObjectID] = []
        do {
            let store = try Self.open(kind, url, v1, migrate: false)
            defer { store.close() }
            ids = try store.newObjectIDs(entity: "Flag", count: values.count)
            try store.save(StoreChanges(inserts: zip(ids, values).map { StoreRow(id: $0, attributes: $1) }))
        }
        // Wire's `isSilenced` (Boolean) became `mutedStatus` (Integer 32).
        let v2 = try Self.flags(
            "2",
            #"""
            {"name": "mutedStatus", "renamedFrom": "silenced", "type": "integer32"}, {"name": "level", "type": "boolean"},
            {"name": "ratio", "type": "boolean"}, {"name": "amount", "type": "boolean"}
            """#)
        do {
            let store = try Self.open(kind, url, v2, migrate: true)
            defer { store.close() }
            #expect(store.metadata.modelVersion == "2")
            let found = try rows(store, "Flag")
            let column = { (name: String) in ids.map { found[$0.primaryKey!]?[attribute: name] } }
            #expect(column("mutedStatus") == [.integer(1), .integer(0), .null])
            #expect(column("level") == [.boolean(false), .boolean(true), .boolean(true)])
            #expect(column("ratio") == [.boolean(false), .boolean(true), .null])
            #expect(column("amount") == [.boolean(false), .boolean(true), .null])
        }
        // And back: a Boolean becomes 1 or 0 of any numeric type.
        let v3 = try Self.flags(
            "3",
            #"""
            {"name": "mutedStatus", "type": "boolean"}, {"name": "level", "type": "double"},
            {"name": "ratio", "type": "decimal"}, {"name": "amount", "type": "integer16"}
            """#)
        let again = try Self.open(kind, url, v3, migrate: true)
        defer { again.close() }
        let back = try rows(again, "Flag")
        let value = { (name: String) in ids.map { back[$0.primaryKey!]?[attribute: name] } }
        #expect(value("mutedStatus") == [.boolean(true), .boolean(false), .null])
        #expect(value("level") == [.double(0), .double(1), .double(1)])
        #expect(value("ratio") == [.decimal(0), .decimal(1), .null])
        #expect(value("amount") == [.integer(0), .integer(1), .null])
    }
}
