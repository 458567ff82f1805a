import Foundation
import Strata
import StrataServer

/// HTTP scenarios against a server started in this process, each beside its baseline.
struct HTTPBench {
    let folder: URL
    let wrk: Wrk
    let settings: BenchCommand.Settings

    static let seedBooks = 10_000

    /// Alternating rounds of the scenarios compared with each other, at 64 connections.
    static let ratioRounds = 3

    /// The issue's targets against raw FULL single-row commits, by scenario: POST ≥ 3×, PATCH ≥ 2×.
    static func writeTarget(_ scenario: String) -> Double? {
        switch scenario {
        case "POST /search-logs": 3
        case "PATCH /books/{id}": 2
        default: nil
        }
    }

    /// A scenario: its wrk script, and what it is compared with.
    struct Scenario {
        /// What a scenario is compared with: the ceiling (or `/live`), GET by id, or raw commits.
        enum Baseline { case live, byID, commits }
        var name: String
        var script: String
        var baseline: Baseline
    }

    /// The scenarios, in the table's order.
    static let scenarios: [Scenario] = {
        let randomBook = "math.random(1, \(seedBooks))"
        return [
            Scenario(
                name: "GET /books/{id}",
                script: "request = function() return wrk.format('GET', '/books/' .. \(randomBook)) end", baseline: .live
            ),
            // The list of the performance issue: filtered and ordered by the indexed `year`.
            Scenario(
                name: "GET /books?year=gt.2000&order=year.desc&limit=20",
                script:
                    "request = function() return wrk.format('GET', '/books?year=gt.2000&order=year.desc&limit=20') end",
                baseline: .byID),
            Scenario(
                name: "POST /search-logs",
                script:
                    "wrk.method = 'POST'; wrk.path = '/search-logs'; wrk.body = '{\"query\": \"bench\", \"results\": 1}'; wrk.headers['Content-Type'] = 'application/json'",
                baseline: .commits),
            Scenario(
                name: "POST /_batch (two stores)",
                script:
                    #"wrk.method = 'POST'; wrk.path = '/_batch'; wrk.body = '{"operations": [{"method": "POST", "path": "/authors", "body": {"name": "bench"}}, {"method": "POST", "path": "/search-logs", "body": {"query": "bench"}}]}'; wrk.headers['Content-Type'] = 'application/json'"#,
                baseline: .commits),
            Scenario(
                name: "PATCH /books/{id}",
                script:
                    "request = function() return wrk.format('PATCH', '/books/' .. \(randomBook), {['Content-Type'] = 'application/json'}, '{\"rating\": ' .. math.random(0, 5) .. '}') end",
                baseline: .commits),
            Scenario(
                name: "mixed 90% GET / 10% POST",
                script: """
                    request = function()
                      if math.random(1, 10) == 1 then
                        return wrk.format('POST', '/search-logs', {['Content-Type'] = 'application/json'}, '{"query": "mixed"}')
                      end
                      return wrk.format('GET', '/books/' .. \(randomBook))
                    end
                    """, baseline: .live),
        ]
    }()

    /// What the rounds at one number of connections measured: each scenario's best result, the
    /// best raw commit rate, and the errors of every round.
    struct Rounds {
        var count: Int
        var connections: Int
        var writeBaseline: Double
        var best: [String: Wrk.Result] = [:]
        var errors: [String] = []

        mutating func keep(_ name: String, _ result: Wrk.Result) {
            best[name] = .best(best[name], result)
            // Errors of any round are reported, not only the best round's.
            if count > 1, !result.errors.isEmpty { errors.append("\(name) at \(connections): \(result.errors)") }
        }
    }

    func run(into table: inout BenchTable) throws {
        var options = ServerOptions()
        options.port = 0
        options.dataDirectory = folder.appendingPathComponent("http").path
        options.maxConnections = 4096
        // The access log is written as `strata serve` writes it (by its own thread), to /dev/null
        // rather than the terminal: its cost is part of every request measured.
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let accessLog = BufferedLog(descriptor: devNull)
        let server = StrataServerInstance(
            model: try ObjectModel.example, options: options, log: { line in accessLog.write(line) })
        try server.start()
        defer {
            server.stop()
            accessLog.close()
        }
        let base = "http://127.0.0.1:\(server.port)"
        try Self.seed(server)

        let commits = try RawSQLite.singleRowCommits(
            path: folder.appendingPathComponent("commits.sqlite").path, seconds: 2, synchronous: "FULL")
        let ceiling = try CeilingServer.start()
        defer { ceiling?.stop() }
        if ceiling == nil {
            table.notes.append(
                "the C ceiling (strata-ceiling) is not built next to this binary: swift build --product strata-ceiling "
                    + "(-c release for a release bench); HTTP scenarios are compared with GET /live instead")
        }
        for connections in [1, 64] {
            let rounds = try measureInRounds(connections: connections, base: base, ceiling: ceiling, commits: commits)
            try appendRows(rounds, base: base, into: &table)
        }
        try soak(base: base, into: &table)
    }

