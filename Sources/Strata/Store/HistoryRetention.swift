import Foundation

/// How much persistent history a store keeps: transactions written before a moment, and changes
/// beyond a count, expire (see ``PersistentStore/pruneHistory(_:batch:proceed:)``).
///
/// What expires is always the oldest part of the history, a prefix of it: a transaction is
/// forgotten only with every transaction before it. Times come from the clocks of the processes
/// that wrote (several servers over one PostgreSQL database, a clock set back), so a transaction
/// may carry an earlier time than one before it; it then stays as long as that one stays, and a
/// reader after a kept token never misses a transaction that is gone.
public struct HistoryRetention: Sendable, Hashable {
    /// Transactions written before this moment expire; nil: none expires by age.
    public var writtenBefore: Date?
    /// At most this many changes are kept, those of the newest transactions (a transaction goes
    /// whole: the changes kept may be fewer); nil: no cap.
    public var maxChanges: Int?

    /// Creates a retention.
    public init(writtenBefore: Date? = nil, maxChanges: Int? = nil) {
        self.writtenBefore = writtenBefore
        self.maxChanges = maxChanges
    }

    /// Whether nothing expires.
    public var keepsEverything: Bool { writtenBefore == nil && maxChanges == nil }
}

extension PersistentStore {
    /// Forgets the history `retention` lets go, oldest first, at most `batch` transactions per
    /// store transaction so that saves wait for one batch at most; `proceed` is asked before each
    /// batch (false stops early, as a server that is stopping does).
    ///
    /// The bound is read once, at the start: what expires meanwhile waits for the next call.
    /// - Returns: how many transactions were forgotten.
    @discardableResult
    public func pruneHistory(_ retention: HistoryRetention, batch: Int = 500, proceed: () -> Bool = { true })
        throws(StoreError) -> Int
    {
        precondition(batch > 0, "a batch holds at least one transaction")
        guard options.recordsHistory, !options.readOnly, !retention.keepsEverything else { return 0 }
        let bound = try expiredHistoryNumber(retention)
        guard bound > 0, var first = try firstHistoryNumber(), first <= bound else { return 0 }
        var forgotten = 0
        while first <= bound, proceed() {
            // Numbers have no gaps, so a range of `batch` numbers holds at most `batch` transactions.
            let through = min(bound, first + Int64(batch) - 1)
            forgotten += try deleteHistory(.through(through))
            first = through + 1
        }
        return forgotten
    }
}
