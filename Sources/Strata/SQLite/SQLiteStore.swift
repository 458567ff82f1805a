import CSQLite
import Foundation
import Synchronization

/// A store in one SQLite file: WAL mode, one writer connection, a small pool of reader connections
/// (so reads never wait behind a save being prepared), and prepared statements reused.
///
/// The file holds tables only for its configuration's entities, and a metadata table with the
/// store's UUID, its configuration, the model's version hashes, and the model itself (its canonical
/// JSON, so a later version can be migrated from it). Reopening it with a model whose hashes differ
/// migrates it when ``StoreOptions/migrate`` is set (see ``MigrationPlan``), and is otherwise an
/// `.incompatibleModel` error naming the entities that differ and what a migration would do.
public final class SQLiteStore: PersistentStore, @unchecked Sendable {
    // Safe to share: the writer connection is used (and replaced) only while `writerGate` is held; reader
    // connections are taken out of `readers` by one caller at a time; the rest is immutable
    // after init, except the key counters and `isClosed`, which live behind locks.
    public let type = StoreType.sqlite
    public let url: URL?
    public let configuration: String?
    public let options: StoreOptions
    public let metadata: StoreMetadata
    public let entityNames: Set<String>

    let model: ObjectModel
    let schema: SQLiteSchema
    /// The writer connection: replaced (under `writerGate`) when it was opened read-only and the
    /// file has become writable again.
    private(set) var writer: SQLiteConnection
    private let writerGate = DispatchSemaphore(value: 1)
    /// Set when a write failed because the file cannot be written: the next write reopens the
    /// writer connection first (SQLite opens an unwritable file read-only and stays so).
    let writerNeedsReopen = Atomic<Bool>(false)
    /// Parts of saves across stores whose commit failed after their commit point committed: they
    /// are written before anything else this store saves (see ``PreparedSave/commitOrKeep()``).
    let keptChanges = Locked<[StoreChanges]>([])
    #if DEBUG
        /// Test hook: how many of the next commits fail as on a full disk (read under the writer).
        let failingCommits = Atomic<Int>(0)
    #endif
    private let readers = Locked<[SQLiteConnection]>([])
    /// The connections of threads in a read snapshot, each in its read transaction (see
    /// ``beginReadSnapshot()``).
    let snapshots = ReadSnapshotPins<SQLiteConnection>()
    /// Writes to this store's file through stores of this process (shared by every store open on
    /// the file): a reader keeps its snapshot from one read to the next only while this has not
    /// moved (see ``read(_:)``).
    private let writes: WriteCount
    /// Ends the snapshots of readers idle longer than ``snapshotLifetime``; made last in `init`
    /// (libdispatch traps when a source that was never activated is released), read only after.
    private var sweeper: (any DispatchSourceTimer)?
    /// The SQL of fetch requests read lately, by request (without its window): the same list asked
    /// again skips turning its predicate into SQL. At most ``fetchSQLLimit`` are kept.
    let fetchSQL = Locked<[FetchSQLKey: FetchSQL]>([:])
    static let fetchSQLLimit = 256
    private let nextKeys: Locked<[String: Int64]>
    /// The ID home of each entity this store holds (and of every entity a relationship here
    /// points to), looked up once.
    let homes: [String: ObjectID.Home]
    private let closed = Atomic<Bool>(false)

    static let metadataTable = "_strata_metadata"

    /// The metadata key of `table`'s key floor: one more than the largest primary key a row
    /// deleted from it had, so that a key is never handed out twice, also when the row with the
    /// largest key is gone (Core Data's `Z_PRIMARYKEY.Z_MAX`). History, ETags and clients name
    /// objects by their keys.
    static func keyFloorKey(_ table: String) -> String { "keyFloor." + table }

