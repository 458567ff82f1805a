import Foundation
import StrataServer
import StrataTestSupport
import Synchronization
import Testing

@testable import Strata

/// The feed's waiting forms (server-sent events, long-polls) and the `Strata-History-Token` every
/// response carries, on a live server.
@Suite struct ChangeStreamTests {
    /// The paths of the example model's entities, by entity name.
    static let paths = ["Author": "/authors", "Book": "/books", "Tag": "/tags", "SearchLog": "/search-logs"]

    @Test func eventsFollowWritesAndResumeAfterTheLastEventID() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let stream = try EventStreamClient(port: fixture.server.port, target: "/_changes")
        #expect(stream.status == 200)
        #expect(stream.headers["content-type"] == "text/event-stream")
        #expect(stream.headers["strata-history-token"] != nil)

        #expect(try client.send("POST", "/authors", json: #"{"name": "Ann"}"#).status == 201)
        #expect(try client.send("PATCH", "/authors/1", json: #"{"name": "Bea"}"#).status == 200)
        #expect(try client.send("POST", "/search-logs", json: #"{"query": "q"}"#).status == 201)
        let events = try stream.collect { $0.count == 3 }
        #expect(events.map { $0.event } == ["change", "change", "change"])
        #expect(
            ChangesFeedTests.summary(events.map(\.json)) == [
                "Author insert 1 1", "Author update 1 2", "SearchLog insert 1 1",
            ])
        // Each event's id is its token, the same the JSON feed gives.
        #expect(events.allSatisfy { $0.id == $0.json.objectValue?["token"]?.stringValue })
        stream.close()

        // A client that saw the first event and reconnects gets exactly the rest, and what
        // committed while it was away.
        #expect(try client.send("DELETE", "/authors/1").status == 204)
        let resumed = try EventStreamClient(port: fixture.server.port, target: "/_changes", lastEventID: events[0].id)
        let rest = try resumed.collect { $0.count == 3 }
        #expect(
            ChangesFeedTests.summary(rest.map(\.json)) == [
                "Author update 1 2", "SearchLog insert 1 1", "Author delete 1 2",
            ])
        #expect(rest.map(\.id) == [events[1].id, events[2].id, rest[2].id])

        // Only some entities, with each object's current state.
        let books = try EventStreamClient(
            port: fixture.server.port, target: "/_changes?entities=Author&include=object", lastEventID: events[0].id)
        #expect(try client.send("POST", "/authors", json: #"{"name": "Cy"}"#).status == 201)
        let authors = try books.collect { $0.count == 3 }
        #expect(
            ChangesFeedTests.summary(authors.map(\.json)) == [
                "Author update 1 2", "Author delete 1 2", "Author insert 2 1",
            ])
        #expect(authors[0].json.objectValue?["object"] == .null)
        #expect(authors[2].json.objectValue?["object"]?.objectValue?["name"] == .string("Cy"))

        // A token older than the history kept is the problem, not a stream.
        let startText = try #require(stream.headers["strata-history-token"])
        let start = try #require(HistoryToken(startText))
        let secondID = try #require(events[1].id)
        try fixture.server.restService?.root.coordinator.deleteHistory(through: try #require(HistoryToken(secondID)))
        let expired = try EventStreamClient(port: fixture.server.port, target: "/_changes?since=\(start)")
        #expect(expired.status == 410)
    }

    @Test func heartbeatsKeepAnIdleStreamOpenAndAStopEndsIt() throws {
        let fixture = try ServerFixture()
        let stream = try EventStreamClient(port: fixture.server.port, target: "/_changes", receiveTimeout: 30)
        // The opening comment, then the first tick's heartbeat (the first comes at once).
        try stream.readComments(atLeast: 2)
        #expect(stream.comments >= 2)
        #expect(try fixture.client.send("POST", "/authors", json: #"{"name": "Ann"}"#).status == 201)
        #expect(ChangesFeedTests.summary(try stream.collect { $0.count == 1 }.map(\.json)) == ["Author insert 1 1"])
        fixture.server.stop()
        #expect(try stream.next() == nil, "a stopping server ends the stream")
    }

    @Test func aLongPollAnswersWhenAChangeCommits() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let first = try client.send("GET", "/_changes")
        let start = try #require(first.json.objectValue?["next"]?.stringValue)
        // Nothing new: the wait ends with an empty page whose `next` is where it started.
        let idle = try client.send("GET", "/_changes?since=\(start)&wait=1")
        #expect(idle.status == 200)
        #expect(idle.json.objectValue?["changes"] == .array([]))
        #expect(idle.json.objectValue?["next"]?.stringValue == start)

        // A waiting poll gets the change committed while it waits (or at once, if it committed
        // before the poll arrived: the same page either way).
        let answer = Locked<ClientResponse?>(nil)
        onThreads(2) { index in
            if index == 0 {
                answer.withLock { $0 = try? client.send("GET", "/_changes?since=\(start)&wait=30") }
            } else {
                _ = try? client.send("POST", "/authors", json: #"{"name": "Ann"}"#)
            }
        }
        let page = try #require(answer.current)
        #expect(page.status == 200)
        #expect(ChangesFeedTests.summary(page.json.objectValue?["changes"]?.arrayValue ?? []) == ["Author insert 1 1"])
        // A poll for other entities keeps waiting past that change.
        let other = try client.send("GET", "/_changes?since=\(start)&entities=SearchLog&wait=1")
        #expect(other.json.objectValue?["changes"] == .array([]))
        for bad in ["wait=-1", "wait=61", "wait=soon", "include=everything"] {
            #expect(try client.send("GET", "/_changes?\(bad)").status == 400, "\(bad)")
        }
    }

    @Test func everyResponseCarriesTheTokenOfTheStateItShowsOrProduced() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let read = try client.send("GET", "/authors")
        let before = try #require(read.header("Strata-History-Token"))
        let created = try client.send("POST", "/authors", json: #"{"name": "Ann"}"#)
        #expect(created.status == 201)
        let produced = try #require(created.header("Strata-History-Token"))
        // The write's token covers its own change: the feed after it does not hold it, the feed
        // after the earlier read does.
        let after = try client.send("GET", "/_changes?since=\(produced)")
        #expect(after.json.objectValue?["changes"] == .array([]))
        let since = try client.send("GET", "/_changes?since=\(before)")
        #expect(ChangesFeedTests.summary(since.json.objectValue?["changes"]?.arrayValue ?? []) == ["Author insert 1 1"])
        for target in ["/authors/1", "/authors?name=Ann", "/", "/authors/1/books"] {
            let response = try client.send("GET", target)
            #expect(response.header("Strata-History-Token") == produced, "\(target)")
        }
        let batch = try client.send(
            "POST", "/_batch",
            json: #"{"operations": [{"method": "POST", "path": "/search-logs", "body": {"query": "q"}}]}"#)
        let batchText = try #require(batch.header("Strata-History-Token"))
        let batchToken = try #require(HistoryToken(batchText))
        let producedToken = try #require(HistoryToken(produced))
        #expect(batchToken.covers(producedToken))
        #expect(batchToken != HistoryToken(produced))
        // A refused write carries the token of the state it left (unchanged).
        let refused = try client.send("POST", "/authors", json: #"{"name": ""}"#)
        #expect(refused.status == 422)
        #expect(refused.header("Strata-History-Token") == batchToken.description)
        // Without history there is no token.
        let plain = try ServerFixture { $0.history = false }
        #expect(try plain.client.send("GET", "/authors").header("Strata-History-Token") == nil)
    }
}
