import Foundation

/// The in-memory store keeps its history in its state, written with the data in one swap.
extension InMemoryStore {
    /// What the history of `changes` needs from the state before they are applied: the versions
    /// and tombstones of the objects they delete.
    func historyBefore(_ changes: StoreChanges, in state: State)
        -> (versions: [ObjectID: Int64], tombstones: [ObjectID: [String: AttributeValue]])
    {
        var versions: [ObjectID: Int64] = [:]
        var tombstones: [ObjectID: [String: AttributeValue]] = [:]
        for deletion in changes.deletes {
            guard let pk = deletion.id.primaryKey,
                let row = state.rows[model.rootEntity(of: deletion.id.entityName)]?[pk]
            else { continue }
            versions[deletion.id] = row.version
            var tombstone: [String: AttributeValue] = [:]
            for name in model.preservedAttributes(of: deletion.id.entityName) {
                tombstone[name] = row.attributes[name] ?? .null
            }
            tombstones[deletion.id] = tombstone
        }
        return (versions, tombstones)
    }

    /// Appends the history transaction of `changes`, applied to `state`.
    func recordHistory(
        _ changes: StoreChanges, versions: [ObjectID: Int64],
        before: (versions: [ObjectID: Int64], tombstones: [ObjectID: [String: AttributeValue]]), in state: inout State
    ) {
        state.lastHistoryNumber += 1
        state.history.append(
            HistoryTransaction(
                storeIdentifier: metadata.identifier, number: state.lastHistoryNumber, timestamp: Date(),
                author: changes.authorship.author, contextName: changes.authorship.contextName,
                changes: changes.historyChanges(
                    versions: versions, stored: before.versions, tombstones: before.tombstones)))
    }

    public func history(_ request: HistoryRequest) throws(StoreError) -> [HistoryTransaction] {
        let kept = state.withLock { $0.history }
        var found: [HistoryTransaction] = []
        for var transaction in kept where transaction.number > request.after {
            if let limit = request.limit, found.count >= limit { break }
            if request.entities != nil {
                transaction.changes.removeAll { !model.history($0.objectID.entityName, passes: request.entities) }
                if transaction.changes.isEmpty { continue }
            }
            found.append(transaction)
        }
        return found
    }

    public func lastHistoryNumber() throws(StoreError) -> Int64 {
        if let pinned = snapshots.current { return pinned.lastHistoryNumber }
        return state.withLock { $0.lastHistoryNumber }
    }

    public func beginReadSnapshot() throws(StoreError) {
        let current = state.withLock { $0 }
        if current.closed { throw StoreError(.closed, "the store is closed", storeURL: url) }
        guard snapshots.pin(current) else {
            throw StoreError(.invalidRequest, "this thread is in a read snapshot of the store already", storeURL: url)
        }
    }

    public func endReadSnapshot() { _ = snapshots.unpin() }

    public func firstHistoryNumber() throws(StoreError) -> Int64? { state.withLock { $0.history.first?.number } }

    @discardableResult
    public func deleteHistory(_ pruning: HistoryPruning) throws(StoreError) -> Int {
        // Under the writer gate: a prepared save's draft, copied before, would bring it back.
        writerGate.wait()
        defer { writerGate.signal() }
        return state.withLock { state in
            let count = state.history.count
            switch pruning {
            case .through(let number): state.history.removeAll { $0.number <= number }
            case .before(let date): state.history.removeAll { $0.timestamp < date }
            }
            return count - state.history.count
        }
    }

    public func expiredHistoryNumber(_ retention: HistoryRetention) throws(StoreError) -> Int64 {
        let kept = state.withLock { $0.history }
        var bound: Int64 = 0
        if let date = retention.writtenBefore {
            let first = kept.first { $0.timestamp >= date }
            bound = first.map { $0.number - 1 } ?? kept.last?.number ?? 0
        }
        if let cap = retention.maxChanges {
            var newer = 0
            for transaction in kept.reversed() {
                newer += transaction.changes.count
                if newer > cap {
                    bound = max(bound, transaction.number)
                    break
                }
            }
        }
        return bound
    }
}
