import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Entities of the migration tests' model, version 1.
enum Shop {
    static let customer = #"""
        {"name": "Customer",
         "attributes": [{"name": "name", "type": "string"}, {"name": "age", "type": "integer16"}, {"name": "notes", "type": "string"}],
         "relationships": [{"name": "orders", "destination": "Order", "toMany": true, "inverse": "customer"}]}
        """#
    static let order = #"""
        {"name": "Order", "attributes": [{"name": "total", "type": "double"}, {"name": "code", "type": "string"}],
         "relationships": [{"name": "customer", "destination": "Customer", "inverse": "orders"}]}
        """#
    static let legacy = #"{"name": "Legacy", "attributes": [{"name": "x", "type": "string"}]}"#
    static let event = #"{"name": "Event", "attributes": [{"name": "what", "type": "string"}]}"#

    /// A model with `entities` (JSON objects); `main` are the Main configuration's, the rest go to Log.
    static func model(
        _ version: String, _ entities: [String], main: [String] = ["Customer", "Order", "Legacy"],
        log: [String] = ["Event"]
    ) throws -> ObjectModel {
        func list(_ names: [String]) -> String { names.map { "\"\($0)\"" }.joined(separator: ", ") }
        let json = """
            {"name": "Shop", "version": "\(version)", "entities": [\(entities.joined(separator: ",\n"))],
             "configurations": [{"name": "Main", "entities": [\(list(main))]}, {"name": "Log", "entities": [\(list(log))]}]}
            """
        return try ObjectModel.load(json: Array(json.utf8))
    }

    static var v1: ObjectModel { get throws { try model("1", [customer, order, legacy, event]) } }

    /// Creates a Main store with version 1: three customers (one without an age), four orders, two
    /// legacy objects. Returns the primary keys of the customers and orders.
    @discardableResult
    static func seed(_ url: URL, model: ObjectModel? = nil) throws -> (customers: [Int64], orders: [Int64]) {
        let store = try SQLiteStore(model: model ?? v1, configuration: "Main", url: url)
        defer { store.close() }
        return try seed(into: store)
    }

    /// Saves version 1's objects (see ``seed(_:model:)``) into `store`.
    static func seed(into store: any PersistentStore) throws -> (customers: [Int64], orders: [Int64]) {
        let customers = try store.newObjectIDs(entity: "Customer", count: 3)
        let orders = try store.newObjectIDs(entity: "Order", count: 4)
        let legacy = try store.newObjectIDs(entity: "Legacy", count: 2)
        var inserts: [StoreRow] = []
        for (index, id) in customers.enumerated() {
            inserts.append(
                StoreRow(
                    id: id,
                    attributes: [
                        "name": .string("C\(index)"), "age": index == 1 ? .null : .integer(Int64(30 + index)),
                        "notes": .string("n\(index)"),
                    ]))
        }
        for (index, id) in orders.enumerated() {
            inserts.append(
                StoreRow(
                    id: id, attributes: ["total": .double(Double(index) * 10.5), "code": .string("O\(index)")],
                    toOne: ["customer": customers[index % 2]]))
        }
        for (index, id) in legacy.enumerated() {
            inserts.append(StoreRow(id: id, attributes: ["x": .string("L\(index)")]))
        }
        try store.save(StoreChanges(inserts: inserts))
        return (customers.map { $0.primaryKey! }, orders.map { $0.primaryKey! })
    }

    /// Opens `url` with `model`, migrating.
    static func open(_ url: URL, _ model: ObjectModel, history: [ObjectModel] = [], configuration: String = "Main")
        throws(StoreError) -> SQLiteStore
    {
        try SQLiteStore(
            model: model, configuration: configuration, url: url,
            options: StoreOptions(migrate: true, modelHistory: history))
    }
}

/// The rows of `entity`, by primary key.
func rows(_ store: any PersistentStore, _ entity: String) throws -> [Int64: StoreRow] {
    Dictionary(uniqueKeysWithValues: try store.fetch(FetchRequest(entityName: entity)).map { ($0.id.primaryKey!, $0) })
}

/// The column names of `table` in an SQLite file.
func columns(_ url: URL, _ table: String) throws -> [String] {
    let db = try SQLiteConnection(path: url.path, readOnly: true)
    return try db.query("PRAGMA table_info(\(SQLiteSchema.quote(table)))") { $0.text(1) }
}

/// The names of the tables, or indexes, of an SQLite file.
func schemaNames(_ url: URL, type: String = "table") throws -> Set<String> {
    let db = try SQLiteConnection(path: url.path, readOnly: true)
    return Set(try db.query("SELECT name FROM sqlite_master WHERE type = ?", [.text(type)]) { $0.text(0) })
}

/// The metadata of an SQLite store file.
func storeMetadata(_ url: URL) throws -> [String: String] {
    let db = try SQLiteConnection(path: url.path, readOnly: true)
    return Dictionary(
        uniqueKeysWithValues: try db.query("SELECT key, value FROM _strata_metadata") { ($0.text(0), $0.text(1)) })
}

@Suite struct MigrationTests {
    // MARK: The model is recorded

    @Test func modelJSONRoundTrips() throws {
        for model in [try ObjectModel.example, conformanceModel, try Shop.v1] {
            let again = try ObjectModel.load(json: Array(model.canonicalJSON.utf8))
            #expect(again == model)
            #expect(again.canonicalJSON == model.canonicalJSON)
            #expect(again.entityVersionHashes == model.entityVersionHashes)
        }
    }

    @Test func storesRecordTheirModel() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        try Shop.seed(url)
        #expect(try storeMetadata(url)["model"] == Shop.v1.canonicalJSON)
        // A store created before models were recorded gets it on its next open.
        let db = try SQLiteConnection(path: url.path)
        try db.execute("DELETE FROM _strata_metadata WHERE key = 'model'")
        try SQLiteStore(model: try Shop.v1, configuration: "Main", url: url).close()
        #expect(try storeMetadata(url)["model"] == Shop.v1.canonicalJSON)
    }

    // MARK: Each migratable change

    @Test func addedAttributesAreOptionalOrTakeTheirDefault() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let (customers, _) = try Shop.seed(url)
        let customer = Shop.customer.replacingOccurrences(
            of: #"{"name": "notes", "type": "string"}"#,
            with:
                #"{"name": "notes", "type": "string"}, {"name": "email", "type": "string"}, {"name": "status", "type": "string", "optional": false, "default": "active"}"#
        )
        let v2 = try Shop.model("2", [customer, Shop.order, Shop.legacy, Shop.event])
        let store = try Shop.open(url, v2)
        let found = try rows(store, "Customer")
        #expect(found.count == 3)
        for pk in customers {
            #expect(found[pk]?[attribute: "email"] == .null)
            #expect(found[pk]?[attribute: "status"] == .string("active"))
        }
        #expect(found[customers[0]]?[attribute: "name"] == .string("C0"))
        #expect(try columns(url, "Customer").suffix(2) == ["email", "status"])
        #expect(store.metadata.modelVersion == "2")
        #expect(store.metadata.entityHashes == MigrationPlanner.hashes(of: v2, configuration: "Main"))
        let metadata = try storeMetadata(url)
        #expect(metadata["model"] == v2.canonicalJSON)
        #expect(metadata["modelVersion"] == "2")
        // New objects can be saved with the new attributes.
        try store.save(
            StoreChanges(inserts: [try newRow(store, "Customer", ["status": .string("new"), "email": .string("e")])]))
        store.close()
        // Reopening without migration works: the hashes match now.
        try SQLiteStore(model: v2, configuration: "Main", url: url).close()
    }

    @Test func removedAttributeIsDropped() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let (customers, _) = try Shop.seed(url)
        let customer = Shop.customer.replacingOccurrences(of: #", {"name": "notes", "type": "string"}"#, with: "")
        let store = try Shop.open(url, try Shop.model("2", [customer, Shop.order, Shop.legacy, Shop.event]))
        #expect(!(try columns(url, "Customer")).contains("notes"))
        let found = try rows(store, "Customer")
        #expect(found[customers[2]]?[attribute: "name"] == .string("C2"))
        #expect(found[customers[2]]?[attribute: "age"] == .integer(32))
        #expect(found[customers[2]]?.attributes["notes"] == nil)
    }

    @Test func renamedAttributeKeepsItsValues() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let (customers, orders) = try Shop.seed(url)
        let customer = Shop.customer.replacingOccurrences(
            of: #"{"name": "name", "type": "string"}"#,
            with: #"{"name": "fullName", "type": "string", "renamedFrom": "name"}"#)
        let v2 = try Shop.model("2", [customer, Shop.order, Shop.legacy, Shop.event])
        let plan = SQLiteMigrator.plan(
            values: try storeMetadata(url), storedHashes: try Shop.v1.entityVersionHashes.filter { $0.key != "Event" },
            configuration: "Main", model: v2, history: [], url: url)
        #expect(plan.changes.map(\.kind) == [.renameAttribute])
        let store = try Shop.open(url, v2)
        let found = try rows(store, "Customer")
        #expect(customers.map { found[$0]?[attribute: "fullName"] } == [.string("C0"), .string("C1"), .string("C2")])
        #expect(try columns(url, "Customer") == ["_pk", "_entity", "_version", "fullName", "age", "notes"])
        // Relationships and versions survive the table rebuild.
        #expect(
            try store.relatedIDs(
                of: ObjectID(store: store.identifier, entity: "Customer", primaryKey: customers[0]),
                relationship: "orders"
            ).map(\.primaryKey!) == [orders[0], orders[2]])
        #expect(found[customers[0]]?.version == 1)
    }

    @Test func optionalAndRequiredSwapWithADefault() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let (customers, _) = try Shop.seed(url)
        let customer = Shop.customer.replacingOccurrences(
            of: #"{"name": "age", "type": "integer16"}"#,
            with: #"{"name": "age", "type": "integer16", "optional": false, "default": 18}"#)
        let v2 = try Shop.model("2", [customer, Shop.order, Shop.legacy, Shop.event])
        var store = try Shop.open(url, v2)
        var found = try rows(store, "Customer")
        #expect(customers.map { found[$0]?[attribute: "age"] } == [.integer(30), .integer(18), .integer(32)])
        store.close()
        // Back to optional: nothing to fill, values kept.
        let v3 = try Shop.model("3", [Shop.customer, Shop.order, Shop.legacy, Shop.event])
        store = try Shop.open(url, v3)
        found = try rows(store, "Customer")
        #expect(customers.map { found[$0]?[attribute: "age"] } == [.integer(30), .integer(18), .integer(32)])
    }

    @Test func integerTypesWiden() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let (customers, _) = try Shop.seed(url)
        let customer = Shop.customer.replacingOccurrences(of: #""integer16""#, with: #""integer64""#)
        let store = try Shop.open(url, try Shop.model("2", [customer, Shop.order, Shop.legacy, Shop.event]))
        #expect(try rows(store, "Customer")[customers[0]]?[attribute: "age"] == .integer(30))
        try store.save(
            StoreChanges(inserts: [try newRow(store, "Customer", ["age": .integer(5_000_000_000)])]))
    }

    @Test func entitiesAreAddedRemovedAndRenamed() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let (customers, orders) = try Shop.seed(url)
        let customer = Shop.customer.replacingOccurrences(
            of: #""destination": "Order""#, with: #""destination": "Purchase""#)
        let purchase = Shop.order.replacingOccurrences(
            of: #"{"name": "Order","#, with: #"{"name": "Purchase", "renamedFrom": "Order","#)
        let coupon = #"{"name": "Coupon", "attributes": [{"name": "percent", "type": "integer32"}]}"#
        let v2 = try Shop.model(
            "2", [customer, purchase, coupon, Shop.event], main: ["Customer", "Purchase", "Coupon"])
        let store = try Shop.open(url, v2)
        #expect(try schemaNames(url) == ["_strata_metadata", "Customer", "Purchase", "Coupon"])
        let found = try rows(store, "Purchase")
        #expect(found.keys.sorted() == orders)
        #expect(found[orders[1]]?[attribute: "code"] == .string("O1"))
        #expect(found[orders[1]]?.id.entityName == "Purchase")
        #expect(found[orders[1]]?.toOne["customer"]??.primaryKey == customers[1])
        #expect(try rows(store, "Coupon").isEmpty)
        try store.save(StoreChanges(inserts: [try newRow(store, "Coupon", ["percent": .integer(10)])]))
        #expect(try rows(store, "Coupon").count == 1)
    }

    @Test func relationshipsAreAddedRemovedAndRenamed() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let (customers, orders) = try Shop.seed(url)
        // v2: Order.customer becomes Order.buyer (renamed), Customer.orders becomes Customer.purchases,
        // and a new many-to-many Customer.favorites <-> Order.fans appears.
        let customer = Shop.customer.replacingOccurrences(
            of: #"[{"name": "orders", "destination": "Order", "toMany": true, "inverse": "customer"}]"#,
            with:
                #"[{"name": "purchases", "renamedFrom": "orders", "destination": "Order", "toMany": true, "inverse": "buyer"}, {"name": "favorites", "destination": "Order", "toMany": true, "inverse": "fans"}]"#
        )
        let order = Shop.order.replacingOccurrences(
            of: #"[{"name": "customer", "destination": "Customer", "inverse": "orders"}]"#,
            with:
                #"[{"name": "buyer", "renamedFrom": "customer", "destination": "Customer", "inverse": "purchases"}, {"name": "fans", "destination": "Customer", "toMany": true, "inverse": "favorites"}]"#
        )
        let v2 = try Shop.model("2", [customer, order, Shop.legacy, Shop.event])
        var store = try Shop.open(url, v2)
        let first = ObjectID(store: store.identifier, entity: "Customer", primaryKey: customers[0])
        #expect(
            try store.relatedIDs(of: first, relationship: "purchases").map(\.primaryKey!) == [orders[0], orders[2]])
        #expect(try rows(store, "Order")[orders[3]]?.toOne["buyer"]??.primaryKey == customers[1])
        #expect(try store.relatedIDs(of: first, relationship: "favorites").isEmpty)
        #expect(try schemaNames(url).contains("_join_Customer_favorites"))
        let order0 = ObjectID(store: store.identifier, entity: "Order", primaryKey: orders[0])
        try store.save(
            StoreChanges(updates: [StoreUpdate(id: first, expectedVersion: nil, toMany: ["favorites": [order0]])]))
        #expect(try store.relatedIDs(of: order0, relationship: "fans") == [first])
        store.close()
        // v3: both relationships removed.
        let plainCustomer =
            #"{"name": "Customer", "attributes": [{"name": "name", "type": "string"}, {"name": "age", "type": "integer16"}, {"name": "notes", "type": "string"}]}"#
        let plainOrder =
            #"{"name": "Order", "attributes": [{"name": "total", "type": "double"}, {"name": "code", "type": "string"}]}"#
        store = try Shop.open(url, try Shop.model("3", [plainCustomer, plainOrder, Shop.legacy, Shop.event]))
        #expect(!(try columns(url, "Order")).contains("buyer"))
        #expect(!(try schemaNames(url)).contains("_join_Customer_favorites"))
        #expect(try rows(store, "Order").count == 4)
    }

    @Test func renamingCanTurnAJoinTableAround() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let customer =
            #"{"name": "Customer", "attributes": [{"name": "name", "type": "string"}], "relationships": [{"name": "tags", "destination": "Tag", "toMany": true, "inverse": "customers"}]}"#
        let tag =
            #"{"name": "Tag", "attributes": [{"name": "label", "type": "string"}], "relationships": [{"name": "customers", "destination": "Customer", "toMany": true, "inverse": "tags"}]}"#
        let v1 = try Shop.model("1", [customer, tag, Shop.event], main: ["Customer", "Tag"])
        var store = try SQLiteStore(model: v1, configuration: "Main", url: url)
        let people = try store.newObjectIDs(entity: "Customer", count: 2)
        let tags = try store.newObjectIDs(entity: "Tag", count: 2)
        try store.save(
            StoreChanges(inserts: [
                StoreRow(id: people[0], toMany: ["tags": [tags[0], tags[1]]]),
                StoreRow(id: people[1], toMany: ["tags": [tags[1]]]),
                StoreRow(id: tags[0]), StoreRow(id: tags[1]),
            ]))
        store.close()
        #expect(try schemaNames(url).contains("_join_Customer_tags"))
        // Tag becomes Aardvark: the join table's source side is now the other entity.
        let customer2 = customer.replacingOccurrences(of: #""destination": "Tag""#, with: #""destination": "Aardvark""#)
        let aardvark = tag.replacingOccurrences(
            of: #"{"name": "Tag","#, with: #"{"name": "Aardvark", "renamedFrom": "Tag","#)
        store = try Shop.open(
            url, try Shop.model("2", [customer2, aardvark, Shop.event], main: ["Customer", "Aardvark"]))
        let names = try schemaNames(url)
        #expect(names.contains("_join_Aardvark_customers") && !names.contains("_join_Customer_tags"))
        let person = ObjectID(store: store.identifier, entity: "Customer", primaryKey: people[0].primaryKey!)
        #expect(
            Set(try store.relatedIDs(of: person, relationship: "tags").map(\.primaryKey!))
                == Set(tags.map(\.primaryKey!)))
        let second = ObjectID(store: store.identifier, entity: "Aardvark", primaryKey: tags[1].primaryKey!)
        #expect(
            Set(try store.relatedIDs(of: second, relationship: "customers").map(\.primaryKey!))
                == Set(people.map(\.primaryKey!)))
    }

    @Test func indexesAndUniquenessAreAddedAndRemoved() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        try Shop.seed(url)
        let order = Shop.order.replacingOccurrences(
            of: #""inverse": "orders"}]"#,
            with:
                #""inverse": "orders"}], "indexes": [{"name": "Order_total", "properties": ["total"]}], "uniqueness": [["code"]]"#
        )
        var store = try Shop.open(url, try Shop.model("2", [Shop.customer, order, Shop.legacy, Shop.event]))
        // A fetch index is named after its entity and itself (index names are the database's).
        #expect(try schemaNames(url, type: "index").isSuperset(of: ["Order_Order_total", "_unique_Order_0"]))
        do {
            try store.save(StoreChanges(inserts: [try newRow(store, "Order", ["code": .string("O1")])]))
            Issue.record("the new uniqueness constraint was not enforced")
        } catch let error as StoreError {
            #expect(error.code == .uniqueViolation)
        }
        store.close()
        store = try Shop.open(url, try Shop.model("3", [Shop.customer, Shop.order, Shop.legacy, Shop.event]))
        #expect(try schemaNames(url, type: "index").isDisjoint(with: ["Order_Order_total", "_unique_Order_0"]))
        try store.save(StoreChanges(inserts: [try newRow(store, "Order", ["code": .string("O1")])]))
    }

    // MARK: Several steps

    @Test func aStoreOfAnOldVersionMigratesInOneInferredStepToTheModel() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let (customers, _) = try Shop.seed(url)
        let v2 = try Shop.model(
            "2",
            [
                Shop.customer.replacingOccurrences(
                    of: #"{"name": "name", "type": "string"}"#,
                    with: #"{"name": "fullName", "type": "string", "renamedFrom": "name"}"#),
                Shop.order, Shop.legacy, Shop.event,
            ])
        // Renamed again in version 3: its renaming identifier names version 2's name, not the
        // canonical one (version 1's), so version 1's `name` matches nothing.
        let v3 = { (identifier: String) in
            try Shop.model(
                "3",
                [
                    Shop.customer.replacingOccurrences(
                        of: #"{"name": "name", "type": "string"}"#,
                        with:
                            #"{"name": "displayName", "type": "string", "renamedFrom": "\#(identifier)"}, {"name": "vip", "type": "boolean", "optional": false, "default": false}"#
                    ),
                    Shop.order, Shop.event,
                ], main: ["Customer", "Order"])
        }
        // Core Data infers one mapping from the store's version to the model's and walks no
        // version between: the history does not make `fullName` version 1's `name`, and
        // `displayName` is a new attribute, empty.
        let skipping = try v3("fullName")
        for (index, history) in [[], [try Shop.v1, v2, skipping]].enumerated() {
            let other = folder.file("skipping\(index).sqlite")
            let (others, _) = try Shop.seed(other)
            let store = try Shop.open(other, skipping, history: history)
            defer { store.close() }
            let found = try rows(store, "Customer")
            #expect(others.map { found[$0]?[attribute: "displayName"] } == [.null, .null, .null])
            let names = try columns(other, "Customer")
            #expect(store.metadata.modelVersion == "3" && names.contains("displayName") && !names.contains("name"))
        }
        // The canonical renaming identifier (the first name, as Apple's guide asks) renames it from
        // any version.
        let canonical = try v3("name")
        let plan = MigrationPlanner.plan(
            storedHashes: MigrationPlanner.hashes(of: try Shop.v1, configuration: "Main")!, storedVersion: "1",
            recorded: try Shop.v1, configuration: "Main", model: canonical, history: [try Shop.v1, v2, canonical],
            url: nil)
        #expect(plan.steps.map { "\($0.fromVersion!)→\($0.toVersion!)" } == ["1→3"])
        let store = try Shop.open(url, canonical, history: [try Shop.v1, v2, canonical])
        let found = try rows(store, "Customer")
        #expect(
            customers.map { found[$0]?[attribute: "displayName"] } == [.string("C0"), .string("C1"), .string("C2")])
        #expect(found[customers[0]]?[attribute: "vip"] == .boolean(false))
        #expect(!(try schemaNames(url)).contains("Legacy"))
        #expect(store.metadata.modelVersion == "3")
    }

    @Test func coreDataVersionsAreAHistory() throws {
        let folder = TemporaryDirectory()
        let bundle = folder.file("Shop.xcdatamodeld")
        func version(_ number: Int, _ body: String) throws {
            let model = bundle.appendingPathComponent(number == 1 ? "Shop.xcdatamodel" : "Shop \(number).xcdatamodel")
            try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
            let document = """
                <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
                <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="\(number)">
                \(body)
                </model>
                """
            try Data(document.utf8).write(to: model.appendingPathComponent("contents"))
        }
        try version(1, #"<entity name="Note"><attribute name="text" optional="YES" attributeType="String"/></entity>"#)
        try version(
            2,
            #"<entity name="Memo" renamingIdentifier="Note"><attribute name="body" optional="YES" attributeType="String" renamingIdentifier="text"/></entity>"#
        )
        try version(
            3,
            #"<entity name="Memo" renamingIdentifier="Note"><attribute name="content" optional="YES" attributeType="String" renamingIdentifier="text"/><attribute name="pinned" optional="YES" attributeType="Boolean"/></entity>"#
        )
        let versions = try ObjectModel.loadCoreDataModelVersions(at: bundle)
        let url = folder.file("notes.sqlite")
        let first = try SQLiteStore(model: versions[0], configuration: nil, url: url)
        let note = try newRow(first, "Note", ["text": .string("hello")])
        try first.save(StoreChanges(inserts: [note]))
        first.close()
        let store = try SQLiteStore(
            model: versions[2], configuration: nil, url: url,
            options: StoreOptions(migrate: true, modelHistory: versions))
        let memos = try store.fetch(FetchRequest(entityName: "Memo"))
        #expect(memos.map { $0[attribute: "content"] } == [.string("hello")])
        #expect(memos.first?.id.primaryKey == note.id.primaryKey)
    }

    // MARK: Refused changes

    /// Every change a lightweight migration cannot infer, with the text its refusal must contain.
    static let refusals: [(name: String, customer: String, order: String, expected: String)] = [
        (
            "type change",
            Shop.customer.replacingOccurrences(
                of: #""name": "notes", "type": "string""#, with: #""name": "notes", "type": "integer32""#),
            Shop.order, "Customer.notes: type changes from string to integer32"
        ),
        (
            "required attribute without default",
            Shop.customer.replacingOccurrences(
                of: #"{"name": "notes", "type": "string"}"#,
                with: #"{"name": "notes", "type": "string"}, {"name": "email", "type": "string", "optional": false}"#),
            Shop.order, "Customer.email: is added as required with no default value"
        ),
        (
            "optional to required without default",
            Shop.customer.replacingOccurrences(
                of: #"{"name": "age", "type": "integer16"}"#,
                with: #"{"name": "age", "type": "integer16", "optional": false}"#),
            Shop.order, "Customer.age: becomes required with no default value, and 1 object of Customer has none"
        ),
        (
            "a type change with no inferred mapping", Shop.customer,
            Shop.order.replacingOccurrences(
                of: #"{"name": "code", "type": "string"}"#, with: #"{"name": "code", "type": "date"}"#),
            "Order.code: type changes from string to date, which a lightweight migration does not convert; a mapping model is needed"
        ),
        (
            "required to-one relationship",
            Shop.customer,
            Shop.order.replacingOccurrences(
                of: #""inverse": "orders"}"#, with: #""inverse": "orders", "optional": false}"#),
            "Order.customer: becomes a required to-one relationship"
        ),
    ]

    @Test(arguments: 0..<MigrationTests.refusals.count)
    func refusedChangesLeaveTheStoreAlone(_ index: Int) throws {
        let case_ = Self.refusals[index]
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        try Shop.seed(url)
        let before = try dumpSQLite(url)
        let v2 = try Shop.model("2", [case_.customer, case_.order, Shop.legacy, Shop.event])
        do {
            _ = try Shop.open(url, v2)
            Issue.record("\(case_.name): migrated")
        } catch {
            #expect(error.code == .incompatibleModel, "\(case_.name)")
            #expect(error.message.contains(case_.expected), "\(case_.name): \(error.message)")
        }
        #expect(try dumpSQLite(url) == before, "\(case_.name)")
    }

    @Test func structuralChangesAreRefusedAndEveryOneIsListed() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let base = #"{"name": "Item", "attributes": [{"name": "title", "type": "string"}]}"#
        let note = #"{"name": "Note", "parent": "Item", "attributes": [{"name": "body", "type": "string"}]}"#
        let v1 = try Shop.model("1", [base, note, Shop.event], main: ["Item", "Note"])
        try SQLiteStore(model: v1, configuration: "Main", url: url).close()
        let before = try dumpSQLite(url)
        let v2 = try Shop.model(
            "2",
            [
                #"{"name": "Item", "abstract": true, "attributes": [{"name": "title", "type": "integer64"}]}"#,
                #"{"name": "Note", "attributes": [{"name": "body", "type": "string"}]}"#, Shop.event,
            ], main: ["Item", "Note"])
        do {
            _ = try Shop.open(url, v2)
            Issue.record("migrated structural changes")
        } catch {
            #expect(error.message.contains("Note: its parent entity changes from 'Item' to none"))
            #expect(error.message.contains("Item: becomes abstract"))
            #expect(error.message.contains("Item.title: type changes from string to integer64"))
        }
        #expect(try dumpSQLite(url) == before)
    }

    @Test func withoutMigrationTheErrorSaysWhatAMigrationWouldDo() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        try Shop.seed(url)
        let before = try dumpSQLite(url)
        let customer = Shop.customer.replacingOccurrences(
            of: #"{"name": "notes", "type": "string"}"#,
            with: #"{"name": "notes", "type": "string"}, {"name": "email", "type": "string"}"#)
        let v2 = try Shop.model("2", [customer, Shop.order, Shop.legacy, Shop.event])
        do {
            _ = try SQLiteStore(model: v2, configuration: "Main", url: url)
            Issue.record("opened without migrating")
        } catch {
            #expect(error.code == .incompatibleModel)
            #expect(error.message.contains("entities changed: Customer"))
            #expect(error.message.contains("open it with migration enabled"))
            #expect(error.message.contains("Customer.email: a new string attribute"))
        }
        #expect(try dumpSQLite(url) == before)
        // A dry run tells the same without touching the file.
        let bytes = try Data(contentsOf: url)
        let inspection = try StoreInspector.inspect(url, model: v2)
        #expect(inspection.isCompatible == false)
        #expect(inspection.plan?.changes.map(\.kind) == [.addAttribute])
        #expect(inspection.rowCounts == ["Customer": 3, "Order": 4, "Legacy": 2])
        #expect(try Data(contentsOf: url) == bytes)
    }

    // MARK: Several stores: all or nothing

    @Test func storesOfOneCoordinatorMigrateTogetherOrNotAtAll() throws {
        let folder = TemporaryDirectory()
        let main = folder.file("main.sqlite")
        let log = folder.file("log.sqlite")
        try Shop.seed(main)
        let logStore = try SQLiteStore(model: try Shop.v1, configuration: "Log", url: log)
        try logStore.save(
            StoreChanges(inserts: [
                try newRow(logStore, "Event", ["what": .string("same")]),
                try newRow(logStore, "Event", ["what": .string("same")]),
            ]))
        logStore.close()
        let mainBefore = try dumpSQLite(main)
        let logBefore = try dumpSQLite(log)
        let mainMetadata = try storeMetadata(main)
        // v2 adds an attribute to Customer (fine) and makes Event.what unique, which the second
        // store's data breaks: its migration fails after the first store's is prepared.
        let customer = Shop.customer.replacingOccurrences(
            of: #"{"name": "notes", "type": "string"}"#,
            with: #"{"name": "notes", "type": "string"}, {"name": "email", "type": "string"}"#)
        let event = #"{"name": "Event", "attributes": [{"name": "what", "type": "string"}], "uniqueness": [["what"]]}"#
        let v2 = try Shop.model("2", [customer, Shop.order, Shop.legacy, event])
        let descriptions = [
            StoreDescription(type: .sqlite, configuration: "Main", url: main, options: StoreOptions(migrate: true)),
            StoreDescription(type: .sqlite, configuration: "Log", url: log, options: StoreOptions(migrate: true)),
        ]
        let coordinator = StoreCoordinator(model: v2)
        do {
            try coordinator.addStores(descriptions)
            Issue.record("migrated a store whose data breaks the new model")
        } catch {
            #expect(error.code == .uniqueViolation)
            #expect(error.storeURL == log)
        }
        #expect(coordinator.stores.isEmpty)
        #expect(try dumpSQLite(main) == mainBefore)
        #expect(try dumpSQLite(log) == logBefore)
        #expect(try storeMetadata(main) == mainMetadata)
        #expect(!(try columns(main, "Customer")).contains("email"))
        // The same through a container reports the store that failed.
        do {
            _ = try PersistentContainer(model: v2, stores: descriptions)
            Issue.record("the container loaded")
        } catch {
            #expect(error.store.url == log)
        }
        #expect(try dumpSQLite(main) == mainBefore)
        // A store that may not be migrated stops the others before anything changes.
        var noMigration = descriptions
        noMigration[1].options.migrate = false
        #expect(throws: StoreError.self) { try StoreCoordinator(model: v2).addStores(noMigration) }
        #expect(try dumpSQLite(main) == mainBefore)
        // Once the data fits, both migrate.
        let fix = try SQLiteConnection(path: log.path)
        try fix.execute("UPDATE Event SET what = 'other' WHERE _pk = (SELECT max(_pk) FROM Event)")
        let container = try PersistentContainer(model: v2, stores: descriptions)
        #expect(container.coordinator.stores.map(\.metadata.modelVersion) == ["2", "2"])
        #expect(try columns(main, "Customer").contains("email"))
        #expect(try schemaNames(log, type: "index").contains("_unique_Event_0"))
    }
}
