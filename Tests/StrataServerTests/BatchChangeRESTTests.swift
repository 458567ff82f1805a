import Foundation
import StrataServer
import StrataTestSupport
import Testing

@testable import Strata

/// `PATCH` and `DELETE` of a filtered collection on a live server (the example model).
@Suite struct BatchChangeRESTTests {
    /// Ann (books from 1900, 1940, 2000) and Bo (one from 1930, tagged `classic`: at version 2).
    static func seed(_ client: TestClient) throws {
        #expect(try client.send("POST", "/authors", json: #"{"name": "Ann"}"#).status == 201)
        #expect(try client.send("POST", "/authors", json: #"{"name": "Bo"}"#).status == 201)
        for (title, year, author) in [("A1", 1900, 1), ("A2", 1940, 1), ("A3", 2000, 1), ("B1", 1930, 2)] {
            let body = #"{"title": "\#(title)", "year": \#(year), "author": \#(author)}"#
            #expect(try client.send("POST", "/books", json: body).status == 201)
        }
        #expect(try client.send("POST", "/tags", json: #"{"name": "classic", "books": [4]}"#).status == 201)
        #expect(try client.send("POST", "/tags", json: #"{"name": "unused"}"#).status == 201)
    }

    /// Every book as (title, available, version), by title.
    static func books(_ client: TestClient) throws -> [String] {
        let items = try client.send("GET", "/books?order=title").json.objectValue?["items"]?.arrayValue ?? []
        return items.map {
            let object = $0.objectValue ?? [:]
            return
                "\(object["title"]?.stringValue ?? "?") \(object["available"]?.jsonText ?? "?") v\(object["_version"]?.jsonText ?? "?")"
        }
    }

    static func count(_ response: ClientResponse) -> Int64? {
        if case .integer(let count)? = response.json.objectValue?["count"] { return count }
        return nil
    }

