import Foundation
import Strata
import StrataServer
import StrataTestSupport
import Testing

@testable import StrataSync

/// A replica survives a crash between the server's save and its acknowledgment, and the
/// server forgetting the history it follows.
@Suite struct ReplicaRecoveryTests {
    @Test func aPushResentAfterACrashIsNotAppliedTwice() throws {
        let fixture = try SyncFixture()
        _ = try fixture.create("/authors", #"{"name": "Ann"}"#)
        let replica = try fixture.replica()
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        let zed = try context.insert("Author", values: ["name": .string("Zed")])
        let book = try context.insert("Book", values: ["title": .string("Once")])
        try book.setObject(zed, forKey: "author")
        try context.save()

        // The push as the replica makes it: planned and stored, sent, saved by the server, and
        // the replica killed before it reads the answer.
        let transaction = try #require(try replica.outbox(limit: 1).first)
        var state = try replica.state()
        let plan = try replica.makePlan(transaction, attempt: 0, overrides: [:], replicaID: state.replicaID)
        state.inFlight = plan.encoded
        try replica.commit(LocalWrite(state: state), "outbox")
        let first = try replica.http.send(
            "POST", "/_batch", json: plan.batchBody, headers: ["Idempotency-Key": plan.key])
        #expect(first.status == 200)
        replica.close()

        let reopened = try fixture.replica()
        #expect(try reopened.pendingTransactionCount() == 1)
        try reopened.synchronize()
        #expect(reopened.statistics.replayedPushes == 1)
        #expect(try reopened.pendingTransactionCount() == 0)
        try fixture.expectConverged(reopened)
        let authors = try fixture.serverObjects("Author").values.filter { $0.objectValue?["name"] == .string("Zed") }
        #expect(authors.count == 1)
        #expect(try fixture.serverObjects("Book").count == 1)
    }

    @Test func aSaveThatPointsAtAKeyBeingReplacedFollowsIt() throws {
        let fixture = try SyncFixture()
        // A local save that lands after the rekeying captured the old object's referrers and
        // removed it, pointing at the old local key (as a save racing the rekeying does).
        let late = Locked<Replica?>(nil)
        let replica = try fixture.replica { configuration in
            configuration.onChange = { _ in
                guard
                    let replica = late.withLock({ value in
                        defer { value = nil }; return value
                    })
                else { return }
                let identifier = replica.coordinator.stores[0].identifier
                let old = ObjectID(store: identifier, entity: "Author", primaryKey: SyncSchema.localKeyBase)
                var values = ObjectValues()
                values.attributes["title"] = .string("Late")
                values.toOne["author"] = .some(old)
                var write = LocalWrite()
                write.put(ObjectID(store: identifier, entity: "Book", primaryKey: 7), values, exists: false)
                try? replica.commit(write, "late save")
            }
        }
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        let zed = try context.insert("Author", values: ["name": .string("Zed")])
        try context.save()
        #expect(zed.objectID.primaryKey == SyncSchema.localKeyBase)
        let transaction = try #require(try replica.outbox(limit: 1).first)
        let plan = try replica.makePlan(
            transaction, attempt: 0, overrides: [:], replicaID: try replica.state().replicaID)
        let answer = try replica.http.send(
            "POST", "/_batch", json: plan.batchBody, headers: ["Idempotency-Key": plan.key])
        try replica.acknowledge(transaction, plan, results: answer.json.objectValue?["results"]?.arrayValue ?? [])
        late.withLock { $0 = replica }
        try replica.finishRekeying()

        let server = try #require(
            fixture.serverObjects("Author").first { $0.value.objectValue?["name"] == .string("Zed") })
        let book = try #require(try SyncFixture.localObjects(replica, "Book")[7]?.objectValue)
        #expect(book["author"] == .integer(server.key))
    }

    @Test func expiredHistorySeedsAgainKeepingUnsentChanges() throws {
        let fixture = try SyncFixture()
        let ann = try fixture.create("/authors", #"{"name": "Ann"}"#)
        let kept = try fixture.create("/books", #"{"title": "Kept", "author": \#(ann)}"#)
        let gone = try fixture.create("/books", #"{"title": "Gone", "author": \#(ann)}"#)
        let replica = try fixture.replica()
        try replica.synchronize()
        // Offline: a local edit and a local insert wait; the server moves on and forgets its history.
        let context = ObjectContext(coordinator: replica.coordinator)
        let identifier = replica.coordinator.stores[0].identifier
        try context.object(with: ObjectID(store: identifier, entity: "Book", primaryKey: kept)).setValue(
            .integer(7), forKey: "pages")
        _ = try context.insert("Tag", values: ["name": .string("offline")])
        try context.save()
        try fixture.send("DELETE", "/books/\(gone)", expect: 204)
        _ = try fixture.create("/authors", #"{"name": "Bob"}"#)
        let coordinator = try #require(fixture.server.server.restService).root.coordinator
        try coordinator.deleteHistory(through: try coordinator.currentHistoryToken())
        #expect(try fixture.client.send("GET", "/_changes?since=\(try #require(replica.serverToken))").status == 410)

        try replica.pull()
        #expect(replica.statistics.seeds == 2)
        #expect(try replica.pendingTransactionCount() == 1)
        try replica.synchronize()
        try fixture.expectConverged(replica)
        #expect(try fixture.serverObjects("Book")[kept]?.objectValue?["pages"] == .integer(7))
        #expect(try fixture.serverObjects("Tag").values.first?.objectValue?["name"] == .string("offline"))
        #expect(try fixture.serverObjects("Author").count == 2)
    }

    @Test func prunedHistoryKeepsUnpushedWrites() throws {
        let fixture = try SyncFixture()
        let replica = try fixture.replica {
            $0.keptHistory = 2
            $0.pushes = false
        }
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        _ = try context.insert("Tag", values: ["name": .string("waiting")])
        try context.save()
        let store = replica.coordinator.stores[0]
        let first = try #require(try store.firstHistoryNumber())
        for index in 0..<10 {
            _ = try fixture.create("/authors", #"{"name": "A\#(index)"}"#)
            try replica.synchronize()
        }
        #expect(try #require(try store.firstHistoryNumber()) > first)
        #expect(try replica.pendingTransactionCount() == 1)
        try replica.push()
        #expect(try fixture.serverObjects("Tag").count == 1)
    }
}
