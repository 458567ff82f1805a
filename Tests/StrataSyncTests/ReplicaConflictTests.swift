import Foundation
import Strata
import StrataSync
import StrataTestSupport
import Testing

/// Conflicts settle by the entity's policy: the server's state, the local object, or property by
/// property; deletes against edits too.
@Suite struct ReplicaConflictTests {
    /// A server with one book (title "Base", year 1), a replica of it with `policy` for books,
    /// and the book's local object in a context of the replica.
    static func start(_ policy: ConflictPolicy, resolver: (@Sendable (SyncConflict) -> ConflictPolicy?)? = nil)
        throws -> (SyncFixture, Replica, ObjectContext, ManagedObject, Int64)
    {
        let fixture = try SyncFixture()
        let ann = try fixture.create("/authors", #"{"name": "Ann"}"#)
        let book = try fixture.create("/books", #"{"title": "Base", "year": 1, "author": \#(ann)}"#)
        let replica = try fixture.replica(policies: ["Book": policy]) { $0.resolver = resolver }
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        let identifier = replica.coordinator.stores[0].identifier
        let object = try context.object(with: ObjectID(store: identifier, entity: "Book", primaryKey: book))
        return (fixture, replica, context, object, book)
    }

    /// Both sides edit the book: the server its title and year, the replica its title and pages.
    static func editBothSides(_ policy: ConflictPolicy) throws -> (SyncFixture, Replica, [Int64: JSONValue]) {
        let (fixture, replica, context, book, id) = try start(policy)
        try fixture.send("PATCH", "/books/\(id)", #"{"title": "Server", "year": 2000}"#, expect: 200)
        try book.setValue(.string("Local"), forKey: "title")
        try book.setValue(.integer(100), forKey: "pages")
        try context.save()
        #expect(try replica.push() == 1)
        #expect(replica.statistics.conflicts[policy] == 1)
        try replica.synchronize()
        try fixture.expectConverged(replica)
        #expect(try replica.pendingTransactionCount() == 0)
        return (fixture, replica, try fixture.serverObjects("Book"))
    }

    @Test func serverWinsDropsTheLocalEdit() throws {
        let (_, replica, books) = try Self.editBothSides(.serverWins)
        let book = try #require(books.values.first?.objectValue)
        #expect(book["title"] == .string("Server") && book["year"] == .integer(2000) && book["pages"] == .null)
        #expect(replica.conflicts.first?.localLost == true)
    }

    @Test func localWinsWritesTheWholeLocalObject() throws {
        let (_, replica, books) = try Self.editBothSides(.localWins)
        let book = try #require(books.values.first?.objectValue)
        #expect(book["title"] == .string("Local") && book["year"] == .integer(1) && book["pages"] == .integer(100))
        #expect(replica.conflicts.first?.localLost == false)
    }

    @Test func mergeByPropertyKeepsTheServersOtherProperties() throws {
        let (_, _, books) = try Self.editBothSides(.mergeByProperty)
        let book = try #require(books.values.first?.objectValue)
        #expect(book["title"] == .string("Local") && book["year"] == .integer(2000) && book["pages"] == .integer(100))
    }

    @Test func theResolverOverridesTheEntitysPolicy() throws {
        let asked = Locked<[SyncConflict]>([])
        let (fixture, replica, context, book, id) = try Self.start(.serverWins) { conflict in
            asked.withLock { $0.append(conflict) }
            return .localWins
        }
        try fixture.send("PATCH", "/books/\(id)", #"{"year": 2000}"#, expect: 200)
        try book.setValue(.integer(100), forKey: "pages")
        try context.save()
        try replica.synchronize()
        try fixture.expectConverged(replica)
        let conflict = try #require(asked.withLock { $0.first })
        #expect(conflict.entity == "Book" && conflict.id == id && conflict.policy == .serverWins)
        #expect(conflict.serverObject?["year"] == .integer(2000) && conflict.changedProperties == ["pages"])
        #expect(replica.conflicts.first?.policy == .localWins)
        #expect(try fixture.serverObjects("Book")[id]?.objectValue?["year"] == .integer(1))
    }

    @Test(arguments: [ConflictPolicy.serverWins, .localWins, .mergeByProperty])
    func aLocalDeleteAgainstAServerEdit(_ policy: ConflictPolicy) throws {
        let (fixture, replica, context, book, id) = try Self.start(policy)
        try fixture.send("PATCH", "/books/\(id)", #"{"year": 2000}"#, expect: 200)
        try context.delete(book)
        try context.save()
        try replica.synchronize()
        try fixture.expectConverged(replica)
        let books = try fixture.serverObjects("Book")
        if policy == .serverWins {
            #expect(books[id]?.objectValue?["year"] == .integer(2000))
        } else {
            #expect(books.isEmpty)
        }
        #expect(replica.conflicts.count == 1 && replica.conflicts.first?.localChange == .delete)
    }

    @Test(arguments: [ConflictPolicy.serverWins, .localWins, .mergeByProperty])
    func aLocalEditAgainstAServerDelete(_ policy: ConflictPolicy) throws {
        let (fixture, replica, context, book, id) = try Self.start(policy)
        try fixture.send("DELETE", "/books/\(id)", expect: 204)
        try book.setValue(.integer(100), forKey: "pages")
        try context.save()
        try replica.synchronize()
        try fixture.expectConverged(replica)
        let books = try fixture.serverObjects("Book")
        if policy == .serverWins {
            #expect(books.isEmpty)
        } else {
            // Created again, under a new key, with the local values.
            #expect(books.count == 1 && books[id] == nil)
            #expect(books.values.first?.objectValue?["pages"] == .integer(100))
        }
        #expect(replica.conflicts.first?.serverDeleted == true)
    }
}
