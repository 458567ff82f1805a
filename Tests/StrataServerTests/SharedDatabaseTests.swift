import Foundation
import Strata
import StrataTestSupport
import Testing

/// Two `strata serve` processes over one PostgreSQL database (the test run's own cluster).
@Suite(
    .serialized,
    .enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct SharedDatabaseTests {
    /// Two servers over a new schema of the test cluster, each with a data folder of its own in
    /// `folder`, and a client of each.
    static func twoServers(in folder: TemporaryDirectory) throws -> (
        StrataProcess, StrataProcess, TestClient, TestClient
    ) {
        let url = try PostgreSQLTestServer.storeURL().absoluteString
        let servers = try ["a", "b"].map { name in
            try StrataProcess([
                "serve", "--port", "0", "--data-dir", folder.file(name).path, "--store", "Default=\(url)",
            ])
        }
        let clients = try servers.map { server in
            TestClient(port: try #require(server.port(), "\(server.stderr.current)"))
        }
        return (servers[0], servers[1], clients[0], clients[1])
    }

    @Test func twoServersOverOneDatabase() throws {
        let folder = TemporaryDirectory()
        // Started together: the schema is created once, under the advisory lock.
        let (a, b, one, two) = try Self.twoServers(in: folder)
        #expect(!a.stderr.current.contains("password="))

        // A write on one is read on the other at once, also after the other read (and could cache) it.
        let created = try one.send("POST", "/authors", json: #"{"name": "Le Guin"}"#)
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.json.objectValue?["_id"]?.doubleValue.map { Int64($0) })
        #expect(try two.send("GET", "/authors/\(id)").json.objectValue?["name"] == .string("Le Guin"))
        let patched = try one.send("PATCH", "/authors/\(id)", json: #"{"name": "Ursula K. Le Guin"}"#)
        #expect(patched.status == 200)
        #expect(try two.send("GET", "/authors/\(id)").json.objectValue?["name"] == .string("Ursula K. Le Guin"))

        // An If-Match race across the servers: exactly one winner and one 412.
        for round in 0..<10 {
            let etag = try #require(try one.send("GET", "/authors/\(id)").header("ETag"))
            let statuses = Locked<[Int]>([])
            onThreads(2) { index in
                let client = index == 0 ? one : two
                let status =
                    (try? client.send(
                        "PATCH", "/authors/\(id)", json: #"{"name": "r\#(round)-\#(index)"}"#,
                        headers: ["If-Match": etag]
                    ).status) ?? -1
                statuses.withLock { $0.append(status) }
            }
            #expect(statuses.current.sorted() == [200, 412], "round \(round): \(statuses.current)")
        }

        // Concurrent inserts through both lose nothing.
        let acknowledged = Locked<[Int64]>([])
        onThreads(8) { index in
            let client = index % 2 == 0 ? one : two
            for item in 0..<25 {
                guard
                    let response = try? client.send("POST", "/authors", json: #"{"name": "w\#(index)-\#(item)"}"#),
                    response.status == 201, let key = response.json.objectValue?["_id"]?.doubleValue
                else { continue }
                acknowledged.withLock { $0.append(Int64(key)) }
            }
        }
        #expect(acknowledged.current.count == 200)
        #expect(Set(acknowledged.current).count == 200)

        // kill -9 one; the other serves every acknowledged write.
        kill(a.process.processIdentifier, SIGKILL)
        _ = a.waitForExit()
        var missing: [Int64] = []
        for key in acknowledged.current where try two.send("GET", "/authors/\(key)").status != 200 {
            missing.append(key)
        }
        #expect(missing.isEmpty, "\(missing.prefix(5))")
        let total = try two.send("GET", "/authors?limit=1&count=exact").json.objectValue?["total"]
        #expect(total == .integer(201))
        kill(b.process.processIdentifier, SIGINT)
        #expect(b.waitForExit() == 0, "\(b.stderr.current.suffix(2000))")
    }
}

/// Idempotency keys shared by the servers over one PostgreSQL database, and a server whose
/// database stops taking writes.
@Suite(
    .serialized,
    .enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct SharedDatabaseFailoverTests {
    @Test func aRetryOnTheOtherServerReplaysTheFirstAnswer() throws {
        let folder = TemporaryDirectory()
        let (a, b, one, two) = try SharedDatabaseTests.twoServers(in: folder)
        let first = try one.send("POST", "/authors", json: #"{"name": "Once"}"#, headers: ["Idempotency-Key": "k-1"])
        #expect(first.status == 201, "\(first.text)")
        let again = try two.send("POST", "/authors", json: #"{"name": "Once"}"#, headers: ["Idempotency-Key": "k-1"])
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.body == first.body)
        let other = try two.send("POST", "/authors", json: #"{"name": "Twice"}"#, headers: ["Idempotency-Key": "k-1"])
        #expect(other.status == 422, "\(other.text)")
        // Many retries of one key at once across both servers: one write.
        let statuses = Locked<[Int]>([])
        onThreads(8) { index in
            let client = index % 2 == 0 ? one : two
            let status =
                (try? client.send(
                    "POST", "/authors", json: #"{"name": "Raced"}"#, headers: ["Idempotency-Key": "k-race"]
                ).status) ?? -1
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.current.allSatisfy { $0 == 201 || $0 == 409 }, "\(statuses.current)")
        let raced = try one.send("GET", "/authors?name=eq.Raced&count=exact").json.objectValue?["total"]
        #expect(raced == .integer(1))
        for process in [a, b] {
            kill(process.process.processIdentifier, SIGINT)
            #expect(process.waitForExit() == 0, "\(process.stderr.current.suffix(2000))")
        }
    }

    /// The database turns read-only under a running server (a primary demoted): `/ready` says
    /// not ready, writes get 503 with Retry-After (never 500), reads go on; once it takes writes
    /// again, so does the server, without a restart.
    @Test func aDatabaseThatStopsTakingWritesGivesServiceUnavailable() throws {
        let cluster = try PrivatePostgreSQLCluster()
        let folder = TemporaryDirectory()
        let server = try StrataProcess([
            "serve", "--port", "0", "--data-dir", folder.file("a").path, "--store",
            "Default=\(cluster.storeURL().absoluteString)",
        ])
        let client = TestClient(port: try #require(server.port(), "\(server.stderr.current)"))
        #expect(try client.send("GET", "/ready").status == 200)
        let created = try client.send("POST", "/authors", json: #"{"name": "Before"}"#)
        #expect(created.status == 201, "\(created.text)")
        try cluster.set("default_transaction_read_only", "on")
        try waitUntil(seconds: 30) { try client.send("GET", "/ready").status == 503 }
        var refused: ClientResponse?
        try waitUntil(seconds: 30) {
            let response = try client.send("POST", "/authors", json: #"{"name": "During"}"#)
            if response.status != 201 { refused = response }
            return response.status != 201
        }
        #expect(refused?.status == 503, "\(refused?.text ?? "")")
        #expect(refused?.header("Retry-After") != nil)
        #expect(refused?.header("Content-Type") == "application/problem+json")
        #expect(try client.send("GET", "/authors?name=eq.Before").status == 200)
        try cluster.set("default_transaction_read_only", nil)
        try waitUntil(seconds: 30) {
            try client.send("POST", "/authors", json: #"{"name": "After"}"#).status == 201
        }
        try waitUntil(seconds: 10) { try client.send("GET", "/ready").status == 200 }
        kill(server.process.processIdentifier, SIGINT)
        #expect(server.waitForExit() == 0, "\(server.stderr.current.suffix(2000))")
    }
}
