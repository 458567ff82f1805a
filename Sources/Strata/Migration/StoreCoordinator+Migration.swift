import Foundation

/// A store of ``StoreCoordinator/addStores(_:)`` that could not be loaded: its position in the
/// descriptions and the error.
struct StoreLoadFailure: Error {
    var index: Int
    var error: StoreError
}

extension StoreCoordinator {
    /// Opens and attaches several stores as one step; the stores that need a migration are migrated
    /// all together or not at all.
    ///
    /// Every store is checked first (by its kind), without changing anything: a store written with another
    /// model whose description does not allow migration (``StoreOptions/migrate``), or whose
    /// migration cannot be inferred, fails the whole call before any store is touched. Then every
    /// migration is applied in its store's own transaction, all of them before any commits; if one
    /// fails, the others are rolled back and every store is left exactly as it was. Only then are
    /// the stores opened and attached, and the saves across them that a crash interrupted are
    /// finished (``recoverInterruptedSaves()``).
    /// - Returns: the attached stores, in the order of `descriptions`.
    /// - Throws: ``StoreError`` of the first store that fails; stores this call attached are detached.
    @discardableResult
    public func addStores(_ descriptions: [StoreDescription]) throws(StoreError) -> [any PersistentStore] {
        do {
            return try loadStores(descriptions)
        } catch {
            throw error.error
        }
    }

    /// ``addStores(_:)``, telling which description failed.
    @discardableResult
    func loadStores(_ descriptions: [StoreDescription]) throws(StoreLoadFailure) -> [any PersistentStore] {
        // 1. Plan every existing store that is not attached yet; refuse before touching any.
        var pending: [(index: Int, migration: any PendingMigration)] = []
        var planned: Set<String> = []
        for (index, description) in descriptions.enumerated() {
            if let url = description.url {
                guard !stores.contains(where: { $0.url.map(Self.canonical) == Self.canonical(url) }),
                    planned.insert(Self.canonical(url)).inserted
                else { continue }
            }
            do {
                if let migration = try description.type.kind.pendingMigration(model: model, description: description) {
                    pending.append((index, migration))
                }
            } catch {
                throw StoreLoadFailure(index: index, error: error)
            }
        }
        // 2. Apply every migration in its own open transaction, then commit them all.
        var prepared: [any PreparedMigration] = []
        for item in pending {
            do {
                prepared.append(try item.migration.prepare())
            } catch {
                for migration in prepared { migration.rollback() }
                throw StoreLoadFailure(index: item.index, error: error)
            }
        }
        for (position, migration) in prepared.enumerated() {
            do {
                try migration.commit()
            } catch {
                for later in prepared[(position + 1)...] { later.rollback() }
                throw StoreLoadFailure(index: pending[position].index, error: error)
            }
        }
        pending.removeAll()
        prepared.removeAll()
        // 3. Open and attach.
        let before = stores.map { ObjectIdentifier($0) }
        var result: [any PersistentStore] = []
        for (index, description) in descriptions.enumerated() {
            do {
                result.append(
                    try attach(
                        type: description.type, configuration: description.configuration, url: description.url,
                        options: description.options))
            } catch {
                for store in stores where !before.contains(ObjectIdentifier(store)) { remove(store) }
                throw StoreLoadFailure(index: index, error: error)
            }
        }
        // 4. Finish the saves across stores that a crash interrupted.
        do {
            try recoverInterruptedSaves()
        } catch {
            for store in stores where !before.contains(ObjectIdentifier(store)) { remove(store) }
            let index = descriptions.firstIndex { $0.url.map(Self.canonical) == error.storeURL.map(Self.canonical) }
            throw StoreLoadFailure(index: index ?? 0, error: error)
        }
        return result
    }
}
