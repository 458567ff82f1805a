/// Where an ``HTTPServer`` listens and the limits it enforces.
public struct HTTPServerConfiguration: Sendable {
    /// The address to bind: an IPv4 address (`"127.0.0.1"`, `"0.0.0.0"` for every interface), an
    /// IPv6 address (`"::1"`, `"::"`), or `"localhost"` for `127.0.0.1`.
    public var host: String = "127.0.0.1"
    /// The TCP port; 0 picks a free port, which ``HTTPServer/port`` reports after start.
    public var port: UInt16 = 8080
    /// The largest request body accepted; a larger one gets the server's `tooLarge` response.
    public var maxBodyBytes: Int = 1 << 20
    /// The longest request target (path and query) accepted; a longer one gets the `tooLarge`
    /// response with ``HTTPRequest/exceededLimit`` ``HTTPServerLimit/target`` (answered 414).
    public var maxTargetBytes: Int = 32768
    /// The most header bytes (names and values) accepted; more get the `tooLarge` response with
    /// ``HTTPRequest/exceededLimit`` ``HTTPServerLimit/headers`` (answered 431).
    public var maxHeaderBytes: Int = 16384
    /// The most query parameters a request target may hold; more get the `tooLarge` response
    /// with ``HTTPRequest/exceededLimit`` ``HTTPServerLimit/parameters`` (answered 414), at once.
    /// libmicrohttpd splits the query into its per-connection memory, which holds this many
    /// (and would leave a request with many more unanswered).
    public var maxQueryParameters: Int = HTTPServerConfiguration.defaultMaxQueryParameters
    /// The default of ``maxQueryParameters``.
    public static let defaultMaxQueryParameters = 256
    /// libmicrohttpd's memory per connection, which must hold the request line and headers: a
    /// request too large for it is refused by libmicrohttpd itself with its own HTML page, so it
    /// is kept well above the two limits above (0: twice their sum and 16 KiB, at least 64 KiB).
    public var connectionMemoryBytes: Int = 0
    /// The most connections open at once; further connections are refused.
    public var maxConnections: Int = 1024
    /// The most connections open at once from one IP address; 0 means no limit. A connection
    /// past it gets the `tooLarge` response (``HTTPRequest/exceededLimit`` ``HTTPServerLimit/connections``) to its
    /// first request, and is closed.
    public var perIPConnectionLimit: Int = 256
    /// Seconds a connection may stay idle before it is closed; 0 means never.
    public var connectionTimeoutSeconds: Int = 30
    /// Seconds a request may take in all, from its request line to its response's last byte,
    /// apart from the time its handler runs; 0 means no limit. A body completed after it is
    /// answered with the `tooLarge` response (``HTTPRequest/exceededLimit`` ``HTTPServerLimit/time``); a request
    /// still incomplete (or a response still unread) a grace period later has its connection
    /// closed. This bounds the clients that trickle bytes to stay under the idle timeout.
    public var requestTimeoutSeconds: Int = 60
    /// libmicrohttpd's polling threads, each serving its share of the connections with epoll;
    /// 0 means one per processor core.
    public var pollingThreads: Int = 0
    /// The most threads running handlers that do not answer inline (see ``HTTPServer``); 0 means
    /// `maxConnections`, so no such request waits for another to finish.
    public var maxHandlerThreads: Int = 0
    /// Serve HTTPS with the credentials ``TLSCredentials/load(certificate:key:)`` loaded (load
    /// them before ``HTTPServer/start()``).
    public var tls = false
    /// The longest ``HTTPServer/stop()`` waits for requests in flight before closing connections.
    public var shutdownGraceSeconds: Int = 30

    /// A configuration with the defaults above.
    public init() {}
}
