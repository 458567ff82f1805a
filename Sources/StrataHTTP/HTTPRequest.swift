/// One complete HTTP request, as handed to the server's handler.
///
/// The path and the query are percent-decoded by ``HTTPServer`` itself rather than by
/// libmicrohttpd: every `%HH` in the path is decoded (so `%2F` becomes `/`, and cannot be told
/// apart from a literal slash) while `+` stays a plus; in the query `+` is a space and `%2B` a
/// plus. Bytes that are not valid UTF-8 after decoding become U+FFFD.
public struct HTTPRequest: Sendable {
    /// The request method exactly as received: `"GET"`, `"POST"`, ….
    public var method: String
    /// The percent-decoded path without the query string, e.g. `"/books/42"`.
    public var path: String
    /// The percent-decoded query arguments in the order received; repeated names are all kept,
    /// and an argument without `=` has an empty value.
    public var query: [(name: String, value: String)]
    /// The request headers; names are lowercased and repeated headers are joined with `", "`.
    public var headers: [String: String] {
        didSet { namesHaveUppercase = headers.keys.contains(where: Self.hasUppercase) }
    }
    /// Whether a header name holds an uppercase letter (a request built by hand), so that
    /// ``header(_:)`` looks past the exact name only then: most headers asked for are absent.
    private var namesHaveUppercase: Bool
    /// The request body, empty when there is none.
    public var body: [UInt8]
    /// The client's IP address, e.g. `"127.0.0.1"` or `"::1"`; empty when unknown.
    public var remoteAddress: String
    /// Which of the server's limits the request broke, set only for the server's `tooLarge`
    /// handler; nil for every request handed to the others.
    public var exceededLimit: HTTPServerLimit?

    /// Creates a request; the server builds these, and tests or batch handlers may too.
    /// - Parameters:
    ///   - method: the request method, e.g. `"GET"`.
    ///   - path: the percent-decoded path, without a query string.
    ///   - query: the decoded query arguments in order.
    ///   - headers: the headers; names should be lowercase for ``header(_:)`` to find them.
    ///   - body: the request body.
    ///   - remoteAddress: the client's IP address.
    public init(
        method: String, path: String, query: [(name: String, value: String)] = [], headers: [String: String] = [:],
        body: [UInt8] = [], remoteAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        namesHaveUppercase = headers.keys.contains(where: Self.hasUppercase)
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The value of the header called `name`, compared case-insensitively, or `nil`.
    public func header(_ name: String) -> String? {
        let key = Self.hasUppercase(name) ? name.lowercased() : name
        if let value = headers[key] { return value }
        // Requests built by hand may carry names that are not lowercased (the server's never do).
        guard namesHaveUppercase else { return nil }
        return headers.first { $0.key.lowercased() == key }?.value
    }

    private static func hasUppercase(_ text: String) -> Bool { text.utf8.contains(where: \.isASCIIUppercase) }

    /// Every value of the query argument called `name`, in order (case-sensitive).
    public func queryValues(_ name: String) -> [String] {
        query.filter { $0.name == name }.map(\.value)
    }
}

/// A limit of ``HTTPServer`` that a request can break (``HTTPRequest/exceededLimit``); each is
/// set by ``HTTPServerConfiguration``.
public enum HTTPServerLimit: Sendable, Hashable, CaseIterable {
    /// The body is larger than ``HTTPServerConfiguration/maxBodyBytes``.
    case body
    /// The request target (path and query) is longer than ``HTTPServerConfiguration/maxTargetBytes``.
    case target
    /// The headers are larger than ``HTTPServerConfiguration/maxHeaderBytes``.
    case headers
    /// The client's address has ``HTTPServerConfiguration/perIPConnectionLimit`` connections open
    /// already.
    case connections
    /// The request took longer than ``HTTPServerConfiguration/requestTimeoutSeconds`` to arrive.
    case time
    /// The query holds more than ``HTTPServerConfiguration/maxQueryParameters`` parameters.
    case parameters
}

extension HTTPRequest {
    /// Decodes every `%HH` escape in `raw`; a `%` not followed by two hex digits stays as it is.
    /// - Parameter plusIsSpace: whether `+` means a space (query arguments) or itself (paths).
    static func percentDecoded(_ raw: some Collection<UInt8>, plusIsSpace: Bool) -> String {
        // Most paths and arguments hold nothing to decode: then the bytes are the string.
        if !raw.contains(where: { $0 == UInt8(ascii: "%") || ($0 == UInt8(ascii: "+") && plusIsSpace) }) {
            return String(decoding: raw, as: UTF8.self)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index != raw.endIndex {
            let byte = raw[index]
            if byte == UInt8(ascii: "%") {
                let first = raw.index(after: index)
                if first != raw.endIndex, let high = hexValue(raw[first]) {
                    let second = raw.index(after: first)
                    if second != raw.endIndex, let low = hexValue(raw[second]) {
                        bytes.append(high << 4 | low)
                        index = raw.index(after: second)
                        continue
                    }
                }
                bytes.append(byte)
            } else if byte == UInt8(ascii: "+") && plusIsSpace {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
            index = raw.index(after: index)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
