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

/// A blocking HTTP/1.1 client over a plain socket, one connection per request, so tests control
/// every byte they send (invalid UTF-8, wrong lengths, odd headers).
public struct TestClient: Sendable {
    /// The server's loopback port.
    public let port: UInt16

    /// A client of the server on `port`.
    public init(port: UInt16) { self.port = port }

    /// Sends a request with a raw body.
    public func send(
        _ method: String, _ target: String, body: [UInt8]? = nil, headers: [String: String] = [:]
    ) throws -> ClientResponse {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        var headers = headers
        if let body {
            if headers["Content-Type"] == nil { headers["Content-Type"] = "application/json" }
            head += "Content-Length: \(body.count)\r\n"
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) where !value.isEmpty {
            head += "\(name): \(value)\r\n"
        }
        head += "\r\n"
        return try exchange(Array(head.utf8) + (body ?? []))
    }

    /// Sends a request with a JSON body.
    public func send(_ method: String, _ target: String, json: String, headers: [String: String] = [:]) throws
        -> ClientResponse
    {
        try send(method, target, body: Array(json.utf8), headers: headers)
    }

    /// A socket connected to the server, reads on it giving up after `receiveTimeout` seconds; the
    /// caller closes it.
    public func connectedSocket(receiveTimeout: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError("socket failed") }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
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
            close(fd)
            throw TestClientError("connect failed: \(errno)")
        }
        return fd
    }

    /// Sends raw bytes and reads one response until the server closes or the body is complete.
    public func exchange(_ bytes: [UInt8]) throws -> ClientResponse {
        let fd = try connectedSocket(receiveTimeout: 30)
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            // MSG_NOSIGNAL: the server may answer (413) and close before reading everything, and a
            // write to the closed socket must be an EPIPE here, not a SIGPIPE that ends the test run.
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            received += buffer[0..<n]
            if let response = Self.parse(received), response.complete { return response.response }
        }
        guard let response = Self.parse(received) else {
            throw TestClientError("no HTTP response (\(received.count) bytes)")
        }
        return response.response
    }

    /// The response at the start of `bytes`, and whether it is complete (its whole body arrived).
    static func parse(_ bytes: [UInt8]) -> (response: ClientResponse, complete: Bool)? {
        guard let (head, start) = ResponseHead.parse(bytes) else { return nil }
        let body = Array(bytes[start...])
        let length = head.headers["content-length"].flatMap(Int.init)
        let complete = length.map { body.count >= $0 } ?? false
        return (
            ClientResponse(
                status: head.status, headers: head.headers, body: length.map { Array(body.prefix($0)) } ?? body),
            complete
        )
    }
}

public struct TestClientError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
