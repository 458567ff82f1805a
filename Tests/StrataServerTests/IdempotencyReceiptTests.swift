import Foundation
import StrataServer
import StrataTestSupport
import Testing

@testable import Strata

/// A server that stops after saving a write but before keeping its answer in the idempotency
/// ledger: the retry is answered from the receipt the save kept, as the first answer was, and
/// saves nothing again; a write that was claimed but never saved runs when retried.
@Suite struct IdempotencyReceiptTests {
    static func key(_ value: String) -> [String: String] { ["Idempotency-Key": value] }

    /// Forgets the answers the ledger in `folder` keeps for `keys`, as a server that stopped
    /// between the commit and the answer leaves them: claimed, unanswered.
    static func forgetAnswers(_ keys: [String], in folder: TemporaryDirectory) throws {
        let db = try SQLiteConnection(path: folder.url.appendingPathComponent("_idempotency.sqlite").path)
        for key in keys {
            try db.run(
                "UPDATE idempotency SET status = NULL, headers = NULL, body = NULL WHERE key = ?", [.text(key)])
            #expect(db.changes == 1, "the ledger holds \(key)")
        }
    }

    static func restarted(_ folder: TemporaryDirectory) throws -> ServerFixture {
        try ServerFixture { $0.dataDirectory = folder.url.path }
    }

