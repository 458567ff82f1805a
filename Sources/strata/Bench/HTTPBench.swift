import Foundation
import Strata
import StrataServer

/// Finds and drives wrk.
///
/// wrk shares this machine's cores with the server it loads, and each answer wakes one of its
/// threads. Under the default policy a woken wrk thread preempts the server's polling thread
/// mid-request (about 0.1–0.3 involuntary context switches per request, each costing several
/// microseconds here), and the slower a request, the more often: the bench would measure its own
/// co-location, and most of all for the slower scenarios. So wrk runs as `SCHED_BATCH` through
/// `chrt` (util-linux) when it is installed: the same CPU share (the same nice level and weight),
/// but its wake-ups do not preempt the server. The table's notes say which way it ran.
struct Wrk {
    let path: String
    /// `chrt`, to start wrk as `SCHED_BATCH`; nil when it is not installed.
    let chrt: String?

    static func find() -> Wrk? {
        guard let wrk = executable("wrk") else { return nil }
        return Wrk(path: wrk, chrt: executable("chrt"))
    }

    private static func executable(_ name: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// How the load was generated, for the table's notes.
    var note: String {
        chrt == nil
            ? "wrk ran under the default scheduling policy (chrt is not installed): its wake-ups preempt the server"
            : "wrk ran as SCHED_BATCH (chrt --batch 0): the same CPU share, but its wake-ups do not preempt the server"
    }

    struct Result {
        var requestsPerSecond: Double
        var p50: String
        var p99: String
        var errors: String

        /// The faster of `kept` and `result`: rounds keep their best, as this host's noise only
        /// ever takes throughput away.
        static func best(_ kept: Result?, _ result: Result) -> Result {
            guard let kept, kept.requestsPerSecond >= result.requestsPerSecond else { return result }
            return kept
        }
    }

    /// Put before every script: each wrk thread seeds its own random numbers. wrk starts every
    /// thread's Lua state with the same seed, so without this both threads ask for the same ids in
    /// the same order, and the second thread's reads hit the read cache the first one's just
    /// filled (at 1,000,000 books "random ids" were then partly cache hits). Scripts must not
    /// define `setup` or `init` themselves.
    static let prelude = """
        local strata_threads = 0
        function setup(thread)
          strata_threads = strata_threads + 1
          thread:set("strata_thread", strata_threads)
        end
        function init(args)
          math.randomseed(os.time() + 7919 * strata_thread)
        end

        """

    /// Runs wrk with a Lua script (after ``prelude``) and parses its summary.
    func run(url: String, connections: Int, seconds: Int, script: String, folder: URL) throws -> Result {
        let scriptURL = folder.appendingPathComponent("wrk-\(UUID().uuidString).lua")
        try Data((Self.prelude + script).utf8).write(to: scriptURL)
        let process = Process()
        // Through chrt when it is installed: `chrt --batch 0 wrk …`.
        process.executableURL = URL(fileURLWithPath: chrt ?? path)
        process.arguments =
            (chrt == nil ? [] : ["--batch", "0", path]) + [
                "-t", "\(min(connections, 2))", "-c", "\(connections)", "-d", "\(seconds)s", "--latency", "-s",
                scriptURL.path, url,
            ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        func field(_ prefix: String) -> String? {
            text.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(prefix) }
                .map {
                    $0.trimmingCharacters(in: .whitespaces).dropFirst(prefix.count).trimmingCharacters(in: .whitespaces)
                }
        }
        guard let rate = field("Requests/sec:").flatMap(Double.init) else {
            throw BenchError("wrk printed no rate:\n\(text)")
        }
        var errors = ""
        if let socket = field("Socket errors:") { errors += "socket errors: \(socket) " }
        if let non2xx = field("Non-2xx or 3xx responses:") { errors += "non-2xx/3xx: \(non2xx)" }
        return Result(requestsPerSecond: rate, p50: field("50%") ?? "", p99: field("99%") ?? "", errors: errors)
    }
}

/// The C ceiling (`strata-ceiling`, built beside `strata`) on a free port, for as long as the
/// bench holds its standard input open.
final class CeilingServer {
    let process: Process
    let input: Pipe
    let port: Int

    private init(process: Process, input: Pipe, port: Int) {
        self.process = process
        self.input = input
        self.port = port
    }

