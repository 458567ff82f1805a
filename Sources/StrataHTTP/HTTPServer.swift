import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP/1.1 server on libmicrohttpd that hands each complete request to a handler.
///
/// A few polling threads (one per core by default) serve every connection with epoll; `dispatch`
/// says where each complete request is handled (``HTTPDispatch``). A quick, non-blocking request
/// (a read by primary key) is answered on its polling thread. Any other is handled while its
/// connection is suspended: by `handler` on a handler thread, or by the `deferred` handler, which
/// starts the work and answers through an ``HTTPResponder`` when it is done (a write waiting for
/// a group commit holds no thread meanwhile). So a handler that blocks stalls only its own
/// connection, and the polling threads never wait.
///
/// ```swift
/// let server = HTTPServer(configuration: HTTPServerConfiguration()) { request in
///     HTTPResponse(status: 200, body: Array("hello \(request.path)".utf8))
/// } tooLarge: { _ in
///     HTTPResponse(status: 413)
/// }
/// try server.start()
/// ```
public final class HTTPServer: Sendable {
    private let configuration: HTTPServerConfiguration
    private let handler: @Sendable (HTTPRequest) -> HTTPResponse
    private let tooLarge: @Sendable (HTTPRequest) -> HTTPResponse
    private let dispatch: @Sendable (HTTPRequest) -> HTTPDispatch
    private let deferred: (@Sendable (HTTPRequest, HTTPResponder) -> Void)?
    private let counters = HTTPServerCounters()
    private let boundPort = Atomic<UInt16>(0)
    /// The running daemon; held for the whole of `start()` and `stop()` so they never overlap.
    private let daemon = Mutex<RunningDaemon?>(nil)

    /// Prepares a server; nothing listens until ``start()``.
    /// - Parameters:
    ///   - configuration: the address, port, threads and limits.
    ///   - handler: answers each complete request that `deferred` does not. It may block unless
    ///     `dispatch` said ``HTTPDispatch/inline``; it must not call ``stop()``, which waits for it.
    ///   - tooLarge: answers a request over a limit (``HTTPRequest/exceededLimit`` says which
    ///     ``HTTPServerLimit``); it gets the request
    ///     without its body. A declared `Content-Length` over the limit is answered before the
    ///     body is read (and the connection closed); a chunked body that grows past the limit
    ///     is discarded as it arrives and answered when the upload ends.
    ///   - dispatch: where each request is handled; by default every request runs `handler` on
    ///     a handler thread.
    ///   - deferred: handles the requests dispatched ``HTTPDispatch/deferred`` (without it they go
    ///     to `handler` on a handler thread). It runs on a polling thread and must not block.
    public init(
        configuration: HTTPServerConfiguration, handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse,
        tooLarge: @escaping @Sendable (HTTPRequest) -> HTTPResponse,
        dispatch: @escaping @Sendable (HTTPRequest) -> HTTPDispatch = { _ in .pool },
        deferred: (@Sendable (HTTPRequest, HTTPResponder) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.handler = handler
        self.tooLarge = tooLarge
        self.dispatch = dispatch
        self.deferred = deferred
    }

    deinit { stop() }

    /// Binds the configured address and starts serving.
    /// - Throws: ``HTTPServerError`` when the host is not an IP address, the port is in use or
    ///   cannot be bound, or the server is already running.
    public func start() throws(HTTPServerError) {
        try daemon.withLock { (running: inout RunningDaemon?) throws(HTTPServerError) in
            guard running == nil else { throw HTTPServerError("the server is already running on port \(port)") }
            let address = try SocketAddress(host: configuration.host, port: configuration.port)
            let handlerThreads =
                configuration.maxHandlerThreads > 0 ? configuration.maxHandlerThreads : configuration.maxConnections
            let watchdog =
                configuration.requestTimeoutSeconds > 0
                ? RequestWatchdog(
                    seconds: configuration.requestTimeoutSeconds, idleSeconds: configuration.connectionTimeoutSeconds)
                : nil
            let context = HTTPServerContext(
                handler: handler, tooLarge: tooLarge, dispatch: dispatch, deferred: deferred,
                maxBodyBytes: max(0, configuration.maxBodyBytes), maxTargetBytes: max(1, configuration.maxTargetBytes),
                maxHeaderBytes: max(1, configuration.maxHeaderBytes),
                maxQueryParameters: configuration.maxQueryParameters > 0 ? configuration.maxQueryParameters : .max,
                pool: HandlerPool(maxThreads: handlerThreads),
                counters: counters, watchdog: watchdog, perAddressLimit: max(0, configuration.perIPConnectionLimit))
            let retained = Unmanaged.passRetained(context)
            let started = address.withSockaddrPointer { socketAddress in
                Self.startDaemon(
                    configuration: configuration, address: socketAddress, isIPv6: address.isIPv6,
                    context: retained.toOpaque())
            }
            let messages = context.finishStartup()
            guard let started else {
                context.pool.shutdown()
                watchdog?.stop()
                retained.release()
                let reason = messages.isEmpty ? "libmicrohttpd could not start" : messages.joined(separator: "; ")
                throw HTTPServerError("cannot listen on \(configuration.host) port \(configuration.port): \(reason)")
            }
            counters.stopping.store(false, ordering: .relaxed)
            watchdog?.start()
            boundPort.store(cmhd_daemon_port(started), ordering: .releasing)
            running = RunningDaemon(handle: started, context: retained)
        }
    }

    /// The port the server is bound to after ``start()`` (the one picked when configured with 0);
    /// 0 before.
    public var port: UInt16 { boundPort.load(ordering: .acquiring) }

    /// The number of requests currently inside the handler (or the `tooLarge` builder).
    public var activeRequests: Int { counters.value(counters.inHandler) }

    /// Stops the server: new connections are refused at once, requests in flight finish and get
    /// their responses (with `Connection: close`) for up to `shutdownGraceSeconds`, then every
    /// connection is closed. Returns when the daemon is gone; calling it again does nothing.
    public func stop() {
        daemon.withLock { running in
            guard let current = running else { return }
            running = nil
            counters.stopping.store(true, ordering: .relaxed)
            let listener = MHD_quiesce_daemon(current.handle)
            // Quiescing only stops accepting; shutting the socket down makes the kernel refuse
            // new connections instead of queueing them in the backlog. It is closed after
            // `MHD_stop_daemon`, as libmicrohttpd asks.
            if listener >= 0 { _ = shutdown(listener, Int32(SHUT_RDWR)) }
            // Open streams end (after what they hold is sent), so their connections complete.
            current.context.takeUnretainedValue().closeStreams()
            let deadline = Self.nowNanoseconds() + UInt64(max(0, configuration.shutdownGraceSeconds)) * 1_000_000_000
            while counters.value(counters.inFlight) > 0 && Self.nowNanoseconds() < deadline {
                usleep(5_000)
            }
            // libmicrohttpd must not be stopped while a connection is suspended: a handler still
            // running past the grace period is waited for (its response then fails to send).
            while counters.value(counters.suspended) > 0 { usleep(5_000) }
            MHD_stop_daemon(current.handle)
            if listener >= 0 { _ = close(listener) }
            current.context.takeUnretainedValue().pool.shutdown()
            current.context.takeUnretainedValue().watchdog?.stop()
            current.context.release()
        }
    }

    /// The version of libmicrohttpd the server runs on, e.g. `"0.9.75"`.
    public static var libraryVersion: String { String(cString: MHD_get_version()) }

    private static func nowNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

/// A started daemon and the context retained for its callbacks.
struct RunningDaemon {
    let handle: OpaquePointer
    let context: Unmanaged<HTTPServerContext>
}
