import Foundation
import Strata
import StrataServer

/// `strata-bench --only aggregates`: grouped counts over HTTP on a catalogue of 100,000 books
/// (SQLite, in a server started in this process), one connection at a time as a client asking for
/// a report would: the count per year (`GROUP BY` over the year index) and a filtered grouping with
/// an average, ordered by an aggregate. The target: each answers in well under a second (p99 < 1 s).
struct AggregateBench {
    let folder: URL
    let wrk: Wrk
    let settings: BenchCommand.Settings

    /// The books of the catalogue.
    var books: Int { settings.quick ? 20_000 : 100_000 }

    /// The requests measured.
    static let paths = [
        "/books?select=year,count()",
        "/books?select=year,count(),pages.avg()&year=gte.1950&order=count().desc&having=count().gt.10",
    ]

    func run(into table: inout BenchTable) throws {
        var options = ServerOptions()
        options.port = 0
        options.dataDirectory = folder.appendingPathComponent("aggregates").path
        let server = StrataServerInstance(model: try ObjectModel.example, options: options, log: { _ in })
        try server.start()
        defer { server.stop() }
        try HTTPBench.seedBooks(server, count: books, author: true)
        let base = "http://127.0.0.1:\(server.port)"
        for path in Self.paths {
            let result = try wrk.run(
                url: base, connections: 1, seconds: settings.duration,
                script: "request = function() return wrk.format('GET', '\(path)') end", folder: folder)
            let p99 = BenchTable.Row.milliseconds(result.p99) ?? .infinity
            table.rows.append(
                BenchTable.Row(
                    scenario: "GET \(path) (\(books) books, SQLite)", connections: "1",
                    throughput: result.requestsPerSecond, unit: "req/s", p50: result.p50, p99: result.p99,
                    baseline: "p99 under 1 s", baselineValue: nil, target: (p99 / 1000, nil, 1),
                    note: result.errors, p99LimitMilliseconds: 1000))
        }
    }
}