    /// The scenarios measured as ratios to each other (the ceiling, `/live`, GET by id and the
    /// list) run in alternating rounds at 64 connections and each keeps its best, as the library
    /// scenarios do: every side sees the same minutes of this shared machine, whose noise only
    /// ever takes throughput away. The writes with a target and their baseline, raw commits,
    /// alternate likewise (after the reads, whose cache the PATCHes would empty): the host's
    /// `fsync` rate moves from minute to minute, and with it every write ratio.
    func measureInRounds(connections: Int, base: String, ceiling: CeilingServer?, commits: Double) throws -> Rounds {
        var rounds = Rounds(
            count: connections == 64 && !settings.quick ? Self.ratioRounds : 1, connections: connections,
            writeBaseline: commits)
        let ratioScenarios = Self.scenarios.filter { $0.baseline == .byID || $0.name.hasPrefix("GET /books/{id}") }
        let writeScenarios = Self.scenarios.filter { Self.writeTarget($0.name) != nil }
        for _ in 0..<rounds.count {
            if let ceiling {
                rounds.keep("ceiling", try load("http://127.0.0.1:\(ceiling.port)/", connections: connections))
            }
            rounds.keep("live", try load(base + "/live", connections: connections))
            for scenario in ratioScenarios {
                rounds.keep(scenario.name, try load(base, connections: connections, script: scenario.script))
            }
        }
        for round in 0..<(rounds.count > 1 ? rounds.count : 0) {
            rounds.writeBaseline = max(
                rounds.writeBaseline,
                try RawSQLite.singleRowCommits(
                    path: folder.appendingPathComponent("commits-\(round).sqlite").path, seconds: 2,
                    synchronous: "FULL"))
            for scenario in writeScenarios {
                rounds.keep(scenario.name, try load(base, connections: connections, script: scenario.script))
            }
        }
        return rounds
    }

    /// The rows of one number of connections: the ceiling, `/live`, then every scenario (those
    /// not measured in rounds run now).
    func appendRows(_ rounds: Rounds, base: String, into table: inout BenchTable) throws {
        let connections = rounds.connections
        let plain = rounds.best["ceiling"]
        if let plain {
            table.rows.append(
                BenchTable.Row(
                    scenario: "plain libmicrohttpd, constant body (C ceiling)", connections: "\(connections)",
                    throughput: plain.requestsPerSecond, unit: "req/s", p50: plain.p50, p99: plain.p99,
                    baseline: "", baselineValue: nil, target: nil, note: plain.errors))
        }
        let live = rounds.best["live"]!
        var liveRow = BenchTable.Row(
            scenario: "GET /live", connections: "\(connections)", throughput: live.requestsPerSecond, unit: "req/s",
            p50: live.p50, p99: live.p99, baseline: "", baselineValue: nil, target: nil, note: live.errors)
        if let plain {
            liveRow.baseline = "C ceiling"
            liveRow.baselineValue = plain.requestsPerSecond
            if connections == 64 { liveRow.target = (live.requestsPerSecond / plain.requestsPerSecond, 0.7, nil) }
        }
        table.rows.append(liveRow)
        for scenario in Self.scenarios {
            let measured = rounds.best[scenario.name]
            let result = try measured ?? load(base, connections: connections, script: scenario.script)
            table.rows.append(row(scenario, result, rounds: rounds, plain: plain, live: live))
            if !result.errors.isEmpty, rounds.count == 1 || measured == nil {
                table.notes.append("\(scenario.name) at \(connections): \(result.errors)")
            }
        }
        table.notes += rounds.errors
        if rounds.count > 1 {
            table.notes.append(
                "at \(connections) connections the C ceiling, GET /live, GET by id and the list ran in \(rounds.count) alternating rounds; each row is its best"
            )
            table.notes.append(
                "at \(connections) connections raw commits, POST and PATCH then ran in \(rounds.count) alternating rounds; each keeps its best (raw commits: best of \(rounds.count + 1) runs of 2 s, the first before the 1-connection scenarios)"
            )
        }
    }

