import Foundation
import StrataServer
import StrataTestSupport
import Testing

@testable import Strata

/// `--history-retention` and `--history-max-changes`: the server's background pruner forgets
/// expired history, and `/_changes` answers a token it no longer has with 410, on live servers
/// over SQLite and PostgreSQL.
@Suite struct HistoryExpiryTests {
    /// SQLite, and PostgreSQL where the test run has a cluster.
    static var stores: [String] { PostgreSQLTestServer.requirement.runs ? ["sqlite", "postgresql"] : ["sqlite"] }

    /// A server whose Catalog store is in `store`, pruning every 20 ms, with `modify` applied.
    static func server(_ store: String, _ modify: (inout ServerOptions) -> Void) throws -> ServerFixture {
        let catalog = store == "postgresql" ? try StoreSpec(PostgreSQLTestServer.storeURL().absoluteString) : nil
        return try ServerFixture { options in
            if let catalog { options.stores["Catalog"] = catalog }
            options.historyPruneInterval = 0.02
            modify(&options)
        }
    }

    /// The feed's first page from `since` (from the oldest kept when nil).
    static func feed(_ client: TestClient, since: String? = nil) throws -> ClientResponse {
        try client.send("GET", "/_changes" + (since.map { "?since=\($0)" } ?? ""))
    }

    /// The `Catalog` store's identifier.
    static func catalog(_ fixture: ServerFixture) throws -> String {
        let coordinator = try #require(fixture.server.restService).root.coordinator
        return try #require(coordinator.stores.first { $0.configuration == "Catalog" }).identifier
    }

    @Test(arguments: stores) func historyPastItsRetentionIsPrunedAndItsTokensAreGone(store: String) throws {
        let fixture = try Self.server(store) {
            $0.historyRetention = 0.3
            $0.historyMaxChanges = nil
        }
        let client = fixture.client
        let start = try #require(Self.feed(client).json.objectValue?["next"]?.stringValue)
        for name in ["Ann", "Bea", "Cy"] {
            #expect(try client.send("POST", "/authors", json: #"{"name": "\#(name)"}"#).status == 201)
        }
        #expect(try client.send("PATCH", "/authors/1", json: #"{"name": "Ada"}"#).status == 200)
        #expect(try client.send("DELETE", "/authors/3").status == 204)

        // Once the first transaction is pruned, the token before it is gone: 410, a problem that
        // says so and where to start again.
        var gone: ClientResponse?
        try waitUntil(seconds: 30) {
            let response = try Self.feed(client, since: start)
            if response.status == 410 { gone = response }
            return gone != nil
        }
        let problem = try #require(gone)
        #expect(problem.header("Content-Type") == "application/problem+json")
        let body = problem.json.objectValue ?? [:]
        #expect(body["type"]?.stringValue == "https://strata.dev/problems/history-expired")
        #expect(body["status"] == .integer(410))
        let detail = body["detail"]?.stringValue ?? ""
        #expect(detail.contains("read the objects again") && detail.contains("follow /_changes"), "\(detail)")
        // `oldest` is a token the feed takes. With a retention of 0.3 s the pruner may pass again
        // before the next request on a loaded machine; then the answer is 410 again with a later
        // `oldest`, which must be taken in turn.
        var oldest = try #require(body["oldest"]?.stringValue)
        var resumed = false
        for _ in 0..<20 where !resumed {
            let response = try Self.feed(client, since: oldest)
            if response.status == 200 {
                resumed = true
            } else {
                #expect(response.status == 410)
                let later = try #require(response.json.objectValue?["oldest"]?.stringValue)
                #expect(later != oldest, "a 410 for '\(oldest)' named the same token as oldest")
                oldest = later
            }
        }
        #expect(resumed, "no token named by oldest was taken")

        // Every transaction goes in time; the objects stay, and the feed starts after the last.
        let identifier = try Self.catalog(fixture)
        try waitUntil(seconds: 30) { fixture.server.prunedHistory(store: identifier) == 5 }
        let empty = try Self.feed(client)
        #expect(empty.json.objectValue?["changes"] == .array([]))
        #expect(empty.json.objectValue?["next"]?.stringValue?.contains("\(identifier):5") == true)
        let names = try client.send("GET", "/authors?order=_id").json.objectValue?["items"]?.arrayValue?.map {
            $0.objectValue?["name"]?.stringValue ?? "?"
        }
        #expect(names == ["Ada", "Bea"])
        let metrics = try client.send("GET", "/metrics").text
        #expect(
            metrics.contains(
                #"strata_history_pruned_transactions_total{store="\#(identifier)",configuration="Catalog"} 5"#),
            "\(metrics)")
        #expect(!fixture.logLines.current.contains { $0.contains("cannot prune") })
    }

