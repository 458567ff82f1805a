import Foundation
import Strata

#if canImport(Glibc)
    import Glibc
#endif

/// A response as the test client read it.
public struct ClientResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The headers, by lowercased name.
    public var headers: [String: String]
    /// The body.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }
    /// The body parsed as JSON (null when it is not JSON).
    public var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }
    /// A header by name, in any case.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A blocking HTTP/1.1 client over one plain loopback socket, the only one the tests use: a test
/// controls every byte it sends (invalid UTF-8, wrong lengths, odd headers, a body in pieces),
/// sends several requests on one connection, or reaches the socket itself (``descriptor``).
/// Not thread-safe: one per thread.
public final class TestConnection {
    /// The server's loopback port.
    public let port: UInt16
    /// Whether it connects to `::1` rather than `127.0.0.1`.
    public let ipv6: Bool
    /// Seconds a read waits before it fails.
    public let receiveTimeout: Int
    /// The socket; -1 while closed.
    public private(set) var descriptor: Int32 = -1
    private var pending: [UInt8] = []

    /// A connection to the server on `port`, connected now.
    public init(port: UInt16, ipv6: Bool = false, receiveTimeout: Int = 30) throws {
        self.port = port
        self.ipv6 = ipv6
        self.receiveTimeout = receiveTimeout
        try connect()
    }

    /// A connection to the server on `port` that connects on its first request and connects
    /// again when the server has closed it (see ``request(_:_:body:headers:)``), as a browser or
    /// a generated client does.
    public init(reconnectingTo port: UInt16, receiveTimeout: Int = 60) {
        self.port = port
        self.ipv6 = false
        self.receiveTimeout = receiveTimeout
    }

    deinit { disconnect() }

    /// Closes the socket.
    public func disconnect() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        pending = []
    }

    private func connect() throws {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError("socket failed: errno \(errno)") }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        let status: Int32
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = in6addr_loopback
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard status == 0 else {
            let error = errno
            close(fd)
            throw TestClientError("connect to port \(port) failed: errno \(error)")
        }
        descriptor = fd
        pending = []
    }

    /// Sends raw bytes, all of them.
    public func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            // MSG_NOSIGNAL: the server may answer (413) and close before reading everything, and a
            // write to the closed socket must be an EPIPE here, not a SIGPIPE that ends the test run.
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw TestClientError("send failed: errno \(errno)") }
            sent += count
        }
    }

    /// Sends text as UTF-8.
    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends `text` and reads one response.
    public func exchange(_ text: String) throws -> ClientResponse {
        try send(text)
        return try readResponse()
    }

    /// Reads one response: its body is `Content-Length` bytes, none for a `HEAD` request (whatever
    /// its `Content-Length` says) or a 204 or 304, else what arrives until the server closes.
    public func readResponse(isHead: Bool = false) throws -> ClientResponse {
        while true {
            if let (head, start) = ResponseHead.parse(pending) {
                let declared = head.headers["content-length"].flatMap(Int.init)
                let length =
                    isHead || head.status == 204 || head.status == 304 || (100..<200).contains(head.status)
                    ? 0 : declared
                if let length {
                    while pending.count < start + length {
                        guard try fill() else { throw TestClientError("the connection closed in a response's body") }
                    }
                    let body = Array(pending[start..<start + length])
                    pending.removeFirst(start + length)
                    if head.headers["connection"]?.lowercased() == "close" { disconnect() }
                    return ClientResponse(status: head.status, headers: head.headers, body: body)
                }
                while try fill() {}
                let body = Array(pending[start...])
                disconnect()
                return ClientResponse(status: head.status, headers: head.headers, body: body)
            }
            guard try fill() else {
                let closed = pending.isEmpty
                let count = pending.count
                disconnect()
                throw TestClientError(
                    closed ? "the server closed the connection" : "no HTTP response (\(count) bytes)",
                    closedBeforeResponse: closed)
            }
        }
    }

    /// Reads what arrives into `pending`; false when the server closed the connection.
    private func fill() throws -> Bool {
        guard descriptor >= 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = read(descriptor, &chunk, chunk.count)
        if count == 0 { return false }
        guard count > 0 else {
            let error = errno
            if error == ECONNRESET { return false }
            throw TestClientError("read failed or timed out: errno \(error)")
        }
        pending += chunk[..<count]
        return true
    }

    /// Sends a request (a JSON body when `json` is given) and reads its response; on a kept
    /// connection the server closed before answering, it tries once more on a fresh one.
    public func request(
        _ method: String, _ target: String, json: String? = nil, headers: [String: String] = [:]
    ) throws -> ClientResponse {
        let bytes = TestClient.request(
            method, target, port: port, body: json.map { Array($0.utf8) }, headers: headers, close: false)
        for attempt in 0..<2 {
            let reused = descriptor >= 0
            if !reused { try connect() }
            do {
                try send(bytes)
                return try readResponse(isHead: method == "HEAD")
            } catch let error as TestClientError where reused && attempt == 0 {
                // A kept connection the server had closed: a send failure or nothing read.
                guard error.closedBeforeResponse || error.description.hasPrefix("send failed") else { throw error }
                disconnect()
            }
        }
        throw TestClientError("the server closed the connection without answering \(method) \(target)")
    }
}

/// Requests on a fresh connection each (`Connection: close`), for tests that send one request
/// at a time.
public struct TestClient: Sendable {
    /// The server's loopback port.
    public let port: UInt16

    /// A client of the server on `port`.
    public init(port: UInt16) { self.port = port }

    /// Sends a request with a raw body.
    public func send(
        _ method: String, _ target: String, body: [UInt8]? = nil, headers: [String: String] = [:]
    ) throws -> ClientResponse {
        try exchange(
            Self.request(method, target, port: port, body: body, headers: headers, close: true),
            isHead: method == "HEAD")
    }

    /// Sends a request with a JSON body.
    public func send(_ method: String, _ target: String, json: String, headers: [String: String] = [:]) throws
        -> ClientResponse
    {
        try send(method, target, body: Array(json.utf8), headers: headers)
    }

    /// Sends raw bytes on a new connection and reads one response (of a `HEAD` request: no body).
    public func exchange(_ bytes: [UInt8], isHead: Bool = false) throws -> ClientResponse {
        let connection = try TestConnection(port: port)
        do {
            try connection.send(bytes)
        } catch {
            // The server may answer (413, say) and close before it read everything: read that.
        }
        return try connection.readResponse(isHead: isHead)
    }

    /// The bytes of a request: a JSON `Content-Type` unless `headers` names another, and headers
    /// with an empty value left out.
    static func request(
        _ method: String, _ target: String, port: UInt16, body: [UInt8]?, headers: [String: String], close: Bool
    ) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        if close { head += "Connection: close\r\n" }
        var headers = headers
        if let body {
            if headers["Content-Type"] == nil { headers["Content-Type"] = "application/json" }
            head += "Content-Length: \(body.count)\r\n"
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) where !value.isEmpty {
            head += "\(name): \(value)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + (body ?? [])
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
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            return nil
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return (ResponseHead(status: status, headers: headers), end + 4)
    }
}

/// What went wrong in a test client or a test's wait.
public struct TestClientError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// Whether the server closed the connection before any byte of a response arrived.
    public var closedBeforeResponse: Bool
    /// Creates an error.
    public init(_ description: String, closedBeforeResponse: Bool = false) {
        self.description = description
        self.closedBeforeResponse = closedBeforeResponse
    }
}
