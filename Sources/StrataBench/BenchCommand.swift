import Foundation
import Strata
import StrataCLI
import StrataServer

/// `strata-bench`: every performance target measured in one run, each next to its baseline from
/// the same run, so the ratios hold on a shared, noisy machine.
enum BenchCommand {
    struct Settings: Sendable {
        var quick = false
        var givenDuration: Int?
        var givenSoak: Int?
        var givenObjects: Int?
        var givenScaleSizes: [Int] = []
        var library = true
        var http = true
        var feed = true
        var postgreSQL = true
        var scale = true
        var history = true
        var export = true
        var batch = true
        var aggregates = true
        var postgresql: String?
        var plot: String?

        /// Length of each HTTP run, in seconds.
        var duration: Int { givenDuration ?? (quick ? 1 : 5) }
        /// Length of the mixed run that checks memory stays flat, in seconds.
        var soak: Int { givenSoak ?? (quick ? 10 : 60) }
        /// Objects for the library scenarios.
        var objects: Int { givenObjects ?? (quick ? 10_000 : 100_000) }
        /// The books the export scenario writes.
        var exportBooks: Int { quick ? 20_000 : 1_000_000 }
        /// The sizes the scale scenarios measure.
        var scaleSizes: [Int] {
            !givenScaleSizes.isEmpty ? givenScaleSizes : quick ? [10_000, 20_000] : [10_000, 100_000, 1_000_000]
        }

        /// Keeps one part of the bench (`library`, `http`, `feed`, `postgresql`, `scale`, `history`,
        /// `export` or `batch`).
        mutating func only(_ part: String) {
            library = part == "library"
            http = part == "http"
            feed = part == "feed"
            postgreSQL = part == "postgresql"
            scale = part == "scale"
            history = part == "history"
            export = part == "export"
            batch = part == "batch"
            aggregates = part == "aggregates"
        }

        /// Whether a part that loads a server over HTTP (and needs wrk) runs.
        var loadsHTTP: Bool { http || postgreSQL || scale || history || aggregates }
    }

    static let interface = CommandInterface<Settings>(
        name: "strata-bench",
        synopsis: """
            [--duration SECONDS] [--soak SECONDS] [--objects N]
                                [--only library|http|feed|postgresql|scale|history|export|batch|aggregates]
                                [--postgresql URI]
                                [--scale [SIZES]] [--plot FILE.svg] [--quick]
            """,
        abstract: """
            Runs the library, HTTP, PostgreSQL, scale, history and export benchmarks and prints one table with
            each scenario's throughput, p50/p99 latency, the baseline measured in the same run, and
            the ratio to its target.
            HTTP load comes from wrk (apt-get install wrk), against a server started in this process
            on a free loopback port with SQLite stores in a temporary folder (synchronous=FULL).
            The PostgreSQL scenarios put the catalogue in PostgreSQL: in a scratch cluster the bench
            starts with PostgreSQL's durable defaults when the server binaries are installed (Debian's
            postgresql package), or on the server --postgresql names; each beside libpq alone.
            The history scenarios POST to two servers of the same model and options, one recording
            persistent history and one not (--no-history), over SQLite and over PostgreSQL.
            The HTTP ceiling is strata-ceiling and the scale scenarios serve with strata, both run from
            beside this executable, and built with it (swift build -c release --product strata-bench).
            """,
        options: options)

