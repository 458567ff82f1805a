import Foundation
import Strata
import StrataTestSupport
import Testing

/// Two `strata serve` processes over one PostgreSQL database (the test run's own cluster).
@Suite(
    .serialized,
    .enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct SharedDatabaseTests {
    @Test func twoServersOverOneDatabase() throws {
        let folder = TemporaryDirectory()
        let url = try PostgreSQLTestServer.storeURL().absoluteString
        // Started together: the schema is created once, under the advisory lock.
        let a = try StrataProcess([
            "serve", "--port", "0", "--data-dir", folder.file("a").path, "--store", "Default=\(url)",
        ])
        let b = try StrataProcess([
            "serve", "--port", "0", "--data-dir", folder.file("b").path, "--store", "Default=\(url)",
        ])
        let one = TestClient(port: try #require(a.port(), "\(a.stderr.current)"))
        let two = TestClient(port: try #require(b.port(), "\(b.stderr.current)"))
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
