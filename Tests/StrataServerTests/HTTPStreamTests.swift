import Dispatch
import Foundation
import Strata
import StrataHTTP
import StrataTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Streamed responses (`HTTPStream`) over real loopback sockets: written from another thread
/// while no thread waits for the client, ended by the writer, by the client going away, by a
/// client that does not read, and by the server's stop.
@Suite(.serialized)
struct HTTPStreamTests {
    /// A server whose `/stream` answers with a new stream, handed to the test through `streams`.
    static func server(_ streams: Locked<[HTTPStream]>, buffer: Int = 1 << 20) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.requestTimeoutSeconds = 2
        configuration.shutdownGraceSeconds = 5
        let server = HTTPServer(configuration: configuration) { request in
            guard request.path == "/stream" else { return HTTPResponse(status: 200, body: Array("plain".utf8)) }
            let stream = HTTPStream(maxBufferedBytes: buffer)
            streams.withLock { $0.append(stream) }
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream")], stream: stream)
        } tooLarge: { _ in
            HTTPResponse(status: 413)
        }
        try server.start()
        return server
    }

    @Test func aStreamSendsWhatIsWrittenLaterAndEndsWhenClosed() throws {
        let streams = Locked<[HTTPStream]>([])
        let server = try Self.server(streams)
        defer { server.stop() }
        let client = try EventStreamClient(port: server.port, target: "/stream")
        #expect(client.status == 200)
        #expect(client.headers["transfer-encoding"] == "chunked")
        let stream = try #require(streams.current.first)
        // Written from another thread, with pauses during which the connection is suspended; the
        // server's request-time limit (2 s here) does not cut a stream.
        let writer = Thread {
            for index in 0..<3 {
                stream.send(Array("id: \(index)\ndata: \(index)\n\n".utf8))
                usleep(1_200_000)
            }
            stream.close()
        }
        writer.start()
        var events: [ServerEvent] = []
        while let event = try client.next() { events.append(event) }
        #expect(events.map(\.data) == ["0", "1", "2"])
        #expect(stream.isClosed)
        // The connection still answers after the streamed response ended.
        #expect(try TestClient(port: server.port).send("GET", "/plain").text == "plain")
    }

    @Test func aClientThatGoesAwayEndsTheStream() throws {
        let streams = Locked<[HTTPStream]>([])
        let server = try Self.server(streams)
        defer { server.stop() }
        let client = try EventStreamClient(port: server.port, target: "/stream")
        let stream = try #require(streams.current.first)
        let ended = Locked(false)
        stream.onClose { ended.withLock { $0 = true } }
        stream.send(Array("data: hello\n\n".utf8))
        #expect(try client.next()?.data == "hello")
        client.close()
        // libmicrohttpd notices on the next write to the closed socket.
        try waitUntil(seconds: 30) {
            stream.send(Array(": ping\n\n".utf8))
            return ended.current
        }
        #expect(stream.isClosed)
        #expect(!stream.send(Array("data: late\n\n".utf8)))
    }

    @Test func aClientThatDoesNotReadIsCutOff() throws {
        let streams = Locked<[HTTPStream]>([])
        let server = try Self.server(streams, buffer: 64 * 1024)
        defer { server.stop() }
        let connection = try TestConnection(port: server.port)
        try connection.send("GET /stream HTTP/1.1\r\nHost: test\r\n\r\n")
        try waitUntil(seconds: 30) { !streams.current.isEmpty }
        let stream = try #require(streams.current.first)
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 16 * 1024)
        // The client reads nothing: once the socket's buffers are full, the stream's own fills
        // and the next send is refused, closing the stream.
        var refused = false
        try waitUntil(seconds: 30) {
            refused = !stream.send(chunk)
            return refused
        }
        #expect(refused)
        #expect(stream.isClosed)
        #expect(stream.bufferedBytes <= 64 * 1024)
    }

    @Test func aStopEndsTheOpenStreams() throws {
        let streams = Locked<[HTTPStream]>([])
        let server = try Self.server(streams)
        let clients = try (0..<3).map { _ in try EventStreamClient(port: server.port, target: "/stream") }
        try waitUntil(seconds: 30) { streams.current.count == 3 }
        for stream in streams.current { stream.send(Array("data: before\n\n".utf8)) }
        for client in clients {
            let next = try client.next()
            #expect(next?.data == "before")
        }
        server.stop()
        for client in clients {
            let next = try client.next()
            #expect(next == nil)
        }
        #expect(streams.current.allSatisfy { $0.isClosed })
    }
}
