import CMicroHTTPD
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One open connection: its peer address (for the per-address limit) and the clock of the
/// request it is on (for the limit on a request's total time).
final class ConnectionClock: Sendable {
    /// The value of `since` while a handler runs: its time is the store's query budget's to limit.
    static let paused = UInt64.max
    /// Marks a `since` that began a wait for the next request rather than a request.
    static let waiting: UInt64 = 1 << 63
    let socket: Int32
    /// The peer's numeric address.
    let address: String
    /// Whether the address already had its share of connections when this one opened: every
    /// request on it is answered 429 and the connection closed.
    let isOverLimit: Bool
    /// In monotonic nanoseconds, when the current request began (its request line arrived, or its
    /// response was queued, so a slow reader is limited too), or, with `waiting` set, when the
    /// connection began to wait for its next request (it opened, or a response was sent).
    let since: Atomic<UInt64>
    /// Whether the current request's query had more parameters than the server takes.
    let parametersExceeded = Atomic<Bool>(false)

    init(socket: Int32, address: String, isOverLimit: Bool) {
        self.socket = socket
        self.address = address
        self.isOverLimit = isOverLimit
        since = Atomic(RequestWatchdog.now() | Self.waiting)
    }

    func restart() { since.store(RequestWatchdog.now(), ordering: .relaxed) }
    func awaitNext() { since.store(RequestWatchdog.now() | Self.waiting, ordering: .relaxed) }
    func pause() { since.store(Self.paused, ordering: .relaxed) }

    /// Whether, by `now`, the current request has taken longer than `limit` nanoseconds, or the
    /// wait for the next one (which may trickle in its request line) longer than `waitLimit`.
    func isOverdue(limit: UInt64, waitLimit: UInt64, now: UInt64) -> Bool {
        let value = since.load(ordering: .relaxed)
        guard value != Self.paused else { return false }
        let isWaiting = value & Self.waiting != 0
        let start = value & ~Self.waiting
        return now > start && now - start > (isWaiting ? waitLimit : limit)
    }
}

/// Holds every request to a total time, from its request line to its response's last byte, apart
/// from the time its handler runs.
///
/// libmicrohttpd's connection timeout closes a connection only when it is silent, so a client
/// that sends (or reads) one byte at a time can hold a connection indefinitely. A body that is
/// still arriving when the limit passes is answered 408 by the access handler; for the rest
/// (headers trickling in, a stalled body, a response read slowly) a thread sweeps the open
/// connections a few times per limit and shuts down the socket of a request a grace period past
/// the limit: libmicrohttpd sees the connection end and closes it. The socket is shut down, never
/// closed, under the lock that the connection's close notice takes first, so a descriptor that
/// libmicrohttpd has closed (and the kernel may have reused) is never touched.
final class RequestWatchdog: Sendable {
    let limit: UInt64
    /// For a connection waiting for its next request: the idle timeout (libmicrohttpd closes a
    /// silent one then), or the limit when that is longer.
    private let waitLimit: UInt64
    private let grace: UInt64
    private let open = Mutex<[ObjectIdentifier: ConnectionClock]>([:])
    private let running = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    /// Connections cut for going over the limit.
    let cut = Atomic<Int>(0)

    /// A watchdog for requests limited to `seconds` on connections closed when idle for
    /// `idleSeconds` (0: never, and then a wait between requests is not limited either);
    /// ``start()`` begins the sweeps.
    init(seconds: Int, idleSeconds: Int) {
        limit = UInt64(max(1, seconds)) * 1_000_000_000
        waitLimit = idleSeconds > 0 ? max(limit, UInt64(idleSeconds) * 1_000_000_000) : .max / 2
        grace = max(1_000_000_000, limit / 10)
    }

    func start() {
        let interval = min(1.0, max(0.1, Double(limit) / 4e9))
        running.store(true, ordering: .relaxed)
        let thread = Thread { [self] in
            while running.load(ordering: .relaxed) {
                _ = wake.wait(timeout: .now() + interval)
                sweep()
            }
            done.signal()
        }
        thread.name = "strata-request-watchdog"
        thread.start()
    }

    func stop() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        wake.signal()
        done.wait()
    }

    /// A connection opened: the watchdog watches its clock.
    func opened(_ clock: ConnectionClock) {
        open.withLock { $0[ObjectIdentifier(clock)] = clock }
    }

    /// A connection is about to be closed by libmicrohttpd.
    func closed(_ clock: ConnectionClock) {
        _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(clock)) }
    }

    /// Whether the request on `clock` has run past the limit (the access handler's 408).
    func isOverdue(_ clock: ConnectionClock) -> Bool {
        clock.isOverdue(limit: limit, waitLimit: waitLimit, now: Self.now())
    }

    private func sweep() {
        let now = Self.now()
        open.withLock { connections in
            for clock in connections.values
            where clock.isOverdue(limit: limit + grace, waitLimit: waitLimit + grace, now: now) {
                _ = shutdown(clock.socket, Int32(SHUT_RDWR))
                clock.pause()
                cut.wrappingAdd(1, ordering: .relaxed)
            }
        }
    }

    static func now() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
