import CMicroHTTPD
import Synchronization

/// How an ``HTTPServer`` runs the handler of a complete request.
public enum HTTPDispatch: Sendable {
    /// On the polling thread that read the request: the handler answers at once without
    /// blocking (a read by primary key, a health check).
    case inline
    /// On a handler thread, while the connection waits suspended: the handler may block.
    case pool
    /// Through the server's `deferred` handler, called on the polling thread with an
    /// ``HTTPResponder``: it starts the work without blocking and answers later, from any thread.
    case deferred
}

/// The answer to one request whose handler runs elsewhere (``HTTPDispatch/deferred``).
///
/// Call ``respond(_:)`` exactly once, from any thread; the connection stays suspended until then.
/// A responder dropped without an answer answers `500`, so a lost request never hangs its
/// connection (or the server's shutdown).
public final class HTTPResponder: Sendable {
    private let suspended: SuspendedRequest
    private let context: HTTPServerContext
    private let answered = Atomic<Bool>(false)

    init(_ suspended: SuspendedRequest, context: HTTPServerContext) {
        self.suspended = suspended
        self.context = context
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            deliver(HTTPResponse(status: 500, headers: [("Content-Type", "text/plain")], body: Array("no answer".utf8)))
        }
    }

    /// The request being answered.
    public var request: HTTPRequest { suspended.pending.request }

    /// Sends `response` to the client; later calls are ignored.
    public func respond(_ response: HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        deliver(response)
    }

    /// Runs `job` on one of the server's handler threads, where it may block.
    public func runBlocking(_ job: @escaping @Sendable () -> Void) {
        context.pool.submit(job)
    }

    private func deliver(_ response: HTTPResponse) {
        suspended.pending.response = response
        context.counters.add(context.counters.inHandler, -1)
        context.counters.add(context.counters.suspended, -1)
        MHD_resume_connection(suspended.connection)
    }
}
