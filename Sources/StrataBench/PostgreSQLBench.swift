import CLibPQ
import Dispatch
import Foundation
import Strata
import StrataPGCluster
import StrataServer

/// HTTP scenarios with the catalogue in PostgreSQL, beside what libpq alone does against the same
/// server in the same run.
struct PostgreSQLBench {
    let folder: URL
    let wrk: Wrk
    let settings: BenchCommand.Settings

    func run(into table: inout BenchTable) throws {
        var cluster: ScratchCluster?
        let uri: String
        if let given = settings.postgresql {
            uri = given
        } else {
            do throws(ScratchCluster.Failure) {
                _ = try ScratchCluster.serverBinaries()
            } catch {
                table.notes.append("PostgreSQL scenarios skipped: \(error.message) (or give --postgresql URI)")
                return
            }
            // PostgreSQL's durable defaults, so commits cost what they cost in production.
            cluster = try ScratchCluster.start(durable: true)
            uri = cluster!.databaseURI
        }
        defer { cluster?.stop() }
        let schema = "strata_bench_\(UUID().uuidString.prefix(8).lowercased())"
        if settings.history {
            // First: the list and feed scenarios below leave requests running after wrk stops.
            try HistoryBench(folder: folder, wrk: wrk, settings: settings).runPostgreSQL(
                uri: uri, schema: schema + "_history", into: &table)
        }
        guard settings.postgreSQL else { return }
        let raw = try RawPostgreSQL(uri: uri, schema: schema)
        defer { raw.dropSchema() }
        var single = try raw.autocommitInserts(connections: 1, seconds: 2)
        let parallel = try raw.autocommitInserts(connections: 64, seconds: 2)
        let narrowLookups = try raw.pointSelects(connections: 64, seconds: 2)

        var options = ServerOptions()
        options.port = 0
        options.dataDirectory = folder.appendingPathComponent("postgresql").path
        options.maxConnections = 4096
        let separator = uri.contains("?") ? "&" : "?"
        options.stores["Catalog"] = StoreSpec(uri + separator + "schema=" + schema + "_catalog")
        let server = StrataServerInstance(model: try ObjectModel.example, options: options, log: { _ in })
        try server.start()
        defer { server.stop() }
        try HTTPBench.seed(server)
        let version = server.restService?.root.coordinator.stores.compactMap {
            ($0 as? PostgreSQLStore)?.serverVersionText
        }.first
        let base = "http://127.0.0.1:\(server.port)"
        let randomBook = "math.random(1, \(HTTPBench.seedBooks))"
        let get = "request = function() return wrk.format('GET', '/books/' .. \(randomBook)) end"
        let (lookups, bestGet) = try readRounds(raw, base: base, table: "\"\(schema)_catalog\".\"Book\"", get: get)
        let post =
            #"wrk.method = 'POST'; wrk.path = '/authors'; wrk.body = '{"name": "bench"}'; wrk.headers['Content-Type'] = 'application/json'"#
        // POST's target is a ratio to libpq's single-connection commits: both run in alternating
        // rounds and keep their best, as the SQLite write ratios do (the commit rate moves).
        var bestPost: Wrk.Result?
        let rounds = settings.quick ? 0 : HTTPBench.ratioRounds
        for _ in 0..<rounds {
            single = max(single, try raw.autocommitInserts(connections: 1, seconds: 2))
            let result = try wrk.run(
                url: base, connections: 64, seconds: settings.duration, script: post, folder: folder)
            bestPost = .best(bestPost, result)
        }
        table.notes.append(
            "\(version ?? "PostgreSQL") \(cluster == nil ? "at --postgresql" : "in a scratch cluster with its durable defaults (fsync, synchronous_commit on)"); "
                + "libpq baselines: 1-row autocommit INSERTs \(BenchTable.format(single)) rows/s on 1 connection, "
                + "\(BenchTable.format(parallel)) rows/s on 64; primary-key SELECTs of the served books \(BenchTable.format(lookups))/s on 64 "
                + "(of a 4-column table of 1,000 rows: \(BenchTable.format(narrowLookups))/s)"
        )
        table.notes.append(
            "PG GET by id and libpq's primary-key SELECTs (PQexecParams, unprepared, as plain libpq sends them; the same rows, all columns, keys uniformly random over the \(HTTPBench.seedBooks) books) "
                + (settings.quick
                    ? "ran once each, one after the other"
                    : "ran in \(HTTPBench.ratioRounds) alternating rounds; each keeps its best")
        )

        if rounds > 0 {
            table.notes.append(
                "PG POST and libpq's 1-connection INSERTs ran in \(rounds) alternating rounds; each keeps its best (the INSERTs: best of \(rounds + 1) runs of 2 s)"
            )
        }
        let scenarios: [(name: String, script: String, baseline: String, value: Double, target: Double?)] = [
            ("PG GET /books/{id}", get, "libpq PK SELECTs, 64 conns", lookups, 0.7),
            ("PG POST /authors", post, "libpq 1-row autocommit INSERTs, 1 conn", single, 3),
            (
                "PG PATCH /books/{id}",
                "request = function() return wrk.format('PATCH', '/books/' .. \(randomBook), {['Content-Type'] = 'application/json'}, '{\"rating\": ' .. math.random(0, 5) .. '}') end",
                "libpq 1-row autocommit INSERTs, 1 conn", single, nil
            ),
        ]
        for scenario in scenarios + Self.readScenarios(byID: bestGet?.requestsPerSecond ?? lookups) {
            let result =
                try (scenario.script == post ? bestPost : scenario.script == get ? bestGet : nil)
                ?? wrk.run(
                    url: base, connections: 64, seconds: settings.duration, script: scenario.script, folder: folder)
            var row = BenchTable.Row(
                scenario: scenario.name, connections: "64", throughput: result.requestsPerSecond, unit: "req/s",
                p50: result.p50, p99: result.p99, baseline: scenario.baseline, baselineValue: scenario.value,
                target: nil, note: result.errors)
            row.target = (result.requestsPerSecond / scenario.value, scenario.target, nil)
            if !result.errors.isEmpty { table.notes.append("\(scenario.name): \(result.errors)") }
            table.rows.append(row)
        }
    }
}

