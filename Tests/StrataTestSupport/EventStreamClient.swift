import Foundation
import Strata

#if canImport(Glibc)
    import Glibc
#endif

/// One server-sent event (comments, such as heartbeats, are not events).
public struct ServerEvent: Sendable, Equatable {
    /// The `id` field (the history token, for `/_changes`).
    public var id: String?
    /// The `event` field; nil for the default `message`.
    public var event: String?
    /// The `data` lines joined by line breaks.
    public var data: String

    /// The data parsed as JSON (`.null` when it is not JSON).
    public var json: JSONValue { (try? JSONValue.parse(Array(data.utf8))) ?? .null }
}

/// A client of a server-sent event stream over a plain loopback socket, as a browser's
/// `EventSource` reads one: a `GET` with `Accept: text/event-stream` (and `Last-Event-ID` when
/// resuming), a chunked body parsed into events as it arrives. Not thread-safe: one per thread.
public final class EventStreamClient {
    /// The response's status and headers (lowercased names).
    public let status: Int
    public let headers: [String: String]
    /// How many comment lines (heartbeats) arrived so far.
    public private(set) var comments = 0
    private let connection: TestConnection
    /// Bytes read and not yet decoded from the chunked body.
    private var raw: [UInt8] = []
    /// Decoded body bytes not yet parsed into events.
    private var text: [UInt8] = []
    private var ended = false
    /// Event blocks set aside while reading comments.
    private var held: [UInt8] = []

    /// Opens the stream at `target` on the server at `port`.
    /// - Parameters:
    ///   - lastEventID: the id of the last event seen, to resume after it.
    ///   - receiveTimeout: seconds a read waits before ``next()`` fails.
    public init(
        port: UInt16, target: String, lastEventID: String? = nil, headers extra: [String: String] = [:],
        receiveTimeout: Int = 15
    ) throws {
        connection = try TestConnection(port: port, receiveTimeout: receiveTimeout)
        var request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n"
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        for (name, value) in extra { request += "\(name): \(value)\r\n" }
        try connection.send(request + "\r\n")
        var buffer: [UInt8] = []
        while true {
            if let end = Self.find([13, 10, 13, 10], in: buffer) {
                let head = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
                let parts = head.first?.split(separator: " ") ?? []
                status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
                var fields: [String: String] = [:]
                for line in head.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    fields[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                        .trimmingCharacters(in: .whitespaces)
                }
                headers = fields
                raw = Array(buffer[(end + 4)...])
                break
            }
            guard let more = try Self.read(connection.descriptor) else {
                throw TestClientError("the server closed the event stream before its headers")
            }
            buffer += more
        }
    }

    deinit { connection.disconnect() }

    /// Closes the connection (a client dropping off).
    public func close() { connection.disconnect() }

    /// The next event; nil when the stream has ended. Fails when nothing arrives within the
    /// receive timeout.
    public func next() throws -> ServerEvent? {
        while true {
            if let event = parseEvent() { return event }
            if ended { return nil }
            decodeChunks()
            if parseEventAvailable() { continue }
            guard let more = try Self.read(connection.descriptor) else {
                ended = true
                decodeChunks()
                continue
            }
            raw += more
            decodeChunks()
        }
    }

    /// Reads until `count` comment lines (the opening one, heartbeats) have arrived; events that
    /// arrive meanwhile are kept for ``next()``.
    public func readComments(atLeast count: Int) throws {
        while comments < count {
            while let end = Self.find([10, 10], in: text) {
                let lines = text[..<end].split(separator: 10)
                if lines.contains(where: { $0.starts(with: Array("data:".utf8)) }) {
                    // An event: kept for `next()`, which counts its comments then.
                    held += text[..<(end + 2)]
                } else {
                    comments += lines.filter { $0.first == UInt8(ascii: ":") }.count
                }
                text.removeFirst(end + 2)
            }
            if comments >= count { break }
            guard let more = try Self.read(connection.descriptor) else {
                throw TestClientError("the event stream ended before \(count) comments")
            }
            raw += more
            decodeChunks()
        }
        text = held + text
        held = []
    }

    /// Reads events until `done` says the events so far are enough.
    public func collect(until done: ([ServerEvent]) -> Bool) throws -> [ServerEvent] {
        var events: [ServerEvent] = []
        while !done(events) {
            guard let event = try next() else { break }
            events.append(event)
        }
        return events
    }

    private func parseEventAvailable() -> Bool { Self.find([10, 10], in: text) != nil }

    /// Moves complete chunks of the chunked body from `raw` to `text`.
    private func decodeChunks() {
        while let lineEnd = Self.find([13, 10], in: raw) {
            let sizeText = String(decoding: raw[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                ended = true
                return
            }
            if size == 0 {
                ended = true
                raw = []
                return
            }
            let start = lineEnd + 2
            guard raw.count >= start + size + 2 else { return }
            text += raw[start..<start + size]
            raw.removeFirst(start + size + 2)
        }
    }

    /// The first complete event in `text`, skipping comment-only blocks.
    private func parseEvent() -> ServerEvent? {
        while let end = Self.find([10, 10], in: text) {
            let block = String(decoding: text[..<end], as: UTF8.self)
            text.removeFirst(end + 2)
            var event = ServerEvent(id: nil, event: nil, data: "")
            var dataLines: [String] = []
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") {
                    comments += 1
                    continue
                }
                let (field, value) =
                    line.firstIndex(of: ":").map { colon in
                        (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingPrefix(" "))
                    } ?? (String(line), "")
                switch field {
                case "id": event.id = String(value)
                case "event": event.event = String(value)
                case "data": dataLines.append(String(value))
                default: continue
                }
            }
            guard !dataLines.isEmpty else { continue }
            event.data = dataLines.joined(separator: "\n")
            return event
        }
        return nil
    }

    private static func read(_ descriptor: Int32) throws -> [UInt8]? {
        guard descriptor >= 0 else { return nil }
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = Glibc.read(descriptor, &chunk, chunk.count)
        if count == 0 { return nil }
        guard count > 0 else {
            let error = errno
            if error == ECONNRESET { return nil }
            throw TestClientError("reading the event stream failed or timed out: errno \(error)")
        }
        return Array(chunk[..<count])
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return haystack.withUnsafeBufferPointer { bytes -> Int? in
            var index = 0
            let last = bytes.count - needle.count
            outer: while index <= last {
                for offset in 0..<needle.count where bytes[index + offset] != needle[offset] {
                    index += 1
                    continue outer
                }
                return index
            }
            return nil
        }
    }
}

extension String {
    fileprivate func trimmingPrefix(_ prefix: String) -> String {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : self
    }
}
