import Foundation
import Strata
import StrataServer

/// `strata bench`: every performance target measured in one run, each next to its baseline from
/// the same run, so the ratios hold on a shared, noisy machine.
enum BenchCommand {
    static let usage = """
        usage: strata bench [--duration SECONDS] [--soak SECONDS] [--objects N]
                            [--only library|http|postgresql|scale] [--postgresql URI]
                            [--scale [SIZES]] [--plot FILE.svg] [--quick]

        Runs the library, HTTP, PostgreSQL and scale benchmarks and prints one table with each
        scenario's throughput, p50/p99 latency, the baseline measured in the same run, and the
        ratio to its target.
        HTTP load comes from wrk (apt-get install wrk), against a server started in this process
        on a free loopback port with SQLite stores in a temporary folder (synchronous=FULL).
        The PostgreSQL scenarios put the catalogue in PostgreSQL: in a scratch cluster the bench
        starts with PostgreSQL's durable defaults when the server binaries are installed (Debian's
        postgresql package), or on the server --postgresql names; each beside libpq alone.

          --duration SECONDS   length of each HTTP run (default 5)
          --soak SECONDS       length of the mixed run that checks memory stays flat (default 60;
                               the target is stated for 300)
          --objects N          objects for the library insert/fetch scenarios (default 100000)
          --only PART          run only the library, the HTTP, the PostgreSQL or the scale
                               scenarios
          --postgresql URI     a libpq connection URI for the PostgreSQL scenarios (a schema
                               of their own is created and dropped)
          --scale [SIZES]      only the costs that must stay flat as data grows (a full run
                               measures them last): at each size (comma-separated book counts,
                               default 10000,100000,1000000; 10000,20000 with --quick) a
                               `strata serve` child over that many books: start-up to /ready,
                               RSS, GET by id over every book, a list's first page against its
                               1,000th (reached by its cursor)
          --plot FILE.svg      draw the scale scenarios' throughput and p99 against data size
          --quick              1 s runs, 10,000 objects, 10 s soak: a smoke test of the command,
                               which exits 0 whenever every scenario ran (the table still says
                               which targets were met); a full run exits 1 when one is missed
        """

    struct Settings {
        var duration = 5
        var soak = 60
        var objects = 100_000
        var library = true
        var http = true
        var postgreSQL = true
        var scale = true
        var postgresql: String?
        var quick = false
        /// The sizes the scale scenarios measure (`--scale SIZES`), or empty for the defaults.
        var scaleSizes: [Int] = []
        var plot: String?

        /// Keeps one part of the bench (`library`, `http`, `postgresql` or `scale`).
        mutating func only(_ part: String) {
            library = part == "library"
            http = part == "http"
            postgreSQL = part == "postgresql"
            scale = part == "scale"
        }
    }

    static func run(_ arguments: [String]) -> Int32 {
        var settings = Settings()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            func value() -> Int? {
                guard index + 1 < arguments.count, let number = Int(arguments[index + 1]), number > 0 else {
                    return nil
                }
                index += 1
                return number
            }
            switch argument {
            case "--help", "-h":
                print(usage)
                return 0
            case "--quick":
                (settings.duration, settings.soak, settings.objects) = (1, 10, 10_000)
                settings.quick = true
            case "--duration":
                guard let number = value() else { return fail("--duration needs a positive number of seconds") }
                settings.duration = number
            case "--soak":
                guard let number = value() else { return fail("--soak needs a positive number of seconds") }
                settings.soak = number
            case "--objects":
                guard let number = value() else { return fail("--objects needs a positive number") }
                settings.objects = number
            case "--only":
                guard index + 1 < arguments.count,
                    ["library", "http", "postgresql", "scale"].contains(arguments[index + 1])
                else {
                    return fail("--only needs 'library', 'http', 'postgresql' or 'scale'")
                }
                index += 1
                settings.only(arguments[index])
            case "--postgresql":
                guard index + 1 < arguments.count,
                    arguments[index + 1].hasPrefix("postgresql://") || arguments[index + 1].hasPrefix("postgres://")
                else {
                    return fail("--postgresql needs a postgresql:// connection URI")
                }
                index += 1
                settings.postgresql = arguments[index]
            case "--scale":
                settings.only("scale")
                if index + 1 < arguments.count, !arguments[index + 1].hasPrefix("--") {
                    let sizes = arguments[index + 1].split(separator: ",").map { Int($0) }
                    guard !sizes.isEmpty, sizes.allSatisfy({ ($0 ?? 0) >= 20 }) else {
                        return fail("--scale takes comma-separated book counts of at least 20, e.g. 10000,100000")
                    }
                    settings.scaleSizes = sizes.compactMap { $0 }
                    index += 1
                }
            case "--plot":
                guard index + 1 < arguments.count else { return fail("--plot needs a file name") }
                index += 1
                settings.plot = arguments[index]
            default: return fail("unknown option '\(argument)'; see strata bench --help")
            }
            index += 1
        }
        if settings.scaleSizes.isEmpty {
            settings.scaleSizes = settings.quick ? [10_000, 20_000] : [10_000, 100_000, 1_000_000]
        }
        if settings.plot != nil && !settings.scale { return fail("--plot needs the scale scenarios") }
        let wrk = Wrk.find()
        if settings.http || settings.postgreSQL || settings.scale, wrk == nil {
            return fail("wrk is not installed: apt-get install wrk")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var table = BenchTable()
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            if settings.library {
                printError("bench: library scenarios (\(settings.objects) objects)…")
                try LibraryBench(folder: folder, objects: settings.objects).run(into: &table)
            }
            if settings.http, let wrk {
                printError("bench: HTTP scenarios (\(settings.duration) s each)…")
                try HTTPBench(folder: folder, wrk: wrk, settings: settings).run(into: &table)
            }
            if settings.postgreSQL, let wrk {
                printError("bench: PostgreSQL scenarios (\(settings.duration) s each)…")
                try PostgreSQLBench(folder: folder, wrk: wrk, settings: settings).run(into: &table)
            }
            if settings.scale, let wrk {
                let points = try ScaleBench(folder: folder, wrk: wrk, settings: settings).run(into: &table)
                if let plot = settings.plot {
                    try Data(ScalePlot.svg(points).utf8).write(to: URL(fileURLWithPath: plot))
                    table.notes.append("plot: \(plot)")
                }
            }
        } catch {
            return fail("\(error)")
        }
        if let wrk, settings.http || settings.postgreSQL || settings.scale { table.notes.append(wrk.note) }
        print(table.render())
        return table.allTargetsMet || settings.quick ? 0 : 1
    }

    static func fail(_ message: String) -> Int32 {
        printError("strata bench: \(message)")
        return 64
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
