#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value guarded by a `pthread_mutex_t`.
///
/// `Synchronization.Mutex` uses priority-inheritance futexes on Linux, which measured about twice as
/// slow as a plain pthread mutex under 64 contending threads; the stores and contexts take short
/// critical sections from many request threads, so they use this box instead.
public final class Locked<Value>: @unchecked Sendable {
    // Safe to share: `value` is only read or written while `mutex` is held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// Creates a box holding `value`.
    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    public func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

extension Locked where Value: Sendable {
    /// A copy of the current value.
    public var current: Value { withLock { $0 } }
}

/// A recursive `pthread_mutex_t`: the thread holding it may take it again.
///
/// A root context's writers take its write gate (see `ObjectContext.writeGate`); a write may run
/// other writes inside it (an insert sets values, a save's observers may insert), so the gate is
/// recursive.
final class RecursiveLock: @unchecked Sendable {
    // Safe to share: the mutex is the synchronization.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        let status = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always) func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }
}
