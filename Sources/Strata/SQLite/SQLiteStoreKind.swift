import Foundation

extension StoreType {
    /// The kind of SQLite stores.
    static var sqliteKind: any StoreKind { SQLiteStoreKind() }
}

/// SQLite stores: one file each, migrated in place, inspected and split read-only.
struct SQLiteStoreKind: StoreKind {
    var type: StoreType { .sqlite }

    func open(model: ObjectModel, configuration: String?, url: URL?, options: StoreOptions) throws(StoreError)
        -> any PersistentStore
    {
        guard let url else { throw StoreError(.invalidRequest, "an SQLite store needs a file URL") }
        return try SQLiteStore(model: model, configuration: configuration, url: url, options: options)
    }

    /// An SQLite database file: its first 16 bytes are SQLite's header.
    func recognizes(_ url: URL) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return false }
        defer { try? handle.close() }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        return header == Data("SQLite format 3\0".utf8)
    }

    func pendingMigration(model: ObjectModel, description: StoreDescription) throws(StoreError)
        -> (any PendingMigration)?
    {
        guard let url = description.url, FileManager.default.fileExists(atPath: url.path) else { return nil }
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
        return SQLitePendingMigration(
            db: db,
            target: try SQLMigrationTarget(
                values: values, found: found, model: model, configuration: configuration, hashes: hashes,
                options: description.options, url: url))
    }

    func storedState(of description: StoreDescription) throws(StoreError) -> StoredState? {
        guard let url = description.url, FileManager.default.fileExists(atPath: url.path) else { return nil }
        let file = try SQLiteStore.snapshot(of: url)
        guard let values = SQLiteStore.metadataValues(in: file) else { return nil }
        return StoredState(
            metadata: try SQLiteStore.metadata(from: values, url: url),
            migrationRecord: values[SQLiteStore.migrationRecordKey].flatMap(MigrationRecord.init(text:)))
    }

    func forgetMigrationRecord(of description: StoreDescription) throws(StoreError) {
        guard let url = description.url else { return }
        do {
            let db = try SQLiteConnection(path: url.path)
            try db.run(
                "DELETE FROM \(SQLiteStore.metadataTable) WHERE key = ?", [.text(SQLiteStore.migrationRecordKey)])
        } catch {
            throw error.storeError("cannot forget the finished migration's record", url: url)
        }
    }

    func inspect(_ url: URL, model: ObjectModel?, history: [ObjectModel]) throws(StoreError) -> StoreInspection {
        let file = try SQLiteStore.snapshot(of: url)
        guard let values = SQLiteStore.metadataValues(in: file) else {
            throw StoreError(.incompatibleModel, "the file is not a Strata store", storeURL: url)
        }
        let metadata = try SQLiteStore.metadata(from: values, url: url)
        var recordedName: String?
        if let text = values["model"], case .object(let object)? = try? JSONValue.parse(text) {
            recordedName = object["name"]?.stringValue
        }
        var inspection = StoreInspection(
            url: url, metadata: metadata, format: values["format"], recordedModelName: recordedName, rowCounts: [:],
            joinTableRows: [:], splitState: values[SQLiteStore.splitStateKey],
            splitSource: values[SQLiteStore.splitSourceKey])
        let tables =
            (try? file.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", [],
                { $0.text(0) })) ?? []
        for table in tables where table != SQLiteStore.metadataTable {
            let quoted = SQLiteSchema.quote(table)
            if table.hasPrefix("_join_") {
                inspection.joinTableRows[table] = Int(
                    (try? file.query("SELECT count(*) FROM \(quoted)", [], { $0.int64(0) }))?.first ?? 0)
            } else if let counts = try? file.query(
                "SELECT \"_entity\", count(*) FROM \(quoted) GROUP BY \"_entity\"", [], { ($0.text(0), $0.int64(1)) })
            {
                for (entity, count) in counts { inspection.rowCounts[entity, default: 0] += Int(count) }
            }
        }
        guard let model else { return inspection.completed(with: nil, plan: nil) }
        let plan = SQLiteMigrator.plan(
            values: values, storedHashes: metadata.entityHashes, configuration: metadata.configuration, model: model,
            history: history, url: url
        ).checkingData { step in
            (try? SQLiteMigrator.steps(file).refusals(
                of: step, oldSchema: SQLiteSchema(model: step.old, entities: step.oldEntities))) ?? []
        }
        return inspection.completed(with: model, plan: plan)
    }

    func split(
        model: ObjectModel, source: URL, targets: [String: URL], options: SplitOptions,
        progress: ((SplitProgress) -> Void)?
    ) throws(StoreError) -> SplitReport {
        try SQLiteSplitter.split(model: model, source: source, targets: targets, options: options, progress: progress)
    }
}

/// A migration of an SQLite store, on its own connection.
final class SQLitePendingMigration: PendingMigration {
    let db: SQLiteConnection
    let target: SQLMigrationTarget
    var storeIdentifier: String { target.storeIdentifier }
    var targetHashes: [String: String] { target.targetHashes }
    var plan: MigrationPlan { target.plan }

    init(db: SQLiteConnection, target: SQLMigrationTarget) {
        self.db = db
        self.target = target
    }

    func prepare() throws(StoreError) -> any PreparedMigration {
        try SQLiteMigrator.prepare(
            target.plan, model: target.model, configuration: target.configuration, db: db, url: target.url)
    }
}
