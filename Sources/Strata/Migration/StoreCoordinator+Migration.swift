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
    /// Every SQLite store is checked first, without changing anything: a store written with another
    /// model whose description does not allow migration (``StoreOptions/migrate``), or whose
    /// migration cannot be inferred, fails the whole call before any store is touched. Then every
    /// migration is applied in its store's own transaction, all of them before any commits; if one
    /// fails, the others are rolled back and every store is left exactly as it was. Only then are
    /// the stores opened and attached. (A crash between two commits can still leave the first store
    /// migrated and the second not; opening them again migrates the second.)
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
        // 1. Plan every existing SQLite store that is not attached yet; refuse before touching any.
        var pending: [(index: Int, db: SQLiteConnection, plan: MigrationPlan, configuration: String?)] = []
        var planned: Set<String> = []
        for (index, description) in descriptions.enumerated() {
            guard description.type == .sqlite, let url = description.url,
                !stores.contains(where: { $0.url.map(Self.canonical) == Self.canonical(url) }),
                planned.insert(Self.canonical(url)).inserted
            else { continue }
            do {
                guard let found = try Self.pendingMigration(model: model, description: description, url: url) else {
                    continue
                }
                pending.append((index, found.db, found.plan, found.configuration))
            } catch {
                throw StoreLoadFailure(index: index, error: error)
            }
        }
        // 2. Apply every migration in its own open transaction, then commit them all.
        var prepared: [PreparedMigration] = []
        for item in pending {
            do {
                prepared.append(
                    try SQLiteMigrator.prepare(
                        item.plan, model: model, configuration: item.configuration, db: item.db,
                        url: descriptions[item.index].url))
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
                    try addStore(
                        type: description.type, configuration: description.configuration, url: description.url,
                        options: description.options))
            } catch {
                for store in stores where !before.contains(ObjectIdentifier(store)) { remove(store) }
                throw StoreLoadFailure(index: index, error: error)
            }
        }
        return result
    }

    /// The migration an existing SQLite store needs, with a connection to apply it on; nil when the
    /// file is new or already matches the model.
    /// - Throws: `.incompatibleModel` when it needs a migration that is not allowed or not possible,
    ///   `.configurationMismatch`, `.io`.
    static func pendingMigration(model: ObjectModel, description: StoreDescription, url: URL) throws(StoreError) -> (
        db: SQLiteConnection, plan: MigrationPlan, configuration: String?
    )? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let configuration =
            description.configuration == ObjectModel.defaultConfiguration ? nil : description.configuration
        guard let hashes = MigrationPlanner.hashes(of: model, configuration: configuration) else { return nil }
        let db: SQLiteConnection
        do {
            db = try SQLiteConnection(path: url.path)
        } catch {
            throw StoreError(.io, "cannot open the SQLite store: \(error.message)", storeURL: url, underlying: error)
        }
        guard let values = try SQLiteStore.readMetadataValues(db, url: url) else { return nil }
        let found = try SQLiteStore.metadata(from: values, url: url)
        // A configuration mismatch or an unfinished split is reported when the store is opened.
        guard found.configuration == configuration, found.entityHashes != hashes,
            values[SQLiteStore.splitStateKey] != SQLiteStore.splitStateCopying
        else { return nil }
        let plan = SQLiteMigrator.plan(
            values: values, storedHashes: found.entityHashes, configuration: configuration, model: model,
            history: description.options.modelHistory, url: url)
        guard description.options.migrate, !description.options.readOnly else {
            throw StoreError(
                .incompatibleModel, SQLiteStore.incompatibility(stored: found.entityHashes, model: hashes, plan: plan),
                storeURL: url)
        }
        guard plan.isPossible else { throw StoreError(.incompatibleModel, plan.refusalMessage, storeURL: url) }
        return (db, plan, configuration)
    }
}
