import Foundation
import Strata

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 client over one kept-alive connection, for load tests: many requests on one socket,
/// as a browser or a generated client sends them. Reconnects when the server closed the connection.
/// Not thread-safe: one per thread.
public final class KeepAliveClient {
    /// The server's loopback port.
    public let port: UInt16
    private var fd: Int32 = -1
    private var pending: [UInt8] = []

    /// A client of the server on `port`; it connects on first use.
    public init(port: UInt16) { self.port = port }

    deinit { disconnect() }

    private func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
        pending = []
    }

    private func connectIfNeeded() throws {
        if fd >= 0 { return }
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError("socket failed") }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            disconnect()
            throw TestClientError("connect failed: \(errno)")
        }
    }

    /// Sends one request and reads its response; retries once on a fresh connection when the kept
    /// connection turns out closed before any response byte arrived.
    public func send(_ method: String, _ target: String, json: String? = nil, headers: [String: String] = [:]) throws
        -> ClientResponse
    {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        let body = json.map { Array($0.utf8) } ?? []
        if json != nil { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + body
        for attempt in 0..<2 {
            try connectIfNeeded()
            if let response = try exchange(bytes) { return response }
            disconnect()
            if attempt == 1 { break }
        }
        throw TestClientError("the server closed the connection without answering \(method) \(target)")
    }

    /// One exchange on the open connection; nil when it was closed before the response began.
    private func exchange(_ bytes: [UInt8]) throws -> ClientResponse? {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return nil }
            sent += n
        }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let (response, used) = Self.parse(pending) {
                pending.removeFirst(used)
                if response.header("connection")?.lowercased() == "close" { disconnect() }
                return response
            }
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 {
                if pending.isEmpty { return nil }
                throw TestClientError("the connection closed in the middle of a response")
            }
            pending += buffer[0..<n]
        }
    }

    /// A whole response at the start of `bytes` and how many bytes it took.
    static func parse(_ bytes: [UInt8]) -> (ClientResponse, Int)? {
        guard let (head, start) = ResponseHead.parse(bytes) else { return nil }
        let length = head.headers["content-length"].flatMap(Int.init) ?? 0
        guard bytes.count >= start + length else { return nil }
        return (
            ClientResponse(status: head.status, headers: head.headers, body: Array(bytes[start..<start + length])),
            start + length
        )
    }
}

/// The status line and headers of an HTTP/1.1 response.
struct ResponseHead {
    var status: Int
    var headers: [String: String]

    /// The head at the start of `bytes` and where its body starts; nil until the head is complete.
    static func parse(_ bytes: [UInt8]) -> (ResponseHead, Int)? {
        guard bytes.count >= 4 else { return nil }
        var end = -1
        for index in 0..<(bytes.count - 3)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            end = index
            break
        }
        guard end >= 0 else { return nil }
        let lines = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return (ResponseHead(status: status, headers: headers), end + 4)
    }
}
