import CMicroHTTPD
import Strata

/// Counts shared by an ``HTTPServer`` and the daemon it runs.
struct HTTPServerCounters {
    /// Requests currently inside the handler or the `tooLarge` builder.
    var inHandler = 0
    /// Requests whose headers arrived and whose completion libmicrohttpd has not yet reported.
    var inFlight = 0
    /// Set by `stop()`: responses then carry `Connection: close`.
    var stopping = false
}

/// What one running daemon needs in its callbacks; passed to libmicrohttpd as `cls`, retained
/// from `MHD_start_daemon` until after `MHD_stop_daemon`.
final class HTTPServerContext: Sendable {
    let handler: @Sendable (HTTPRequest) -> HTTPResponse
    let tooLarge: @Sendable (HTTPRequest) -> HTTPResponse
    let maxBodyBytes: Int
    let counters: Locked<HTTPServerCounters>
    /// libmicrohttpd's error messages while the daemon starts; `nil` once it runs.
    private let startupMessages = Locked<[String]?>([])

    init(
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse,
        tooLarge: @escaping @Sendable (HTTPRequest) -> HTTPResponse, maxBodyBytes: Int,
        counters: Locked<HTTPServerCounters>
    ) {
        self.handler = handler
        self.tooLarge = tooLarge
        self.maxBodyBytes = maxBodyBytes
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
            let pending = PendingRequest(HTTPConnection.request(connection, url: url, method: method))
            state.pointee = Unmanaged.passRetained(pending).toOpaque()
            counters.withLock { $0.inFlight += 1 }
            // Answering now (rather than on the second call) makes libmicrohttpd close the
            // connection, which is what we want: the body that follows is never read.
            if let declared = pending.request.headers["content-length"].flatMap(Int.init) {
                guard declared <= maxBodyBytes else {
                    pending.exceeded = true
                    return respond(to: pending, on: connection)
                }
                pending.request.body.reserveCapacity(declared)
            }
            return .YES
        }
        let pending = Unmanaged<PendingRequest>.fromOpaque(existing).takeUnretainedValue()
        let count = uploadSize.pointee
        if count > 0 {
            uploadSize.pointee = 0
            if !pending.exceeded, let uploadData {
                if pending.request.body.count + count > maxBodyBytes {
                    pending.exceeded = true
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

    /// Runs the handler (or `tooLarge`) once for `pending` and queues its response.
    private func respond(to pending: PendingRequest, on connection: OpaquePointer) -> MHD_Result {
        guard !pending.answered else { return .YES }
        pending.answered = true
        counters.withLock { $0.inHandler += 1 }
        let response = pending.exceeded ? tooLarge(pending.request) : handler(pending.request)
        let closing = counters.withLock { counters in
            counters.inHandler -= 1
            return counters.stopping
        }
        return HTTPConnection.queue(response, on: connection, closing: closing)
    }

    /// The completion notice (also sent for aborted and timed-out requests): releases the
    /// request state the access handler stored.
    func completed(state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let state, let pointer = state.pointee else { return }
        state.pointee = nil
        Unmanaged<PendingRequest>.fromOpaque(pointer).release()
        counters.withLock { $0.inFlight -= 1 }
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
final class PendingRequest {
    var request: HTTPRequest
    /// The body went over the limit: the rest is discarded and `tooLarge` answers.
    var exceeded = false
    /// A response was queued.
    var answered = false

    init(_ request: HTTPRequest) { self.request = request }
}