    static let options: [CommandOption<Settings>] = [
        .value("--duration", "SECONDS", default: "5; 1 with --quick", help: "length of each HTTP run") {
            $0.givenDuration = try $1.integer(1...Int.max, "a positive number of seconds")
        },
        .value(
            "--soak", "SECONDS", default: "60; 10 with --quick",
            help: "length of the mixed run that checks memory stays flat; the target is stated for 300"
        ) { $0.givenSoak = try $1.integer(1...Int.max, "a positive number of seconds") },
        .value(
            "--objects", "N", default: "100000; 10000 with --quick",
            help: "objects for the library insert/fetch scenarios"
        ) { $0.givenObjects = try $1.integer(1...Int.max, "a positive number") },
        .value(
            "--only", "PART",
            help: "run only the library, the HTTP, the change feed, the PostgreSQL, the scale, the history, the "
                + "export, the batch-change or the aggregate scenarios"
        ) {
            $0.only(
                try $1.choice([
                    "library", "http", "feed", "postgresql", "scale", "history", "export", "batch", "aggregates",
                ]))
        },
        .value(
            "--postgresql", "URI",
            help: "a libpq connection URI for the PostgreSQL scenarios (a schema of their own is created and dropped)"
        ) { settings, value in
            guard value.text.hasPrefix("postgresql://") || value.text.hasPrefix("postgres://") else {
                throw value.invalid(
                    "must be a postgresql:// connection URI", shown: PostgreSQLStore.redacted(value.text))
            }
            settings.postgresql = value.text
        },
        .optionalValue(
            "--scale", "SIZES",
            help: "only the costs that must stay flat as data grows (a full run measures them last): at each size "
                + "(comma-separated book counts, default 10000,100000,1000000; 10000,20000 with --quick) a "
                + "`strata serve` child over that many books: start-up to /ready, RSS, GET by id over every book, "
                + "a list's first page against its 1,000th (reached by its cursor)"
        ) { settings, value in
            settings.only("scale")
            guard !value.text.isEmpty else { return }
            let sizes = value.text.split(separator: ",").map { Int($0) }
            guard !sizes.isEmpty, sizes.allSatisfy({ ($0 ?? 0) >= 20 }) else {
                throw value.invalid("takes comma-separated book counts of at least 20 (10000,100000)")
            }
            settings.givenScaleSizes = sizes.compactMap { $0 }
        },
        .value("--plot", "FILE.svg", help: "draw the scale scenarios' throughput and p99 against data size") {
            $0.plot = $1.text
        },
        .flag(
            "--quick",
            help: "short runs: a smoke test of the command, which exits 0 whenever every scenario ran (the table "
                + "still says which targets were met); a full run exits 1 when one is missed"
        ) { $0.quick = $1 },
    ]

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: bench)
    }

    /// Checks what the parts asked for need, then runs them into one table.
    static func bench(_ settings: Settings) -> Int32 {
        if settings.plot != nil && !settings.scale { return interface.fail("--plot needs the scale scenarios") }
        let wrk = Wrk.find()
        if settings.loadsHTTP, wrk == nil {
            return interface.fail("wrk is not installed: apt-get install wrk")
        }
        if settings.scale, sibling("strata") == nil {
            return interface.fail(
                "the scale scenarios serve with the strata executable beside this one, which building "
                    + "strata-bench builds: swift build -c release --product strata-bench")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var table = BenchTable()
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try runParts(settings, wrk: wrk, folder: folder, into: &table)
        } catch {
            return interface.fail("\(error)")
        }
        if let wrk, settings.loadsHTTP { table.notes.append(wrk.note) }
        print(table.render())
        return table.allTargetsMet || settings.quick ? 0 : 1
    }

    /// The parts of the bench `settings` asks for, in order.
    static func runParts(_ settings: Settings, wrk: Wrk?, folder: URL, into table: inout BenchTable) throws {
        if settings.library {
            printError("bench: library scenarios (\(settings.objects) objects)…")
            try LibraryBench(folder: folder, objects: settings.objects).run(into: &table)
            printError("bench: typed library scenarios (\(settings.objects) objects)…")
            try TypedBench(folder: folder, objects: settings.objects).run(into: &table)
        }
        if settings.http, let wrk {
            printError("bench: HTTP scenarios (\(settings.duration) s each)…")
            try HTTPBench(folder: folder, wrk: wrk, settings: settings).run(into: &table)
        }
        if settings.export {
            printError("bench: export of \(settings.exportBooks) books to Core Data's format…")
            try ExportBench(folder: folder, books: settings.exportBooks).run(into: &table)
        }
        if settings.batch {
            printError("bench: PATCH of a filtered collection…")
            try BatchBench(folder: folder, settings: settings).run(into: &table)
        }
        if settings.feed {
            printError("bench: change feed fan-out…")
            try FeedBench(folder: folder, settings: settings).run(into: &table)
        }
        if settings.history, let wrk {
            printError("bench: POST with history on and off, SQLite (\(settings.duration) s each)…")
            try HistoryBench(folder: folder, wrk: wrk, settings: settings).runSQLite(into: &table)
        }
        if settings.postgreSQL || settings.history, let wrk {
            printError("bench: PostgreSQL scenarios (\(settings.duration) s each)…")
            try PostgreSQLBench(folder: folder, wrk: wrk, settings: settings).run(into: &table)
        }
        if settings.aggregates, let wrk {
            printError("bench: grouped counts over HTTP…")
            try AggregateBench(folder: folder, wrk: wrk, settings: settings).run(into: &table)
        }
        if settings.scale, let wrk {
            let points = try ScaleBench(folder: folder, wrk: wrk, settings: settings).run(into: &table)
            if let plot = settings.plot {
                try Data(ScalePlot.svg(points).utf8).write(to: URL(fileURLWithPath: plot))
                table.notes.append("plot: \(plot)")
            }
        }
    }

    /// An executable built beside this one (`strata`, `strata-ceiling`), nil when there is none.
    static func sibling(_ name: String) -> URL? {
        // The kernel's link to this executable, wherever it was started from (a PATH lookup leaves
        // no folder in the command line).
        let url = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent(name)
        return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }
}

