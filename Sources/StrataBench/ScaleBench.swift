import Foundation
import Strata
import StrataCLI
import StrataServer

#if canImport(Glibc)
    import Glibc
#endif

/// `strata-bench --scale`: the costs that must stay flat as data grows, at several sizes. Each
/// size is a fresh catalogue of that many books, served by a `strata serve` child process (so its
/// start-up time and resident memory are its own), all of them running at once: start-up to
/// `/ready`, RSS after start-up and after the load, GET by id over every book (in alternating
/// rounds across the sizes), and a list's first page against its 1,000th page reached through
/// the `next` cursor.
struct ScaleBench {
    let folder: URL
    let wrk: Wrk
    let settings: BenchCommand.Settings

    /// What one size measured.
    struct Point {
        var books: Int
        var startupMilliseconds: Double
        var rssAfterStartup: Int
        var rssAfterLoad: Int
        /// Of ``rssAfterLoad``: the process's own memory (`RssAnon`), and the files it maps
        /// (`RssFile`: the executable, its libraries and the store file's mapped pages).
        var privateAfterLoad: Int
        var fileBackedAfterLoad: Int
        /// Of ``fileBackedAfterLoad``: the pages of the store files (`--sqlite-mmap`).
        var storeFileMapped: Int
        var getByID: Wrk.Result
        var firstPage: Wrk.Result
        var deepPage: Wrk.Result
        var deepPageNumber: Int
    }

    /// The list the pages come from: ten books a page, newest year first.
    static let listPath = "/books?order=year.desc&limit=10"

    func run(into table: inout BenchTable) throws -> [Point] {
        var servers: [Served] = []
        defer { for server in servers { server.stop() } }
        for books in settings.scaleSizes {
            printError("bench: scale, \(books) books…")
            servers.append(try serve(books: books))
        }
        // GET by id at every size in alternating rounds, each size keeping its best, as the HTTP
        // scenarios measured as ratios do: the sizes compared see the same minutes of this
        // shared machine, whose noise only ever takes throughput away.
        let rounds = settings.quick ? 1 : HTTPBench.ratioRounds
        var best: [Wrk.Result?] = Array(repeating: nil, count: servers.count)
        var roundErrors: [String] = []
        for _ in 0..<rounds {
            for (index, server) in servers.enumerated() {
                let result = try wrk.run(
                    url: server.base, connections: 64, seconds: settings.duration,
                    script:
                        "request = function() return wrk.format('GET', '/books/' .. math.random(1, \(server.books))) end",
                    folder: folder)
                best[index] = .best(best[index], result)
                if rounds > 1, !result.errors.isEmpty {
                    roundErrors.append("scale \(Self.sizeLabel(server.books)) GET by id: \(result.errors)")
                }
            }
        }
        var points: [Point] = []
        for (index, server) in servers.enumerated() {
            points.append(try measurePages(server, getByID: best[index]!))
        }
        if rounds > 1 {
            table.notes.append(
                "scale: GET by id ran in \(rounds) alternating rounds across the sizes; each size keeps its best")
            table.notes += roundErrors
        }
        guard let smallest = points.first else { return points }
        for point in points {
            let size = Self.sizeLabel(point.books)
            var get = BenchTable.Row(
                scenario: "scale \(size): GET /books/{id}", connections: "64",
                throughput: point.getByID.requestsPerSecond, unit: "req/s", p50: point.getByID.p50,
                p99: point.getByID.p99, baseline: "same at \(Self.sizeLabel(smallest.books))",
                baselineValue: smallest.getByID.requestsPerSecond, target: nil, note: point.getByID.errors)
            if point.books != smallest.books {
                // Within 20% of the smallest size's throughput.
                get.target = (point.getByID.requestsPerSecond / smallest.getByID.requestsPerSecond, 0.8, nil)
            }
            table.rows.append(get)
            table.rows.append(
                BenchTable.Row(
                    scenario: "scale \(size): list page \(point.deepPageNumber) (cursor)", connections: "64",
                    throughput: point.deepPage.requestsPerSecond, unit: "req/s", p50: point.deepPage.p50,
                    p99: point.deepPage.p99, baseline: "page 1", baselineValue: point.firstPage.requestsPerSecond,
                    // Within 2× of the first page: at least half its throughput.
                    target: (point.deepPage.requestsPerSecond / point.firstPage.requestsPerSecond, 0.5, nil),
                    note: point.deepPage.errors))
            table.rows.append(
                BenchTable.Row(
                    scenario: "scale \(size): start-up to /ready", connections: "",
                    throughput: point.startupMilliseconds,
                    unit: "ms", p50: "", p99: "", baseline: "", baselineValue: nil, target: nil))
            var rss = BenchTable.Row(
                scenario: "scale \(size): server private RSS after load", connections: "",
                throughput: Double(point.privateAfterLoad) / 1_048_576, unit: "MiB", p50: "", p99: "",
                baseline: "same at \(Self.sizeLabel(smallest.books))",
                baselineValue: Double(smallest.privateAfterLoad) / 1_048_576, target: nil)
            if point.books != smallest.books {
                // Bounded caches: the process's own memory does not follow the number of stored
                // objects. Its file-backed pages are the store file's page cache, which the kernel
                // holds for `pread` as well; the row after this one shows them, bounded by the map.
                rss.target = (Double(point.privateAfterLoad) / Double(max(smallest.privateAfterLoad, 1)), nil, 1.5)
            }
            table.rows.append(rss)
            table.rows.append(
                BenchTable.Row(
                    scenario: "scale \(size): server file-backed RSS after load", connections: "",
                    throughput: Double(point.fileBackedAfterLoad) / 1_048_576, unit: "MiB", p50: "", p99: "",
                    baseline: "same at \(Self.sizeLabel(smallest.books))",
                    baselineValue: Double(smallest.fileBackedAfterLoad) / 1_048_576, target: nil))
            table.notes.append(
                String(
                    format:
                        "scale %@: start-up %.0f ms, RSS %.1f MiB after start-up and %.1f MiB after the load (private %.1f MiB, file-backed %.1f MiB, of which the store file %.1f MiB)",
                    size, point.startupMilliseconds, Double(point.rssAfterStartup) / 1_048_576,
                    Double(point.rssAfterLoad) / 1_048_576, Double(point.privateAfterLoad) / 1_048_576,
                    Double(point.fileBackedAfterLoad) / 1_048_576, Double(point.storeFileMapped) / 1_048_576))
        }
        return points
    }