extension PostgreSQLBench {
    /// Lists and the history feed, measured beside GET by id's rate `byID` (no target).
    static func readScenarios(byID: Double) -> [(
        name: String, script: String, baseline: String, value: Double, target: Double?
    )] {
        [
            (
                "PG GET /books?year=gt.2000&order=year.desc&limit=20",
                "request = function() return wrk.format('GET', '/books?year=gt.2000&order=year.desc&limit=20') end",
                "PG GET by id", byID, nil
            ),
            (
                "PG GET /_changes?limit=100",
                "request = function() return wrk.format('GET', '/_changes?limit=100') end",
                "PG GET by id", byID, nil
            ),
        ]
    }

    /// GET by id's target is a ratio to libpq's primary-key SELECTs of the same rows (the books
    /// the server serves, every column of their `table`, keys drawn at random from the same range,
    /// on as many connections): both run in alternating rounds and keep their best.
    func readRounds(_ raw: RawPostgreSQL, base: String, table: String, get: String) throws -> (Double, Wrk.Result?) {
        var lookups = 0.0
        var best: Wrk.Result?
        for _ in 0..<(settings.quick ? 1 : HTTPBench.ratioRounds) {
            lookups = max(
                lookups,
                try raw.pointSelects(table: table, keys: HTTPBench.seedBooks, connections: 64, seconds: 2))
            let result = try wrk.run(
                url: base, connections: 64, seconds: settings.duration, script: get, folder: folder)
            best = .best(best, result)
        }
        return (lookups, best)
    }
}

