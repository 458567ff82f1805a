import CMicroHTTPD

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reading a request from, and queuing a response on, a libmicrohttpd connection.
enum HTTPConnection {
    /// The request line, headers and peer address of `connection`, without the body.
    ///
    /// `url` is the raw path: the daemon's unescape callback leaves `%HH` alone, so the path is
    /// decoded here (`+` stays a plus). Query arguments come split by libmicrohttpd, which has
    /// already turned `+` into a space, and are decoded here too.
    /// - Parameter remoteAddress: the peer's numeric address when the caller knows it already
    ///   (worked out once per connection); otherwise it is looked up.
    static func request(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        remoteAddress: String? = nil
    ) -> HTTPRequest {
        var headers: [String: String] = [:]
        _ = withUnsafeMutablePointer(to: &headers) { pointer in
            MHD_get_connection_values(
                connection, .HEADER_KIND,
                { cls, _, key, value in
                    guard let cls, let key else { return .YES }
                    let headers = cls.assumingMemoryBound(to: [String: String].self)
                    let name = HTTPConnection.lowercased(key)
                    let text = value.map { String(cString: $0) } ?? ""
                    if let earlier = headers.pointee[name] {
                        headers.pointee[name] = earlier + ", " + text
                    } else {
                        headers.pointee[name] = text
                    }
                    return .YES
                }, pointer)
        }
        var query: [(name: String, value: String)] = []
        _ = withUnsafeMutablePointer(to: &query) { pointer in
            MHD_get_connection_values(
                connection, .GET_ARGUMENT_KIND,
                { cls, _, key, value in
                    guard let cls, let key else { return .YES }
                    let query = cls.assumingMemoryBound(to: [(name: String, value: String)].self)
                    let name = HTTPConnection.decoded(key, plusIsSpace: true)
                    let text = value.map { HTTPConnection.decoded($0, plusIsSpace: true) } ?? ""
                    query.pointee.append((name, text))
                    return .YES
                }, pointer)
        }
        return HTTPRequest(
            method: method.map { String(cString: $0) } ?? "",
            path: url.map { path(fromTarget: $0) } ?? "/",
            query: query, headers: headers, body: [],
            remoteAddress: remoteAddress ?? SocketAddress.numericHost(of: cmhd_connection_client_address(connection)))
    }

    /// A header name as a string with ASCII letters lowercased (field names are ASCII tokens;
    /// other bytes are kept), in one pass over the bytes.
    static func lowercased(_ name: UnsafePointer<CChar>) -> String {
        let bytes = UnsafeBufferPointer(
            start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self), count: strlen(name))
        guard bytes.contains(where: \.isASCIIUppercase) else { return String(decoding: bytes, as: UTF8.self) }
        return String(unsafeUninitializedCapacity: bytes.count) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte.asciiLowercased }
            return bytes.count
        }
    }

    /// The decoded path of a request target, which is normally `/path` but may be the absolute
    /// form `http://host/path`.
    private static func path(fromTarget target: UnsafePointer<CChar>) -> String {
        let raw = UnsafeBufferPointer(
            start: UnsafeRawPointer(target).assumingMemoryBound(to: UInt8.self), count: strlen(target))
        var start = raw.startIndex
        if raw.first != UInt8(ascii: "/"), let scheme = firstIndex(of: Array("://".utf8), in: raw) {
            let authority = scheme + 3
            start = raw[authority...].firstIndex(of: UInt8(ascii: "/")) ?? raw.endIndex
        }
        let path = HTTPRequest.percentDecoded(raw[start...], plusIsSpace: false)
        return path.isEmpty ? "/" : path
    }

    private static func firstIndex(of needle: [UInt8], in haystack: UnsafeBufferPointer<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    private static func decoded(_ string: UnsafePointer<CChar>, plusIsSpace: Bool) -> String {
        let bytes = UnsafeBufferPointer(
            start: UnsafeRawPointer(string).assumingMemoryBound(to: UInt8.self), count: strlen(string))
        return HTTPRequest.percentDecoded(bytes, plusIsSpace: plusIsSpace)
    }

    /// Queues `response` (its body copied into libmicrohttpd, which adds `Content-Length` and
    /// `Date`); `closing` adds `Connection: close`.
    static func queue(
        _ response: HTTPResponse, on connection: OpaquePointer, closing: Bool, context: HTTPServerContext
    ) -> MHD_Result {
        let created: OpaquePointer?
        if let stream = response.stream {
            created = streamed(stream, on: connection, context: context)
        } else if let file = response.file, let descriptor = file.take() {
            // libmicrohttpd owns the descriptor from here: it closes it with the response.
            created = MHD_create_response_from_fd64(UInt64(file.size), descriptor)
            if created == nil { close(descriptor) }
        } else {
            created = response.body.withUnsafeBytes { bytes in
                MHD_create_response_from_buffer(
                    bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
            }
        }
        guard let created else { return .NO }
        defer { MHD_destroy_response(created) }
        for (name, value) in response.headers where !isContentLength(name) {
            // libmicrohttpd refuses names or values with line breaks; such a header is dropped.
            _ = MHD_add_response_header(created, name, value)
        }
        if closing { _ = MHD_add_response_header(created, "Connection", "close") }
        let status = (200...999).contains(response.status) ? response.status : 500
        return MHD_queue_response(connection, UInt32(status), created)
    }

    /// A response of unknown length whose content reader is `stream` (sent chunked); the stream
    /// is retained until libmicrohttpd frees the response.
    private static func streamed(_ stream: HTTPStream, on connection: OpaquePointer, context: HTTPServerContext)
        -> OpaquePointer?
    {
        stream.bind(to: connection, context: context)
        let retained = Unmanaged.passRetained(stream)
        let created = MHD_create_response_from_callback(
            UInt64.max /* MHD_SIZE_UNKNOWN */, 16 * 1024,
            { cls, _, buffer, capacity in
                guard let cls, let buffer else { return -2 /* MHD_CONTENT_READER_END_WITH_ERROR */ }
                return Unmanaged<HTTPStream>.fromOpaque(cls).takeUnretainedValue().read(
                    into: buffer, capacity: capacity)
            }, retained.toOpaque(),
            { cls in
                guard let cls else { return }
                let stream = Unmanaged<HTTPStream>.fromOpaque(cls)
                stream.takeUnretainedValue().finished()
                stream.release()
            })
        if created == nil {
            retained.release()
            stream.finished()
        }
        return created
    }

    /// Whether a header name is `Content-Length` in any case (libmicrohttpd adds its own), without
    /// lowercasing a copy of every name.
    private static func isContentLength(_ name: String) -> Bool {
        let expected = "content-length".utf8
        guard name.utf8.count == expected.count else { return false }
        return zip(name.utf8, expected).allSatisfy { $0.asciiLowercased == $1 }
    }
}
