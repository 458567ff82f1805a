/// A response produced by the server's handler.
///
/// The server adds `Content-Length` (any `Content-Length` given here is ignored) and libmicrohttpd
/// adds `Date`; the body is `body`, an open ``file``, or a ``stream``. For a `HEAD` request the headers are sent, with the length of this body, and the
/// body is not.
public struct HTTPResponse: Sendable {
    /// The status code; a value outside 200…999 is sent as 500 (a 1xx cannot be a final response).
    public var status: Int
    /// The response headers in the order they are sent; a name may repeat.
    public var headers: [(name: String, value: String)]
    /// The response body.
    public var body: [UInt8]
    /// A body written while it is sent, in place of `body` (which is then not sent); nil for a
    /// body known in full.
    public var stream: HTTPStream?
    /// An open file sent as the body, in place of `body` (which is then not sent), its length the
    /// `Content-Length`; nil for a body in memory.
    public var file: HTTPFileBody?

    /// Creates a response.
    /// - Parameters:
    ///   - status: the status code, e.g. 200.
    ///   - headers: headers to send, in order.
    ///   - body: the body bytes.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Creates a response whose body is the open file `file`.
    public init(status: Int, headers: [(name: String, value: String)] = [], file: HTTPFileBody) {
        self.status = status
        self.headers = headers
        self.body = []
        self.file = file
    }

    /// Creates a response whose body is written to `stream` while it is sent.
    public init(status: Int, headers: [(name: String, value: String)] = [], stream: HTTPStream) {
        self.status = status
        self.headers = headers
        self.body = []
        self.stream = stream
    }
}
