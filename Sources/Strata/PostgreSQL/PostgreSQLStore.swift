import Foundation
import Synchronization

/// A store in a PostgreSQL database: the tables of one configuration in a schema (namespace) of
/// their own, reached through a pool of libpq connections, so that several Strata servers can
/// share one database.
///
/// The URL is any libpq connection URI (`postgresql://user@host:5432/db`, `postgres://` too);
/// Strata's own query parameters are not passed to libpq: `schema` names the namespace (default
/// `strata` for the whole model, `strata_<configuration>` for a configuration), `pool` the size of
/// its connection pool (default 32), and `prepare=false` keeps every statement unnamed and
/// unprepared, as a pooler in transaction mode (PgBouncer before 1.21) needs; by default a
/// connection prepares the statements it runs more than once. The password comes from the URI,
/// `PGPASSWORD` or a `.pgpass` file, as libpq reads them; it is never logged.
///
/// Reads of one object by key without a waiting thread
/// (``rowWithToMany(for:model:blocking:completion:)``, what the REST service's `GET` by id uses)
/// are pipelined (libpq's pipeline mode) on at most four connections of their own (fewer when the
/// pool is smaller), beside the pool and the connection that listens for other servers' saves.
///
/// Saves run in one transaction each on a pooled connection under READ COMMITTED: the objects a
/// save changes or deletes are locked (`SELECT … FOR UPDATE`) and their versions checked first,
/// so of two servers saving the same object one wins and the other meets a conflict. Every save
/// sends one `NOTIFY` naming the objects it wrote, which other servers' stores hear (see
/// ``onExternalChange(_:)``).
public final class PostgreSQLStore: PersistentStore, @unchecked Sendable {
    // Safe to share: connections are lent by the pool to one caller at a time; the key blocks,
    // kept changes, handlers and `closed` live behind locks; the rest is immutable after init.
    public let type = StoreType.postgresql
    public let url: URL?
    public let configuration: String?
    public let options: StoreOptions
    public let metadata: StoreMetadata
    public let entityNames: Set<String>

    let model: ObjectModel
    let schema: PostgreSQLSchema
    let pool: PGPool
    /// The connections of threads in a read snapshot, each in its `REPEATABLE READ` transaction
    /// (see ``beginReadSnapshot()``).
    let snapshots = ReadSnapshotPins<PGConnection>()
    /// Reads of one object by key, pipelined on connections of their own (see
    /// ``PGPipelineReader``).
    let reader: PGPipelineReader
    /// The most connections ``reader`` opens (within the pool's size).
    static let readerWidth = 4
    /// Whether decimal columns are `numeric` (see ``convertTextDecimals(_:namespace:configuration:model:readOnly:)``).
    let numericDecimals: Bool
    /// The PostgreSQL server's version number (160004 for 16.4).
    public let serverVersion: Int
    /// `PostgreSQL 15.8` (from ``serverVersion``).
    public var serverVersionText: String {
        let major = serverVersion / 10000
        return major >= 10
            ? "PostgreSQL \(major).\(serverVersion % 10000)"
            : "PostgreSQL \(major).\(serverVersion / 100 % 100).\(serverVersion % 100)"
    }
    /// The connection URI without its password, for logs and `GET /`.
    public let displayURL: String
    /// Keys reserved from each table's sequence and not handed out yet.
    let keyBlocks = Locked<[String: ClosedRange<Int64>]>([:])
    /// Parts of saves across stores whose commit failed after their commit point committed.
    let keptChanges = Locked<[StoreChanges]>([])
    let homes: [String: ObjectID.Home]
    let closed = Atomic<Bool>(false)
    /// When writability was last asked of the database, and what it answered.
    let writability = Locked<(Date, StoreError?)?>(nil)
    /// Saves that wrote a commit marker, counted to purge old markers now and then.
    let commitMarkers = Atomic<Int>(0)
    /// This process's store instance, named in its notifications so that it skips its own.
    let instance = UUID().uuidString.lowercased()
    let externalHandlers = Locked<[@Sendable (ExternalStoreChange) -> Void]>([])
    let listener = Locked<PostgreSQLListener?>(nil)

