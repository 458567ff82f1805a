import CMicroHTTPD
import Synchronization

/// Counts shared by an ``HTTPServer`` and the daemon it runs, touched on every request: atomics,
/// so the polling threads never wait for one another over them.
final class HTTPServerCounters: Sendable {
    /// Requests currently inside the handler or the `tooLarge` builder.
    let inHandler = Atomic<Int>(0)
    /// Requests whose headers arrived and whose completion libmicrohttpd has not yet reported.
    let inFlight = Atomic<Int>(0)
    /// Connections suspended until a pool thread's handler or a deferred handler answers them.
    let suspended = Atomic<Int>(0)
    /// Set by `stop()`: responses then carry `Connection: close`.
    let stopping = Atomic<Bool>(false)

    func add(_ counter: borrowing Atomic<Int>, _ delta: Int) { counter.wrappingAdd(delta, ordering: .relaxed) }
    func value(_ counter: borrowing Atomic<Int>) -> Int { counter.load(ordering: .relaxed) }
    var isStopping: Bool { stopping.load(ordering: .relaxed) }
}

/// What one running daemon needs in its callbacks; passed to libmicrohttpd as `cls`, retained
/// from `MHD_start_daemon` until after `MHD_stop_daemon`.
final class HTTPServerContext: Sendable {
    let handler: @Sendable (HTTPRequest) -> HTTPResponse
    let tooLarge: @Sendable (HTTPRequest) -> HTTPResponse
    let dispatch: @Sendable (HTTPRequest) -> HTTPDispatch
    let deferred: (@Sendable (HTTPRequest, HTTPResponder) -> Void)?
    let maxBodyBytes: Int
    let maxTargetBytes: Int
    let maxHeaderBytes: Int
    let maxQueryParameters: Int
    /// Runs the handlers that do not answer inline.
    let pool: HandlerPool
    let counters: HTTPServerCounters
    /// Holds each request to a total time; `nil` when there is no such limit.
    let watchdog: RequestWatchdog?
    /// The most connections one address may have open; 0: no limit of its own. Beyond it a
    /// connection is accepted, its requests answered 429 (`tooLarge` with
    /// ``HTTPRequest/exceededLimit`` ``HTTPServerLimit/connections``) and it is closed.
    let perAddressLimit: Int
    /// The streamed responses being sent.
    private let streams = Mutex<[ObjectIdentifier: HTTPStream]>([:])
    /// Open connections by peer address.
    private let connectionsByAddress = Mutex<[String: Int]>([:])
    /// libmicrohttpd's error messages while the daemon starts; `nil` once it runs.
    private let startupMessages = Mutex<[String]?>([])

    init(
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse,
        tooLarge: @escaping @Sendable (HTTPRequest) -> HTTPResponse,
        dispatch: @escaping @Sendable (HTTPRequest) -> HTTPDispatch,
        deferred: (@Sendable (HTTPRequest, HTTPResponder) -> Void)?, maxBodyBytes: Int, maxTargetBytes: Int = .max,
        maxHeaderBytes: Int = .max, maxQueryParameters: Int = .max, pool: HandlerPool, counters: HTTPServerCounters,
        watchdog: RequestWatchdog? = nil,
        perAddressLimit: Int = 0
    ) {
        self.watchdog = watchdog
        self.perAddressLimit = perAddressLimit
        self.maxTargetBytes = maxTargetBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxQueryParameters = maxQueryParameters
        self.handler = handler
        self.tooLarge = tooLarge
        self.dispatch = dispatch
        self.deferred = deferred
        self.maxBodyBytes = maxBodyBytes
        self.pool = pool
        self.counters = counters
    }

