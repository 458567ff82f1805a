import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The read snapshots a store holds for threads that pinned one (see
/// ``PersistentStore/beginReadSnapshot()``): while a thread has one, every read it makes through
/// the store comes from that snapshot.
///
/// The common case, no snapshot pinned at all, costs one relaxed atomic load per read.
final class ReadSnapshotPins<Snapshot>: @unchecked Sendable {
    // Safe to share: `pinned` is a lock; a snapshot is used only by the thread it is pinned for.
    private let count = Atomic<Int>(0)
    private let pinned = Locked<[UInt: Snapshot]>([:])

    /// The calling thread's identity, as a key.
    private static var thread: UInt {
        #if canImport(Darwin)
            UInt(bitPattern: pthread_self())
        #else
            UInt(pthread_self())
        #endif
    }

    /// The calling thread's snapshot, if it pinned one.
    var current: Snapshot? {
        guard count.load(ordering: .acquiring) > 0 else { return nil }
        return pinned.withLock { $0[Self.thread] }
    }

    /// Pins `snapshot` for the calling thread.
    /// - Returns: false when the thread has one already (it is left as it was).
    func pin(_ snapshot: Snapshot) -> Bool {
        let key = Self.thread
        let added = pinned.withLock { table -> Bool in
            guard table[key] == nil else { return false }
            table[key] = snapshot
            return true
        }
        if added { count.wrappingAdd(1, ordering: .releasing) }
        return added
    }

    /// Unpins the calling thread's snapshot and returns it.
    func unpin() -> Snapshot? {
        let key = Self.thread
        let removed = pinned.withLock { $0.removeValue(forKey: key) }
        if removed != nil { count.wrappingSubtract(1, ordering: .releasing) }
        return removed
    }
}

/// Orders the commits of a coordinator's saves against the start of read snapshots across its
/// stores: a save commits every store's part while holding the gate shared, and a snapshot begins
/// in every store while holding it alone, so a snapshot holds all of a save across stores or none
/// of it.
///
/// Writers (snapshots) are preferred: a stream of commits cannot hold a snapshot back.
final class CommitGate: @unchecked Sendable {
    // Safe to share: the lock is a pthread read-write lock, made once and destroyed in deinit.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        #if canImport(Glibc)
            pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        let status = pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
        precondition(status == 0, "pthread_rwlock_init failed: \(status)")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` (commits) alongside other commits, never while a snapshot begins.
    func committing<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` (the start of a snapshot in every store) while no commit runs.
    func beginning<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}

extension StoreCoordinator {
    /// Runs `body` with every read the calling thread makes through the coordinator's stores (its
    /// fetches, counts, relationships, history numbers) taken from one snapshot across all of them,
    /// and gives it the history token of that snapshot: exactly the history transactions the
    /// snapshot holds, so that following the history after it misses nothing and repeats nothing.
    ///
    /// The snapshot begins in every store while no save of this coordinator commits: it holds a
    /// save across stores in all of them or in none. (Saves that other processes make to a shared
    /// store are ordered by that store alone.) Saves go on meanwhile; the snapshot does not see
    /// them. A SQLite store keeps a read transaction open on a connection of its own for as long
    /// as `body` runs, which keeps its write-ahead log from being checkpointed past that point; a
    /// PostgreSQL store, a `REPEATABLE READ` transaction; a store in memory, a copy of its state.
    /// - Throws: ``StoreError``: `.invalidRequest` when the calling thread is already in a
    ///   snapshot of a store here, or a store cannot give one; what `body` throws.
    public func withReadSnapshot<T>(_ body: (HistoryToken) throws(StoreError) -> T) throws(StoreError) -> T {
        let attached = stores
        var begun: [any PersistentStore] = []
        defer { for store in begun.reversed() { store.endReadSnapshot() } }
        try commitGate.beginning { () throws(StoreError) in
            for store in attached {
                try store.beginReadSnapshot()
                begun.append(store)
            }
        }
        let token = try currentHistoryToken()
        return try body(token)
    }
}
