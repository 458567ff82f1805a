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

/// A replica seeded from the entities' lists (``SeedSource/lists``) rather than the export.
@Suite struct ReplicaListSeedTests {
    @Test func seedsFromPagedListsThenFollowsTheFeed() throws {
        let fixture = try SyncFixture()
        // Past one page of 1,000, with relationships both ways and a many-to-many.
        let names = (0..<1_203).map { #"{"name": "Author \#($0)"}"# }
        try fixture.send("POST", "/authors/_bulk", "[" + names.joined(separator: ",") + "]", expect: 201)
        let tag = try fixture.create("/tags", #"{"name": "sf"}"#)
        _ = try fixture.create("/books", #"{"title": "One", "author": 7, "tags": [\#(tag)], "price": "9.50"}"#)
        _ = try fixture.create("/books", #"{"title": "Two", "author": 1203}"#)
        try fixture.send("DELETE", "/authors/2", expect: 204)
        let replica = try fixture.replica { $0.seedSource = .lists }
        try replica.synchronize()
        #expect(replica.statistics.seeds == 1)
        try fixture.expectConverged(replica)
        // The feed follows from the first page's token.
        try fixture.send("PATCH", "/authors/1203", #"{"email": "last@example.org"}"#, expect: 200)
        try fixture.send("DELETE", "/books/1", expect: 204)
        try waitUntil(seconds: 30) {
            try replica.synchronize()
            return try fixture.converged(replica)
        }
        try fixture.expectConverged(replica)
        #expect(replica.statistics.seeds == 1)
    }

    @Test func aPredicateFiltersTheListsOnTheServer() throws {
        let fixture = try SyncFixture()
        for name in ["Ann", "Bob", "Abe"] { _ = try fixture.create("/authors", #"{"name": "\#(name)"}"#) }
        let replica = try fixture.replica {
            $0.seedSource = .lists
            $0.entities = ["Author": "name BEGINSWITH 'A'"]
        }
        try replica.synchronize()
        let local = try SyncFixture.localObjects(replica, "Author")
        #expect(Set(local.values.compactMap { $0.objectValue?["name"]?.stringValue }) == ["Ann", "Abe"])
    }
}
