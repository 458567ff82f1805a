import CSQLite
import Foundation

/// A store in one SQLite file: WAL mode, one writer connection, a small pool of reader connections
/// (so reads never wait behind a save being prepared), and prepared statements reused.
///
/// The file holds tables only for its configuration's entities, and a metadata table with the
/// store's UUID, its configuration, and the model's version hashes. Reopening it with a model whose
/// hashes differ is an `.incompatibleModel` error naming the entities that differ.
public final class SQLiteStore: PersistentStore, @unchecked Sendable {
    // Safe to share: the writer connection is used only while `writerGate` is held; reader
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
    let writer: SQLiteConnection
    private let writerGate = DispatchSemaphore(value: 1)
    private let readers = Locked<[SQLiteConnection]>([])
    private let nextKeys: Locked<[String: Int64]>
    private let closed = Locked(false)

    static let metadataTable = "_strata_metadata"

    /// Opens or creates the store at `url` for `configuration` of `model`.
    /// - Throws: ``StoreError``: `.unknownConfiguration`, `.io`, `.configurationMismatch`, `.incompatibleModel`.
    public init(model: ObjectModel, configuration: String?, url: URL, options: StoreOptions = StoreOptions())
        throws(StoreError)
    {
        guard let entities = model.entityNames(inConfiguration: configuration) else {
            throw StoreError(
                .unknownConfiguration, "the model has no configuration '\(configuration ?? "")'", storeURL: url)
        }
        self.model = model
        self.url = url
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
        let found = try Self.readMetadata(writer, url: url)
        let hashes = model.entityVersionHashes.filter { entities.contains($0.key) }
        if let found {
            guard found.configuration == self.configuration else {
                throw StoreError(
                    .configurationMismatch,
                    "the store holds configuration '\(found.configuration ?? ObjectModel.defaultConfiguration)', not '\(self.configuration ?? ObjectModel.defaultConfiguration)'",
                    storeURL: url)
            }
            if found.entityHashes != hashes {
                throw StoreError(
                    .incompatibleModel, Self.describeDifferences(stored: found.entityHashes, model: hashes),
                    storeURL: url)
            }
            metadata = found
        } else {
            let created = StoreMetadata(
                identifier: UUID().uuidString, configuration: self.configuration, modelVersion: model.version,
                entityHashes: hashes)
            try Self.createSchema(writer, schema: schema, metadata: created, url: url)
            metadata = created
        }
        var keys: [String: Int64] = [:]
        for table in schema.tables.keys {
            let maximum = try? writer.query("SELECT max(\"_pk\") FROM \(SQLiteSchema.quote(table))") { $0.int64(0) }
                .first
            keys[table] = (maximum ?? 0) + 1
        }
        nextKeys = Locked(keys)
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

    private static func readMetadata(_ db: SQLiteConnection, url: URL) throws(StoreError) -> StoreMetadata? {
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
            let values = Dictionary(pairs, uniquingKeysWith: { _, last in last })
            guard let identifier = values["uuid"], let hashText = values["entityHashes"],
                case .object(let hashObject)? = try? JSONValue.parse(hashText)
            else {
                throw StoreError(.incompatibleModel, "the store's metadata is incomplete", storeURL: url)
            }
            return StoreMetadata(
                identifier: identifier, configuration: values["configuration"], modelVersion: values["modelVersion"],
                entityHashes: hashObject.compactMapValues(\.stringValue))
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw StoreError(.io, "cannot read the store: \(error.message)", storeURL: url, underlying: error)
        } catch {
            throw StoreError(.io, "cannot read the store", storeURL: url)
        }
    }

    private static func createSchema(_ db: SQLiteConnection, schema: SQLiteSchema, metadata: StoreMetadata, url: URL)
        throws(StoreError)
    {
        do {
            try db.execute("BEGIN IMMEDIATE")
            try db.execute("CREATE TABLE \(metadataTable) (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            for statement in schema.createStatements { try db.execute(statement) }
            var values: [(String, String)] = [
                ("uuid", metadata.identifier), ("format", "1"),
                ("entityHashes", JSONValue.object(metadata.entityHashes.mapValues { .string($0) }).jsonText),
            ]
            if let configuration = metadata.configuration { values.append(("configuration", configuration)) }
            if let version = metadata.modelVersion { values.append(("modelVersion", version)) }
            for (key, value) in values {
                try db.run("INSERT INTO \(metadataTable) (key, value) VALUES (?, ?)", [.text(key), .text(value)])
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw StoreError(
                .io, "cannot create the store's tables: \(error.message)", storeURL: url, underlying: error)
        }
    }

    func checkOpen() throws(StoreError) {
        if closed.withLock({ $0 }) { throw StoreError(.closed, "the store is closed", storeURL: url) }
    }

    /// Runs `body` on a reader connection.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws(StoreError) -> T {
        try checkOpen()
        let connection: SQLiteConnection
        if let pooled = readers.withLock({ $0.popLast() }) {
            connection = pooled
        } else {
            do {
                connection = try SQLiteConnection(path: url!.path, readOnly: false)
            } catch {
                throw StoreError(
                    .io, "cannot open a reader connection: \(error.message)", storeURL: url, underlying: error)
            }
        }
        defer { readers.withLock { $0.append(connection) } }
        do {
            return try body(connection)
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw StoreError(.io, "SQLite read failed: \(error.message)", storeURL: url, underlying: error)
        } catch let error as PredicateError {
            throw StoreError(.invalidRequest, error.message, storeURL: url)
        } catch {
            throw StoreError(.io, "read failed: \(error)", storeURL: url)
        }
    }

    /// Takes the writer connection; the caller must call ``releaseWriter()``.
    func acquireWriter() throws(StoreError) -> SQLiteConnection {
        writerGate.wait()
        if closed.withLock({ $0 }) {
            writerGate.signal()
            throw StoreError(.closed, "the store is closed", storeURL: url)
        }
        return writer
    }

    func releaseWriter() { writerGate.signal() }

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
        return (0..<Int64(count)).map { ObjectID(store: metadata.identifier, entity: entity, primaryKey: first + $0) }
    }

    public func close() {
        writerGate.wait()
        closed.withLock { $0 = true }
        try? writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        readers.withLock { $0.removeAll() }
        writerGate.signal()
    }
}