    @Test func aSavedWriteWhoseAnswerWasLostIsAnsweredFromItsReceipt() throws {
        let folder = TemporaryDirectory()
        var first: [String: ClientResponse] = [:]
        let batch =
            #"{"operations": [{"method": "POST", "path": "/authors", "body": {"name": "B"}}, "#
            + #"{"method": "PATCH", "path": "/authors/1", "body": {"name": "A2"}}, "#
            + #"{"method": "GET", "path": "/authors/1"}]}"#
        do {
            let fixture = try ServerFixture { $0.dataDirectory = folder.url.path }
            let client = fixture.client
            first["post"] = try client.send("POST", "/authors", json: #"{"name": "A"}"#, headers: Self.key("post"))
            first["batch"] = try client.send("POST", "/_batch", json: batch, headers: Self.key("batch"))
            first["patch"] = try client.send(
                "PATCH", "/authors/2", json: #"{"name": "B2"}"#,
                headers: Self.key("patch").merging(["Prefer": "return=minimal"]) { a, _ in a })
            first["delete"] = try client.send("DELETE", "/authors/2", headers: Self.key("delete"))
            fixture.server.stop()
        }
        #expect(first.values.allSatisfy { (200..<300).contains($0.status) })
        try Self.forgetAnswers(["post", "batch", "patch", "delete"], in: folder)
        let fixture = try Self.restarted(folder)
        let client = fixture.client
        // Author 1 changed after the batch (version 3): the batch's answer shows the version it gave.
        #expect(try client.send("PATCH", "/authors/1", json: #"{"name": "A3"}"#).status == 200)
        let post = try client.send("POST", "/authors", json: #"{"name": "A"}"#, headers: Self.key("post"))
        #expect(post.status == 201 && post.header("Idempotent-Replayed") == "true")
        #expect(post.header("Location") == first["post"]!.header("Location"))
        #expect(post.header("ETag") == first["post"]!.header("ETag"))
        #expect(post.json.objectValue?["_id"] == .integer(1) && post.json.objectValue?["_version"] == .integer(1))
        let replayedBatch = try client.send("POST", "/_batch", json: batch, headers: Self.key("batch"))
        #expect(replayedBatch.status == 200 && replayedBatch.header("Idempotent-Replayed") == "true")
        let results = replayedBatch.json.objectValue?["results"]?.arrayValue ?? []
        let firstResults = first["batch"]!.json.objectValue?["results"]?.arrayValue ?? []
        #expect(results.count == 3)
        // The created author is unchanged since (deleted later, though: its ID and version).
        #expect(results.first?.objectValue?["status"] == .integer(201))
        #expect(
            results.first?.objectValue?["body"]?.objectValue?["_id"]
                == firstResults.first?.objectValue?["body"]?.objectValue?["_id"])
        #expect(results.map { $0.objectValue?["status"] } == firstResults.map { $0.objectValue?["status"] })
        let patched = results[1].objectValue?["body"]?.objectValue
        #expect(patched?["_version"] == .integer(2) && patched?["name"] == nil)
        #expect(results[1].objectValue?["headers"]?.objectValue?["ETag"] == .string("\"2\""))
        let minimal = try client.send(
            "PATCH", "/authors/2", json: #"{"name": "B2"}"#,
            headers: Self.key("patch").merging(["Prefer": "return=minimal"]) { a, _ in a })
        #expect(minimal.status == first["patch"]!.status && minimal.body.isEmpty)
        #expect(minimal.header("ETag") == first["patch"]!.header("ETag"))
        let deleted = try client.send("DELETE", "/authors/2", headers: Self.key("delete"))
        #expect(deleted.status == 204 && deleted.header("Idempotent-Replayed") == "true")
        // Nothing saved twice: author 1 alone, at the version the later PATCH gave it.
        let list = try client.send("GET", "/authors").json.objectValue?["items"]?.arrayValue ?? []
        #expect(list.map { $0.objectValue?["_id"] } == [.integer(1)])
        #expect(list.first?.objectValue?["_version"] == .integer(3))
        // The rebuilt answer is kept: asked again, the same bytes.
        #expect(try client.send("POST", "/_batch", json: batch, headers: Self.key("batch")).body == replayedBatch.body)
    }

    @Test func aClaimedWriteThatWasNotSavedRunsWhenRetried() throws {
        let folder = TemporaryDirectory()
        do {
            let fixture = try ServerFixture { $0.dataDirectory = folder.url.path }
            #expect(try fixture.client.send("POST", "/authors", json: #"{"name": "A"}"#).status == 201)
            fixture.server.stop()
        }
        // A claim with no save behind it (the server stopped before the commit), for the
        // fingerprint the retry will have: taken from a real claim whose answer is then dropped.
        do {
            let fixture = try Self.restarted(folder)
            #expect(
                try fixture.client.send("POST", "/authors", json: #"{"name": "B"}"#, headers: Self.key("lost"))
                    .status == 201)
            #expect(try fixture.client.send("DELETE", "/authors/2").status == 204)
            fixture.server.stop()
        }
        try Self.forgetAnswers(["lost"], in: folder)
        // Its receipt is gone too, as if the save had never committed.
        var removed = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
        where name.hasSuffix(".sqlite") && name != "_idempotency.sqlite" {
            let db = try SQLiteConnection(path: folder.url.appendingPathComponent(name).path)
            let tables = try db.query("SELECT name FROM sqlite_master WHERE name = '_strata_receipts'") { $0.text(0) }
            guard !tables.isEmpty else { continue }
            try db.run("DELETE FROM _strata_receipts WHERE key = ?", [.text("lost")])
            removed += db.changes
        }
        #expect(removed == 1)
        let fixture = try Self.restarted(folder)
        let retry = try fixture.client.send("POST", "/authors", json: #"{"name": "B"}"#, headers: Self.key("lost"))
        #expect(retry.status == 201 && retry.header("Idempotent-Replayed") == nil)
        let again = try fixture.client.send("POST", "/authors", json: #"{"name": "B"}"#, headers: Self.key("lost"))
        #expect(again.header("Idempotent-Replayed") == "true" && again.body == retry.body)
        #expect(try fixture.client.send("GET", "/authors?count=exact").json.objectValue?["total"] == .integer(2))
    }

    /// Two attempts of one request that both ran (the second took the key over while the first,
    /// slow, had not answered): the second's save fails on the first's receipt, and it answers
    /// as the first did. Here the ledger lost the key altogether, so the retry runs.
    @Test func aRetryThatRunsAfterTheFirstWasSavedAnswersAsTheFirst() throws {
        let folder = TemporaryDirectory()
        let batch = #"{"operations": [{"method": "POST", "path": "/authors", "body": {"name": "Once"}}]}"#
        var first: ClientResponse
        do {
            let fixture = try ServerFixture { $0.dataDirectory = folder.url.path }
            first = try fixture.client.send("POST", "/_batch", json: batch, headers: Self.key("raced"))
            #expect(
                try fixture.client.send("POST", "/authors", json: #"{"name": "One"}"#, headers: Self.key("single"))
                    .status == 201)
            fixture.server.stop()
        }
        let ledger = try SQLiteConnection(path: folder.url.appendingPathComponent("_idempotency.sqlite").path)
        try ledger.run("DELETE FROM idempotency")
        #expect(ledger.changes == 2)
        let fixture = try Self.restarted(folder)
        let again = try fixture.client.send("POST", "/_batch", json: batch, headers: Self.key("raced"))
        #expect(again.status == 200 && again.header("Idempotent-Replayed") == "true")
        #expect(again.json == first.json)
        let single = try fixture.client.send("POST", "/authors", json: #"{"name": "One"}"#, headers: Self.key("single"))
        #expect(single.status == 201 && single.header("Idempotent-Replayed") == "true")
        #expect(single.json.objectValue?["_id"] == .integer(2))
        #expect(try fixture.client.send("GET", "/authors?count=exact").json.objectValue?["total"] == .integer(2))
    }

    /// `PATCH` and `DELETE` of a filtered collection keep a receipt too: the retry after the
    /// crash is answered with the count (and the objects) and changes nothing again.
    @Test func aBatchChangeWhoseAnswerWasLostIsAnsweredFromItsReceipt() throws {
        let folder = TemporaryDirectory()
        let representation = Self.key("patch").merging(["Prefer": "return=representation"]) { a, _ in a }
        var patched: ClientResponse
        do {
            let fixture = try ServerFixture { $0.dataDirectory = folder.url.path }
            let client = fixture.client
            for name in ["Ann", "Bob", "Cy"] {
                #expect(try client.send("POST", "/authors", json: #"{"name": "\#(name)"}"#).status == 201)
            }
            patched = try client.send(
                "PATCH", "/authors?name=in.(Ann,Bob)", json: #"{"born": "1950-01-01T00:00:00Z"}"#,
                headers: representation)
            #expect(patched.status == 200)
            #expect(try client.send("DELETE", "/authors?name=eq.Cy", headers: Self.key("delete")).status == 200)
            fixture.server.stop()
        }
        try Self.forgetAnswers(["patch", "delete"], in: folder)
        let fixture = try Self.restarted(folder)
        let client = fixture.client
        // A new author the DELETE's filter matches: a second run would delete it.
        #expect(try client.send("POST", "/authors", json: #"{"name": "Cy"}"#).status == 201)
        let patch = try client.send(
            "PATCH", "/authors?name=in.(Ann,Bob)", json: #"{"born": "1950-01-01T00:00:00Z"}"#, headers: representation)
        #expect(patch.status == 200 && patch.header("Idempotent-Replayed") == "true")
        #expect(patch.json == patched.json)
        let delete = try client.send("DELETE", "/authors?name=eq.Cy", headers: Self.key("delete"))
        #expect(delete.status == 200 && delete.header("Idempotent-Replayed") == "true")
        #expect(delete.json == .object(["count": .integer(1)]))
        let items = try client.send("GET", "/authors?order=name").json.objectValue?["items"]?.arrayValue ?? []
        #expect(items.map { $0.objectValue?["name"] } == [.string("Ann"), .string("Bob"), .string("Cy")])
        #expect(items.map { $0.objectValue?["_version"] } == [.integer(2), .integer(2), .integer(1)])
    }
}
