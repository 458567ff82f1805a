import Foundation
import Strata
import StrataServer

/// The cost of persistent history on writes: the same POST against two servers of the same model
/// and options, one recording history (`strata serve`'s default) and one not (`--no-history`),
/// at the same connections.
struct HistoryBench {
    let folder: URL
    let wrk: Wrk
    let settings: BenchCommand.Settings

    /// The issue's target: POST with history at least 0.85× POST without, in the same run.
    static let target = 0.85
    static let connections = 64

    /// A POST scenario: its name in the table, its path and its JSON body.
    struct Post {
        var name: String
        var path: String
        var body: String

        var script: String {
            "wrk.method = 'POST'; wrk.path = '\(path)'; wrk.body = '\(body)'; "
                + "wrk.headers['Content-Type'] = 'application/json'"
        }
    }

    /// The SQLite scenario: the HTTP part's `POST /search-logs` (the Activity store).
    static let sqlitePost = Post(
        name: "POST /search-logs", path: "/search-logs", body: #"{"query": "bench", "results": 1}"#)
    /// The PostgreSQL scenario: the PostgreSQL part's `POST /authors` (the Catalog in PostgreSQL).
    static let postgreSQLPost = Post(name: "PG POST /authors", path: "/authors", body: #"{"name": "bench"}"#)

    /// Both servers over SQLite stores in folders of their own.
    func runSQLite(into table: inout BenchTable) throws {
        try compare(Self.sqlitePost, into: &table) { options, history in
            options.dataDirectory = folder.appendingPathComponent("history-\(history ? "on" : "off")").path
        }
    }

    /// Both servers with the Catalog in PostgreSQL at `uri`, in schemas `schema`_on and
    /// `schema`_off (dropped at the end), the Activity store in SQLite as above.
    func runPostgreSQL(uri: String, schema: String, into table: inout BenchTable) throws {
        let separator = uri.contains("?") ? "&" : "?"
        defer {
            try? RawPostgreSQL.withConnection(uri) {
                try RawPostgreSQL.execute(
                    $0,
                    "SET client_min_messages = warning; DROP SCHEMA IF EXISTS \(schema)_on CASCADE; "
                        + "DROP SCHEMA IF EXISTS \(schema)_off CASCADE")
            }
        }
        try compare(Self.postgreSQLPost, into: &table) { options, history in
            let side = history ? "on" : "off"
            options.dataDirectory = folder.appendingPathComponent("pg-history-\(side)").path
            options.stores["Catalog"] = StoreSpec(uri + separator + "schema=" + schema + "_" + side)
        }
    }

    /// Starts the two servers, runs `post` against each in alternating rounds (which goes first
    /// alternates too) and keeps each side's best, as the other write ratios do: the host's
    /// `fsync` rate moves from minute to minute and only ever takes throughput away. With
    /// `--quick`, one round.
    func compare(
        _ post: Post, into table: inout BenchTable, configure: (inout ServerOptions, _ history: Bool) -> Void
    ) throws {
        var servers: [Bool: StrataServerInstance] = [:]
        defer { for server in servers.values { server.stop() } }
        for history in [true, false] {
            var options = ServerOptions()
            options.port = 0
            options.maxConnections = 4096
            options.history = history
            configure(&options, history)
            let server = StrataServerInstance(model: try ObjectModel.example, options: options, log: { _ in })
            try server.start()
            servers[history] = server
        }
        let rounds = settings.quick ? 1 : HTTPBench.ratioRounds
        var best: [Bool: Wrk.Result] = [:]
        for round in 0..<rounds {
            for history in round % 2 == 0 ? [true, false] : [false, true] {
                let result = try wrk.run(
                    url: "http://127.0.0.1:\(servers[history]!.port)", connections: Self.connections,
                    seconds: settings.duration, script: post.script, folder: folder)
                best[history] = .best(best[history], result)
                if !result.errors.isEmpty {
                    table.notes.append("\(post.name), history \(history ? "on" : "off"): \(result.errors)")
                }
            }
        }
        let on = best[true]!
        let off = best[false]!
        table.rows.append(
            BenchTable.Row(
                scenario: "\(post.name), history on", connections: "\(Self.connections)",
                throughput: on.requestsPerSecond, unit: "req/s", p50: on.p50, p99: on.p99,
                baseline: "the same, history off", baselineValue: off.requestsPerSecond,
                target: (on.requestsPerSecond / off.requestsPerSecond, Self.target, nil), note: on.errors))
        table.notes.append(
            "\(post.name) with history on and off (--no-history): two servers of the same model and options, "
                + "\(rounds) alternating round\(rounds == 1 ? "" : "s") of \(settings.duration) s each, each side keeps its best; "
                + "history off: p50 \(off.p50), p99 \(off.p99)")
    }
}
