import Foundation
import StrataServer
import StrataTestSupport
import Testing

@testable import Strata

/// `GET /_changes`: the stores' persistent history over HTTP, on a live server.
@Suite struct ChangesFeedTests {
    /// The feed's changes as (entity, op, _id, _version).
    static func summary(_ changes: [JSONValue]) -> [String] {
        changes.map {
            let object = $0.objectValue ?? [:]
            return [
                object["entity"]?.stringValue ?? "?", object["op"]?.stringValue ?? "?",
                object["_id"].map { $0.jsonText } ?? "?", object["_version"].map { $0.jsonText } ?? "?",
            ].joined(separator: " ")
        }
    }

    /// Follows the feed from `since` a page of `limit` at a time until it is empty.
    static func follow(_ client: TestClient, from since: String, limit: Int) throws -> (
        changes: [JSONValue], next: String
    ) {
        var changes: [JSONValue] = []
        var next = since
        for _ in 0..<100 {
            let page = try client.send("GET", "/_changes?since=\(next)&limit=\(limit)")
            #expect(page.status == 200)
            let items = page.json.objectValue?["changes"]?.arrayValue ?? []
            next = page.json.objectValue?["next"]?.stringValue ?? next
            if items.isEmpty { break }
            changes += items
        }
        return (changes, next)
    }

    @Test func theFeedFollowsWritesInCommitOrder() throws {
        let fixture = try ServerFixture { $0.entityAccess = ["SearchLog": .hidden] }
        let client = fixture.client
        let coordinator = try #require(fixture.server.restService).root.coordinator
        let empty = try client.send("GET", "/_changes")
        #expect(empty.status == 200)
        #expect(empty.json.objectValue?["changes"] == .array([]))
        let start = try #require(empty.json.objectValue?["next"]?.stringValue)

        #expect(try client.send("POST", "/authors", json: #"{"name": "Ann"}"#).status == 201)
        #expect(try client.send("PATCH", "/authors/1", json: #"{"name": "Bea"}"#).status == 200)
        #expect(try client.send("POST", "/books", json: #"{"title": "T", "author": 1}"#).status == 201)
        // A hidden entity's changes never appear.
        _ = try coordinator.save(
            SaveRequest(inserts: [StoreRow(id: .temporary(entity: "SearchLog"), attributes: ["query": .string("q")])]))
        #expect(try client.send("DELETE", "/books/1").status == 204)

        let feed = try client.send("GET", "/_changes?since=\(start)")
        #expect(feed.status == 200)
        let changes = feed.json.objectValue?["changes"]?.arrayValue ?? []
        // A book's insert and delete change its author's `books` too (kept by the book's column):
        // the author is recorded as updated in the same transaction, at the version it keeps.
        #expect(
            Self.summary(changes) == [
                "Author insert 1 1", "Author update 1 2", "Book insert 1 1", "Author update 1 2", "Author update 1 2",
                "Book delete 1 1",
            ])
        #expect(changes[1].objectValue?["changed"] == .array([.string("name")]))
        #expect(changes[3].objectValue?["changed"] == .array([.string("books")]))
        #expect(changes[3].objectValue?["token"] == changes[2].objectValue?["token"])
        #expect(changes[5].objectValue?["tombstone"] == .object([:]))
        #expect(changes.allSatisfy { $0.objectValue?["at"]?.stringValue != nil && $0.objectValue?["token"] != nil })
        let next = try #require(feed.json.objectValue?["next"]?.stringValue)
        #expect(changes.last?.objectValue?["token"]?.stringValue == next)
        // Nothing after the end; the same changes a page at a time.
        #expect(try client.send("GET", "/_changes?since=\(next)").json.objectValue?["changes"] == .array([]))
        let paged = try Self.follow(client, from: start, limit: 1)
        #expect(paged.changes == changes)
        // Only some entities.
        let books = try client.send("GET", "/_changes?since=\(start)&entities=Book")
        #expect(
            Self.summary(books.json.objectValue?["changes"]?.arrayValue ?? []) == [
                "Book insert 1 1", "Book delete 1 1",
            ])

        for bad in ["since=nonsense", "limit=0", "entities=SearchLog", "entities=Nope", "what=1"] {
            let response = try client.send("GET", "/_changes?\(bad)")
            #expect(response.status == 400, "\(bad)")
        }
        // History pruned past a token: 410, a problem saying the history expired.
        let second = try #require(changes[1].objectValue?["token"]?.stringValue)
        try coordinator.deleteHistory(through: try #require(HistoryToken(second)))
        let gone = try client.send("GET", "/_changes?since=\(start)")
        #expect(gone.status == 410)
        #expect(gone.header("Content-Type") == "application/problem+json")
        #expect(gone.json.objectValue?["type"]?.stringValue?.hasSuffix("history-expired") == true)
        let resumed = try client.send("GET", "/_changes?since=\(second)")
        #expect(
            Self.summary(resumed.json.objectValue?["changes"]?.arrayValue ?? []) == [
                "Book insert 1 1", "Author update 1 2", "Author update 1 2", "Book delete 1 1",
            ])
    }

    @Test func theFeedNeedsReadScope() throws {
        let fixture = try ServerFixture(options: AccessControlTests.tokens)
        let client = fixture.client
        #expect(try client.send("GET", "/_changes").status == 401)
        let allowed = try client.send("GET", "/_changes", headers: AccessControlTests.bearer(AccessControlTests.reader))
        #expect(allowed.status == 200)
    }

    @Test func aServerWithoutHistoryHasNoFeed() throws {
        let fixture = try ServerFixture { $0.history = false }
        #expect(try fixture.client.send("GET", "/_changes").status == 404)
        #expect(try fixture.client.send("POST", "/authors", json: #"{"name": "Ann"}"#).status == 201)
        #expect(try fixture.server.restService?.root.coordinator.history().isEmpty == true)
    }
}
