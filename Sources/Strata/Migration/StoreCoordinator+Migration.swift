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
        // 1. Plan every existing store that is not attached yet; refuse before touching any. A
        // migration of several stores that was interrupted is finished first, whatever the options.
        var candidates: [(index: Int, description: StoreDescription)] = []
        var planned: Set<String> = []
        for (index, description) in descriptions.enumerated() {
            if let url = description.url {
                guard !stores.contains(where: { $0.url.map(Self.canonical) == Self.canonical(url) }),
                    planned.insert(Self.canonical(url)).inserted
                else { continue }
            }
            candidates.append((index, description))
        }
        let (unfinished, keepers) = try unfinishedMigrations(candidates)
        var pending: [(index: Int, migration: any PendingMigration)] = []
        for (index, description) in candidates {
            var description = description
            if let url = description.url, unfinished.contains(Self.canonical(url)) {
                description.options.migrate = true
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
        // Several stores: the first to commit keeps the record of them all until every one has.
        if prepared.count > 1 {
            let record = MigrationRecord(
                targets: Dictionary(
                    pending.map { ($0.migration.storeIdentifier, $0.migration.targetHashes) },
                    uniquingKeysWith: { first, _ in first }), modelVersion: model.version)
            do {
                try prepared[0].keep(record)
            } catch {
                for migration in prepared { migration.rollback() }
                throw StoreLoadFailure(index: pending[0].index, error: error)
            }
        }
        for (position, migration) in prepared.enumerated() {
            do {
                try migration.commit()
                if position == 0 && prepared.count > 1 { try crashPoints.reach(.betweenMigrationCommits) }
            } catch {
                for later in prepared[(position + 1)...] { later.rollback() }
                throw StoreLoadFailure(index: pending[position].index, error: error)
            }
        }
        if prepared.count > 1 { prepared[0].forgetRecord() }
        // An interrupted migration finished now: its record, kept elsewhere, can go too.
        for index in keepers { try? descriptions[index].type.kind.forgetMigrationRecord(of: descriptions[index]) }
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

    /// The stores (canonical paths) an interrupted migration of several stores must still
    /// migrate: named by a record kept in another store, and not at their target hashes yet.
    /// - Throws: `.incompatibleModel` when the model is not the one that migration was to.
    /// - Returns: those stores, and the descriptions (by index) of the stores keeping the records.
    private func unfinishedMigrations(_ candidates: [(index: Int, description: StoreDescription)])
        throws(StoreLoadFailure) -> (stores: Set<String>, keepers: [Int])
    {
        var states: [(index: Int, url: URL, state: StoredState)] = []
        for (index, description) in candidates {
            guard let url = description.url else { continue }
            do {
                if let state = try description.type.kind.storedState(of: description) {
                    states.append((index, url, state))
                }
            } catch {
                throw StoreLoadFailure(index: index, error: error)
            }
        }
        var unfinished: Set<String> = []
        var keepers: [Int] = []
        for (index, url, state) in states {
            guard let record = state.migrationRecord else { continue }
            // Forgotten after this load only when every participant is here to be finished.
            if record.targets.keys.allSatisfy({ id in states.contains { $0.state.metadata.identifier == id } }) {
                keepers.append(index)
            }
            for (identifier, target) in record.targets {
                guard let participant = states.first(where: { $0.state.metadata.identifier == identifier }),
                    participant.state.metadata.entityHashes != target
                else { continue }
                let configuration = participant.state.metadata.configuration
                guard MigrationPlanner.hashes(of: model, configuration: configuration) == target else {
                    throw StoreLoadFailure(
                        index: index,
                        error: StoreError(
                            .incompatibleModel,
                            "a migration of several stores to model version \(record.modelVersion ?? "(none)") was interrupted (recorded in \(url.path)); open the stores with that version of the model to finish it",
                            storeURL: participant.url))
                }
                unfinished.insert(Self.canonical(participant.url))
            }
        }
        return (unfinished, keepers)
    }
}
