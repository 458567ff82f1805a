import Foundation
import Strata
import StrataSync
import StrataTestSupport
import Testing

/// A replica seeds from the server's export and follows its change feed.
@Suite struct ReplicaPullTests {
    @Test func seedsFromTheExportThenFollowsTheFeed() throws {
        let fixture = try SyncFixture()
        let ann = try fixture.create("/authors", #"{"name": "Ann"}"#)
        let tag = try fixture.create("/tags", #"{"name": "sf"}"#)
        _ = try fixture.create("/books", #"{"title": "One", "author": \#(ann), "tags": [\#(tag)], "price": "9.50"}"#)
        let replica = try fixture.replica()
        try replica.synchronize()
        #expect(replica.statistics.seeds == 1)
        try fixture.expectConverged(replica)

        let bob = try fixture.create("/authors", #"{"name": "Bob"}"#)
        let two = try fixture.create("/books", #"{"title": "Two", "author": \#(bob)}"#)
        try fixture.send("PATCH", "/books/\(two)", #"{"tags": [\#(tag)], "year": 1999}"#, expect: 200)
        try fixture.send("PATCH", "/authors/\(ann)", #"{"email": "ann@example.org"}"#, expect: 200)
        try fixture.send("DELETE", "/books/1", expect: 204)
        try waitUntil(seconds: 30) {
            try replica.synchronize()
            return try fixture.converged(replica)
        }
        try fixture.expectConverged(replica)
        #expect(replica.statistics.seeds == 1)
        #expect(replica.statistics.pulledChanges >= 4)
    }

    @Test func contextsForgetWhatTheReplicaWrites() throws {
        let fixture = try SyncFixture()
        let ann = try fixture.create("/authors", #"{"name": "Ann"}"#)
        let changed = Locked<[ObjectID]>([])
        let replica = try fixture.replica {
            $0.onChange = { change in
                if case .objects(let ids) = change { changed.withLock { $0 += ids } }
            }
        }
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        let identifier = replica.coordinator.stores[0].identifier
        let author = try context.object(with: ObjectID(store: identifier, entity: "Author", primaryKey: ann))
        #expect(author.string("name") == "Ann")
        changed.withLock { $0 = [] }
        try fixture.send("PATCH", "/authors/\(ann)", #"{"name": "Anna"}"#, expect: 200)
        try waitUntil(seconds: 30) {
            try replica.synchronize()
            return !changed.withLock { $0 }.isEmpty
        }
        context.mergeExternalChanges(.objects(changed.withLock { $0 }))
        #expect(try context.object(with: author.objectID).string("name") == "Anna")
        #expect(changed.withLock { $0 }.allSatisfy { $0.entityName == "Author" })
    }

    @Test func aReplicaThatDoesNotPushTakesTheServersChangesOverLocalOnes() throws {
        let fixture = try SyncFixture()
        let ann = try fixture.create("/authors", #"{"name": "Ann"}"#)
        let replica = try fixture.replica { $0.pushes = false }
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        let identifier = replica.coordinator.stores[0].identifier
        try context.object(with: ObjectID(store: identifier, entity: "Author", primaryKey: ann)).setValue(
            .string("Local"), forKey: "name")
        try context.save()
        try fixture.send("PATCH", "/authors/\(ann)", #"{"name": "Server"}"#, expect: 200)
        try waitUntil(seconds: 30) {
            try replica.synchronize()
            return try fixture.converged(replica)
        }
        #expect(replica.statistics.pushRequests == 0)
    }
}