    /// Opens or creates the store at `url` for `configuration` of `model`.
    ///
    /// A store written with another version of the model is migrated in one transaction when
    /// `options.migrate` is set (see ``MigrationPlan/steps``). To migrate
    /// several stores all together or not at all, use ``StoreCoordinator/addStores(_:)``.
    /// - Throws: ``StoreError``: `.unknownConfiguration`, `.io`, `.configurationMismatch`,
    ///   `.incompatibleModel` (also for a migration that cannot be inferred, and for the target of
    ///   an unfinished `split`), `.uniqueViolation` (a migration adding a uniqueness constraint that
    ///   existing objects break).
    public init(model: ObjectModel, configuration: String?, url: URL, options: StoreOptions = StoreOptions())
        throws(StoreError)
    {
        guard let entities = model.entityNames(inConfiguration: configuration) else {
            throw StoreError(
                .unknownConfiguration, "the model has no configuration '\(configuration ?? "")'", storeURL: url)
        }
        self.model = model
        self.url = url
        writes = WriteCount.of(url.standardizedFileURL.resolvingSymlinksInPath().path)
        self.configuration = configuration == ObjectModel.defaultConfiguration ? nil : configuration
        self.options = options
        entityNames = Set(entities)
        schema = SQLiteSchema(model: model, entities: entities)
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, "cannot create the store's folder", storeURL: url, underlying: error as NSError)
        }
        do {
            writer = try SQLiteConnection(path: url.path, readOnly: false)
            try writer.execute("PRAGMA journal_mode=WAL")
            try writer.execute("PRAGMA synchronous=\(options.durability == .full ? "FULL" : "NORMAL")")
        } catch {
            throw StoreError(.io, "cannot open the SQLite store: \(error.message)", storeURL: url, underlying: error)
        }
        let values = try Self.readMetadataValues(writer, url: url)
        let hashes = model.entityVersionHashes.filter { entities.contains($0.key) }
        if let values {
            let found = try Self.metadata(from: values, url: url)
            guard found.configuration == self.configuration else {
                throw StoreError(
                    .configurationMismatch,
                    "the store holds configuration '\(found.configuration ?? ObjectModel.defaultConfiguration)', not '\(self.configuration ?? ObjectModel.defaultConfiguration)'",
                    storeURL: url)
            }
            if values[Self.splitStateKey] == Self.splitStateCopying {
                throw StoreError(
                    .incompatibleModel,
                    "the store is an unfinished split of store \(values[Self.splitSourceKey] ?? "?"); run strata split again to finish it",
                    storeURL: url)
            }
            if found.entityHashes != hashes {
                let target = try SQLMigrationTarget(
                    values: values, found: found, model: model, configuration: self.configuration, hashes: hashes,
                    options: options, url: url)
                try SQLiteMigrator.migrate(
                    target.plan, model: model, configuration: self.configuration, db: writer, url: url)
                metadata = StoreMetadata(
                    identifier: found.identifier, configuration: found.configuration, modelVersion: model.version,
                    entityHashes: hashes)
            } else {
                metadata = found
                if values["model"] == nil && !options.readOnly {
                    // A store created before models were recorded: record the (equivalent) model now.
                    try? writer.run(
                        "INSERT OR IGNORE INTO \(Self.metadataTable) (key, value) VALUES ('model', ?)",
                        [.text(model.canonicalJSON)])
                }
            }
        } else {
            let created = StoreMetadata(
                identifier: UUID().uuidString, configuration: self.configuration, modelVersion: model.version,
                entityHashes: hashes)
            try Self.createSchema(writer, schema: schema, metadata: created, model: model, url: url)
            metadata = created
        }
        var keys: [String: Int64] = [:]
        for table in schema.tables.keys {
            let maximum = try? writer.query("SELECT max(\"_pk\") FROM \(SQLiteSchema.quote(table))") { $0.int64(0) }
                .first
            let floor = values?[Self.keyFloorKey(table)].flatMap { Int64($0) } ?? 0
            keys[table] = max((maximum ?? 0) + 1, floor)
        }
        nextKeys = Locked(keys)
        if options.recordsHistory && !options.readOnly { try Self.createHistoryTables(writer, url: url) }
        let identifier = metadata.identifier
        homes = Dictionary(
            uniqueKeysWithValues: model.entityNames.map { ($0, ObjectID.Home.of(entity: $0, store: identifier)) })
        let sweeper = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        sweeper.setEventHandler { [weak self] in self?.endIdleSnapshots(olderThan: Self.snapshotLifetime) }
        sweeper.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(250))
        sweeper.activate()
        self.sweeper = sweeper
    }

    deinit { sweeper?.cancel() }

    /// The ID of the object with primary key `pk` of `entity` in this store.
    func id(_ entity: String, _ pk: Int64) -> ObjectID {
        if let home = homes[entity] { return ObjectID(home: home, primaryKey: pk) }
        return ObjectID(store: metadata.identifier, entity: entity, primaryKey: pk)
    }

    /// Says how a store and a model differ, and what a migration would do or why it cannot.
    static func incompatibility(stored: [String: String], model: [String: String], plan: MigrationPlan) -> String {
        var message = describeDifferences(stored: stored, model: model)
        if plan.isPossible {
            message +=
                "; open it with migration enabled to migrate it (\(plan.changes.map(\.description).joined(separator: "; ")))"
        } else {
            message += "; it cannot be migrated: " + plan.refusals.map(\.description).joined(separator: "; ")
        }
        return message
    }

    /// Says which entities were added, removed or changed between a store and a model.
    static func describeDifferences(stored: [String: String], model: [String: String]) -> String {
        let added = model.keys.filter { stored[$0] == nil }.sorted()
        let removed = stored.keys.filter { model[$0] == nil }.sorted()
        let changed = model.keys.filter { stored[$0] != nil && stored[$0] != model[$0] }.sorted()
        var parts: [String] = []
        if !added.isEmpty { parts.append("entities added in the model: \(added.joined(separator: ", "))") }
        if !removed.isEmpty { parts.append("entities missing from the model: \(removed.joined(separator: ", "))") }
        if !changed.isEmpty { parts.append("entities changed: \(changed.joined(separator: ", "))") }
        return "the store was written with a different model (" + parts.joined(separator: "; ") + ")"
    }

    /// The metadata key of a kept ``MigrationRecord``.
    static let migrationRecordKey = "interruptedMigration"

    /// The metadata key naming the store a `split` target is copied from.
    static let splitSourceKey = "splitSource"
    /// The metadata key holding a `split` target's state (``splitStateCopying`` or ``splitStateComplete``).
    static let splitStateKey = "splitState"
    /// A split target still being copied: it cannot be opened as a store.
    static let splitStateCopying = "copying"
    /// A split target copied and verified.
    static let splitStateComplete = "complete"

    /// Every key and value of the metadata table; nil for a file with no tables at all (a new store).
    /// - Throws: `.incompatibleModel` for an SQLite file that is not a Strata store, `.io`.
    static func readMetadataValues(_ db: SQLiteConnection, url: URL) throws(StoreError) -> [String: String]? {
        do {
            let exists = try db.query(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(metadataTable)]
            ) { $0.int64(0) }
            guard exists.first == 1 else {
                let tables = try db.query("SELECT count(*) FROM sqlite_master") { $0.int64(0) }
                if tables.first != 0 {
                    throw StoreError(
                        .incompatibleModel, "the file is an SQLite database but not a Strata store", storeURL: url)
                }
                return nil
            }
            let pairs = try db.query("SELECT key, value FROM \(metadataTable)") { ($0.text(0), $0.text(1)) }
            return Dictionary(pairs, uniquingKeysWith: { _, last in last })
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw StoreError(.io, "cannot read the store: \(error.message)", storeURL: url, underlying: error)
        } catch {
            throw StoreError(.io, "cannot read the store", storeURL: url)
        }
    }

    /// A connection that reads the store file at `url` without changing it or anything next to it
    /// (see ``SQLiteOpenMode/snapshot``).
    /// - Throws: `.io` when the file is missing or not an SQLite database.
    static func snapshot(of url: URL) throws(StoreError) -> SQLiteConnection {
        do {
            return try SQLiteConnection(path: url.path, mode: .snapshot)
        } catch {
            let reason =
                error.resultCode == .cantOpen && error.message == "no such file" ? "no such file" : error.message
            throw StoreError(.io, "cannot read the file: \(reason)", storeURL: url, underlying: error)
        }
    }

    /// The metadata table's keys and values; nil when the database has no Strata metadata table.
    static func metadataValues(in db: SQLiteConnection) -> [String: String]? {
        guard
            let exists = try? db.query(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(metadataTable)],
                { $0.int64(0) }),
            exists.first == 1,
            let pairs = try? db.query("SELECT key, value FROM \(metadataTable)", [], { ($0.text(0), $0.text(1)) })
        else { return nil }
        return Dictionary(pairs, uniquingKeysWith: { _, last in last })
    }

    /// The store's metadata from the metadata table's values.
    /// - Throws: `.incompatibleModel` when a required key is missing.
    static func metadata(from values: [String: String], url: URL) throws(StoreError) -> StoreMetadata {
        guard let identifier = values["uuid"], let hashText = values["entityHashes"],
            case .object(let hashObject)? = try? JSONValue.parse(hashText)
        else {
            throw StoreError(.incompatibleModel, "the store's metadata is incomplete", storeURL: url)
        }
        return StoreMetadata(
            identifier: identifier, configuration: values["configuration"], modelVersion: values["modelVersion"],
            entityHashes: hashObject.compactMapValues(\.stringValue))
    }

    /// The metadata rows of a new store: UUID, format, hashes, configuration, version, and the model.
    static func metadataValues(_ metadata: StoreMetadata, model: ObjectModel) -> [(String, String)] {
        var values: [(String, String)] = [
            ("uuid", metadata.identifier), ("format", "1"),
            ("entityHashes", JSONValue.object(metadata.entityHashes.mapValues { .string($0) }).jsonText),
            ("model", model.canonicalJSON),
        ]
        if let configuration = metadata.configuration { values.append(("configuration", configuration)) }
        if let version = metadata.modelVersion { values.append(("modelVersion", version)) }
        return values
    }

    /// Creates the metadata table and `statements` (the schema) in one transaction.
    /// - Parameter extra: more metadata rows (a split's state, say).
    static func createSchema(
        _ db: SQLiteConnection, statements: [String], metadata: StoreMetadata, model: ObjectModel,
        extra: [(String, String)] = [], url: URL
    ) throws(StoreError) {
        do {
            try db.execute("BEGIN IMMEDIATE")
            try db.execute("CREATE TABLE \(metadataTable) (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            for statement in statements { try db.execute(statement) }
            for (key, value) in metadataValues(metadata, model: model) + extra {
                try db.run("INSERT INTO \(metadataTable) (key, value) VALUES (?, ?)", [.text(key), .text(value)])
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw StoreError(
                .io, "cannot create the store's tables: \(error.message)", storeURL: url, underlying: error)
        }
    }

    private static func createSchema(
        _ db: SQLiteConnection, schema: SQLiteSchema, metadata: StoreMetadata, model: ObjectModel, url: URL
    ) throws(StoreError) {
        try createSchema(db, statements: schema.createStatements, metadata: metadata, model: model, url: url)
    }

    func checkOpen() throws(StoreError) {
        if closed.load(ordering: .acquiring) { throw StoreError(.closed, "the store is closed", storeURL: url) }
    }

    /// What a failed read means: the request's fault when a Strata function refused it (a
    /// `MATCHES` pattern too slow), `.overBudget` when the progress handler stopped it.
    static func readError(_ error: SQLiteError, url: URL?, budget: Double?) -> StoreError {
        if let range = error.message.range(of: SQLiteFunctions.tooExpensivePrefix) {
            return StoreError(.tooExpensive, String(error.message[range.upperBound...]), storeURL: url)
        }
        if let range = error.message.range(of: SQLiteFunctions.refusalPrefix) {
            return StoreError(.invalidRequest, String(error.message[range.upperBound...]), storeURL: url)
        }
        if error.code & 0xff == SQLITE_INTERRUPT {
            return StoreError(
                .overBudget,
                "the query ran past its time budget of \(budget.map { String(format: "%g", $0) } ?? "?") s and was stopped",
                storeURL: url, underlying: error)
        }
        return StoreError(.io, "SQLite read failed: \(error.message)", storeURL: url, underlying: error)
    }

    /// How long a reader may keep one snapshot (see ``read(_:)``): how late it may see a write
    /// another process made to the file.
    static let snapshotLifetime: UInt64 = 20_000_000

    /// Runs `body` on a reader connection, inside a read transaction: everything `body` reads
    /// comes from one snapshot.
    ///
    /// The reader keeps its transaction when it goes back to the pool, and the next read on it
    /// uses the same snapshot as long as no store of this process wrote the file since (see
    /// ``releaseWriter()``) and the snapshot is younger than ``snapshotLifetime``. Beginning and
    /// ending a transaction costs two `fcntl` locks and an `fstat` of the file: measured on a C loop
    /// over 200,000 rows, a read by key took 7.1–7.8 µs in a transaction of its own and 3.2–3.6 µs
    /// in a kept one. Readers idle in the pool end their transactions after a write of this process
    /// and after ``snapshotLifetime``, so that none holds the WAL back for long.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        try checkOpen()
        if let pinned = snapshots.current { return try run(body, on: pinned) }
        let connection: SQLiteConnection
        if let pooled = readers.withLock({ $0.popLast() }) {
            connection = pooled
        } else {
            do {
                connection = try SQLiteConnection(path: url!.path, readOnly: false)
                // Readers only: the writer's pages go through SQLite's own cache, as they change.
                if options.memoryMapBytes > 0 { try connection.execute("PRAGMA mmap_size=\(options.memoryMapBytes)") }
            } catch {
                throw StoreError(
                    .io, "cannot open a reader connection: \(error.message)", storeURL: url, underlying: error)
            }
        }
        defer { readers.withLock { $0.append(connection) } }
        // Read before the snapshot begins: a write counted after this may be missing from it.
        let written = writes.value.load(ordering: .acquiring)
        let now = DispatchTime.now().uptimeNanoseconds
        if let kept = connection.snapshot, kept.writes != written || now &- kept.began > Self.snapshotLifetime {
            connection.endSnapshot()
        }
        if connection.snapshot == nil {
            do {
                try connection.run("BEGIN")
            } catch {
                throw Self.readError(error, url: url, budget: options.queryBudget)
            }
            connection.snapshot = (written, now)
        }
        var succeeded = false
        defer {
            // After a failure, or when SQLite ended the transaction itself (an interrupted query).
            if !succeeded || connection.isInAutocommit { connection.endSnapshot() }
        }
        if let budget = options.queryBudget {
            connection.limitTime()
            connection.deadline = DispatchTime.now().uptimeNanoseconds + UInt64(budget * 1e9)
        }
        defer { connection.deadline = 0 }
        let result = try run(body, on: connection)
        succeeded = true
        return result
    }

    /// Runs `body` on `connection`, its errors as store errors.
    func run<T>(_ body: (SQLiteConnection) throws -> T, on connection: SQLiteConnection) throws(StoreError) -> T {
        do {
            return try body(connection)
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw Self.readError(error, url: url, budget: options.queryBudget)
        } catch let error as PredicateError {
            throw StoreError(error, storeURL: url, entity: nil)
        } catch {
            throw StoreError(.io, "read failed: \(error)", storeURL: url)
        }
    }

    /// Takes the writer connection; the caller must call ``releaseWriter()``.
    func acquireWriter() throws(StoreError) -> SQLiteConnection {
        writerGate.wait()
        if closed.load(ordering: .acquiring) {
            writerGate.signal()
            throw StoreError(.closed, "the store is closed", storeURL: url)
        }
        if writerNeedsReopen.load(ordering: .acquiring) { reopenWriter() }
        return writer
    }

    /// Opens the writer connection again (writer gate held), keeping the old one unless the new
    /// one can write.
    private func reopenWriter() {
        guard let url,
            let fresh = try? SQLiteConnection(path: url.path, readOnly: false), !fresh.isReadOnly,
            (try? fresh.execute("PRAGMA journal_mode=WAL")) != nil,
            (try? fresh.execute("PRAGMA synchronous=\(options.durability == .full ? "FULL" : "NORMAL")")) != nil
        else { return }
        writer = fresh
        writerNeedsReopen.store(false, ordering: .releasing)
    }

    /// A store error for a failed write, noting a file that cannot be written so that the next
    /// write opens it again.
    func writeError(_ error: SQLiteError, _ doing: String, entity: String? = nil) -> StoreError {
        if error.isReadOnly { writerNeedsReopen.store(true, ordering: .releasing) }
        return error.storeError(doing, url: url, entity: entity)
    }

    func releaseWriter() {
        // Counted after the commit and before the caller answers anyone: a read that begins after
        // the writer's answer does not keep an older snapshot.
        writes.value.add(1, ordering: .releasing)
        writerGate.signal()
        endIdleSnapshots(olderThan: 0)
    }

    /// Ends the transactions of the readers in the pool whose snapshot began more than `age`
    /// nanoseconds ago, so that they do not hold the WAL back.
    private func endIdleSnapshots(olderThan age: UInt64) {
        let now = DispatchTime.now().uptimeNanoseconds
        readers.withLock { pool in
            for connection in pool {
                if let kept = connection.snapshot, now &- kept.began >= age { connection.endSnapshot() }
            }
        }
    }

    public func newObjectIDs(entity: String, count: Int) throws(StoreError) -> [ObjectID] {
        try checkOpen()
        guard entityNames.contains(entity), let table = schema.table(for: entity) else {
            throw StoreError(.notFound, "the store does not hold entity '\(entity)'", storeURL: url, entity: entity)
        }
        let first = nextKeys.withLock { keys -> Int64 in
            let first = keys[table.name, default: 1]
            keys[table.name] = first + Int64(count)
            return first
        }
        let home = homes[entity] ?? ObjectID.Home.of(entity: entity, store: metadata.identifier)
        return (0..<Int64(count)).map { ObjectID(home: home, primaryKey: first + $0) }
    }

    public var isDurable: Bool { true }

    /// The database file and its write-ahead log.
    public var storageBytes: Int64? {
        guard let url else { return nil }
        var bytes: Int64 = 0
        for suffix in ["", "-wal"] {
            let attributes = try? FileManager.default.attributesOfItem(atPath: url.path + suffix)
            bytes += (attributes?[.size] as? NSNumber)?.int64Value ?? 0
        }
        return bytes
    }

    public func close() {
        writerGate.wait()
        closed.store(true, ordering: .releasing)
        sweeper?.cancel()
        // Closed first: a reader's snapshot would keep the checkpoint from emptying the WAL.
        readers.withLock { $0.removeAll() }
        try? writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        writerGate.signal()
    }
}

/// How many times a database file was written through the stores of this process: one counter
/// per file, shared by every store open on it.
final class WriteCount: Sendable {
    let value = Atomic<UInt64>(0)

    private static let byPath = Locked<[String: WriteCount]>([:])

    /// The counter of the file at `path` (a resolved, standardized path).
    static func of(_ path: String) -> WriteCount {
        byPath.withLock { counts in
            if let known = counts[path] { return known }
            let count = WriteCount()
            counts[path] = count
            return count
        }
    }
}