/// libpq alone: what the PostgreSQL server does for clients that add nothing.
struct RawPostgreSQL {
    let uri: String
    let schema: String

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(uri: String, schema: String) throws {
        self.uri = uri
        self.schema = schema
        try Self.withConnection(uri) { connection in
            try Self.execute(
                connection,
                "CREATE SCHEMA \(schema); CREATE TABLE \(schema).book (id bigserial PRIMARY KEY, version bigint NOT NULL, title text NOT NULL, year integer);"
                    + " INSERT INTO \(schema).book (version, title, year) SELECT 1, 'Book ' || n, 1900 + n % 120 FROM generate_series(1, 1000) n"
            )
        }
    }

    func dropSchema() {
        try? Self.withConnection(uri) {
            try Self.execute($0, "SET client_min_messages = warning; DROP SCHEMA \(schema) CASCADE")
        }
    }

    /// Single-row INSERTs, each its own transaction, on `connections` connections at once.
    func autocommitInserts(connections: Int, seconds: Double) throws -> Double {
        try parallel(connections: connections, seconds: seconds) { connection, _ in
            try Self.execute(
                connection, "INSERT INTO \(schema).book (version, title, year) VALUES (1, $1, 2000)", ["raw"])
        }
    }

    /// Primary-key lookups of the seeded rows on `connections` connections at once: of the
    /// bench's own 4-column table by default, else of `table` (its key `_pk`), keys 1...`keys`
    /// drawn at random.
    func pointSelects(table: String? = nil, keys: Int = 1000, connections: Int, seconds: Double) throws -> Double {
        let sql =
            table.map { "SELECT * FROM \($0) WHERE \"_pk\" = $1" }
            ?? "SELECT id, version, title, year FROM \(schema).book WHERE id = $1"
        return try parallel(connections: connections, seconds: seconds) { connection, index in
            let key = table == nil ? 1 + index % keys : Int.random(in: 1...keys)
            try Self.execute(connection, sql, [String(key)])
        }
    }

    /// Runs `body` in a loop on each of `connections` threads (a connection each) for `seconds`;
    /// the calls per second of them all.
    private func parallel(
        connections: Int, seconds: Double, _ body: @escaping @Sendable (OpaquePointer, Int) throws -> Void
    ) throws -> Double {
        let counts = Counter()
        let group = DispatchGroup()
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        for worker in 0..<connections {
            group.enter()
            let uri = self.uri
            let thread = Thread {
                defer { group.leave() }
                do {
                    try Self.withConnection(uri) { connection in
                        var index = worker * 7919
                        while DispatchTime.now().uptimeNanoseconds < end {
                            try body(connection, index)
                            index += 1
                            counts.add()
                        }
                    }
                } catch {
                    counts.fail("\(error)")
                }
            }
            thread.start()
        }
        group.wait()
        if let failure = counts.failure { throw Failure(description: failure) }
        return Double(counts.total) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }

    static func withConnection(_ uri: String, _ body: (OpaquePointer) throws -> Void) throws {
        guard let connection = PQconnectdb(uri) else { throw Failure(description: "libpq: out of memory") }
        defer { PQfinish(connection) }
        guard PQstatus(connection) == CONNECTION_OK else {
            throw Failure(description: "libpq: " + String(cString: PQerrorMessage(connection)))
        }
        try body(connection)
    }

    static func execute(_ connection: OpaquePointer, _ sql: String, _ parameters: [String] = []) throws {
        let copies = parameters.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        var values = copies.map { UnsafePointer<CChar>($0) }
        // Without parameters through PQexec, which also runs several statements.
        let result =
            parameters.isEmpty
            ? PQexec(connection, sql)
            : PQexecParams(connection, sql, Int32(parameters.count), nil, &values, nil, nil, 0)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw Failure(description: "libpq: " + String(cString: PQerrorMessage(connection)))
        }
    }
}

/// Calls counted across threads.
private final class Counter: @unchecked Sendable {
    // Safe to share: guarded by `lock`.
    private let lock = NSLock()
    private var count = 0
    private var firstFailure: String?

    func add() {
        lock.lock()
        count += 1
        lock.unlock()
    }

    func fail(_ message: String) {
        lock.lock()
        if firstFailure == nil { firstFailure = message }
        lock.unlock()
    }

    var total: Int { lock.withLock { count } }
    var failure: String? { lock.withLock { firstFailure } }
}
