import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Lightweight migration of PostgreSQL stores: the plans SQLite stores run, in one transaction
/// under an advisory lock.
@Suite(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct PostgreSQLMigrationTests {
    /// Version 1's objects in a new PostgreSQL store at `url`: three customers, four orders, two
    /// legacy objects.
    static func seed(_ url: URL) throws -> (customers: [Int64], orders: [Int64]) {
        let store = try PostgreSQLStore(model: try Shop.v1, configuration: "Main", url: url)
        defer { store.close() }
        return try Shop.seed(into: store)
    }

    /// Version 2: `Customer.name` renamed `fullName`, `notes` dropped, a required `status` with a
    /// default and a many-to-many `favorites` added; `Order` renamed `Purchase`; `Legacy` removed;
    /// a new `Coupon`; a uniqueness constraint on `Purchase.code`.
    static var v2: ObjectModel {
        get throws {
            let customer = #"""
                {"name": "Customer",
                 "attributes": [{"name": "fullName", "type": "string", "renamedFrom": "name"}, {"name": "age", "type": "integer32"},
                                {"name": "status", "type": "string", "optional": false, "default": "active"}],
                 "relationships": [{"name": "orders", "destination": "Purchase", "toMany": true, "inverse": "customer"},
                                   {"name": "favorites", "destination": "Purchase", "toMany": true, "inverse": "fans"}]}
                """#
            let purchase = #"""
                {"name": "Purchase", "renamedFrom": "Order", "attributes": [{"name": "total", "type": "double"}, {"name": "code", "type": "string"}],
                 "relationships": [{"name": "customer", "destination": "Customer", "inverse": "orders"},
                                   {"name": "fans", "destination": "Customer", "toMany": true, "inverse": "favorites"}],
                 "uniqueness": [["code"]]}
                """#
            let coupon = #"{"name": "Coupon", "attributes": [{"name": "percent", "type": "integer32"}]}"#
            return try Shop.model(
                "2", [customer, purchase, coupon, Shop.event], main: ["Customer", "Purchase", "Coupon"])
        }
    }

    @Test func objectsKeepTheirKeysValuesAndLinksThroughAMigration() throws {
        let folder = TemporaryDirectory()
        let url = try folder.postgreSQLURL(name: "main")
        let (customers, orders) = try Self.seed(url)
        let v2 = try Self.v2
        let inspection = try StoreType.postgresql.kind.inspect(url, model: v2, history: [])
        #expect(inspection.plan?.isPossible == true)
        let kinds = Set(inspection.plan?.changes.map(\.kind) ?? [])
        #expect(kinds.isSuperset(of: [.renameAttribute, .renameEntity, .removeEntity]))
        let store = try PostgreSQLStore(
            model: v2, configuration: "Main", url: url, options: StoreOptions(migrate: true))
        defer { store.close() }
        #expect(store.metadata.modelVersion == "2")
        let found = try rows(store, "Customer")
        #expect(customers.map { found[$0]?[attribute: "fullName"] } == [.string("C0"), .string("C1"), .string("C2")])
        #expect(customers.map { found[$0]?[attribute: "status"] } == Array(repeating: .string("active"), count: 3))
        #expect(found[customers[2]]?[attribute: "age"] == .integer(32))
        #expect(found[customers[0]]?.version == 1)
        let purchases = try rows(store, "Purchase")
        #expect(purchases.keys.sorted() == orders)
        #expect(purchases[orders[3]]?.toOne["customer"]??.primaryKey == customers[1])
        #expect(purchases[orders[1]]?[attribute: "code"] == .string("O1"))
        let first = ObjectID(store: store.identifier, entity: "Customer", primaryKey: customers[0])
        #expect(try store.relatedIDs(of: first, relationship: "orders").map(\.primaryKey!) == [orders[0], orders[2]])
        // The new tables work, keys continue past the old ones, and the new constraint holds.
        let purchase = ObjectID(store: store.identifier, entity: "Purchase", primaryKey: orders[0])
        try store.save(
            StoreChanges(
                inserts: [try newRow(store, "Coupon", ["percent": .integer(10)])],
                updates: [StoreUpdate(id: first, expectedVersion: nil, toMany: ["favorites": [purchase]])]))
        #expect(try store.relatedIDs(of: purchase, relationship: "fans") == [first])
        let next = try newRow(store, "Purchase", ["code": .string("O9")])
        #expect(next.id.primaryKey! > orders.max()!)
        try store.save(StoreChanges(inserts: [next]))
        let duplicate = try newRow(store, "Purchase", ["code": .string("O1")])
        #expect(throws: StoreError.self) { try store.save(StoreChanges(inserts: [duplicate])) }
        let tables = try PostgreSQLTestServer.psql(
            "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM information_schema.tables WHERE table_schema = '\(folder.postgreSQLSchema(name: "main"))'"
        )
        #expect(!tables.contains("Legacy") && !tables.contains("Order") && tables.contains("Coupon"))
    }

    @Test func twoServersStartingTogetherMigrateOnce() throws {
        let folder = TemporaryDirectory()
        let url = try folder.postgreSQLURL(name: "main")
        let (customers, _) = try Self.seed(url)
        let v2 = try Self.v2
        let outcomes = Locked<[String]>([])
        onThreads(2) { _ in
            do {
                let coordinator = StoreCoordinator(model: v2)
                try coordinator.addStores([
                    StoreDescription(
                        type: .postgresql, configuration: "Main", url: url, options: StoreOptions(migrate: true))
                ])
                let count = try coordinator.count(FetchRequest(entityName: "Customer"))
                outcomes.withLock { $0.append("ok \(count)") }
            } catch {
                outcomes.withLock { $0.append("\(error)") }
            }
        }
        #expect(outcomes.current == ["ok 3", "ok 3"])
        let store = try PostgreSQLStore(model: v2, configuration: "Main", url: url)
        defer { store.close() }
        #expect(try rows(store, "Customer")[customers[1]]?[attribute: "fullName"] == .string("C1"))
    }

    @Test func aRefusedMigrationLeavesTheStoreAsItWas() throws {
        let folder = TemporaryDirectory()
        let url = try folder.postgreSQLURL(name: "main")
        _ = try Self.seed(url)
        // A type change is not a lightweight migration; a new uniqueness constraint that existing
        // objects break fails inside the transaction.
        let changedType = try Shop.model(
            "2",
            [
                Shop.customer.replacingOccurrences(
                    of: #"{"name": "age", "type": "integer16"}"#, with: #"{"name": "age", "type": "string"}"#),
                Shop.order, Shop.legacy, Shop.event,
            ])
        let duplicateCodes = try Shop.model(
            "2",
            [
                Shop.customer,
                Shop.order.replacingOccurrences(
                    of: #"{"name": "total", "type": "double"}"#,
                    with:
                        #"{"name": "total", "type": "double"}, {"name": "kind", "type": "string", "optional": false, "default": "x"}"#
                ).replacingOccurrences(of: #"}]}"#, with: #"}], "uniqueness": [["kind"]]}"#),
                Shop.legacy, Shop.event,
            ])
        for model in [changedType, duplicateCodes] {
            #expect(throws: StoreError.self) {
                try PostgreSQLStore(model: model, configuration: "Main", url: url, options: StoreOptions(migrate: true))
            }
        }
        let store = try PostgreSQLStore(model: try Shop.v1, configuration: "Main", url: url)
        defer { store.close() }
        #expect(try rows(store, "Customer").count == 3)
        #expect(try rows(store, "Order").count == 4)
        #expect(store.metadata.modelVersion == "1")
    }
}
