import Foundation
import Strata
import StrataServer
import StrataTestSupport
import Testing

/// `strata replicate` as a process: a live copy of a server that serves what it follows.
@Suite struct SyncReplicateCommandTests {
    /// The status of `GET path` on `port`, 0 when the connection fails.
    static func status(_ port: UInt16, _ path: String) -> Int {
        (try? TestClient(port: port).send("GET", path).status) ?? 0
    }

    @Test func printsItsHelp() throws {
        let usage = try CommandLineTests.run(["help"])
        #expect(usage.output.contains("\n  replicate "))
        #expect(usage.output.split(separator: "\n").allSatisfy { $0.count <= 100 }, "\(usage.output)")
        let help = try CommandLineTests.run(["replicate", "--help"])
        #expect(help.status == 0, "\(help.error)")
        #expect(help.output.hasPrefix("usage: strata replicate "))
        #expect(help.output.split(separator: "\n").allSatisfy { $0.count <= 100 }, "\(help.output)")
        let missing = try CommandLineTests.run(["replicate", "--data-dir", "x"])
        #expect(missing.status == 64 && missing.error.contains("--from URL is required"), "\(missing.error)")
    }

    @Test func followsWritesAndServesThem() throws {
        let origin = try ServerFixture()
        _ = try origin.client.send("POST", "/authors", json: #"{"name": "Seeded"}"#)
        let folder = TemporaryDirectory()
        let replica = try StrataProcess([
            "replicate", "--from", "http://127.0.0.1:\(origin.server.port)", "--data-dir", folder.url.path,
            "--port", "0", "--wait", "5",
        ])
        let port = try #require(replica.port(), "\(replica.stderr.current)")
        try waitUntil(seconds: 30) { Self.status(port, "/authors/1") == 200 }
        // Read-only without --writable.
        #expect(try TestClient(port: port).send("POST", "/authors", json: #"{"name": "No"}"#).status == 405)

        // Each write on the server, then how long until the replica serves it.
        var lags: [Double] = []
        let clock = ContinuousClock()
        for index in 0..<200 {
            let created = try origin.client.send("POST", "/authors", json: #"{"name": "w\#(index)"}"#)
            let id = try #require(
                created.json.objectValue?["_id"].flatMap { json -> Int64? in
                    if case .integer(let id) = json { id } else { nil }
                })
            let start = clock.now
            try waitUntil(seconds: 30) { Self.status(port, "/authors/\(id)") == 200 }
            let lag = clock.now - start
            lags.append(Double(lag.components.seconds) + Double(lag.components.attoseconds) / 1e18)
        }
        lags.sort()
        let p50 = lags[lags.count / 2] * 1000
        let p99 = lags[lags.count * 99 / 100] * 1000
        print(
            "strata replicate lag over \(lags.count) writes: p50 \(String(format: "%.1f", p50)) ms, p99 \(String(format: "%.1f", p99)) ms, max \(String(format: "%.1f", lags.last! * 1000)) ms"
        )
        let listed = try TestClient(port: port).send("GET", "/authors?limit=1000").json.objectValue?["items"]?
            .arrayValue
        #expect(listed?.count == 201)
        replica.process.terminate()
        #expect(replica.waitForExit() == 0)
    }

    @Test func aWritableReplicaSendsItsWritesBack() throws {
        let origin = try ServerFixture()
        let folder = TemporaryDirectory()
        let replica = try StrataProcess([
            "replicate", "--from", "http://127.0.0.1:\(origin.server.port)", "--data-dir", folder.url.path,
            "--port", "0", "--wait", "5", "--writable",
        ])
        let port = try #require(replica.port(), "\(replica.stderr.current)")
        try waitUntil(seconds: 30) { replica.stderr.current.contains("following") }
        let created = try TestClient(port: port).send("POST", "/authors", json: #"{"name": "From the replica"}"#)
        #expect(created.status == 201)
        try waitUntil(seconds: 30) {
            let items = try origin.client.send("GET", "/authors").json.objectValue?["items"]?.arrayValue ?? []
            return items.contains { $0.objectValue?["name"] == .string("From the replica") }
        }
        // The replica's object takes the server's id.
        try waitUntil(seconds: 30) { Self.status(port, "/authors/1") == 200 }
        replica.process.terminate()
        #expect(replica.waitForExit() == 0)
    }

    @Test func onceCatchesUpAndResumesFromItsToken() throws {
        let origin = try ServerFixture()
        _ = try origin.client.send("POST", "/authors", json: #"{"name": "One"}"#)
        let folder = TemporaryDirectory()
        let arguments = [
            "replicate", "--from", "http://127.0.0.1:\(origin.server.port)", "--data-dir", folder.url.path, "--once",
        ]
        let first = try StrataProcess(arguments)
        #expect(first.waitForExit() == 0, "\(first.stderr.current)")
        _ = try origin.client.send("POST", "/authors", json: #"{"name": "Two"}"#)
        let second = try StrataProcess(arguments)
        #expect(second.waitForExit() == 0, "\(second.stderr.current)")
        #expect(second.stderr.current.contains("1 changes applied"), "\(second.stderr.current)")
        // The copy is served by strata serve with the model written beside it.
        let served = try StrataProcess([
            "serve", "--port", "0", "--data-dir", folder.url.path, "--model",
            folder.url.appendingPathComponent("replica-model.json").path,
        ])
        let port = try #require(served.port(), "\(served.stderr.current)")
        let items = try TestClient(port: port).send("GET", "/authors").json.objectValue?["items"]?.arrayValue
        #expect(items?.count == 2)
        #expect(try TestClient(port: port).send("GET", "/strata-sync-states").status == 404)
    }

    @Test func anOfflineCopyEditedLocallySettlesItsConflictOnTheNextRun() throws {
        let origin = try ServerFixture()
        _ = try origin.client.send("POST", "/authors", json: #"{"name": "Base"}"#)
        let folder = TemporaryDirectory()
        let arguments = [
            "replicate", "--from", "http://127.0.0.1:\(origin.server.port)", "--data-dir", folder.url.path, "--once",
            "--writable", "--policy", "Author=local-wins",
        ]
        let first = try StrataProcess(arguments)
        #expect(first.waitForExit() == 0, "\(first.stderr.current)")
        // Edited offline, through a server over the copy; meanwhile the origin changes too.
        let local = try StrataProcess([
            "serve", "--port", "0", "--data-dir", folder.url.path, "--model",
            folder.url.appendingPathComponent("replica-model.json").path,
        ])
        let port = try #require(local.port(), "\(local.stderr.current)")
        #expect(try TestClient(port: port).send("PATCH", "/authors/1", json: #"{"name": "Local"}"#).status == 200)
        local.process.terminate()
        #expect(local.waitForExit() == 0)
        #expect(try origin.client.send("PATCH", "/authors/1", json: #"{"name": "Server"}"#).status == 200)

        let second = try StrataProcess(arguments)
        #expect(second.waitForExit() == 0, "\(second.stderr.current)")
        #expect(
            second.stderr.current.contains(
                "conflict: local update of Author 1, changed on the server, settled local-wins"),
            "\(second.stderr.current)")
        #expect(try origin.client.send("GET", "/authors/1").json.objectValue?["name"] == .string("Local"))
    }

    @Test func aTokenStartsTheFeedThereWithoutTheExport() throws {
        let origin = try ServerFixture()
        _ = try origin.client.send("POST", "/authors", json: #"{"name": "Before"}"#)
        let token = try #require(try origin.client.send("GET", "/authors").header("strata-history-token"))
        _ = try origin.client.send("POST", "/authors", json: #"{"name": "After"}"#)
        let folder = TemporaryDirectory()
        let run = try StrataProcess([
            "replicate", "--from", "http://127.0.0.1:\(origin.server.port)", "--data-dir", folder.url.path, "--once",
            "--token", token,
        ])
        #expect(run.waitForExit() == 0, "\(run.stderr.current)")
        #expect(run.stderr.current.contains("1 changes applied"), "\(run.stderr.current)")
        // Only what came after the token is there.
        let model = try ObjectModel.load(contentsOf: folder.url.appendingPathComponent("replica-model.json"))
        let coordinator = StoreCoordinator(model: model)
        let store = try coordinator.addStore(
            type: .sqlite, url: folder.url.appendingPathComponent("default.sqlite"),
            options: StoreOptions(readOnly: true))
        defer { coordinator.remove(store) }
        let names = try store.fetch(FetchRequest(entityName: "Author")).map { $0[attribute: "name"] }
        #expect(names == [.string("After")])
    }
}
