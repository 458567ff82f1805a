import Foundation
import Strata

#if canImport(Glibc)
    import Glibc
#endif

/// Forgets the history a server's stores no longer keep (`--history-retention`,
/// `--history-max-changes`): a round when the server starts, then one every
/// ``ServerOptions/historyPruneInterval`` seconds, on a thread of its own, until ``stop()``.
///
/// Each round prunes every store that records history, oldest transactions first, in batches of
/// ``batch`` transactions, each a store transaction of its own (see
/// ``PersistentStore/pruneHistory(_:batch:proceed:)``), with a pause between batches so that saves
/// waiting for the store's writer go first. Servers sharing a PostgreSQL store prune it one at a
/// time (the store's `deleteHistory` holds an advisory lock). A `since` the feed no longer has is
/// then `410 History Expired`.
final class HistoryPruner: Sendable {
    /// Transactions per batch.
    static let batch = 500
    /// The pause between two batches of one round, in microseconds.
    static let pauseMicroseconds: UInt32 = 2000

    private let coordinator: StoreCoordinator
    private let retentionSeconds: Double?
    private let maxChanges: Int?
    private let interval: Double
    private let metrics: Metrics
    private let log: @Sendable (String) -> Void
    private let stopping = Locked(false)
    /// Signalled to cut the wait between rounds short (stop).
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled by the thread when it ends.
    private let ended = DispatchSemaphore(value: 0)
    private let running = Locked(false)

    /// A pruner of `coordinator`'s stores with the server's `options`; nil when they keep every
    /// transaction (no history, or neither a retention nor a cap).
    init?(
        coordinator: StoreCoordinator, options: ServerOptions, metrics: Metrics,
        log: @escaping @Sendable (String) -> Void
    ) {
        guard options.history, options.historyRetention != nil || options.historyMaxChanges != nil else { return nil }
        self.coordinator = coordinator
        retentionSeconds = options.historyRetention
        maxChanges = options.historyMaxChanges
        interval = max(options.historyPruneInterval, 0.001)
        self.metrics = metrics
        self.log = log
    }

    /// Starts the pruner's thread; its first round runs at once.
    func start() {
        for store in coordinator.historyStores where !store.options.readOnly {
            metrics.recordPrunedHistory(0, store: store.identifier)
        }
        running.withLock { $0 = true }
        let thread = Thread { [self] in
            while !stopping.withLock({ $0 }) {
                pruneOnce()
                _ = wake.wait(timeout: .now() + interval)
            }
            ended.signal()
        }
        thread.name = "strata-history-pruner"
        thread.start()
    }

    /// Stops the pruner: a batch under way finishes, no other begins; the first call returns once
    /// its thread ended, later ones at once.
    func stop() {
        let first = stopping.withLock { stopping in
            defer { stopping = true }
            return !stopping
        }
        guard first, running.withLock({ $0 }) else { return }
        wake.signal()
        ended.wait()
    }

    /// What expires now.
    var retention: HistoryRetention {
        HistoryRetention(
            writtenBefore: retentionSeconds.map { Date().addingTimeInterval(-$0) }, maxChanges: maxChanges)
    }

    /// One round over every store that records history; returns how many transactions it forgot.
    @discardableResult
    func pruneOnce() -> Int {
        var total = 0
        for store in coordinator.historyStores where !store.options.readOnly {
            var batches = 0
            do {
                let forgotten = try store.pruneHistory(retention, batch: Self.batch) { [stopping] in
                    if batches > 0 { usleep(Self.pauseMicroseconds) }
                    batches += 1
                    return !stopping.withLock { $0 }
                }
                if forgotten > 0 { metrics.recordPrunedHistory(forgotten, store: store.identifier) }
                total += forgotten
            } catch {
                let name = store.configuration ?? ObjectModel.defaultConfiguration
                log("strata: history: cannot prune the history of \(name): \(error); the next round tries again")
            }
        }
        return total
    }
}
