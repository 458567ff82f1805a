import Foundation

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

/// The C ceiling (`strata-ceiling`, built beside `strata-bench`) on a free port, for as long as the
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
        guard let executable = BenchCommand.sibling("strata-ceiling") else { return nil }
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
