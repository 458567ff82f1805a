import Foundation

/// Persistent history across the coordinator's stores, in Core Data's shape
/// (`NSPersistentHistoryChangeRequest`): the stores opened with
/// ``StoreOptions/recordsHistory`` keep it, each in its own storage.
extension StoreCoordinator {
    /// The stores that record history.
    public var historyStores: [any PersistentStore] { stores.filter { $0.options.recordsHistory } }

    /// The token covering every history transaction committed so far, in every store that records
    /// history (Core Data's `currentPersistentHistoryToken(fromStores:)`).
    public func currentHistoryToken() throws(StoreError) -> HistoryToken {
        var components: [String: Int64] = [:]
        for store in historyStores { components[store.identifier] = try store.lastHistoryNumber() }
        return HistoryToken(components)
    }

    /// The history transactions after `token` (nil: from the oldest kept), optionally only the
    /// changes of `entities` (subentities included; transactions with none left out), at most
    /// `limit` of them (Core Data's `fetchHistory(after:)`).
    ///
    /// Each store's transactions come in its commit order; the stores' lists are merged by
    /// timestamp, which keeps every store's own order. For a limited fetch, the token of the
    /// last transaction returned merged into `token` is where the next page starts.
    public func history(after token: HistoryToken? = nil, entities: Set<String>? = nil, limit: Int? = nil)
        throws(StoreError) -> [HistoryTransaction]
    {
        var lists: [[HistoryTransaction]] = []
        for store in historyStores {
            let request = HistoryRequest(
                after: token?.number(for: store.identifier) ?? 0, entities: entities, limit: limit)
            let list = try store.history(request)
            if !list.isEmpty { lists.append(list) }
        }
        return Self.merge(lists, limit: limit)
    }

    /// Merges per-store lists (each in its store's order) by timestamp, keeping each list's order.
    static func merge(_ lists: [[HistoryTransaction]], limit: Int?) -> [HistoryTransaction] {
        if lists.count == 1 { return Array(lists[0].prefix(limit ?? Int.max)) }
        var heads = [Int](repeating: 0, count: lists.count)
        var merged: [HistoryTransaction] = []
        while merged.count < (limit ?? Int.max) {
            var best: Int?
            for (index, list) in lists.enumerated() where heads[index] < list.count {
                guard let chosen = best else {
                    best = index
                    continue
                }
                let candidate = list[heads[index]]
                let current = lists[chosen][heads[chosen]]
                if (candidate.timestamp, candidate.storeIdentifier) < (current.timestamp, current.storeIdentifier) {
                    best = index
                }
            }
            guard let best else { break }
            merged.append(lists[best][heads[best]])
            heads[best] += 1
        }
        return merged
    }

    /// Forgets, in every store recording history, the transactions `token` covers (Core Data's
    /// `deleteHistory(before:)`); returns how many were forgotten.
    @discardableResult
    public func deleteHistory(through token: HistoryToken) throws(StoreError) -> Int {
        var deleted = 0
        for store in historyStores {
            guard let number = token.components[store.identifier] else { continue }
            deleted += try store.deleteHistory(.through(number))
        }
        return deleted
    }

    /// Forgets, in every store recording history, the transactions written before `date`;
    /// returns how many were forgotten.
    @discardableResult
    public func deleteHistory(before date: Date) throws(StoreError) -> Int {
        var deleted = 0
        for store in historyStores { deleted += try store.deleteHistory(.before(date)) }
        return deleted
    }

    /// The oldest token history can still be read after without missing anything: per store, one
    /// before its oldest transaction kept (its last number when none is kept). A token that does
    /// not cover this one asks for history already forgotten.
    public func oldestHistoryToken() throws(StoreError) -> HistoryToken {
        var components: [String: Int64] = [:]
        for store in historyStores {
            if let first = try store.firstHistoryNumber() {
                components[store.identifier] = first - 1
            } else {
                components[store.identifier] = try store.lastHistoryNumber()
            }
        }
        return HistoryToken(components)
    }
}
