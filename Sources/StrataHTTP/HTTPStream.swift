import CMicroHTTPD
import Synchronization

/// The body of a response that is written while it is sent: server-sent events, a feed that
/// stays open.
///
/// Give it to ``HTTPResponse/stream``; the handler returns at once and anyone holding the stream
/// writes to it later, from any thread, with ``send(_:)``, and ends it with ``close()``. No
/// thread waits for the client meanwhile: when everything written has been sent the connection
/// is suspended, and the next ``send(_:)`` resumes it. The body goes out with chunked transfer
/// encoding.
///
/// A stream holds what it was given until the client reads it, up to ``maxBufferedBytes``; a
/// client that reads slower than the stream is written is cut off (``send(_:)`` returns false
/// and the stream closes), so it never holds the server's memory. The server's limit on a
/// request's total time does not apply to a streamed response; the connection's idle timeout
/// still does while bytes are waiting to be sent, and the server's ``HTTPServer/stop()`` ends
/// every open stream.
public final class HTTPStream: Sendable {
    /// The most bytes written and not yet sent that a stream holds before it gives up on its
    /// client.
    public let maxBufferedBytes: Int
    private let state = Mutex<State>(State())
    /// Called once, when the stream has ended: closed by ``close()``, or by the client going
    /// away, or by a server stop.
    private let closeHandler = Mutex<(@Sendable () -> Void)?>(nil)

    struct State: ~Copyable {
        var buffer: [UInt8] = []
        /// How much of `buffer` has been handed to libmicrohttpd.
        var offset = 0
        var closed = false
        /// The connection the stream is sent on, once its response is queued.
        var binding: Binding?
        /// Whether the connection is suspended waiting for bytes.
        var suspended = false
        /// Whether libmicrohttpd is done with the response (its free callback ran).
        var finished = false
    }

    /// The connection and server a queued stream belongs to.
    struct Binding: @unchecked Sendable {
        // Safe to send: the connection pointer is only passed to libmicrohttpd's suspend/resume
        // calls, which it documents as safe from any thread, and only while the response is
        // alive (`finished` is false), under the stream's lock.
        let connection: OpaquePointer
        let context: HTTPServerContext
    }

    /// Creates an open stream holding at most `maxBufferedBytes` unsent bytes.
    public init(maxBufferedBytes: Int = 1 << 20) {
        self.maxBufferedBytes = max(1, maxBufferedBytes)
    }

    /// Whether the stream has ended (closed, its client gone, or the server stopping).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// The bytes written and not yet sent.
    public var bufferedBytes: Int { state.withLock { $0.buffer.count - $0.offset } }

    /// Calls `handler` once when the stream ends (at once if it has ended already).
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        let run = closeHandler.withLock { current -> Bool in
            if isClosed { return true }
            current = handler
            return false
        }
        if run { handler() }
    }

    /// Appends `bytes` to the body; they go out as soon as the client can take them.
    /// - Returns: false when the stream has ended, or has just been closed because the client
    ///   has not read ``maxBufferedBytes`` already written.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        let result = state.withLock { state -> (accepted: Bool, overflowed: Bool) in
            guard !state.closed else { return (false, false) }
            if state.buffer.count - state.offset + bytes.count > maxBufferedBytes {
                state.closed = true
                wake(&state)
                return (false, true)
            }
            if state.offset > 0, state.offset >= state.buffer.count / 2 {
                state.buffer.removeFirst(state.offset)
                state.offset = 0
            }
            state.buffer.append(contentsOf: bytes)
            wake(&state)
            return (true, false)
        }
        if result.overflowed { notifyClosed() }
        return result.accepted
    }

    /// Ends the body once what was written has been sent.
    public func close() {
        let changed = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.closed = true
            wake(&state)
            return true
        }
        if changed { notifyClosed() }
    }

    /// Resumes the connection when it waits for bytes.
    private func wake(_ state: inout State) {
        guard state.suspended, !state.finished, let binding = state.binding else { return }
        state.suspended = false
        binding.context.counters.add(binding.context.counters.suspended, -1)
        MHD_resume_connection(binding.connection)
    }

    private func notifyClosed() {
        let handler = closeHandler.withLock { current -> (@Sendable () -> Void)? in
            defer { current = nil }
            return current
        }
        handler?()
    }

    // MARK: - libmicrohttpd's side

    /// Ties the stream to the connection its response is queued on.
    func bind(to connection: OpaquePointer, context: HTTPServerContext) {
        state.withLock { $0.binding = Binding(connection: connection, context: context) }
        context.register(self)
    }

    /// The content reader: copies up to `capacity` unsent bytes into `destination`; with nothing
    /// to send, suspends the connection (libmicrohttpd asks for a suspension with a reader that
    /// has nothing yet, or it would poll it without pause) and returns 0; -1 once closed and sent.
    func read(into destination: UnsafeMutablePointer<CChar>, capacity: Int) -> Int {
        state.withLock { state -> Int in
            let available = state.buffer.count - state.offset
            if available > 0 {
                let count = min(available, capacity)
                state.buffer.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(destination).copyMemory(
                        from: bytes.baseAddress! + state.offset, byteCount: count)
                }
                state.offset += count
                if state.offset == state.buffer.count {
                    state.buffer.removeAll(keepingCapacity: true)
                    state.offset = 0
                }
                return count
            }
            if state.closed { return -1 }
            guard let binding = state.binding, !state.suspended else { return 0 }
            state.suspended = true
            binding.context.counters.add(binding.context.counters.suspended, 1)
            MHD_suspend_connection(binding.connection)
            return 0
        }
    }

    /// libmicrohttpd is done with the response (sent, or the client went away): the stream ends.
    func finished() {
        let (changed, context) = state.withLock { state -> (Bool, HTTPServerContext?) in
            state.finished = true
            if state.suspended {
                state.suspended = false
                state.binding?.context.counters.add(state.binding!.context.counters.suspended, -1)
            }
            let changed = !state.closed
            state.closed = true
            state.buffer = []
            state.offset = 0
            return (changed, state.binding?.context)
        }
        context?.unregister(self)
        if changed { notifyClosed() }
    }
}
