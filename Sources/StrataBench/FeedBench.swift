import Foundation
import Strata
import StrataServer

#if canImport(Glibc)
    import Glibc
#endif

/// The change feed's fan-out: N clients follow `/_changes` as server-sent events while one writer
/// creates authors; each event's delay is from the moment its write was sent to the moment the
/// subscriber read it (so it includes the commit itself).
struct FeedBench {
    let folder: URL
    let settings: BenchCommand.Settings

    /// The subscriber counts measured, and the writes each sees.
    var fanOuts: [Int] { [100, 1000] }
    var writes: Int { settings.quick ? 20 : 100 }

    func run(into table: inout BenchTable) throws {
        var options = ServerOptions()
        options.port = 0
        options.dataDirectory = folder.appendingPathComponent("feed").path
        options.maxConnections = 4096
        options.maxConnectionsPerIP = 4096
        let server = StrataServerInstance(model: try ObjectModel.example, options: options, log: { _ in })
        try server.start()
        defer { server.stop() }
        for subscribers in fanOuts {
            let result = try measure(port: server.port, subscribers: subscribers)
            var row = BenchTable.Row(
                scenario: "SSE /_changes fan-out: \(subscribers) subscribers, \(writes) POSTs",
                connections: "\(subscribers)", throughput: result.eventsPerSecond, unit: "events/s",
                p50: Self.text(result.p50), p99: Self.text(result.p99), baseline: "commit→delivery")
            row.target = (ratio: result.p99 / 0.1, atLeast: nil, atMost: subscribers >= 1000 ? 1.0 : nil)
            row.note =
                "\(result.delivered) of \(result.expected) events delivered"
                + (subscribers >= 1000 ? "; target p99 ≤ 100 ms" : "")
            table.rows.append(row)
        }
    }

    struct Result {
        var p50: Double
        var p99: Double
        var eventsPerSecond: Double
        var delivered: Int
        var expected: Int
    }

    /// Opens `subscribers` streams from the current token, writes `writes` authors one after the
    /// other, and times every delivery.
    func measure(port: UInt16, subscribers: Int) throws -> Result {
        let start = try request(port: port, "GET", "/authors?limit=1").token
        let sockets = try (0..<subscribers).map { _ in try Self.subscribe(port: port, after: start) }
        defer { for socket in sockets { close(socket) } }
        let sent = Locked<[Int64: UInt64]>([:])
        let finished = Locked(false)
        let writer = Thread { [self] in
            for index in 0..<writes {
                let before = DispatchTime.now().uptimeNanoseconds
                if let id = try? request(port: port, "POST", "/authors", body: #"{"name": "feed \#(index)"}"#).id {
                    sent.withLock { $0[id] = before }
                }
                usleep(10_000)
            }
            finished.withLock { $0 = true }
        }
        let began = DispatchTime.now().uptimeNanoseconds
        writer.start()
        let arrivals = Self.read(sockets, expecting: writes, until: finished)
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
        let times = sent.withLock { $0 }
        var delays: [Double] = []
        for (id, arrived) in arrivals {
            guard let before = times[id] else { continue }
            for time in arrived { delays.append(Double(time > before ? time - before : 0) / 1e9) }
        }
        delays.sort()
        let p50 = delays.isEmpty ? .infinity : delays[delays.count / 2]
        let p99 = delays.isEmpty ? .infinity : delays[min(delays.count - 1, delays.count * 99 / 100)]
        return Result(
            p50: p50, p99: p99, eventsPerSecond: Double(delays.count) / max(elapsed, 1e-9), delivered: delays.count,
            expected: times.count * subscribers)
    }

    /// Reads every socket until each has seen `expecting` inserts (or 10 s pass after the writer
    /// finished), noting when each author's event arrived on each.
    static func read(_ sockets: [Int32], expecting: Int, until finished: Locked<Bool>) -> [Int64: [UInt64]] {
        var arrivals: [Int64: [UInt64]] = [:]
        var seen = [Int](repeating: 0, count: sockets.count)
        var pending = [[UInt8]](repeating: [], count: sockets.count)
        var descriptors = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        var deadline: UInt64?
        let marker = Array(#"{"_id":"#.utf8)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while seen.contains(where: { $0 < expecting }) {
            let now = DispatchTime.now().uptimeNanoseconds
            if deadline == nil, finished.withLock({ $0 }) { deadline = now + 10_000_000_000 }
            if let deadline, now > deadline { break }
            guard poll(&descriptors, nfds_t(descriptors.count), 100) > 0 else { continue }
            let arrived = DispatchTime.now().uptimeNanoseconds
            for index in descriptors.indices where descriptors[index].revents != 0 {
                let count = Glibc.read(descriptors[index].fd, &buffer, buffer.count)
                guard count > 0 else {
                    descriptors[index].fd = -1
                    continue
                }
                pending[index] += buffer[..<count]
                // Each event's data starts with `{"_id":N`: the author's id.
                var position = 0
                while let found = firstIndex(of: marker, in: pending[index], from: position) {
                    var cursor = found + marker.count
                    var value: Int64 = 0
                    while cursor < pending[index].count, let digit = digitValue(pending[index][cursor]) {
                        value = value * 10 + digit
                        cursor += 1
                    }
                    guard cursor < pending[index].count else { break }
                    arrivals[value, default: []].append(arrived)
                    seen[index] += 1
                    position = cursor
                }
                pending[index].removeFirst(position)
            }
        }
        return arrivals
    }

    private static func digitValue(_ byte: UInt8) -> Int64? {
        byte >= 48 && byte <= 57 ? Int64(byte - 48) : nil
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count + start else { return nil }
        var index = start
        outer: while index <= haystack.count - needle.count {
            for offset in 0..<needle.count where haystack[index + offset] != needle[offset] {
                index += 1
                continue outer
            }
            return index
        }
        return nil
    }

    /// A socket following the authors' changes after `token`.
    static func subscribe(port: UInt16, after token: String) throws -> Int32 {
        let socket = try connect(port: port)
        let request =
            "GET /_changes?entities=Author HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            + "Last-Event-ID: \(token)\r\n\r\n"
        _ = Array(request.utf8).withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return socket
    }

    static func connect(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard fd >= 0, status == 0 else { throw BenchError("cannot connect to port \(port): errno \(errno)") }
        return fd
    }

    /// One request on its own connection: the `_id` of the object it answers and the response's
    /// history token.
    func request(port: UInt16, _ method: String, _ target: String, body: String = "") throws -> (
        id: Int64?, token: String
    ) {
        let socket = try Self.connect(port: port)
        defer { close(socket) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
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
        guard
            let header = whole.split(separator: "\r\n").first(where: {
                $0.lowercased().hasPrefix("strata-history-token:")
            })
        else { throw BenchError("\(method) \(target): no history token in \(whole.prefix(200))") }
        let token = header.dropFirst("strata-history-token:".count).trimmingCharacters(in: .whitespaces)
        var id: Int64?
        if let range = whole.range(of: #"{"_id":"#) {
            id = Int64(whole[range.upperBound...].prefix { $0.isNumber })
        }
        return (id, token)
    }

    static func text(_ seconds: Double) -> String {
        seconds.isFinite ? String(format: "%.2fms", seconds * 1000) : "—"
    }
}
