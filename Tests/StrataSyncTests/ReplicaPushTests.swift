import Foundation
import Strata
import StrataSync
import StrataTestSupport
import Testing

/// Local saves reach the server: inserts get the server's keys, relationships included.
@Suite struct ReplicaPushTests {
    /// The replica's single store.
    static func store(_ replica: Replica) -> any PersistentStore { replica.coordinator.stores[0] }

    @Test func localInsertsTakeTheServersKeysEverywhere() throws {
        let fixture = try SyncFixture()
        let ann = try fixture.create("/authors", #"{"name": "Ann"}"#)
        let tag = try fixture.create("/tags", #"{"name": "sf"}"#)
        let replica = try fixture.replica()
        try replica.synchronize()
        // The server moves on meanwhile: its next keys are taken.
        _ = try fixture.create("/authors", #"{"name": "Server-side"}"#)

        let context = ObjectContext(coordinator: replica.coordinator)
        let zed = try context.insert("Author", values: ["name": .string("Zed")])
        let book = try context.insert("Book", values: ["title": .string("Local")])
        try book.setObject(zed, forKey: "author")
        try book.setObjects(
            [try context.object(with: ObjectID(store: Self.store(replica).identifier, entity: "Tag", primaryKey: tag))],
            forKey: "tags")
        let other = try context.insert("Book", values: ["title": .string("Other")])
        try other.setObject(
            try context.object(
                with: ObjectID(store: Self.store(replica).identifier, entity: "Author", primaryKey: ann)),
            forKey: "author")
        try context.save()
        #expect(try replica.pendingTransactionCount() == 1)

        try replica.synchronize()
        #expect(try replica.pendingTransactionCount() == 0)
        #expect(replica.statistics.pushedTransactions == 1)
        try fixture.expectConverged(replica)
        // No local key is left: every object is under its server key.
        for entity in ["Author", "Book"] {
            for row in try Self.store(replica).fetch(FetchRequest(entityName: entity)) {
                #expect(row.id.primaryKey! < 1 << 40, "\(row.id)")
            }
        }
        // Later local edits of the new objects go to their server keys.
        let fresh = ObjectContext(coordinator: replica.coordinator)
        let books = try fresh.fetch(
            FetchRequest(entityName: "Book", predicate: try FetchPredicate(format: "title == 'Local'")))
        try books[0].setValue(.integer(2001), forKey: "year")
        try fresh.save()
        try replica.synchronize()
        try fixture.expectConverged(replica)
        let server = try fixture.serverObjects("Book")
        #expect(server.values.contains { $0.objectValue?["year"] == .integer(2001) })
    }

    @Test func updatesAndDeletesCarryTheVersionTheyWereBasedOn() throws {
        let fixture = try SyncFixture()
        let ann = try fixture.create("/authors", #"{"name": "Ann"}"#)
        let book = try fixture.create("/books", #"{"title": "One", "author": \#(ann)}"#)
        let gone = try fixture.create("/books", #"{"title": "Gone", "author": \#(ann)}"#)
        let replica = try fixture.replica()
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        let identifier = Self.store(replica).identifier
        try context.object(with: ObjectID(store: identifier, entity: "Book", primaryKey: book)).setValue(
            .integer(1984), forKey: "year")
        try context.delete(try context.object(with: ObjectID(store: identifier, entity: "Book", primaryKey: gone)))
        try context.save()
        try replica.synchronize()
        #expect(replica.statistics.conflictCount == 0)
        try fixture.expectConverged(replica)
        #expect(try fixture.serverObjects("Book").count == 1)
    }

    @Test func aDeleteThatCascadesPushesOnce() throws {
        let fixture = try SyncFixture()
        let ann = try fixture.create("/authors", #"{"name": "Ann"}"#)
        _ = try fixture.create("/books", #"{"title": "One", "author": \#(ann)}"#)
        _ = try fixture.create("/books", #"{"title": "Two", "author": \#(ann)}"#)
        let replica = try fixture.replica()
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        let identifier = Self.store(replica).identifier
        // The author's books go with it (cascade): the local transaction deletes all three, and
        // the server's cascade deletes the books before the batch's own deletes of them reach them.
        try context.delete(try context.object(with: ObjectID(store: identifier, entity: "Author", primaryKey: ann)))
        try context.save()
        try replica.synchronize()
        #expect(try replica.pendingTransactionCount() == 0)
        #expect(replica.statistics.conflictCount == 0)
        try fixture.expectConverged(replica)
        #expect(try fixture.serverObjects("Book").isEmpty)
    }

    @Test func anObjectChangedOnlyThroughItsOneToManyStillTakesServerChanges() throws {
        let fixture = try SyncFixture()
        let ann = try fixture.create("/authors", #"{"name": "Ann"}"#)
        let replica = try fixture.replica()
        try replica.synchronize()
        // A local book for Ann: the local history records Ann as changed too (her `books`).
        let context = ObjectContext(coordinator: replica.coordinator)
        let identifier = Self.store(replica).identifier
        let book = try context.insert("Book", values: ["title": .string("Local")])
        try book.setObject(
            try context.object(with: ObjectID(store: identifier, entity: "Author", primaryKey: ann)), forKey: "author")
        try context.save()
        // And gone again before it is pushed: nothing of either transaction reaches the server.
        try context.delete(book)
        try context.save()
        try fixture.send("PATCH", "/authors/\(ann)", #"{"email": "ann@example.org"}"#, expect: 200)
        // The server's change comes in before the local ones go out.
        try replica.pull()
        try replica.synchronize()
        try fixture.expectConverged(replica)
        #expect(replica.statistics.conflictCount == 0)
    }
}