    @Test(arguments: stores) func aCapKeepsTheNewestChangesInWholeTransactions(store: String) throws {
        let fixture = try Self.server(store) {
            $0.historyRetention = nil
            $0.historyMaxChanges = 4
        }
        let client = fixture.client
        let start = try #require(Self.feed(client).json.objectValue?["next"]?.stringValue)
        #expect(try client.send("POST", "/authors", json: #"{"name": "A1"}"#).status == 201)
        #expect(try client.send("POST", "/authors", json: #"{"name": "A2"}"#).status == 201)
        let bulk = #"[{"name": "B1"}, {"name": "B2"}, {"name": "B3"}]"#
        #expect(try client.send("POST", "/authors/_bulk", json: bulk).status == 201)
        // The newest 4 changes: A2's transaction and the bulk one; A1's goes.
        try waitUntil(seconds: 30) { try Self.feed(client, since: start).status == 410 }
        let kept = try Self.feed(client).json.objectValue?["changes"]?.arrayValue ?? []
        #expect(
            ChangesFeedTests.summary(kept) == [
                "Author insert 2 1", "Author insert 3 1", "Author insert 4 1", "Author insert 5 1",
            ])
        #expect(fixture.server.prunedHistory(store: try Self.catalog(fixture)) == 1)
    }

    @Test func aServerStoppedTwiceStopsItsPrunerOnce() throws {
        let fixture = try Self.server("sqlite") { $0.historyMaxChanges = 1 }
        let server = fixture.server
        let stopped = Locked(0)
        Thread.detachNewThread {
            for _ in 0..<2 {
                server.stop()
                stopped.withLock { $0 += 1 }
            }
        }
        try waitUntil(seconds: 30) { stopped.current == 2 }
    }

    @Test func durationsTheRetentionTakes() {
        let valid: [String: Double] = [
            "7d": 604_800, "12h": 43_200, "30m": 1_800, "3600s": 3_600, "3600": 3_600, "1.5h": 5_400, "0": 0,
            "off": 0, "OFF": 0, " 2d ": 172_800,
        ]
        for (text, seconds) in valid { #expect(ServerOptions.seconds(inDuration: text) == seconds, "\(text)") }
        for text in ["", "d", "7x", "-1d", "1e3", "inf", "nan", "7 d", "1.2.3h", "99999999999d"] {
            #expect(ServerOptions.seconds(inDuration: text) == nil, "\(text)")
        }
        let defaults = ServerOptions()
        #expect(defaults.historyRetention == 7 * 86_400 && defaults.historyMaxChanges == 1_000_000)
    }

    @Test func theCommandLineSetsRetentionAndCap() throws {
        let folder = TemporaryDirectory()
        let arguments = ["serve", "--port", "0", "--data-dir", folder.url.path, "--durability", "normal"]
        var server = try StrataProcess(arguments)
        var client = TestClient(port: try #require(server.port(), "\(server.stderr.current)"))
        let start = try #require(Self.feed(client).json.objectValue?["next"]?.stringValue)
        for name in ["A", "B", "C"] {
            #expect(try client.send("POST", "/authors", json: #"{"name": "\#(name)"}"#).status == 201)
        }
        server.process.terminate()
        #expect(server.waitForExit() == 0)

        // Started again with a cap of one change: the round at start prunes the first two.
        server = try StrataProcess(
            arguments + ["--history-max-changes", "1"], environment: ["STRATA_HISTORY_RETENTION": "12h"])
        client = TestClient(port: try #require(server.port(), "\(server.stderr.current)"))
        try waitUntil(seconds: 30) { try Self.feed(client, since: start).status == 410 }
        let kept = try Self.feed(client).json.objectValue?["changes"]?.arrayValue ?? []
        #expect(ChangesFeedTests.summary(kept) == ["Author insert 3 1"])
        server.process.terminate()
        #expect(server.waitForExit() == 0)

        for (option, value) in [
            ("--history-retention", "7x"), ("--history-retention", "-1d"), ("--history-max-changes", "-3"),
            ("--history-max-changes", "many"),
        ] {
            let refused = try CommandLineTests.run(["serve", "--port", "0", option, value])
            #expect(refused.status != 0, "\(option) \(value)")
            #expect(refused.error.contains(option) && refused.error.contains(value), "\(refused.error)")
        }
        let help = try CommandLineTests.run(["serve", "--help"]).output
        #expect(help.contains("--history-retention") && help.contains("STRATA_HISTORY_MAX_CHANGES"))
    }
}

/// Two servers over one PostgreSQL database, both pruning its history while both take writes.
@Suite(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct SharedHistoryExpiryTests {
    @Test func twoServersPruneOneDatabaseOnceAndLeaveNoHole() throws {
        let spec = try #require(StoreSpec(PostgreSQLTestServer.storeURL().absoluteString))
        let servers = try (0..<2).map { _ in
            try ServerFixture { options in
                options.stores["Default"] = spec
                options.historyRetention = nil
                options.historyMaxChanges = 5
                options.historyPruneInterval = 0.005
            }
        }
        let failed = Locked(0)
        onThreads(4) { index in
            let client = servers[index % 2].client
            for item in 0..<25 {
                let status = (try? client.send("POST", "/tags", json: #"{"name": "t\#(index)-\#(item)"}"#))?.status
                if status != 201 { failed.withLock { $0 += 1 } }
            }
        }
        #expect(failed.current == 0)
        let coordinator = try #require(servers[0].server.restService).root.coordinator
        let store = try #require(coordinator.historyStores.first)
        // Saves arriving together are committed together: 100 changes in as many transactions or fewer.
        let last = try store.lastHistoryNumber()
        #expect(last <= 100)
        let cap = HistoryRetention(maxChanges: 5)
        try waitUntil(seconds: 30) {
            guard let first = try store.firstHistoryNumber() else { return false }
            return try first > store.expiredHistoryNumber(cap)
        }
        let kept = try coordinator.history()
        let first = try #require(kept.first?.number)
        // Each transaction before the first kept was pruned by one server exactly, and what is
        // kept has no hole: the newest transactions, at most 5 changes.
        try waitUntil(seconds: 30) {
            servers.map { $0.server.prunedHistory(store: store.identifier) }.reduce(0, +) == Int(first - 1)
        }
        #expect(kept.map(\.number) == Array(first...last))
        let changes = kept.map(\.changes.count).reduce(0, +)
        // A save holds at most 4 changes (4 writers): the newest 2 to 5 changes are kept.
        #expect((2...5).contains(changes), "\(kept)")
        for server in servers {
            let feed = try server.client.send("GET", "/_changes").json.objectValue?["changes"]?.arrayValue ?? []
            #expect(feed.count == changes)
            #expect(!server.logLines.current.contains { $0.contains("cannot prune") }, "\(server.logLines.current)")
        }
    }
}
