import Foundation
import Strata
import StrataServer

#if canImport(Glibc)
    import Glibc
#endif

/// Batch changes over HTTP: `PATCH /books?year=lt.1950` over 100,000 books (years 1900–2019, so
/// 5/12 of them match), each run timed from the request sent to the answer read (one SQLite
/// transaction with history, `synchronous=FULL`, then `NORMAL`: the difference is the disk's).
struct BatchBench {
    let folder: URL
    let settings: BenchCommand.Settings

    var books: Int { settings.quick ? 10_000 : 100_000 }
    var runs: Int { settings.quick ? 3 : 5 }

    func run(into table: inout BenchTable) throws {
        try run(durability: .full, into: &table)
        try run(durability: .normal, into: &table)
    }

    /// The scenario over stores opened with `durability` (`synchronous=FULL` or `NORMAL`).
    func run(durability: StoreOptions.Durability, into table: inout BenchTable) throws {
        var options = ServerOptions()
        options.port = 0
        options.durability = durability
        options.dataDirectory = folder.appendingPathComponent("batch-\(durability.rawValue)").path
        let server = StrataServerInstance(model: try ObjectModel.example, options: options, log: { _ in })
        try server.start()
        defer { server.stop() }
        try HTTPBench.seedBooks(server, count: books, author: false)
        var seconds: [Double] = []
        var cpu: [Double] = []
        var changed = 0
        for run in 0..<runs {
            let body = #"{"available": \#(run % 2 == 1)}"#
            let began = DispatchTime.now().uptimeNanoseconds
            let cpuBegan = Self.processCPU()
            let (status, text) = try Self.request(port: server.port, "PATCH", "/books?year=lt.1950", body: body)
            seconds.append(Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9)
            cpu.append(Self.processCPU() - cpuBegan)
            guard status == 200, let count = Self.count(text) else {
                throw BenchError("PATCH /books?year=lt.1950 answered \(status): \(text.prefix(200))")
            }
            changed = count
        }
        let sorted = seconds.sorted()
        let median = sorted[sorted.count / 2]
        var row = BenchTable.Row(
            scenario: "PATCH /books?year=lt.1950 over \(books) books (\(changed) changed), synchronous="
                + durability.rawValue.uppercased(), connections: "1",
            throughput: Double(changed) / median, unit: "objects/s", p50: Self.text(median),
            p99: Self.text(sorted.last!), baseline: "target: well under 1 s")
        row.target = (ratio: median / 1.0, atLeast: nil, atMost: 1.0)
        let cpuMedian = cpu.sorted()[cpu.count / 2]
        row.note =
            "\(runs) runs, each one transaction over every matched book; p99 column: the slowest run; "
            + "CPU time of the process per run (median): \(Self.text(cpuMedian))"
        table.rows.append(row)
        table.notes.append("batch, synchronous=\(durability.rawValue.uppercased()): " + row.note)
    }

    /// The CPU time the process has used, in seconds (the server runs in it).
    static func processCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func text(_ seconds: Double) -> String { String(format: "%.1fms", seconds * 1000) }

    /// The `count` of a batch change's answer.
    static func count(_ body: String) -> Int? {
        guard let range = body.range(of: #""count":"#) else { return nil }
        return Int(body[range.upperBound...].prefix { $0.isNumber })
    }

    /// Sends one request on a new connection and returns the status and the whole response text.
    static func request(port: UInt16, _ method: String, _ target: String, body: String) throws -> (Int, String) {
        let socket = try FeedBench.connect(port: port)
        defer { close(socket) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let text =
            "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        _ = Array(text.utf8).withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = Glibc.read(socket, &buffer, buffer.count)
            if count <= 0 { break }
            response += buffer[..<count]
        }
        let whole = String(decoding: response, as: UTF8.self)
        let status = whole.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        return (status, whole)
    }
}
