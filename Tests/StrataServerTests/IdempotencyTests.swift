import Foundation
import Strata
import StrataServer
import StrataTestSupport
import Testing

/// `Idempotency-Key`: a retried write is answered as the first was and changes nothing.
@Suite struct IdempotencyTests {
    static func key(_ value: String) -> [String: String] { ["Idempotency-Key": value] }

    static func authors(_ client: TestClient) throws -> Int {
        try client.send("GET", "/authors?count=exact").json.objectValue?["total"]?.doubleValue.map { Int($0) } ?? -1
    }

    @Test func aRetryGetsTheFirstAnswerAndAnotherBodyIsRefused() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let first = try client.send("POST", "/authors", json: #"{"name": "Once"}"#, headers: Self.key("k-1"))
        #expect(first.status == 201)
        let again = try client.send("POST", "/authors", json: #"{"name": "Once"}"#, headers: Self.key("k-1"))
        #expect(again.status == 201)
        #expect(again.body == first.body)
        #expect(again.header("Location") == first.header("Location") && again.header("ETag") == first.header("ETag"))
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(try Self.authors(client) == 1)
        // The same key for another request: 422, nothing written.
        let other = try client.send("POST", "/authors", json: #"{"name": "Twice"}"#, headers: Self.key("k-1"))
        #expect(other.status == 422)
        #expect(other.header("Content-Type") == "application/problem+json")
        #expect(try Self.authors(client) == 1)
        // PATCH, DELETE and _batch replay too; an answer that was a refusal replays as one.
        let patch = try client.send("PATCH", "/authors/1", json: #"{"name": "Renamed"}"#, headers: Self.key("k-2"))
        #expect(patch.status == 200)
        #expect(
            try client.send("PATCH", "/authors/1", json: #"{"name": "Renamed"}"#, headers: Self.key("k-2")).body
                == patch.body)
        #expect(try client.send("GET", "/authors/1").json.objectValue?["_version"] == .integer(2))
        let batch = #"{"operations": [{"method": "POST", "path": "/authors", "body": {"name": "B"}}]}"#
        let ran = try client.send("POST", "/_batch", json: batch, headers: Self.key("k-3"))
        #expect(ran.status == 200)
        #expect(try client.send("POST", "/_batch", json: batch, headers: Self.key("k-3")).body == ran.body)
        #expect(try Self.authors(client) == 2)
        let stale = try client.send(
            "DELETE", "/authors/1", headers: Self.key("k-4").merging(["If-Match": "\"1\""]) { a, _ in a })
        #expect(stale.status == 412)
        #expect(
            try client.send(
                "DELETE", "/authors/1", headers: Self.key("k-4").merging(["If-Match": "\"1\""]) { a, _ in a }
            ).status == 412)
        // Keys belong to who sent them; a malformed key is a 400.
        #expect(
            try client.send("POST", "/authors", json: "{}", headers: Self.key(String(repeating: "x", count: 300)))
                .status == 400)
    }

    @Test func keysArePerTokenAndSurviveARestart() throws {
        let folder = TemporaryDirectory()
        let tokens = ["one:write:first-token-0123456789", "two:write:second-token-0123456789"]
        var first: ClientResponse
        do {
            let fixture = try ServerFixture {
                $0.dataDirectory = folder.url.path
                $0.tokens = tokens
            }
            let one = Self.key("shared").merging(["Authorization": "Bearer first-token-0123456789"]) { a, _ in a }
            let two = Self.key("shared").merging(["Authorization": "Bearer second-token-0123456789"]) { a, _ in a }
            first = try fixture.client.send("POST", "/authors", json: #"{"name": "A"}"#, headers: one)
            #expect(first.status == 201)
            #expect(try fixture.client.send("POST", "/authors", json: #"{"name": "A"}"#, headers: two).status == 201)
            fixture.server.stop()
        }
        let restarted = try ServerFixture {
            $0.dataDirectory = folder.url.path
            $0.tokens = tokens
        }
        let one = Self.key("shared").merging(["Authorization": "Bearer first-token-0123456789"]) { a, _ in a }
        let replay = try restarted.client.send("POST", "/authors", json: #"{"name": "A"}"#, headers: one)
        #expect(replay.status == 201 && replay.body == first.body && replay.header("Idempotent-Replayed") == "true")
        let count = try restarted.client.send(
            "GET", "/authors?count=exact", headers: ["Authorization": "Bearer first-token-0123456789"])
        #expect(count.json.objectValue?["total"] == .integer(2))
    }

    @Test func aClaimLeftByAStoppedServerIsReportedAndOneInFlightWaits() throws {
        let folder = TemporaryDirectory()
        let path = folder.file("ledger.sqlite").path
        let ledger = try IdempotencyLedger(path: path)
        #expect(try ledger.claim(scope: "s", key: "k", fingerprint: "f") == .claimed)
        #expect(try ledger.claim(scope: "s", key: "k", fingerprint: "f") == .inFlight)
        #expect(try ledger.claim(scope: "s", key: "k", fingerprint: "g") == .mismatch)
        // Another process (the server after a crash) finds the claim unanswered.
        #expect(try IdempotencyLedger(path: path).claim(scope: "s", key: "k", fingerprint: "f") == .interrupted)
        // A request that changed nothing gives its key up; an answer is kept until its lifetime ends.
        ledger.finish(nil, scope: "s", key: "k")
        #expect(try ledger.claim(scope: "s", key: "k", fingerprint: "f") == .claimed)
        let answer = IdempotencyLedger.Answer(status: 201, headers: [("ETag", "\"1\"")], body: Array("{}".utf8))
        ledger.finish(answer, scope: "s", key: "k")
        #expect(try ledger.claim(scope: "s", key: "k", fingerprint: "f") == .answered(answer))
        let short = try IdempotencyLedger(path: path, lifetime: -1)
        #expect(try short.claim(scope: "s", key: "k", fingerprint: "f") == .claimed)
    }
}

extension IdempotencyTests {
    /// Found by schemathesis: a key on a method a path does not take was checked before the
    /// method, so a reused key answered 422 where the path answers 405.
    @Test func aKeyOnARequestThatIsNoWriteChangesNothingAboutItsAnswer() throws {
        let fixture = try ServerFixture { $0.entityAccess = ["Tag": .readOnly] }
        let client = fixture.client
        #expect(try client.send("POST", "/authors", json: #"{"name": "A"}"#, headers: Self.key("0")).status == 201)
        for (method, path) in [("POST", "/authors/1"), ("PUT", "/_batch"), ("POST", "/tags"), ("PUT", "/authors")] {
            let response = try client.send(method, path, json: #"{"name": "B"}"#, headers: Self.key("0"))
            #expect(response.status == 405, "\(method) \(path): \(response.status)")
        }
        #expect(try client.send("POST", "/nowhere", json: "{}", headers: Self.key("0")).status == 404)
    }
}