/// The result table.
struct BenchTable {
    struct Row {
        var scenario: String
        var connections: String
        var throughput: Double
        var unit: String
        var p50: String
        var p99: String
        var baseline: String
        var baselineValue: Double?
        /// The ratio to the baseline and the target, for rows that have one.
        var target: (ratio: Double, atLeast: Double?, atMost: Double?)?
        var note = ""
        /// A p99 latency the scenario must stay under, in milliseconds.
        var p99LimitMilliseconds: Double?

        var met: Bool? {
            guard let target else { return nil }
            if let limit = p99LimitMilliseconds, (Self.milliseconds(p99) ?? .infinity) >= limit { return false }
            if let minimum = target.atLeast, target.ratio < minimum { return false }
            if let maximum = target.atMost, target.ratio > maximum { return false }
            return true
        }

        /// A wrk latency (`812.00us`, `8.30ms`, `1.20s`) in milliseconds.
        static func milliseconds(_ text: String) -> Double? {
            for (suffix, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(suffix) {
                return Double(text.dropLast(suffix.count)).map { $0 * scale }
            }
            return nil
        }
    }

    var rows: [Row] = []
    var notes: [String] = []

    var allTargetsMet: Bool { rows.allSatisfy { $0.met != false } }

    static func format(_ value: Double) -> String {
        if value >= 100 { return String(Int(value.rounded())) }
        return String(format: "%.2f", value)
    }

    func render() -> String {
        let header = ["scenario", "conns", "throughput", "p50", "p99", "baseline (same run)", "ratio", "target", "met"]
        var lines: [[String]] = [header]
        for row in rows {
            var ratio = ""
            var target = ""
            if let t = row.target {
                ratio = String(format: "%.2f×", t.ratio)
                if let minimum = t.atLeast { target = "≥ \(Self.format(minimum))×" }
                if let maximum = t.atMost { target = "≤ \(Self.format(maximum))×" }
                if let limit = row.p99LimitMilliseconds { target += ", p99 < \(Self.format(limit)) ms" }
            }
            let met = row.met.map { $0 ? "yes" : "NO" } ?? ""
            lines.append([
                row.scenario, row.connections, "\(Self.format(row.throughput)) \(row.unit)", row.p50, row.p99,
                row.baseline + (row.baselineValue.map { " \(Self.format($0))" } ?? ""), ratio, target, met,
            ])
        }
        var widths = [Int](repeating: 0, count: header.count)
        for line in lines { for (i, cell) in line.enumerated() { widths[i] = max(widths[i], cell.count) } }
        var out = lines.map { line in
            "| "
                + line.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: " | ") + " |"
        }
        out.insert("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|", at: 1)
        return (out + [""] + notes).joined(separator: "\n")
    }
}
