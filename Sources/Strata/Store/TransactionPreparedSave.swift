/// A store's part of a save held in an open transaction that one call ends: the first of
/// ``commit()``, ``commitOrKeep()``, ``rollback()`` (or being dropped undecided, which rolls back)
/// decides; later calls do nothing. The SQLite and PostgreSQL stores use it.
final class TransactionPreparedSave: PreparedSave, @unchecked Sendable {
    // Safe to share: `finished` is only touched under `state`'s lock, so `finish` runs once.
    let versions: [ObjectID: Int64]
    let historyNumber: Int64?
    /// What was written, kept by `finish` when a commit that must happen fails.
    private let changes: StoreChanges
    /// Ends the transaction: commits or rolls back; with changes to keep, a failed commit keeps them.
    private let finish: (_ commit: Bool, _ keep: StoreChanges?) throws(StoreError) -> Void
    /// Writes receipts in the open transaction.
    private let keepReceipts: ([KeptReceipt]) throws(StoreError) -> Void
    private let state = Locked(false)

    init(
        versions: [ObjectID: Int64], historyNumber: Int64? = nil, changes: StoreChanges,
        keepReceipts: @escaping ([KeptReceipt]) throws(StoreError) -> Void,
        finish: @escaping (_ commit: Bool, _ keep: StoreChanges?) throws(StoreError) -> Void
    ) {
        self.versions = versions
        self.historyNumber = historyNumber
        self.changes = changes
        self.keepReceipts = keepReceipts
        self.finish = finish
    }

    func keep(_ receipts: [KeptReceipt]) throws(StoreError) {
        guard !receipts.isEmpty, !state.withLock({ $0 }) else { return }
        try keepReceipts(receipts)
    }

    private func take() -> Bool {
        state.withLock { finished in
            defer { finished = true }
            return !finished
        }
    }

    func commit() throws(StoreError) {
        guard take() else { return }
        try finish(true, nil)
    }

    func commitOrKeep() throws(StoreError) {
        guard take() else { return }
        try finish(true, changes)
    }

    func rollback() {
        guard take() else { return }
        try? finish(false, nil)
    }

    deinit {
        // A prepared save dropped without a decision must not keep the transaction open.
        if take() { try? finish(false, nil) }
    }
}