    /// Starts it, or returns nil when it is not built next to this executable.
    static func start() throws -> CeilingServer? {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("strata-ceiling")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else { return nil }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["0"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = ""
        while !line.hasSuffix("\n") {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { break }
            line += String(decoding: byte, as: UTF8.self)
        }
        guard line.hasPrefix("port "), let port = Int(line.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.terminate()
            throw BenchError("strata-ceiling did not say its port: \(line)")
        }
        return CeilingServer(process: process, input: input, port: port)
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

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
        let randomBook = "math.random(1, \(Self.seedBooks))"
        let scripts: [(name: String, script: String, baseline: String)] = [
            (
                "GET /books/{id}", "request = function() return wrk.format('GET', '/books/' .. \(randomBook)) end",
                "live"
            ),
            (
                // The list of the performance issue: filtered and ordered by the indexed `year`.
                "GET /books?year=gt.2000&order=year.desc&limit=20",
                "request = function() return wrk.format('GET', '/books?year=gt.2000&order=year.desc&limit=20') end",
                "byID"
            ),
            (
                "POST /search-logs",
                "wrk.method = 'POST'; wrk.path = '/search-logs'; wrk.body = '{\"query\": \"bench\", \"results\": 1}'; wrk.headers['Content-Type'] = 'application/json'",
                "commits"
            ),
            (
                "POST /_batch (two stores)",
                #"wrk.method = 'POST'; wrk.path = '/_batch'; wrk.body = '{"operations": [{"method": "POST", "path": "/authors", "body": {"name": "bench"}}, {"method": "POST", "path": "/search-logs", "body": {"query": "bench"}}]}'; wrk.headers['Content-Type'] = 'application/json'"#,
                "commits"
            ),
            (
                "PATCH /books/{id}",
                "request = function() return wrk.format('PATCH', '/books/' .. \(randomBook), {['Content-Type'] = 'application/json'}, '{\"rating\": ' .. math.random(0, 5) .. '}') end",
                "commits"
            ),
            (
                "mixed 90% GET / 10% POST",
                """
                request = function()
                  if math.random(1, 10) == 1 then
                    return wrk.format('POST', '/search-logs', {['Content-Type'] = 'application/json'}, '{"query": "mixed"}')
                  end
                  return wrk.format('GET', '/books/' .. \(randomBook))
                end
                """, "live"
            ),
        ]
        let ceiling = try CeilingServer.start()
        defer { ceiling?.stop() }
        if ceiling == nil {
            table.notes.append(
                "the C ceiling (strata-ceiling) is not built next to this binary: swift build --product strata-ceiling "
                    + "(-c release for a release bench); HTTP scenarios are compared with GET /live instead")
        }
        for connections in [1, 64] {
            // The scenarios measured as ratios to each other (the ceiling, `/live`, GET by id and
            // the list) run in alternating rounds at 64 connections and each keeps its best, as
            // the library scenarios do: every side sees the same minutes of this shared machine,
            // whose noise only ever takes throughput away.
            let rounds = connections == 64 && !settings.quick ? Self.ratioRounds : 1
            var best: [String: Wrk.Result] = [:]
            var roundErrors: [String] = []
            func keep(_ name: String, _ result: Wrk.Result) {
                best[name] = .best(best[name], result)
                // Errors of any round are reported, not only the best round's.
                if rounds > 1, !result.errors.isEmpty {
                    roundErrors.append("\(name) at \(connections): \(result.errors)")
                }
            }
            let ratioScripts = scripts.filter { $0.baseline == "byID" || $0.name.hasPrefix("GET /books/{id}") }
            // The writes with a target and their baseline, raw commits, alternate likewise (after
            // the reads, whose cache the PATCHes would empty): the host's `fsync` rate moves
            // from minute to minute, and with it every write ratio.
            let writeScripts = scripts.filter { Self.writeTarget($0.name) != nil }
            var writeBaseline = commits
            for _ in 0..<rounds {
                if let ceiling {
                    keep(
                        "ceiling",
                        try wrk.run(
                            url: "http://127.0.0.1:\(ceiling.port)/", connections: connections,
                            seconds: settings.duration, script: "", folder: folder))
                }
                keep(
                    "live",
                    try wrk.run(
                        url: base + "/live", connections: connections, seconds: settings.duration, script: "",
                        folder: folder))
                for scenario in ratioScripts {
                    keep(
                        scenario.name,
                        try wrk.run(
                            url: base, connections: connections, seconds: settings.duration, script: scenario.script,
                            folder: folder))
                }
            }
            for round in 0..<(rounds > 1 ? rounds : 0) {
                writeBaseline = max(
                    writeBaseline,
                    try RawSQLite.singleRowCommits(
                        path: folder.appendingPathComponent("commits-\(round).sqlite").path, seconds: 2,
                        synchronous: "FULL"))
                for scenario in writeScripts {
                    keep(
                        scenario.name,
                        try wrk.run(
                            url: base, connections: connections, seconds: settings.duration, script: scenario.script,
                            folder: folder))
                }
            }
            let plain = best["ceiling"]
            if let plain {
                table.rows.append(
                    BenchTable.Row(
                        scenario: "plain libmicrohttpd, constant body (C ceiling)", connections: "\(connections)",
                        throughput: plain.requestsPerSecond, unit: "req/s", p50: plain.p50, p99: plain.p99,
                        baseline: "", baselineValue: nil, target: nil, note: plain.errors))
            }
            let live = best["live"]!
            var liveRow = BenchTable.Row(
                scenario: "GET /live", connections: "\(connections)", throughput: live.requestsPerSecond,
                unit: "req/s",
                p50: live.p50, p99: live.p99, baseline: "", baselineValue: nil, target: nil, note: live.errors)
            if let plain {
                liveRow.baseline = "C ceiling"
                liveRow.baselineValue = plain.requestsPerSecond
                if connections == 64 { liveRow.target = (live.requestsPerSecond / plain.requestsPerSecond, 0.7, nil) }
            }
            table.rows.append(liveRow)
            let byID = best["GET /books/{id}"]
            for scenario in scripts {
                let result =
                    try best[scenario.name]
                    ?? wrk.run(
                        url: base, connections: connections, seconds: settings.duration, script: scenario.script,
                        folder: folder)
                var row = BenchTable.Row(
                    scenario: scenario.name, connections: "\(connections)", throughput: result.requestsPerSecond,
                    unit: "req/s",
                    p50: result.p50, p99: result.p99, baseline: "", baselineValue: nil, target: nil, note: result.errors
                )
                if scenario.baseline == "byID", let byID {
                    // A filtered, ordered page through an index: ≥ 0.2× GET by id, p99 < 20 ms.
                    row.baseline = "GET /books/{id}"
                    row.baselineValue = byID.requestsPerSecond
                    if connections == 64 {
                        row.target = (result.requestsPerSecond / byID.requestsPerSecond, 0.2, nil)
                        row.p99LimitMilliseconds = 20
                    }
                } else if scenario.baseline == "live" {
                    // Reads against the real ceiling (GET by id ≥ 0.6×), else against GET /live
                    // (≥ 0.5×); p99 < 10 ms either way.
                    let (name, value, minimum) =
                        plain.map { ("C ceiling", $0.requestsPerSecond, 0.6) }
                        ?? ("GET /live", live.requestsPerSecond, 0.5)
                    row.baseline = name
                    row.baselineValue = value
                    if scenario.name.hasPrefix("GET /books/{id}") && connections == 64 {
                        row.target = (result.requestsPerSecond / value, minimum, nil)
                        row.p99LimitMilliseconds = 10
                    }
                } else {
                    row.baseline = "raw SQLite 1-row commits (FULL)"
                    row.baselineValue = writeBaseline
                    if connections == 64, let minimum = Self.writeTarget(scenario.name) {
                        row.target = (result.requestsPerSecond / writeBaseline, minimum, nil)
                    }
                }
                if !result.errors.isEmpty, rounds == 1 || best[scenario.name] == nil {
                    table.notes.append("\(scenario.name) at \(connections): \(result.errors)")
                }
                table.rows.append(row)
            }
            table.notes += roundErrors
            if rounds > 1 {
                table.notes.append(
                    "at \(connections) connections the C ceiling, GET /live, GET by id and the list ran in \(rounds) alternating rounds; each row is its best"
                )
                table.notes.append(
                    "at \(connections) connections raw commits, POST and PATCH then ran in \(rounds) alternating rounds; each keeps its best (raw commits: best of \(rounds + 1) runs of 2 s, the first before the 1-connection scenarios)"
                )
            }
        }
        // Memory: peak RSS across a mixed run after warm-up.
        let warm = Memory.residentBytes()
        let mixed = scripts.first { $0.name.hasPrefix("mixed") }!
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
                unit: "MiB",
                p50: "", p99: "", baseline: "RSS after warm-up (MiB)", baselineValue: Double(warm) / 1_048_576,
                target: (Double(after) / Double(max(warm, 1)), nil, 1.1)))
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

/// Resident memory of a process (this one unless told), from /proc.
enum Memory {
    /// A /proc file of `process`, read to its end: `String(contentsOfFile:)` stops at the first
    /// page of a file whose size says 0, as /proc's do.
    private static func procFile(_ name: String, process: String) -> String? {
        guard let file = FileHandle(forReadingAtPath: "/proc/\(process)/\(name)"), let bytes = try? file.readToEnd()
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Every `kB` line of `process`'s `status` (`VmRSS:`, `RssAnon:`…), in bytes, read at once.
    static func status(process: String = "self") -> [String: Int] {
        var values: [String: Int] = [:]
        for line in (procFile("status", process: process) ?? "").split(separator: "\n") where line.hasSuffix(" kB") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count == 3, let kibibytes = Int(fields[1]) { values[String(fields[0])] = kibibytes * 1024 }
        }
        return values
    }

    static func value(_ key: String, process: String = "self") -> Int { status(process: process)[key] ?? 0 }

    /// The resident bytes of the files under `folder` that `process` maps, from its `smaps`.
    static func mappedResident(process: String, under folder: String) -> Int {
        guard let smaps = procFile("smaps", process: process) else { return 0 }
        let prefix = URL(fileURLWithPath: folder).standardizedFileURL.path + "/"
        var inside = false
        var total = 0
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                // A mapping's header: address range, permissions, offset, device, inode, path.
                inside = fields.count >= 6 && fields[5...].joined(separator: " ").hasPrefix(prefix)
            } else if inside, fields.first == "Rss:", fields.count >= 2 {
                total += (Int(fields[1]) ?? 0) * 1024
            }
        }
        return total
    }

    static func residentBytes() -> Int { value("VmRSS:") }
    static func peakResidentBytes() -> Int { value("VmHWM:") }
}