    /// The access handler: builds the request on the first call, buffers body chunks on the
    /// following ones, and answers on the last (after the body, or at once for a declared body
    /// over the limit).
    func access(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
        state: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let existing = state.pointee else {
            let pending = PendingRequest(
                HTTPConnection.request(
                    connection, url: url, method: method, remoteAddress: clock(of: connection)?.address))
            state.pointee = Unmanaged.passRetained(pending).toOpaque()
            counters.add(counters.inFlight, 1)
            let request = pending.request
            let target =
                request.path.utf8.count + request.query.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 }
            let headerBytes = request.headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 4 }
            if clock(of: connection)?.isOverLimit == true {
                pending.exceeded = true
                pending.request.exceededLimit = .connections
                return respond(to: pending, on: connection)
            }
            if clock(of: connection)?.parametersExceeded.load(ordering: .relaxed) == true {
                pending.exceeded = true
                pending.request.exceededLimit = .parameters
                return respond(to: pending, on: connection)
            }
            if target > maxTargetBytes || headerBytes > maxHeaderBytes {
                pending.exceeded = true
                pending.request.exceededLimit = target > maxTargetBytes ? .target : .headers
                return respond(to: pending, on: connection)
            }
            // Answering now (rather than on the second call) makes libmicrohttpd close the
            // connection, which is what we want: the body that follows is never read.
            if let declared = pending.request.headers["content-length"].flatMap(Int.init) {
                guard declared <= maxBodyBytes else {
                    pending.exceeded = true
                    pending.request.exceededLimit = .body
                    return respond(to: pending, on: connection)
                }
                pending.request.body.reserveCapacity(declared)
            }
            return .YES
        }
        let pending = Unmanaged<PendingRequest>.fromOpaque(existing).takeUnretainedValue()
        let count = uploadSize.pointee
        // A body still arriving past the total time is dropped and answered 408 once it ends;
        // libmicrohttpd cannot queue a response in the middle of a body, and the watchdog cuts a
        // body that does not end soon after.
        if !pending.exceeded, !pending.answered, let watchdog, let clock = clock(of: connection),
            watchdog.isOverdue(clock)
        {
            pending.exceeded = true
            pending.request.exceededLimit = .time
            pending.request.body = []
        }
        if count > 0 {
            uploadSize.pointee = 0
            if !pending.exceeded, let uploadData {
                if pending.request.body.count + count > maxBodyBytes {
                    pending.exceeded = true
                    pending.request.exceededLimit = .body
                    pending.request.body = []
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: count) {
                        pending.request.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
                    }
                }
            }
            return .YES
        }
        return respond(to: pending, on: connection)
    }

    /// Answers `pending`: queues the response left by a handler that ran elsewhere; or runs
    /// `tooLarge`, or a handler dispatched inline, and queues its response; or suspends the
    /// connection and hands the request to the pool or the deferred handler, whose
    /// ``HTTPResponder`` resumes the connection with the response (libmicrohttpd then calls the
    /// access handler again).
    private func respond(to pending: PendingRequest, on connection: OpaquePointer) -> MHD_Result {
        if let response = pending.response {
            pending.response = nil
            started(response, on: connection)
            return HTTPConnection.queue(response, on: connection, closing: counters.isStopping, context: self)
        }
        guard !pending.answered else { return .YES }
        pending.answered = true
        let mode = pending.exceeded ? .inline : dispatch(pending.request)
        if case .inline = mode {
            counters.add(counters.inHandler, 1)
            let response = pending.exceeded ? tooLarge(pending.request) : handler(pending.request)
            counters.add(counters.inHandler, -1)
            started(response, on: connection)
            return HTTPConnection.queue(
                response, on: connection, closing: counters.isStopping || clock(of: connection)?.isOverLimit == true,
                context: self)
        }
        clock(of: connection)?.pause()
        counters.add(counters.suspended, 1)
        counters.add(counters.inHandler, 1)
        MHD_suspend_connection(connection)
        let responder = HTTPResponder(SuspendedRequest(pending: pending, connection: connection), context: self)
        if case .deferred = mode, let deferred {
            deferred(pending.request, responder)
        } else {
            pool.submit { [handler] in responder.respond(handler(responder.request)) }
        }
        return .YES
    }

    /// A request line arrived: its clock starts, and a query of more than `maxQueryParameters`
    /// parameters is emptied before libmicrohttpd splits it (the bytes are libmicrohttpd's own
    /// read buffer, where it ends each part of the request line itself), to be answered as over
    /// the limit.
    func received(target: UnsafePointer<CChar>?, on connection: OpaquePointer) {
        guard let clock = clock(of: connection) else { return }
        clock.restart()
        var exceeded = false
        var question: UnsafePointer<CChar>?
        var count = 1
        var cursor = target
        while let current = cursor, current.pointee != 0 {
            if question == nil {
                if current.pointee == CChar(UInt8(ascii: "?")) { question = current }
            } else if current.pointee == CChar(UInt8(ascii: "&")) {
                count += 1
            }
            cursor = current + 1
        }
        if let question, count > maxQueryParameters {
            exceeded = true
            UnsafeMutablePointer(mutating: question + 1).pointee = 0
        }
        clock.parametersExceeded.store(exceeded, ordering: .relaxed)
    }

    /// Starts the clock of sending `response`: a slow reader is held to the request's total time,
    /// except for a stream, which is open as long as it is written to, and a file, which may be
    /// large (the idle timeout still holds both).
    private func started(_ response: HTTPResponse, on connection: OpaquePointer) {
        if response.stream == nil && response.file == nil {
            clock(of: connection)?.restart()
        } else {
            clock(of: connection)?.pause()
        }
    }

    /// Notes a stream being sent, so that ``closeStreams()`` can end it.
    func register(_ stream: HTTPStream) {
        streams.withLock { $0[ObjectIdentifier(stream)] = stream }
    }

    /// Forgets a stream libmicrohttpd is done with.
    func unregister(_ stream: HTTPStream) {
        _ = streams.withLock { $0.removeValue(forKey: ObjectIdentifier(stream)) }
    }

    /// Ends every stream being sent (the server is stopping): each sends what it holds and ends.
    func closeStreams() {
        for stream in streams.withLock({ Array($0.values) }) { stream.close() }
    }

    /// The completion notice (also sent for aborted and timed-out requests): releases the
    /// request state the access handler stored.
    func completed(connection: OpaquePointer?, state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        // The wait for the next request starts now, until its request line arrives.
        if let connection { clock(of: connection)?.awaitNext() }
        guard let state, let pointer = state.pointee else { return }
        state.pointee = nil
        Unmanaged<PendingRequest>.fromOpaque(pointer).release()
        counters.add(counters.inFlight, -1)
    }

    /// What the server keeps for `connection` (its address and request clock).
    func clock(of connection: OpaquePointer) -> ConnectionClock? {
        guard let pointer = cmhd_connection_socket_context(connection) else { return nil }
        return Unmanaged<ConnectionClock>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// libmicrohttpd's connection notices: a connection's record is made when it opens (counted
    /// against its address, watched by the watchdog) and dropped before it closes.
    func connectionChanged(
        _ connection: OpaquePointer, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>,
        opened: Bool
    ) {
        if opened {
            let address = SocketAddress.numericHost(of: cmhd_connection_client_address(connection))
            let count = connectionsByAddress.withLock { counts in
                counts[address, default: 0] += 1
                return counts[address]!
            }
            let clock = ConnectionClock(
                socket: cmhd_connection_socket(connection), address: address,
                isOverLimit: perAddressLimit > 0 && count > perAddressLimit)
            watchdog?.opened(clock)
            context.pointee = Unmanaged.passRetained(clock).toOpaque()
        } else if let pointer = context.pointee {
            context.pointee = nil
            let clock = Unmanaged<ConnectionClock>.fromOpaque(pointer)
            let address = clock.takeUnretainedValue().address
            connectionsByAddress.withLock { counts in
                let left = (counts[address] ?? 1) - 1
                counts[address] = left > 0 ? left : nil
            }
            watchdog?.closed(clock.takeUnretainedValue())
            clock.release()
        }
    }

    /// Keeps a libmicrohttpd error message while the daemon starts (to explain a failure);
    /// later messages are dropped, since every request is already answered or logged by the app.
    func log(_ message: String) {
        startupMessages.withLock { messages in
            if messages != nil && messages!.count < 16 { messages!.append(message) }
        }
    }

    /// Ends the start-up phase and returns the messages logged during it.
    func finishStartup() -> [String] {
        startupMessages.withLock { messages in
            defer { messages = nil }
            return messages ?? []
        }
    }
}

/// The state of one request between access-handler calls; owned through `*con_cls`.
final class PendingRequest: @unchecked Sendable {
    // Safe to share: a polling thread uses it until the connection is suspended, then one pool
    // thread until it resumes the connection, then the polling thread again; libmicrohttpd's
    // resume (under its own lock) orders the pool thread's writes before the polling thread's reads.
    var request: HTTPRequest
    /// The body went over the limit: the rest is discarded and `tooLarge` answers.
    var exceeded = false
    /// The handler ran, or was handed to the pool.
    var answered = false
    /// The response a pool thread's handler returned, waiting to be queued.
    var response: HTTPResponse?

    init(_ request: HTTPRequest) { self.request = request }
}

/// A suspended connection and its request, handed to the thread that answers it.
struct SuspendedRequest: @unchecked Sendable {
    // Safe to send: the connection is suspended, so libmicrohttpd does not touch it until the
    // answering thread calls `MHD_resume_connection`, the only call made on it there.
    let pending: PendingRequest
    let connection: OpaquePointer
}