    /// A scenario's row, beside its baseline, with its target at 64 connections.
    func row(_ scenario: Scenario, _ result: Wrk.Result, rounds: Rounds, plain: Wrk.Result?, live: Wrk.Result)
        -> BenchTable.Row
    {
        let connections = rounds.connections
        var row = BenchTable.Row(
            scenario: scenario.name, connections: "\(connections)", throughput: result.requestsPerSecond,
            unit: "req/s", p50: result.p50, p99: result.p99, baseline: "", baselineValue: nil, target: nil,
            note: result.errors)
        switch scenario.baseline {
        case .byID:
            // A filtered, ordered page through an index: ≥ 0.2× GET by id, p99 < 20 ms.
            guard let byID = rounds.best["GET /books/{id}"] else { break }
            row.baseline = "GET /books/{id}"
            row.baselineValue = byID.requestsPerSecond
            if connections == 64 {
                row.target = (result.requestsPerSecond / byID.requestsPerSecond, 0.2, nil)
                row.p99LimitMilliseconds = 20
            }
        case .live:
            // Reads against the real ceiling (GET by id ≥ 0.6×), else against GET /live
            // (≥ 0.5×); p99 < 10 ms either way.
            let (name, value, minimum) =
                plain.map { ("C ceiling", $0.requestsPerSecond, 0.6) } ?? ("GET /live", live.requestsPerSecond, 0.5)
            row.baseline = name
            row.baselineValue = value
            if scenario.name.hasPrefix("GET /books/{id}") && connections == 64 {
                row.target = (result.requestsPerSecond / value, minimum, nil)
                row.p99LimitMilliseconds = 10
            }
        case .commits:
            row.baseline = "raw SQLite 1-row commits (FULL)"
            row.baselineValue = rounds.writeBaseline
            if connections == 64, let minimum = Self.writeTarget(scenario.name) {
                row.target = (result.requestsPerSecond / rounds.writeBaseline, minimum, nil)
            }
        }
        return row
    }

    /// Memory: RSS after warm-up against RSS after a mixed run, and the peak.
    func soak(base: String, into table: inout BenchTable) throws {
        let warm = Memory.residentBytes()
        let mixed = Self.scenarios.first { $0.name.hasPrefix("mixed") }!
        _ = try wrk.run(url: base, connections: 64, seconds: settings.soak, script: mixed.script, folder: folder)
        let after = Memory.residentBytes()
        let peak = Memory.peakResidentBytes()
        let growth = warm > 0 ? Double(after - warm) / Double(warm) : 0
        table.notes.append(
            String(
                format:
                    "memory: RSS %.1f MiB after warm-up, %.1f MiB after a %d s mixed run at 64 connections (growth %.1f%%; target < 10%%); peak %.1f MiB",
                Double(warm) / 1_048_576, Double(after) / 1_048_576, settings.soak, growth * 100,
                Double(peak) / 1_048_576))
        table.rows.append(
            BenchTable.Row(
                scenario: "RSS growth over mixed soak", connections: "64", throughput: Double(after) / 1_048_576,
                unit: "MiB", p50: "", p99: "", baseline: "RSS after warm-up (MiB)",
                baselineValue: Double(warm) / 1_048_576, target: (Double(after) / Double(max(warm, 1)), nil, 1.1)))
    }

    /// One wrk run of `settings.duration` seconds.
    private func load(_ url: String, connections: Int, script: String = "") throws -> Wrk.Result {
        try wrk.run(url: url, connections: connections, seconds: settings.duration, script: script, folder: folder)
    }

    /// An author and its books to read and patch.
    static func seed(_ server: StrataServerInstance) throws {
        try seedBooks(server, count: Self.seedBooks, author: true)
    }

    /// `count` books `Book 0`, `Book 1`, … with years 1900–2019, in commits of 20,000; with
    /// `author`, all of one author.
    static func seedBooks(_ server: StrataServerInstance, count: Int, author: Bool) throws {
        guard let service = server.restService else { throw BenchError("the server has no REST service") }
        if author {
            let context = service.root.newChildContext()
            _ = try context.insert("Author", values: ["name": .string("Bench Author")])
            try service.root.commit(context)
        }
        var made = 0
        while made < count {
            let context = service.root.newChildContext()
            let writer = author ? try context.fetch(FetchRequest(entityName: "Author")).first : nil
            for index in made..<min(count, made + 20_000) {
                let book = try context.insert(
                    "Book", values: ["title": .string("Book \(index)"), "year": .integer(Int64(1900 + index % 120))])
                if let writer { try book.setObject(writer, forKey: "author") }
            }
            try service.root.commit(context)
            made = min(count, made + 20_000)
        }
    }
}
