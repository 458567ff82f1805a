import CMicroHTTPD
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The threads that run handlers which may block (writes waiting for a group commit, long lists),
/// so that libmicrohttpd's few polling threads never wait for them.
///
/// A job starts at once: an idle thread takes it, or a new thread is started when none is idle, up
/// to `maxThreads` (beyond that jobs queue in arrival order). A thread idle for `idleSeconds` ends,
/// so a burst of slow requests does not leave its threads behind.
final class HandlerPool: @unchecked Sendable {
    // Safe to share: every stored `var` is read and written only while `mutex` is held; `jobs`
    // hand each closure to exactly one thread.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let wake: UnsafeMutablePointer<pthread_cond_t>
    private let drained: UnsafeMutablePointer<pthread_cond_t>
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var threads = 0
    private var idle = 0
    private var closing = false
    private let maxThreads: Int
    private let idleSeconds: Int

    init(maxThreads: Int, idleSeconds: Int = 30) {
        self.maxThreads = max(1, maxThreads)
        self.idleSeconds = max(1, idleSeconds)
        mutex = .allocate(capacity: 1)
        wake = .allocate(capacity: 1)
        drained = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(wake, &attributes)
        pthread_condattr_destroy(&attributes)
        pthread_cond_init(drained, nil)
    }

    deinit {
        pthread_cond_destroy(drained)
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(mutex)
        drained.deallocate()
        wake.deallocate()
        mutex.deallocate()
    }

    /// Runs `job` on a pool thread.
    func submit(_ job: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        let waiting = jobs.count - head
        let start = !closing && waiting > idle && threads < maxThreads
        if start { threads += 1 }
        pthread_cond_signal(wake)
        pthread_mutex_unlock(mutex)
        if start {
            Thread.detachNewThread { [self] in
                // The kernel's name of the thread (what `top -H`, `perf` and a debugger show). A
                // new thread starts with its creator's name, a libmicrohttpd "MHD-worker".
                cmhd_name_this_thread("strata-handler")
                run()
            }
        }
    }

    /// Lets the queued jobs finish, then ends every thread; returns when they are gone.
    func shutdown() {
        pthread_mutex_lock(mutex)
        closing = true
        pthread_cond_broadcast(wake)
        while threads > 0 { pthread_cond_wait(drained, mutex) }
        pthread_mutex_unlock(mutex)
    }

    private func run() {
        pthread_mutex_lock(mutex)
        while true {
            if head < jobs.count {
                let job = jobs[head]
                head += 1
                if head == jobs.count {
                    jobs.removeAll(keepingCapacity: true)
                    head = 0
                }
                pthread_mutex_unlock(mutex)
                job()
                pthread_mutex_lock(mutex)
                continue
            }
            if closing { break }
            idle += 1
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            deadline.tv_sec += idleSeconds
            let waited = pthread_cond_timedwait(wake, mutex, &deadline)
            idle -= 1
            if waited == ETIMEDOUT && head == jobs.count { break }
        }
        threads -= 1
        if threads == 0 { pthread_cond_broadcast(drained) }
        pthread_mutex_unlock(mutex)
    }
}