    /// One size's `strata serve` child process, ready, with its start-up time and memory.
    struct Served {
        let books: Int
        let directory: URL
        let process: Process
        let port: Int
        let startupMilliseconds: Double
        let rssAfterStartup: Int

        var base: String { "http://127.0.0.1:\(port)" }

        func stop() {
            guard process.isRunning else { return }
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// One size: seed, serve, wait for `/ready`.
    private func serve(books: Int) throws -> Served {
        let directory = folder.appendingPathComponent("scale-\(books)")
        try seed(books: books, directory: directory)
        let port = try Self.freePort()
        guard let executable = BenchCommand.sibling("strata") else {
            throw BenchError("the strata executable is not built beside strata-bench")
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = [
            "serve", "--port", "\(port)", "--data-dir", directory.path, "--max-connections", "4096",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let started = DispatchTime.now().uptimeNanoseconds
        try process.run()
        var ready = false
        for _ in 0..<6_000 {
            if Self.get(port: port, path: "/ready")?.status == 200 {
                ready = true
                break
            }
            usleep(5_000)
        }
        guard ready else {
            process.terminate()
            process.waitUntilExit()
            throw BenchError("strata serve over \(books) books did not become ready in 30 s")
        }
        let startup = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
        return Served(
            books: books, directory: directory, process: process, port: port, startupMilliseconds: startup,
            rssAfterStartup: Memory.value("VmRSS:", process: "\(process.processIdentifier)"))
    }

    /// One size's list pages and memory after the load, with its GET by id result.
    private func measurePages(_ server: Served, getByID: Wrk.Result) throws -> Point {
        let seconds = settings.duration
        let firstPage = try wrk.run(
            url: server.base + Self.listPath, connections: 64, seconds: seconds, script: "", folder: folder)
        // The 1,000th page's cursor, from the `next` link of the page before it.
        let pages = server.books / 10
        let deepPageNumber = max(2, min(1_000, pages))
        guard
            let before = Self.get(port: server.port, path: Self.listPath + "&offset=\((deepPageNumber - 2) * 10)"),
            before.status == 200,
            let next = (try? JSONValue.parse(Array(before.body.utf8)))?.objectValue?["next"]?.stringValue
        else {
            throw BenchError("no next link before page \(deepPageNumber) over \(server.books) books")
        }
        let deepPage = try wrk.run(
            url: server.base + next, connections: 64, seconds: seconds, script: "", folder: folder)
        let process = "\(server.process.processIdentifier)"
        let status = Memory.status(process: process)
        return Point(
            books: server.books, startupMilliseconds: server.startupMilliseconds,
            rssAfterStartup: server.rssAfterStartup, rssAfterLoad: status["VmRSS:"] ?? 0,
            privateAfterLoad: status["RssAnon:"] ?? 0, fileBackedAfterLoad: status["RssFile:"] ?? 0,
            storeFileMapped: Memory.mappedResident(process: process, under: server.directory.path),
            getByID: getByID, firstPage: firstPage, deepPage: deepPage, deepPageNumber: deepPageNumber)
    }

    /// `books` books in a fresh catalogue, as the HTTP scenarios' seed writes them (no author).
    private func seed(books: Int, directory: URL) throws {
        var options = ServerOptions()
        options.port = 0
        options.dataDirectory = directory.path
        let server = StrataServerInstance(model: try ObjectModel.example, options: options, log: { _ in })
        try server.start()
        defer { server.stop() }
        try HTTPBench.seedBooks(server, count: books, author: false)
    }

    /// `10k`, `1M`.
    static func sizeLabel(_ books: Int) -> String {
        if books >= 1_000_000, books % 1_000_000 == 0 { return "\(books / 1_000_000)M" }
        if books >= 1_000, books % 1_000 == 0 { return "\(books / 1_000)k" }
        return "\(books)"
    }

    /// A free loopback port.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("no socket") }
        defer { close(fd) }
        var address = Loopback.address(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                Glibc.bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw BenchError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A plain HTTP/1.1 GET on loopback: the status and the body (up to 1 MiB), nil when nothing
    /// answers.
    static func get(port: Int, path: String) -> (status: Int, body: String)? {
        guard let fd = Loopback.connect(port: UInt16(port), seconds: 10) else { return nil }
        defer { close(fd) }
        let request = Loopback.getRequest(path)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return nil }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while response.count < 1_048_576 {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            response += buffer[0..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let head = text.range(of: "\r\n\r\n"),
            let status = Int(text.split(separator: " ", maxSplits: 2).dropFirst().first ?? "")
        else { return nil }
        return (status, String(text[head.upperBound...]))
    }
}