    @Test func patchChangesEveryMatchedObjectAndTheFeedSeesEachOne() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        try Self.seed(client)
        let start = try #require(try client.send("GET", "/_changes").json.objectValue?["next"]?.stringValue)
        let patched = try client.send("PATCH", "/books?year=lt.1950", json: #"{"available": false}"#)
        #expect(patched.status == 200)
        #expect(Self.count(patched) == 3)
        #expect(patched.header("Strata-History-Token") != nil)
        #expect(try Self.books(client) == ["A1 false v2", "A2 false v2", "A3 true v1", "B1 false v3"])
        let feed = try ChangesFeedTests.follow(client, from: start, limit: 100).changes
        #expect(
            ChangesFeedTests.summary(feed).sorted() == ["Book update 1 2", "Book update 2 2", "Book update 4 3"])
        // A read by id answers the new state (the read cache saw the change).
        #expect(try client.send("GET", "/books/1").json.objectValue?["available"] == .bool(false))
    }

    @Test func aFilterIsRequiredUnlessEverythingIsAskedFor() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        try Self.seed(client)
        for method in ["PATCH", "DELETE"] {
            let refused = try client.send(method, "/books", json: #"{"available": false}"#)
            #expect(refused.status == 400)
            #expect(refused.json.objectValue?["detail"]?.stringValue?.contains("where=TRUEPREDICATE") == true)
        }
        let ordered = try client.send("PATCH", "/books?year=gt.0&order=title", json: #"{"available": false}"#)
        #expect(ordered.status == 400)
        let every = try client.send("PATCH", "/books?where=TRUEPREDICATE", json: #"{"available": false}"#)
        #expect(Self.count(every) == 4)
        #expect(try Self.books(client) == ["A1 false v2", "A2 false v2", "A3 false v2", "B1 false v3"])
    }

    @Test func aBrokenRuleRefusesTheWholeChange() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        try Self.seed(client)
        let before = try fixture.dataDump()
        let invalid = try client.send("PATCH", "/books?year=lt.1950", json: #"{"year": 5000}"#)
        #expect(invalid.status == 422)
        #expect(invalid.json.objectValue?["errors"]?.arrayValue?.first?.objectValue?["code"] == .string("max"))
        let required = try client.send("PATCH", "/books?year=lt.1950", json: #"{"title": null}"#)
        #expect(required.status == 422)
        let relationship = try client.send("PATCH", "/books?year=lt.1950", json: #"{"author": 2}"#)
        #expect(relationship.status == 422)
        let unique = try client.send("PATCH", "/books?author=eq.1", json: #"{"title": "Same"}"#)
        #expect(unique.status == 409)
        // The tag denies while it holds a book: 409, nothing deleted.
        let denied = try client.send("DELETE", "/tags?name=like.*")
        #expect(denied.status == 409)
        #expect(try fixture.dataDump() == before)
        let unused = try client.send("DELETE", "/tags?name=eq.unused")
        #expect(unused.status == 200 && Self.count(unused) == 1)
    }

    @Test func deleteCascadesAndAnswersWhatItDeleted() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        try Self.seed(client)
        let deleted = try client.send(
            "DELETE", "/authors?name=eq.Bo", headers: ["Prefer": "return=representation"])
        #expect(deleted.status == 200)
        #expect(deleted.header("Preference-Applied") == "return=representation")
        let items = deleted.json.objectValue?["items"]?.arrayValue ?? []
        #expect(items.map { $0.objectValue?["name"] } == [.string("Bo")])
        #expect(try Self.books(client).count == 3)
        // The tag let go of the cascaded book.
        #expect(try client.send("GET", "/tags/1").json.objectValue?["books"] == .array([]))
        let minimal = try client.send("DELETE", "/books?year=lt.1920", headers: ["Prefer": "return=minimal"])
        #expect(minimal.status == 204 && minimal.body.isEmpty)
        #expect(try Self.books(client).count == 2)
    }

    @Test func maxAffectedRefusesWhenMoreMatch() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        try Self.seed(client)
        let before = try fixture.dataDump()
        let limited = ["Prefer": "handling=strict, max-affected=2"]
        let refused = try client.send("PATCH", "/books?year=lt.1950", json: #"{"available": false}"#, headers: limited)
        #expect(refused.status == 412)
        #expect(try client.send("DELETE", "/books?year=lt.1950", headers: limited).status == 412)
        #expect(try fixture.dataDump() == before)
        let bad = try client.send("DELETE", "/books?year=lt.1950", headers: ["Prefer": "max-affected=many"])
        #expect(bad.status == 400)
        let strict = try client.send(
            "DELETE", "/books?year=lt.1950", headers: ["Prefer": "handling=strict, tx=rollback"])
        #expect(strict.status == 400)
        let fits = try client.send(
            "PATCH", "/books?year=lt.1950", json: #"{"available": false}"#,
            headers: ["Prefer": "max-affected=3, return=representation"])
        #expect(fits.status == 200)
        #expect(fits.header("Preference-Applied") == "max-affected=3, return=representation")
        let versions = (fits.json.objectValue?["items"]?.arrayValue ?? []).map { $0.objectValue?["_version"] }
        #expect(versions == [.integer(2), .integer(2), .integer(3)])
    }

    @Test func batchOperationsChangeCollectionsWithTheOthers() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        try Self.seed(client)
        let batch = #"""
            {"operations": [
              {"method": "POST", "path": "/books", "body": {"title": "New", "year": 1800, "author": 1}},
              {"method": "PATCH", "path": "/books?year=lt.1950&author=eq.1", "body": {"available": false}},
              {"method": "DELETE", "path": "/tags?name=eq.unused"}
            ]}
            """#
        let ran = try client.send("POST", "/_batch", json: batch)
        #expect(ran.status == 200)
        let results = ran.json.objectValue?["results"]?.arrayValue ?? []
        #expect(results.map { $0.objectValue?["body"]?.objectValue?["count"] } == [nil, .integer(3), .integer(1)])
        #expect(try Self.books(client).filter { $0.contains("false") }.count == 3)
        // One refused operation: nothing of the batch is saved.
        let before = try fixture.dataDump()
        let denied = #"""
            {"operations": [
              {"method": "PATCH", "path": "/books?where=TRUEPREDICATE", "body": {"available": true}},
              {"method": "DELETE", "path": "/tags?name=eq.classic"}
            ]}
            """#
        #expect(try client.send("POST", "/_batch", json: denied).status == 409)
        #expect(try fixture.dataDump() == before)
        let queried = #"{"operations": [{"method": "GET", "path": "/books/1?x=1"}]}"#
        #expect(try client.send("POST", "/_batch", json: queried).status == 400)
    }

    @Test func anIdempotencyKeyReplaysTheFirstAnswer() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        try Self.seed(client)
        let key = ["Idempotency-Key": "batch-1"]
        let first = try client.send("PATCH", "/books?year=lt.1950", json: #"{"available": false}"#, headers: key)
        let again = try client.send("PATCH", "/books?year=lt.1950", json: #"{"available": false}"#, headers: key)
        #expect(first.status == 200 && again.status == 200 && again.body == first.body)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(try Self.books(client) == ["A1 false v2", "A2 false v2", "A3 true v1", "B1 false v3"])
    }

    @Test func readOnlyEntitiesRefuseBatchChanges() throws {
        let fixture = try ServerFixture { $0.entityAccess = ["Book": .readOnly] }
        let client = fixture.client
        let refused = try client.send("PATCH", "/books?year=lt.1950", json: #"{"available": false}"#)
        #expect(refused.status == 405)
        #expect(try client.send("DELETE", "/books?year=lt.1950").status == 405)
    }

    /// Batch and single PATCHes of the same few objects at once: every write gets its own version
    /// step, and the feed holds each step once.
    @Test func concurrentBatchAndSinglePatchesLoseNothing() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        try Self.seed(client)
        let start = try #require(try client.send("GET", "/_changes").json.objectValue?["next"]?.stringValue)
        var initial: [Int: Int64] = [:]
        for id in 1...4 {
            guard case .integer(let version)? = try client.send("GET", "/books/\(id)").json.objectValue?["_version"]
            else { continue }
            initial[id] = version
        }
        let rounds = 8 * stressFactor
        let updates = Locked<[Int: Int]>([:])  // book id → successful writes that changed it
        onThreads(4) { thread in
            for round in 0..<rounds {
                if thread % 2 == 0 {
                    let response = try? client.send(
                        "PATCH", "/books?year=lt.1950", json: #"{"rating": \#(Double(round % 5))}"#)
                    if response?.status == 200 { updates.withLock { for id in [1, 2, 4] { $0[id, default: 0] += 1 } } }
                } else {
                    let id = [1, 2, 3, 4][round % 4]
                    let response = try? client.send(
                        "PATCH", "/books/\(id)", json: #"{"pages": \#(thread * 100 + round + 1)}"#)
                    if response?.status == 200 { updates.withLock { $0[id, default: 0] += 1 } }
                }
            }
        }
        let counted = updates.withLock { $0 }
        let feed = try ChangesFeedTests.follow(client, from: start, limit: 1000).changes
        for id in 1...4 {
            let version = try client.send("GET", "/books/\(id)").json.objectValue?["_version"]
            let last = (initial[id] ?? 0) + Int64(counted[id] ?? 0)
            #expect(version == .integer(last))
            let steps = feed.compactMap { change -> Int64? in
                guard let object = change.objectValue, object["entity"] == .string("Book"),
                    object["_id"] == .integer(Int64(id)), case .integer(let step)? = object["_version"]
                else { return nil }
                return step
            }
            #expect(steps == Array(stride(from: (initial[id] ?? 0) + 1, through: last, by: 1)))
        }
    }

    /// An entity with no attribute a patch can set (as `Marker` in Tests/Fixtures/CoreData/
    /// Leniency.xcdatamodel): every batch `PATCH` body would be refused, so the collection takes
    /// no `PATCH` (405 naming what it allows, in `_batch` too) and the document offers none; it
    /// still takes a batch `DELETE`.
    @Test func aCollectionWithNothingToSetTakesNoBatchPatch() throws {
        let json = #"""
            {"name": "Markers", "entities": [
              {"name": "Marker", "attributes": [], "relationships": []},
              {"name": "Note", "attributes": [{"name": "text", "type": "string", "optional": true}], "relationships": []}
            ]}
            """#
        let fixture = try ServerFixture(model: try ObjectModel.load(json: Array(json.utf8)))
        let client = fixture.client
        #expect(try client.send("POST", "/markers", json: "{}").status == 201)
        let patch = try client.send("PATCH", "/markers?where=TRUEPREDICATE", json: "{}")
        #expect(patch.status == 405)
        #expect(patch.header("Allow")?.contains("PATCH") == false)
        #expect(patch.header("Allow")?.contains("DELETE") == true)
        let batch = try client.send(
            "POST", "/_batch",
            json: #"{"operations": [{"method": "PATCH", "path": "/markers?where=TRUEPREDICATE", "body": {}}]}"#)
        #expect(batch.status == 405)
        let document = try client.send("GET", "/openapi.json").json.objectValue?["paths"]?.objectValue
        #expect(document?["/markers"]?.objectValue?["patch"] == nil)
        #expect(document?["/markers"]?.objectValue?["delete"] != nil)
        #expect(document?["/notes"]?.objectValue?["patch"] != nil)
        let delete = try client.send("DELETE", "/markers?where=TRUEPREDICATE")
        #expect(delete.status == 200)
        #expect(Self.count(delete) == 1)
    }
}
