import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Tables keyed by object IDs (`ObjectID._rawHashValue` places keys in runs of eight) and the
/// link from objects to their context.
@Suite struct ObjectIDTableTests {
    @Test func tablesOfDenseKeysFromSeveralHomesFindEveryKeyAndNoOther() {
        let store = UUID().uuidString
        let homes = ["Book", "Author", "Tag"]
        var table: [ObjectID: Int64] = [:]
        for (offset, entity) in homes.enumerated() {
            for pk in Int64(1)...20_000 {
                table[ObjectID(store: store, entity: entity, primaryKey: pk)] = pk * 10 + Int64(offset)
            }
        }
        let temporaries = (0..<5_000).map { _ in ObjectID.temporary(entity: "Book") }
        for (index, id) in temporaries.enumerated() { table[id] = -Int64(index) - 1 }
        #expect(table.count == 3 * 20_000 + 5_000)
        var wrong = 0
        for (offset, entity) in homes.enumerated() {
            for pk in Int64(1)...20_000
            where table[ObjectID(store: store, entity: entity, primaryKey: pk)] != pk * 10 + Int64(offset) {
                wrong += 1
            }
            // Keys next to the stored ones, in the same homes, and the same keys in another store.
            for pk in Int64(20_001)...21_000 where table[ObjectID(store: store, entity: entity, primaryKey: pk)] != nil
            {
                wrong += 1
            }
            for pk in Int64(1)...1_000 where table[ObjectID(store: "other", entity: entity, primaryKey: pk)] != nil {
                wrong += 1
            }
        }
        for (index, id) in temporaries.enumerated() where table[id] != -Int64(index) - 1 { wrong += 1 }
        #expect(wrong == 0)
        // Removing every other run of eight leaves the rest findable (deletion shifts probes back).
        for pk in Int64(1)...20_000 where (pk / 8) % 2 == 0 {
            table[ObjectID(store: store, entity: "Book", primaryKey: pk)] = nil
        }
        for pk in Int64(1)...20_000 {
            let found = table[ObjectID(store: store, entity: "Book", primaryKey: pk)]
            if (pk / 8) % 2 == 0 ? found != nil : found != pk * 10 { wrong += 1 }
        }
        #expect(wrong == 0)
    }

    @Test func keysOfOneRunOfEightGetNeighbouringBuckets() {
        let home = ObjectID(store: "S", entity: "Book", primaryKey: 0)
        for base in stride(from: Int64(0), to: 800, by: 8) {
            let hashes = (base..<base + 8).map { home.withPrimaryKey($0)._rawHashValue(seed: 12345) }
            #expect(Set(hashes.map { $0 & ~7 }).count == 1, "one run, one stretch of buckets")
            #expect(hashes.map { $0 & 7 } == Array(0..<8), "in order")
        }
        // Runs land apart from each other.
        let starts = stride(from: Int64(0), to: 8_000, by: 8).map {
            home.withPrimaryKey($0)._rawHashValue(seed: 1) & ~7
        }
        #expect(Set(starts.map { $0 & 0xFFFF }).count > 900)
    }

    @Test func objectsReachTheirContextUntilItIsReleased() throws {
        let folder = TemporaryDirectory()
        let coordinator = StoreCoordinator(model: try ObjectModel.example)
        try coordinator.addStore(type: .sqlite, configuration: "Catalog", url: folder.file("catalog.sqlite"))
        var context: ObjectContext? = ObjectContext(coordinator: coordinator)
        let inserted = try context!.insert("Book", values: ["title": .string("Solaris")])
        try context!.save()
        let fetched = try context!.fetch(FetchRequest(entityName: "Book"))
        #expect(inserted.context === context && fetched.first === inserted)
        let child = context!.newChildContext()
        let childsCopy = try child.object(with: inserted.objectID)
        #expect(childsCopy.context === child && childsCopy !== inserted)
        #expect(childsCopy.string("title") == "Solaris")
        context = nil
        // The child holds its parent: the object still reaches it.
        #expect(inserted.context != nil)
        _ = consume child
        #expect(inserted.context == nil)
        #expect(childsCopy.context == nil)
    }
}