    /// Keys taken from a sequence at a time (its `INCREMENT BY`).
    static let keyBlock: Int64 = 64
    /// The largest notification payload sent; a larger change is announced as "everything".
    static let payloadLimit = 7900

    /// Opens or creates the store at `url` (a PostgreSQL connection URI) for `configuration`.
    ///
    /// Two servers opening the same store at once create its tables once: creation runs in one
    /// transaction under an advisory lock on the namespace.
    /// - Throws: ``StoreError``: `.unknownConfiguration`, `.io` (cannot connect),
    ///   `.configurationMismatch`, `.incompatibleModel` (written with another model: the
    ///   coordinator migrates before opening, see ``StoreOptions/migrate``).
    public init(model: ObjectModel, configuration: String?, url: URL, options: StoreOptions = StoreOptions())
        throws(StoreError)
    {
        guard let entities = model.entityNames(inConfiguration: configuration) else {
            throw StoreError(
                .unknownConfiguration, "the model has no configuration '\(configuration ?? "")'", storeURL: url)
        }
        let configuration = configuration == ObjectModel.defaultConfiguration ? nil : configuration
        let (conninfo, namespace, poolSize) = Self.connection(from: url, configuration: configuration)
        self.model = model
        self.url = url
        self.configuration = configuration
        self.options = options
        entityNames = Set(entities)
        schema = PostgreSQLSchema(model: model, entities: entities, namespace: namespace)
        displayURL = PGConnection.redacted(url.absoluteString)
        pool = PGPool(
            conninfo: Self.limitingConnects(Self.limitingStatements(conninfo, to: options.queryBudget)),
            limit: poolSize, prepares: Self.preparesStatements(url))
        let reader = PGPipelineReader(
            conninfo: pool.conninfo, width: min(Self.readerWidth, poolSize), prepares: pool.prepares)
        self.reader = reader
        pool.onInvalidate = { reader.reset() }
        let hashes = model.entityVersionHashes.filter { entities.contains($0.key) }
        do {
            numericDecimals = try pool.with { (c: PGConnection) throws(PGError) in
                try Self.convertTextDecimals(
                    c, namespace: namespace, configuration: configuration, model: model, readOnly: options.readOnly)
            }
        } catch {
            throw StoreError(
                .io, "cannot open the PostgreSQL store \(PGConnection.redacted(url.absoluteString)): \(error)",
                storeURL: url)
        }
        // Written with another model: migrated first when asked to, as SQLite stores are.
        if options.migrate, !options.readOnly,
            let pending = try PostgreSQLStoreKind().pendingMigration(
                model: model,
                description: StoreDescription(
                    type: .postgresql, configuration: configuration, url: url, options: options))
        {
            let prepared = try pending.prepare()
            try prepared.commit()
        }
        let created = StoreMetadata(
            identifier: UUID().uuidString, configuration: configuration, modelVersion: model.version,
            entityHashes: hashes)
        let schema = schema
        let opened: (values: [String: String], version: Int)
        do {
            opened = try pool.with { (c: PGConnection) throws(PGError) -> ([String: String], Int) in
                try c.execute("BEGIN")
                try c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("strata:" + namespace)])
                var values = try Self.metadataValues(c, namespace: schema.namespace)
                if !options.readOnly { try Self.createHousekeeping(c, schema, history: options.recordsHistory) }
                if values == nil {
                    for statement in schema.createStatements { try c.execute(statement) }
                    let rows = SQLiteStore.metadataValues(created, model: model)
                    for (key, value) in rows {
                        try c.execute(
                            "INSERT INTO \(schema.qualified(PostgreSQLSchema.metadataTable)) (key, value) VALUES ($1, $2)",
                            [.text(key), .text(value)])
                    }
                    values = Dictionary(rows, uniquingKeysWith: { _, last in last })
                }
                try c.execute("COMMIT")
                return (values ?? [:], c.serverVersion)
            }
        } catch {
            throw StoreError(
                .io, "cannot open the PostgreSQL store \(PGConnection.redacted(url.absoluteString)): \(error)",
                storeURL: url)
        }
        serverVersion = opened.version
        let found = try SQLiteStore.metadata(from: opened.values, url: url)
        guard found.configuration == configuration else {
            throw StoreError(
                .configurationMismatch,
                "the store holds configuration '\(found.configuration ?? ObjectModel.defaultConfiguration)', not '\(configuration ?? ObjectModel.defaultConfiguration)'",
                storeURL: url)
        }
        if found.entityHashes != hashes {
            throw StoreError(
                .incompatibleModel,
                SQLiteStore.describeDifferences(stored: found.entityHashes, model: hashes)
                    + "; open it through a coordinator that migrates (StoreOptions(migrate: true), strata serve or strata migrate)",
                storeURL: url)
        }
        metadata = found
        let identifier = found.identifier
        homes = Dictionary(
            uniqueKeysWithValues: model.entityNames.map { ($0, ObjectID.Home.of(entity: $0, store: identifier)) })
    }

    /// Creates the tables a store keeps beside its data where they are missing: the commit markers
    /// (see ``commitMarkerTable``), the receipts of saves (see ``SaveReceipt``), the idempotency
    /// ledger's table and, with `history`, the
    /// history tables (see `SQLHistory`).
    static func createHousekeeping(_ c: PGConnection, _ schema: PostgreSQLSchema, history: Bool = false)
        throws(PGError)
    {
        try c.execute("CREATE SCHEMA IF NOT EXISTS \(PostgreSQLSchema.quote(schema.namespace))")
        for (table, columns) in (history ? historyTables : []) + [
            (commitMarkerTable, "token text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now()"),
            (
                KeptReceipt.table,
                "scope text NOT NULL, key text NOT NULL, expires bigint NOT NULL, receipt text NOT NULL, PRIMARY KEY (scope, key)"
            ),
            (
                PostgreSQLIdempotency.table,
                "scope text NOT NULL, key text NOT NULL, fingerprint text NOT NULL, owner text NOT NULL, created timestamptz NOT NULL DEFAULT now(), status integer, headers text, body bytea, PRIMARY KEY (scope, key)"
            ),
        ] {
            let exists = try c.execute("SELECT to_regclass($1) IS NOT NULL", [.text(schema.qualified(table))])
            if exists.rows.first?.first == "t" { continue }
            try c.execute("CREATE TABLE IF NOT EXISTS \(schema.qualified(table)) (\(columns))")
        }
        if history {
            try c.execute(
                "INSERT INTO \(schema.qualified(historyCounterTable)) (id, last) VALUES (1, 0) ON CONFLICT (id) DO NOTHING"
            )
        }
    }

    /// The table of commit markers: every save inserts a token of its own in its transaction, so
    /// that a commit whose answer was lost can be resolved on whichever server is primary after.
    static let commitMarkerTable = "_strata_commits"

    /// `conninfo` with PostgreSQL's `statement_timeout` set to `budget` for every statement of
    /// its connections (saves lift it inside their transaction).
    static func limitingStatements(_ conninfo: String, to budget: Double?) -> String {
        guard let budget, !(URLComponents(string: conninfo)?.queryItems ?? []).contains(where: { $0.name == "options" })
        else { return conninfo }
        // libpq refuses a second "=" in a query value: it is escaped.
        return conninfo + (conninfo.contains("?") ? "&" : "?")
            + "options=-c%20statement_timeout%3D\(max(1, Int(budget * 1000)))"
    }

    /// `conninfo` with libpq's `connect_timeout` of ``connectSeconds`` where it sets none, so that a
    /// host that does not answer is given up (and the next one listed tried) instead of waited for
    /// as long as TCP retries.
    static func limitingConnects(_ conninfo: String) -> String {
        guard !(URLComponents(string: conninfo)?.queryItems ?? []).contains(where: { $0.name == "connect_timeout" })
        else { return conninfo }
        return conninfo + (conninfo.contains("?") ? "&" : "?") + "connect_timeout=\(connectSeconds)"
    }

    /// How long one host is given to accept a connection, when the URI does not say.
    static let connectSeconds = 5

    /// The URL of a libpq connection URI, the form that lists several hosts in its authority
    /// (`postgresql://h1:5432,h2:5433/db`) included: its hosts and ports are moved into the
    /// query (`postgresql:///db?host=h1,h2&port=5432,5433`), which libpq reads alike. Nil for
    /// text that is no `postgresql://` or `postgres://` URI.
    public static func connectionURL(_ text: String) -> URL? { PostgreSQLStoreKind.connectionURL(text) }

    /// `uri` (or any text holding one) with its password left out, for logs and error messages.
    public static func redacted(_ uri: String) -> String { PGConnection.redacted(uri) }

    /// The libpq connection string of `url` (Strata's `schema` parameter taken out) and the
    /// namespace it names.
    static func connection(from url: URL, configuration: String?) -> (
        conninfo: String, namespace: String, poolSize: Int
    ) {
        var namespace = configuration.map { "strata_" + $0 } ?? "strata"
        var poolSize = 32
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return (url.absoluteString, namespace, poolSize)
        }
        if let items = components.queryItems {
            if let value = items.first(where: { $0.name == "schema" })?.value, !value.isEmpty { namespace = value }
            if let value = items.first(where: { $0.name == "pool" })?.value.flatMap({ Int($0) }), value > 0 {
                poolSize = value
            }
            let rest = items.filter { !["schema", "pool", "prepare"].contains($0.name) }
            components.queryItems = rest.isEmpty ? nil : rest
        }
        return (components.string ?? url.absoluteString, namespace, poolSize)
    }

    /// Whether the store's connections prepare the statements they run more than once: unless the
    /// URI says `prepare=false` (or `off`, `no`, `0`), as a pooler in transaction mode needs.
    static func preparesStatements(_ url: URL) -> Bool {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        guard let value = items.last(where: { $0.name == "prepare" })?.value?.lowercased() else { return true }
        return !["false", "off", "no", "0"].contains(value)
    }

    /// Every key and value of the metadata table; nil when the namespace has no Strata store.
    static func metadataValues(_ c: PGConnection, namespace: String) throws(PGError) -> [String: String]? {
        let exists = try c.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2",
            [.text(namespace), .text(PostgreSQLSchema.metadataTable)])
        guard exists.rows.first?.first == "1" else { return nil }
        let table = PostgreSQLSchema.quote(namespace) + "." + PostgreSQLSchema.quote(PostgreSQLSchema.metadataTable)
        let pairs = try c.execute("SELECT key, value FROM \(table)")
        return Dictionary(pairs.rows.map { ($0[0] ?? "", $0[1] ?? "") }, uniquingKeysWith: { _, last in last })
    }

    /// The ID of the object with primary key `pk` of `entity` in this store.
    func id(_ entity: String, _ pk: Int64) -> ObjectID {
        if let home = homes[entity] { return ObjectID(home: home, primaryKey: pk) }
        return ObjectID(store: metadata.identifier, entity: entity, primaryKey: pk)
    }

    func checkOpen() throws(StoreError) {
        if closed.load(ordering: .acquiring) { throw StoreError(.closed, "the store is closed", storeURL: url) }
    }

    /// A libpq failure as a store error.
    func storeError(_ error: PGError, _ doing: String, entity: String? = nil) -> StoreError {
        // A standby, or no server at all, while a primary fails over: the store comes back.
        if error.mustReconnect {
            return StoreError(
                .unavailable,
                "\(doing): \(error.isReadOnly ? "the database takes no writes now (no writable primary)" : "PostgreSQL cannot be reached") (\(error))",
                storeURL: url, entity: entity)
        }
        if error.sqlState == "57014" {
            return StoreError(
                .overBudget,
                "the query ran past its time budget of \(options.queryBudget.map { String(format: "%g", $0) } ?? "?") s and was stopped",
                storeURL: url, entity: entity)
        }
        if error.isRetryable {
            return StoreError(.conflict, "\(doing): \(error)", storeURL: url, entity: entity)
        }
        return StoreError(.io, "\(doing): \(error)", storeURL: url, entity: entity)
    }

    /// Runs `body` on a pooled connection.
    func read<T>(_ body: (PGConnection) throws(PGError) -> T) throws(StoreError) -> T {
        try checkOpen()
        do {
            if let pinned = snapshots.current { return try body(pinned) }
            return try pool.with(body)
        } catch {
            throw storeError(error, "PostgreSQL read failed")
        }
    }

    public func newObjectIDs(entity: String, count: Int) throws(StoreError) -> [ObjectID] {
        try checkOpen()
        guard entityNames.contains(entity), let table = schema.base.table(for: entity) else {
            throw StoreError(.notFound, "the store does not hold entity '\(entity)'", storeURL: url, entity: entity)
        }
        var keys: [Int64] = []
        keys.reserveCapacity(count)
        while keys.count < count {
            let taken = keyBlocks.withLock { blocks -> [Int64] in
                guard let block = blocks[table.name] else { return [] }
                let wanted = min(Int64(count - keys.count), Int64(block.count))
                let taken = Array(block.lowerBound..<(block.lowerBound + wanted))
                let rest = block.lowerBound + wanted
                blocks[table.name] = rest <= block.upperBound ? rest...block.upperBound : nil
                return taken
            }
            keys += taken
            if keys.count >= count { break }
            // A block of its own from the sequence: other servers take other blocks.
            let blocks = max(1, (Int64(count - keys.count) + Self.keyBlock - 1) / Self.keyBlock)
            let sequence = schema.sequence(of: table.name)
            let starts = try read { (c: PGConnection) throws(PGError) in
                try c.execute(
                    "SELECT nextval($1::regclass) FROM generate_series(1, $2)",
                    [
                        .text(sequence), .integer(blocks),
                    ]
                ).rows.compactMap { $0[0].flatMap { Int64($0) } }
            }
            for start in starts.sorted() {
                let block = start...(start + Self.keyBlock - 1)
                let needed = count - keys.count
                if needed >= block.count {
                    keys += Array(block)
                } else {
                    keys += Array(block.lowerBound..<(block.lowerBound + Int64(needed)))
                    let rest = block.lowerBound + Int64(needed)
                    keyBlocks.withLock { $0[table.name] = rest...block.upperBound }
                }
            }
        }
        let home = homes[entity] ?? ObjectID.Home.of(entity: entity, store: metadata.identifier)
        return keys.map { ObjectID(home: home, primaryKey: $0) }
    }

    /// Throws ``StoreError/Code/unavailable`` when the store cannot take a write now: no server
    /// answers, or the one the pool reaches is a standby or read-only (its connections are then
    /// closed, so the next checkout looks for the primary again). Asked of the database at most
    /// once a second; the answer is kept in between.
    public func checkWritable() throws(StoreError) {
        try checkOpen()
        let now = Date()
        if let (at, problem) = writability.withLock({ $0 }), now.timeIntervalSince(at) < 1 {
            if let problem { throw problem }
            return
        }
        var problem: StoreError?
        do throws(PGError) {
            let readOnly = try pool.with { (c: PGConnection) throws(PGError) in
                try c.execute("SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'")
                    .rows.first?.first == "t"
            }
            if readOnly {
                pool.invalidate()
                problem = StoreError(
                    .unavailable, "the database takes no writes now (a standby or read-only server)", storeURL: url)
            }
        } catch {
            problem = storeError(error, "cannot reach a writable PostgreSQL server")
        }
        writability.withLock { $0 = (now, problem) }
        if let problem { throw problem }
    }

    public var isDurable: Bool { true }

    /// The bytes of the store's tables and indexes.
    public var storageBytes: Int64? {
        let namespace = schema.namespace
        return try? read { (c: PGConnection) throws(PGError) in
            let rows = try c.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'",
                [.text(namespace)])
            return Int64(rows.rows.first?.first.flatMap { $0 } ?? "0") ?? 0
        }
    }

    public func close() {
        closed.store(true, ordering: .releasing)
        listener.withLock { $0?.stop() }
        reader.stop()
        pool.drain()
    }
}

/// What another process changed in a shared store, as its notification said.
public enum ExternalStoreChange: Sendable, Hashable {
    /// These objects were inserted, changed or deleted.
    case objects([ObjectID])
    /// Anything may have changed (the change was too large to name, or notifications were lost).
    case everything
}
