import Dispatch
import Foundation
import Strata
import StrataHTTP
import StrataServer
import StrataTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The libmicrohttpd layer over real loopback sockets: framing, limits, keep-alive, concurrency
/// and shutdown. Serialized, so that the tests that open many connections at once do not compete
/// with each other for the machine.
@Suite(.serialized)
struct HTTPServerTests {
    // MARK: Requests and responses

    /// A request built by hand may name its headers in any case, also after it was made.
    @Test func headerNamesAreFoundWhateverTheirCase() {
        var request = HTTPRequest(method: "GET", path: "/", headers: ["content-type": "a", "X-Token": "t"])
        #expect(request.header("Content-Type") == "a")
        #expect(request.header("x-token") == "t")
        #expect(request.header("accept") == nil)
        request.headers = ["accept": "b"]
        #expect(request.header("X-Token") == nil)
        #expect(request.header("ACCEPT") == "b")
        request.headers["If-Match"] = "\"1\""
        #expect(request.header("if-match") == "\"1\"")
    }

    @Test func echoesARequestWithItsBodyHeadersAndAddress() throws {
        let recorder = Recorder()
        let server = try Self.startServer(recorder)
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        try connection.send(
            "POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "hello")
        #expect(response.headers["content-length"] == "5")
        #expect(response.headers["content-type"] == "text/plain")
        #expect(response.headers["x-echo"] == "yes")
        #expect(response.headers["date"] != nil)
        let request = try #require(recorder.requests.last)
        #expect(request.method == "POST")
        #expect(request.path == "/echo")
        #expect(request.header("Content-Type") == "text/plain")
        #expect(request.body == Array("hello".utf8))
        #expect(request.remoteAddress == "127.0.0.1")
        #expect(server.activeRequests == 0)
    }

    @Test func assemblesAChunkedUploadSentInSeveralWrites() throws {
        let recorder = Recorder()
        let server = try Self.startServer(recorder)
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        try connection.send("POST /upload HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
        for piece in ["hello", ", chunked", " world", "!"] {
            // Paced (not waiting for anything): each piece reaches the server in a read of its own.
            usleep(20_000)
            try connection.send(Self.chunk(Array(piece.utf8)))
        }
        try connection.send("0\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "hello, chunked world!")

        // A larger body than libmicrohttpd's connection buffer arrives over many calls.
        let large = (0..<200_000).map { UInt8($0 % 251) }
        try connection.send("POST /upload HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
        for start in stride(from: 0, to: large.count, by: 10_000) {
            try connection.send(Self.chunk(Array(large[start..<start + 10_000])))
        }
        try connection.send("0\r\n\r\n")
        let second = try connection.readResponse()
        #expect(second.status == 200)
        #expect(second.body == large)
        #expect(recorder.requests.last?.body == large)
    }

    @Test func answersADeclaredBodyOverTheLimitBeforeItIsSent() throws {
        let recorder = Recorder()
        let server = try Self.startServer(recorder) { $0.maxBodyBytes = 1000 }
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        // Only the head: the body is never sent, so a response proves the server did not wait.
        try connection.send("POST /big?x=1 HTTP/1.1\r\nHost: test\r\nContent-Length: 5000000\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.text == "too large")
        #expect(recorder.requests.isEmpty)
        let rejected = try #require(recorder.rejected.last)
        #expect(rejected.path == "/big")
        #expect(rejected.queryValues("x") == ["1"])
        #expect(rejected.body.isEmpty)

        // Exactly at the limit is accepted.
        let exact = try TestConnection(port: server.port)
        try exact.send(
            "POST /fits HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "a", count: 1000))
        let fits = try exact.readResponse()
        #expect(fits.status == 200)
        #expect(fits.body.count == 1000)
    }

    @Test func answersAChunkedBodyThatGrowsOverTheLimitWhenTheUploadEnds() throws {
        let recorder = Recorder()
        let server = try Self.startServer(recorder) { $0.maxBodyBytes = 1000 }
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        try connection.send("POST /big HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in 0..<5 {
            try connection.send(Self.chunk([UInt8](repeating: 0x61, count: 400)))
            // Paced (not waiting for anything): the body grows over several reads.
            usleep(10_000)
        }
        try connection.send("0\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.text == "too large")
        #expect(recorder.requests.isEmpty)
        #expect(recorder.rejected.last?.body.isEmpty == true)
        #expect(recorder.rejected.last?.path == "/big")
    }

    @Test func keepsTheConnectionAliveAcrossRequests() throws {
        let recorder = Recorder()
        let server = try Self.startServer(recorder)
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        try connection.send("POST /first HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n\r\nabc")
        let first = try connection.readResponse()
        try connection.send("GET /second HTTP/1.1\r\nHost: test\r\n\r\n")
        let second = try connection.readResponse()
        #expect(first.status == 200)
        #expect(first.text == "abc")
        #expect(first.headers["connection"]?.lowercased() != "close")
        #expect(second.status == 200)
        #expect(second.text == "")
        #expect(recorder.requests.map(\.path) == ["/first", "/second"])
    }

    @Test func answersHeadWithTheHeadersOfGetAndNoBody() throws {
        let server = HTTPServer(configuration: Self.loopback()) { request in
            HTTPResponse(status: 200, headers: [("X-Method", request.method)], body: Array("0123456789".utf8))
        } tooLarge: { _ in
            HTTPResponse(status: 413)
        }
        try server.start()
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        try connection.send("HEAD /doc HTTP/1.1\r\nHost: test\r\n\r\n")
        let head = try connection.readResponse(isHead: true)
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == "10")
        #expect(head.headers["x-method"] == "HEAD")
        // Had a body followed the HEAD response, it would be read here in place of a status line.
        try connection.send("GET /doc HTTP/1.1\r\nHost: test\r\n\r\n")
        let get = try connection.readResponse()
        #expect(get.status == 200)
        #expect(get.text == "0123456789")
    }

    @Test func readsHeadersCaseInsensitively() throws {
        let recorder = Recorder()
        let server = try Self.startServer(recorder)
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        try connection.send(
            "GET / HTTP/1.1\r\nHOST: test\r\nX-Custom: One\r\nx-CUSTOM: Two\r\naccept: text/html\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
        let request = try #require(recorder.requests.last)
        #expect(request.headers["x-custom"] == "One, Two")
        #expect(request.header("X-CUSTOM") == "One, Two")
        #expect(request.header("Accept") == "text/html")
        #expect(request.header("host") == "test")
        #expect(request.header("missing") == nil)
        #expect(HTTPRequest(method: "GET", path: "/", headers: ["If-Match": "\"3\""]).header("if-match") == "\"3\"")
    }

    @Test func decodesThePathAndTheQuery() throws {
        let recorder = Recorder()
        let server = try Self.startServer(recorder)
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        try connection.send("GET /a%20b?x=1&y=%C3%A9&y=2 HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
        let request = try #require(recorder.requests.last)
        #expect(request.path == "/a b")
        #expect(request.query.map { "\($0.name)=\($0.value)" } == ["x=1", "y=é", "y=2"])
        #expect(request.queryValues("y") == ["é", "2"])
        #expect(request.queryValues("z") == [])

        // In the path '+' is itself and %2F a slash; in the query '+' is a space and %2B a plus.
        try connection.send("GET /p+q%2Fr%2B%zz?s=a+b%2Bc&flag&empty=&%26=%3D HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try connection.readResponse().status == 200)
        let second = try #require(recorder.requests.last)
        #expect(second.path == "/p+q/r+%zz")
        #expect(second.query.map { "\($0.name)=\($0.value)" } == ["s=a b+c", "flag=", "empty=", "&=="])
    }

    // MARK: Concurrency and lifecycle

    @Test func aBlockingHandlerDoesNotStallOtherConnections() throws {
        // The slow handler blocks until the test lets it go: every quick request must be answered
        // while it is still blocked, however slow the machine.
        let gate = DispatchSemaphore(value: 0)
        let server = HTTPServer(configuration: Self.loopback()) { request in
            if request.path == "/slow" { gate.wait() }
            return HTTPResponse(status: 200, body: Array(request.path.utf8))
        } tooLarge: { _ in
            HTTPResponse(status: 413)
        }
        try server.start()
        defer { server.stop() }
        let slow = Self.inBackground { () throws -> ClientResponse in
            let connection = try TestConnection(port: server.port)
            try connection.send("GET /slow HTTP/1.1\r\nHost: test\r\n\r\n")
            return try connection.readResponse()
        }
        try waitUntil { server.activeRequests == 1 }
        let statuses = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 20) { index in
            let status = try? TestConnection(port: server.port).exchange(
                "GET /quick/\(index) HTTP/1.1\r\nHost: t\r\n\r\n")
            statuses.withLock { $0.append(status?.status ?? 0) }
        }
        #expect(statuses.withLock { $0 } == [Int](repeating: 200, count: 20))
        #expect(server.activeRequests == 1, "the slow handler is still blocked")
        gate.signal()
        let slowResponse = try slow.result()
        #expect(slowResponse.status == 200)
        #expect(slowResponse.text == "/slow")
    }

    /// Each dispatch mode on one keep-alive connection and beside each other: inline answers on
    /// the polling thread, deferred answers later from another thread (or 500 when its responder
    /// is dropped unanswered), and neither holds other connections up.
    @Test func dispatchesInlinePooledAndDeferredRequests() throws {
        let threads = Locked<[String: String]>([:])
        // Deferred "/held" requests are answered only when the test releases them.
        let held = Locked<[HTTPResponder]>([])
        let server = HTTPServer(
            configuration: Self.loopback(),
            handler: { request in
                threads.withLock { $0[request.path] = Thread.current.name ?? "" }
                return HTTPResponse(status: 200, body: Array("handled \(request.path)".utf8))
            },
            tooLarge: { _ in HTTPResponse(status: 413) },
            dispatch: { request in
                switch request.path {
                case "/inline": .inline
                case "/later", "/held", "/lost": .deferred
                default: .pool
                }
            },
            deferred: { request, responder in
                switch request.path {
                case "/later":
                    DispatchQueue.global().async {
                        responder.respond(
                            HTTPResponse(status: 202, body: Array("later \(responder.request.path)".utf8)))
                    }
                case "/held": held.withLock { $0.append(responder) }
                default: break  // "/lost" drops its responder
                }
            })
        try server.start()
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        let later = try connection.exchange("GET /later HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(later.status == 202)
        #expect(later.text == "later /later")
        #expect(later.headers["connection"]?.lowercased() != "close")
        #expect(try connection.exchange("GET /inline HTTP/1.1\r\nHost: t\r\n\r\n").text == "handled /inline")
        let second = try TestConnection(port: server.port)
        #expect(try second.exchange("GET /inline HTTP/1.1\r\nHost: t\r\n\r\n").text == "handled /inline")
        #expect(try second.exchange("GET /pooled HTTP/1.1\r\nHost: t\r\n\r\n").text == "handled /pooled")
        #expect(try second.exchange("GET /lost HTTP/1.1\r\nHost: t\r\n\r\n").status == 500)
        #expect(threads.withLock { $0["/pooled"] } == "strata-handler")
        #expect(threads.withLock { $0["/inline"] } != "strata-handler")

        // Twenty deferred requests wait at once; quick ones on other connections are answered
        // while all twenty are still unanswered.
        let waiting = try (0..<20).map { _ in
            let connection = try TestConnection(port: server.port)
            try connection.send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n")
            return connection
        }
        try waitUntil { held.withLock { $0.count } == 20 }
        for _ in 0..<20 {
            #expect(
                try TestConnection(port: server.port).exchange("GET /inline HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
        }
        #expect(server.activeRequests == 20, "the deferred requests are still waiting")
        for responder in held.withLock({ $0 }) { responder.respond(HTTPResponse(status: 202)) }
        held.withLock { $0.removeAll() }
        for connection in waiting { #expect(try connection.readResponse().status == 202) }
        try waitUntil { server.activeRequests == 0 }
    }

    @Test func stopWaitsForARequestInFlightThenRefusesConnections() throws {
        let gate = DispatchSemaphore(value: 0)
        let server = HTTPServer(configuration: Self.loopback()) { request in
            if request.path == "/slow" { gate.wait() }
            return HTTPResponse(status: 200, body: Array("done \(request.path)".utf8))
        } tooLarge: { _ in
            HTTPResponse(status: 413)
        }
        try server.start()
        let port = server.port
        // An idle keep-alive connection must not hold the shutdown up.
        let idle = try TestConnection(port: port)
        #expect(try idle.exchange("GET /idle HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
        let slow = Self.inBackground { () throws -> ClientResponse in
            let connection = try TestConnection(port: port)
            try connection.send("GET /slow HTTP/1.1\r\nHost: test\r\n\r\n")
            return try connection.readResponse()
        }
        try waitUntil { server.activeRequests == 1 }
        let stopped = Locked(false)
        let stopping = Self.inBackground { () -> Bool in
            server.stop()
            stopped.withLock { $0 = true }
            return true
        }
        // New connections are refused as soon as the stop begins, while the request in flight
        // still holds it (its handler is blocked until the gate opens).
        try waitUntil { (try? TestConnection(port: port)) == nil }
        #expect(!stopped.withLock { $0 }, "stop() returned before the request in flight finished")
        gate.signal()
        #expect(try stopping.result())
        let response = try slow.result()
        #expect(response.status == 200)
        #expect(response.text == "done /slow")
        #expect(response.headers["connection"]?.lowercased() == "close")
        #expect(throws: (any Error).self) { try TestConnection(port: port) }
        #expect(server.activeRequests == 0)
        server.stop()  // idempotent
    }

    @Test func reportsABusyPortAndABadHost() throws {
        let first = try Self.startServer(Recorder())
        defer { first.stop() }
        var configuration = Self.loopback()
        configuration.port = first.port
        let second = HTTPServer(configuration: configuration) { _ in
            HTTPResponse(status: 200)
        } tooLarge: { _ in
            HTTPResponse(status: 413)
        }
        do {
            try second.start()
            Issue.record("a second server started on busy port \(first.port)")
        } catch {
            #expect(error.message.contains("\(first.port)"), "\(error.message)")
        }

        configuration.host = "not-an-address"
        configuration.port = 0
        let third = HTTPServer(configuration: configuration) { _ in
            HTTPResponse(status: 200)
        } tooLarge: { _ in
            HTTPResponse(status: 413)
        }
        do {
            try third.start()
            Issue.record("a server started on host 'not-an-address'")
        } catch {
            #expect(error.description.contains("not-an-address"), "\(error.message)")
        }
        // The first server still serves.
        #expect(try TestConnection(port: first.port).exchange("GET / HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
    }

    @Test func survivesMalformedRequests() throws {
        let recorder = Recorder()
        let server = try Self.startServer(recorder) { $0.maxBodyBytes = 100 }
        defer { server.stop() }
        let inputs = [
            "GARBAGE\r\n\r\n",
            "GET\r\n\r\n",
            "\0\u{1}\u{2} / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: t\r\nX-Big: \(String(repeating: "x", count: 100_000))\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n",
            "GET /%00%ff%fe?%00=%ff HTTP/1.1\r\nHost: t\r\n\r\n",
        ]
        for input in inputs {
            // libmicrohttpd waits for more of some broken requests; the idle timeout ends those.
            let connection = try TestConnection(port: server.port, receiveTimeout: 1)
            try? connection.send(input)
            if let response = try? connection.readResponse() {
                #expect((200..<500).contains(response.status), "\(input.prefix(40)): \(response.status)")
            }
        }
        #expect(try TestConnection(port: server.port).exchange("GET /ok HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
    }

    /// The IPv6 loopback address (`::1` in /proc/net/if_inet6), or that it is missing.
    static let ipv6Loopback = Requirement(
        "the IPv6 loopback address",
        missing: ((try? String(contentsOfFile: "/proc/net/if_inet6", encoding: .utf8)) ?? "").contains(
            "00000000000000000000000000000001")
            ? nil
            : "no ::1 in /proc/net/if_inet6; enable IPv6 on the loopback interface (sysctl net.ipv6.conf.lo.disable_ipv6=0)"
    )

    @Test(.enabled(if: ipv6Loopback.runs, "\(ipv6Loopback.skipComment)"))
    func servesIPv6Loopback() throws {
        try Self.ipv6Loopback.check()
        var configuration = Self.loopback()
        configuration.host = "::1"
        let server = HTTPServer(configuration: configuration) { request in
            HTTPResponse(status: 200, body: Array(request.remoteAddress.utf8))
        } tooLarge: { _ in
            HTTPResponse(status: 413)
        }
        try server.start()
        defer { server.stop() }
        let connection = try TestConnection(port: server.port, ipv6: true)
        #expect(try connection.exchange("GET / HTTP/1.1\r\nHost: t\r\n\r\n").text == "::1")
    }
}

// MARK: - Helpers

extension HTTPServerTests {
    /// Records what the handler and the `tooLarge` builder received.
    final class Recorder: Sendable {
        private let handled = Locked<[HTTPRequest]>([])
        private let tooLarge = Locked<[HTTPRequest]>([])

        var requests: [HTTPRequest] { handled.withLock { $0 } }
        var rejected: [HTTPRequest] { tooLarge.withLock { $0 } }

        func echo(_ request: HTTPRequest) -> HTTPResponse {
            handled.withLock { $0.append(request) }
            let type = request.header("content-type") ?? "application/octet-stream"
            return HTTPResponse(status: 200, headers: [("X-Echo", "yes"), ("Content-Type", type)], body: request.body)
        }

        func reject(_ request: HTTPRequest) -> HTTPResponse {
            tooLarge.withLock { $0.append(request) }
            return HTTPResponse(status: 413, headers: [("Content-Type", "text/plain")], body: Array("too large".utf8))
        }
    }

    static func loopback() -> HTTPServerConfiguration {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.connectionTimeoutSeconds = 10
        return configuration
    }

    static func startServer(_ recorder: Recorder, configure: (inout HTTPServerConfiguration) -> Void = { _ in })
        throws -> HTTPServer
    {
        var configuration = loopback()
        configure(&configuration)
        let server = HTTPServer(
            configuration: configuration, handler: { recorder.echo($0) }, tooLarge: { recorder.reject($0) })
        try server.start()
        return server
    }

    static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + Array("\r\n".utf8)
    }

    /// Work running on a Dispatch thread (never the test's own), whose result is awaited later.
    final class Background<Value: Sendable>: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let value = Locked<Result<Value, any Error>?>(nil)

        func result() throws -> Value {
            guard done.wait(timeout: .now() + 120) == .success else {
                throw TestClientError("background work timed out")
            }
            return try value.withLock { $0! }.get()
        }

        fileprivate func finish(_ result: Result<Value, any Error>) {
            value.withLock { $0 = result }
            done.signal()
        }
    }

    static func inBackground<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) -> Background<Value> {
        let background = Background<Value>()
        DispatchQueue.global().async { background.finish(Result { try work() }) }
        return background
    }
}
