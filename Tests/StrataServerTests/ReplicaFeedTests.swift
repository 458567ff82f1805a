import Foundation
import StrataServer
import StrataTestSupport
import Testing

@testable import Strata

/// A client that lists everything once, at a history token, and then applies the feed from that
/// token ends with exactly the server's objects, while eight writers create, patch, delete and
/// batch across both stores.
@Suite struct ReplicaFeedTests {
    /// The objects a replica holds: per entity, by `_id`, the object as the server renders it.
    struct Replica {
        var objects: [String: [Int64: JSONValue]] = [:]
        /// Changes applied, by op.
        var applied: [String: Int] = [:]

        /// Applies one change of the feed (`include=object`): a delete removes the object, an
        /// insert or update takes the object's current state (the change's own state or newer).
        mutating func apply(_ change: JSONValue) {
            guard let members = change.objectValue, let entity = members["entity"]?.stringValue,
                let id = members["_id"]?.doubleValue.map({ Int64($0) }), let op = members["op"]?.stringValue
            else { return }
            applied[op, default: 0] += 1
            switch op {
            case "delete": objects[entity]?[id] = nil
            default:
                guard let object = members["object"], object != .null else {
                    // Deleted since: its delete follows in the feed.
                    objects[entity]?[id] = nil
                    return
                }
                objects[entity, default: [:]][id] = object
            }
        }
    }

    static let entities = ["Author": "/authors", "Book": "/books", "SearchLog": "/search-logs"]

    /// Every object of every entity, a page at a time, and the token of the first page (taken
    /// before anything the lists show, so the feed after it misses nothing).
    static func snapshot(_ client: TestClient) throws -> (Replica, String) {
        var replica = Replica()
        var token: String?
        for (entity, path) in entities.sorted(by: { $0.key < $1.key }) {
            var target: String? = "\(path)?limit=50&order=_id"
            while let next = target {
                let page = try client.send("GET", next)
                #expect(page.status == 200, "\(page.text)")
                if token == nil { token = page.header("Strata-History-Token") }
                for object in page.json.objectValue?["items"]?.arrayValue ?? [] {
                    guard let id = object.objectValue?["_id"]?.doubleValue else { continue }
                    replica.objects[entity, default: [:]][Int64(id)] = object
                }
                target = page.json.objectValue?["next"]?.stringValue
            }
        }
        return (replica, try #require(token))
    }

    /// The server's objects now, read whole.
    static func serverState(_ client: TestClient) throws -> [String: [Int64: JSONValue]] {
        try snapshot(client).0.objects
    }

    /// Eight writers, `rounds` rounds each: an author (Catalog) and a search log (Activity), a
    /// patch of the author, a batch across both stores (a book of the author and a patch of the
    /// log), and every third round a delete of both (the author's books go with it).
    static func write(_ client: TestClient, rounds: Int, progress: Locked<Int>) {
        onThreads(8) { writer in
            for round in 0..<rounds {
                defer { progress.withLock { $0 += 1 } }
                guard
                    let author = try? client.send("POST", "/authors", json: #"{"name": "w\#(writer)-\#(round)"}"#),
                    let authorID = author.json.objectValue?["_id"]?.doubleValue.map({ Int64($0) }),
                    let log = try? client.send("POST", "/search-logs", json: #"{"query": "q\#(writer)-\#(round)"}"#),
                    let logID = log.json.objectValue?["_id"]?.doubleValue.map({ Int64($0) })
                else { continue }
                _ = try? client.send("PATCH", "/authors/\(authorID)", json: #"{"email": "w\#(writer)@example.org"}"#)
                let batch = """
                    {"operations": [
                      {"method": "POST", "path": "/books", "body": {"title": "b\(round)", "author": \(authorID)}},
                      {"method": "PATCH", "path": "/search-logs/\(logID)", "body": {"results": \(round)}}]}
                    """
                _ = try? client.send("POST", "/_batch", json: batch)
                if round % 3 == 2 {
                    _ = try? client.send("DELETE", "/authors/\(authorID)")
                    _ = try? client.send("DELETE", "/search-logs/\(logID)")
                }
            }
        }
    }

    @Test(arguments: [false, true])
    func aSnapshotAndTheFeedFromItsTokenMakeAnExactReplica(streamed: Bool) throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let rounds = 9 * stressFactor
        let progress = Locked(0)
        let outcome = Locked<(Replica, String)?>(nil)
        let failure = Locked<String?>(nil)
        onThreads(2) { index in
            if index == 0 { return Self.write(client, rounds: rounds, progress: progress) }
            // The snapshot is taken while the writers write.
            let deadline = Date().addingTimeInterval(60)
            while progress.current < 8, Date() < deadline { usleep(2_000) }
            do {
                outcome.withLock { $0 = try? Self.snapshot(client) }
            }
            if outcome.current == nil { failure.withLock { $0 = "the snapshot failed" } }
        }
        #expect(failure.current == nil)
        var (replica, token) = try #require(outcome.current)
        let coordinator = try #require(fixture.server.restService?.root.coordinator)
        let final = try coordinator.currentHistoryToken()
        if streamed {
            try followStream(fixture, from: token, until: final, into: &replica)
        } else {
            var next = token
            while true {
                let page = try client.send("GET", "/_changes?since=\(next)&include=object&limit=37")
                #expect(page.status == 200)
                let changes = page.json.objectValue?["changes"]?.arrayValue ?? []
                for change in changes { replica.apply(change) }
                next = try #require(page.json.objectValue?["next"]?.stringValue)
                if changes.isEmpty { break }
            }
            token = next
        }
        let server = try Self.serverState(client)
        #expect(replica.applied["delete", default: 0] > 0 && replica.applied["update", default: 0] > 0)
        for entity in Self.entities.keys.sorted() {
            let mine = replica.objects[entity] ?? [:]
            let theirs = server[entity] ?? [:]
            #expect(mine.count == theirs.count, "\(entity): \(mine.count) in the replica, \(theirs.count) stored")
            for (id, object) in theirs where mine[id] != object {
                Issue.record("\(entity) \(id): replica \(mine[id]?.jsonText ?? "none"), stored \(object.jsonText)")
            }
        }
    }

    /// Applies the feed read as server-sent events from `token` until it covers `final`, dropping
    /// the connection every few events and resuming with `Last-Event-ID`.
    func followStream(
        _ fixture: ServerFixture, from token: String, until final: HistoryToken, into replica: inout Replica
    )
        throws
    {
        var lastID = token
        var reconnections = 0
        while !(HistoryToken(lastID)?.covers(final) ?? false) {
            let stream = try EventStreamClient(
                port: fixture.server.port, target: "/_changes?include=object", lastEventID: lastID)
            #expect(stream.status == 200)
            let events = try stream.collect { events in
                events.count == 23 || (events.last?.id.flatMap(HistoryToken.init)?.covers(final) ?? false)
            }
            stream.close()
            reconnections += 1
            for event in events {
                replica.apply(event.json)
                lastID = event.id ?? lastID
            }
            if events.isEmpty { break }
        }
        #expect(reconnections > 3, "the stream was dropped and resumed several times")
    }
}
