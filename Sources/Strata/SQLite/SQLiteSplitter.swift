import Foundation

/// The two halves of a verification, run on two threads.
private final class VerificationJob: @unchecked Sendable {
    // Safe to share: each side uses only its own SQLite connection (captured by its closure) and
    // writes only its own result; the caller reads the results after both sides have finished.
    private let source: () throws(SQLiteError) -> [SplitCheck]
    private let target: () throws(SQLiteError) -> [SplitCheck]
    var sourceResult: Result<[SplitCheck], SQLiteError>?
    var targetResult: Result<[SplitCheck], SQLiteError>?

    init(
        source: @escaping () throws(SQLiteError) -> [SplitCheck],
        target: @escaping () throws(SQLiteError) -> [SplitCheck]
    ) {
        self.source = source
        self.target = target
    }

    func run(_ side: Int) {
        do throws(SQLiteError) {
            if side == 0 { sourceResult = .success(try source()) } else { targetResult = .success(try target()) }
        } catch {
            if side == 0 { sourceResult = .failure(error) } else { targetResult = .failure(error) }
        }
    }
}

/// Moves a single-file store (every entity in one file) into one store per configuration.
///
/// The source is opened read-only (as immutable when it has no write-ahead log to read), so its
/// bytes stay as they are. Each target is created with a new UUID and the source's tables for its
/// configuration, then filled table by table in primary-key order, one transaction per chunk; the
/// last key copied of every table is recorded in the target's metadata in the same transaction,
/// so a run killed at any point continues where it stopped without duplicating or losing rows.
/// Primary keys, versions, entity names, foreign keys and join tables are copied as they are, so
/// relationships survive (the model forbids relationships between configurations). At the end the
/// indexes are built and every entity's row count and checksum (``SplitCheck/checksum``) are
/// compared with the source's before the target is marked complete; until then ``SQLiteStore``
/// refuses to open it.
enum SQLiteSplitter {
    static let progressKey = "splitProgress"
    static let verificationKey = "splitVerification"

    static func quote(_ name: String) -> String { SQLiteSchema.quote(name) }

    static func canonical(_ url: URL) -> String { StoreCoordinator.canonical(url) }

    /// One target store and what is known about it before the split starts.
    final class Target {
        let configuration: String
        let url: URL
        let schema: SQLiteSchema
        let skipped: Bool
        var db: SQLiteConnection?
        var values: [String: String]?

        init(configuration: String, url: URL, schema: SQLiteSchema, skipped: Bool) {
            self.configuration = configuration
            self.url = url
            self.schema = schema
            self.skipped = skipped
        }

        var isComplete: Bool { values?[SQLiteStore.splitStateKey] == SQLiteStore.splitStateComplete }
    }

    /// Splits the store at `source` into one store per configuration of `model`.
    /// - Parameters:
    ///   - model: the model the source was written with; it must declare configurations.
    ///   - source: the single-file store; it is only read.
    ///   - targets: the file of every configuration of the model.
    ///   - options: configurations to skip, chunk size, durability.
    ///   - progress: called after every chunk and phase, on the calling thread.
    /// - Throws: ``StoreError``: `.invalidRequest` for missing or unknown configurations, an entity
    ///   that would end up in several stores or in none, or a source that already holds one
    ///   configuration; `.duplicateStore` for a target that is the source or already holds another
    ///   store; `.incompatibleModel` for a source written with another model; `.io`, including a
    ///   failed verification.
    static func split(
        model: ObjectModel, source: URL, targets: [String: URL], options: SplitOptions = SplitOptions(),
        progress: ((SplitProgress) -> Void)? = nil
    ) throws(StoreError) -> SplitReport {
        let started = Date()
        let configurations = try checkTargets(targets, of: model, source: source, options: options)
        let sourceFile = try SQLiteStore.snapshot(of: source)
        let sourceIdentifier = try checkSource(sourceFile, at: source, model: model)
        let sourceSchema = SQLiteSchema(model: model, entities: model.entityNames)
        try checkEveryEntityHasOneStore(model: model, source: sourceFile, sourceSchema: sourceSchema, options: options)

        // Look at every target before writing anything.
        var states: [Target] = []
        for configuration in configurations {
            let target = Target(
                configuration: configuration, url: targets[configuration]!,
                schema: SQLiteSchema(model: model, entities: model.entityNames(inConfiguration: configuration)!),
                skipped: options.skip.contains(configuration))
            try inspectTarget(target, sourceIdentifier: sourceIdentifier, model: model, source: source)
            states.append(target)
        }
        if states.allSatisfy(\.isComplete) {
            return SplitReport(
                outcome: .alreadySplit, sourceIdentifier: sourceIdentifier,
                targets: states.map { report(for: $0) }, rowsCopied: 0, seconds: Date().timeIntervalSince(started))
        }
        let resumed = states.contains { $0.values != nil && !$0.isComplete }
        for target in states where target.values == nil {
            try create(target, sourceIdentifier: sourceIdentifier, source: source, model: model, options: options)
        }

        var run = CopyRun(source: sourceFile, sourceSchema: sourceSchema, options: options, progress: progress)
        run.countRows(of: states)
        for target in states where !target.isComplete { try run.copy(into: target) }
        run.report(.finished, states.last!)
        return SplitReport(
            outcome: resumed ? .resumed : .split, sourceIdentifier: sourceIdentifier,
            targets: states.map { report(for: $0) }, rowsCopied: run.rowsCopied,
            seconds: Date().timeIntervalSince(started))
    }

    /// Reads an existing target's metadata; refuses a file that is another store.
    static func inspectTarget(
        _ target: Target, sourceIdentifier: String, model: ObjectModel, source: URL
    ) throws(StoreError) {
        let url = target.url
        func size(_ path: String) -> Int {
            (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        }
        // After a crash the first commit may still be only in the write-ahead log.
        guard size(url.path) > 0 || size(url.path + "-wal") > 0 else { return }
        let file = try SQLiteStore.snapshot(of: url)
        guard let values = SQLiteStore.metadataValues(in: file) else {
            if sqliteCount(file, "SELECT count(*) FROM sqlite_master", []) > 0 {
                throw StoreError(
                    .duplicateStore,
                    "\(url.path) already holds an SQLite database that is not a Strata store; remove it or choose another path",
                    storeURL: url)
            }
            return
        }
        guard values[SQLiteStore.splitSourceKey] == sourceIdentifier,
            values["configuration"] == target.configuration
        else {
            let what =
                values[SQLiteStore.splitSourceKey] == sourceIdentifier
                ? "the split's store of configuration '\(values["configuration"] ?? ObjectModel.defaultConfiguration)'"
                : "another store (configuration '\(values["configuration"] ?? ObjectModel.defaultConfiguration)', UUID \(values["uuid"] ?? "?"))"
            throw StoreError(
                .duplicateStore,
                "\(url.path) already holds \(what), not a split of \(source.path) for '\(target.configuration)'; remove it or choose another path",
                storeURL: url)
        }
        let hashes = MigrationPlanner.hashes(of: model, configuration: target.configuration) ?? [:]
        let stored = try SQLiteStore.metadata(from: values, url: url).entityHashes
        guard stored == hashes else {
            throw StoreError(
                .incompatibleModel,
                "\(url.path) is a split of \(source.path) made with another model: "
                    + SQLiteStore.describeDifferences(stored: stored, model: hashes),
                storeURL: url)
        }
        target.values = values
    }

    /// Opens a target's connection for writing.
    static func open(_ target: Target, options: SplitOptions) throws(StoreError) {
        guard target.db == nil else { return }
        do {
            try FileManager.default.createDirectory(
                at: target.url.deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            throw StoreError(
                .io, "cannot create the store's folder", storeURL: target.url, underlying: error as NSError)
        }
        do {
            let db = try SQLiteConnection(path: target.url.path)
            try db.execute("PRAGMA journal_mode=WAL")
            try db.execute("PRAGMA synchronous=\(options.durability == .full ? "FULL" : "NORMAL")")
            try db.execute("PRAGMA cache_size=-65536")
            target.db = db
        } catch {
            throw StoreError(
                .io, "cannot open the target store: \(error.message)", storeURL: target.url, underlying: error)
        }
    }

    /// Creates a target: tables (and, for a skipped one, indexes) and metadata in one transaction.
    static func create(
        _ target: Target, sourceIdentifier: String, source: URL, model: ObjectModel, options: SplitOptions
    ) throws(StoreError) {
        try open(target, options: options)
        let metadata = StoreMetadata(
            identifier: UUID().uuidString, configuration: target.configuration, modelVersion: model.version,
            entityHashes: MigrationPlanner.hashes(of: model, configuration: target.configuration) ?? [:])
        let statements = target.schema.createStatements
        let state = target.skipped ? SQLiteStore.splitStateComplete : SQLiteStore.splitStateCopying
        var extra: [(String, String)] = [
            (SQLiteStore.splitSourceKey, sourceIdentifier), (SQLiteStore.splitStateKey, state),
            ("splitSourcePath", source.path),
        ]
        extra.append(target.skipped ? ("splitSkipped", "true") : (progressKey, "{}"))
        try SQLiteStore.createSchema(
            target.db!, statements: target.skipped ? statements : statements.filter { $0.hasPrefix("CREATE TABLE ") },
            metadata: metadata, model: model, extra: extra, url: target.url)
        target.values = Dictionary(
            SQLiteStore.metadataValues(metadata, model: model) + extra, uniquingKeysWith: { _, last in last })
        if target.skipped { try? target.db!.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// `WHERE "_entity" IN (…)` when the target's table holds fewer entities than the source's.
    static func entityFilter(_ table: SQLiteSchema.Table, sourceSchema: SQLiteSchema) -> (String, [SQLiteValue]) {
        guard let sourceTable = sourceSchema.tables[table.name], Set(sourceTable.entities) != Set(table.entities)
        else { return ("", []) }
        return (
            " WHERE \"_entity\" IN (\(table.entities.map { _ in "?" }.joined(separator: ", ")))",
            table.entities.map { .text($0) }
        )
    }

    static func sqliteCount(_ file: SQLiteConnection, _ sql: String, _ arguments: [SQLiteValue]) -> Int {
        Int((try? file.query(sql, arguments) { $0.int64(0) })?.first ?? 0)
    }

    static func targetCount(_ target: Target, _ table: String) -> Int {
        if let db = target.db {
            return Int((try? db.query("SELECT count(*) FROM \(quote(table))") { $0.int64(0) })?.first ?? 0)
        }
        guard let file = try? SQLiteStore.snapshot(of: target.url) else { return 0 }
        return sqliteCount(file, "SELECT count(*) FROM \(quote(table))", [])
    }

    /// The last key copied of each table, as recorded in the target.
    static func progressRecord(_ target: Target) -> [String: JSONValue] {
        guard let text = target.values?[progressKey], case .object(let record)? = try? JSONValue.parse(text) else {
            return [:]
        }
        return record
    }

    static func fail(_ target: Target, _ error: SQLiteError) -> StoreError {
        StoreError(
            .io, "cannot write the \(target.configuration) store: \(error.message)", storeURL: target.url,
            underlying: error)
    }

    /// Builds the indexes, verifies the target against the source, and marks it complete, in one transaction.
    static func finish(
        _ target: Target, source: SQLiteConnection, sourceSchema: SQLiteSchema
    ) throws(StoreError) {
        let db = target.db!
        func sqlite<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
            do {
                return try body()
            } catch {
                try? db.execute("ROLLBACK")
                throw fail(target, error)
            }
        }
        try sqlite { () throws(SQLiteError) in
            try db.execute("BEGIN IMMEDIATE")
            for statement in target.schema.createStatements where !statement.hasPrefix("CREATE TABLE ") {
                try db.execute(statement)
            }
        }
        // The source and the target are read at the same time, each on its own connection.
        let job = VerificationJob(
            source: { () throws(SQLiteError) in
                try checks(
                    target,
                    reader: { (sql, arguments, grouped, name) throws(SQLiteError) in
                        let statement = try source.statement(sql)
                        try statement.bind(arguments)
                        defer { statement.reset() }
                        return try digest(statement, groupColumn: grouped, name: name)
                    }, sourceSchema: sourceSchema)
            },
            target: { () throws(SQLiteError) in
                try checks(
                    target,
                    reader: { (sql, arguments, grouped, name) throws(SQLiteError) in
                        let statement = try db.statement(sql)
                        try statement.bind(arguments)
                        defer { statement.reset() }
                        return try digest(statement, groupColumn: grouped, name: name)
                    }, sourceSchema: sourceSchema)
            })
        DispatchQueue.concurrentPerform(iterations: 2) { side in job.run(side) }
        let expected = try sqlite { () throws(SQLiteError) in try job.sourceResult!.get() }
        let found = try sqlite { () throws(SQLiteError) in try job.targetResult!.get() }
        guard expected == found else {
            let differences = zip(expected, found).filter { $0.0 != $0.1 }.map {
                "\($0.0.name): source \($0.0.rows) rows checksum \($0.0.checksum), target \($0.1.rows) rows checksum \($0.1.checksum)"
            }
            try? db.execute("ROLLBACK")
            throw StoreError(
                .io,
                "verification of the \(target.configuration) store failed (remove the targets and split again): "
                    + differences.joined(separator: "; "),
                storeURL: target.url)
        }
        let verification = JSONValue.object(
            Dictionary(
                found.map {
                    ($0.name, JSONValue.object(["rows": .integer(Int64($0.rows)), "checksum": .string($0.checksum)]))
                },
                uniquingKeysWith: { first, _ in first }))
        try sqlite { () throws(SQLiteError) in
            let updates: [(String, String)] = [
                (SQLiteStore.splitStateKey, SQLiteStore.splitStateComplete), (verificationKey, verification.jsonText),
            ]
            for (key, value) in updates {
                try db.run(
                    "INSERT OR REPLACE INTO \(SQLiteStore.metadataTable) (key, value) VALUES (?, ?)",
                    [.text(key), .text(value)])
            }
            try db.run("DELETE FROM \(SQLiteStore.metadataTable) WHERE key = ?", [.text(progressKey)])
            try db.execute("COMMIT")
        }
        try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        target.values?[SQLiteStore.splitStateKey] = SQLiteStore.splitStateComplete
        target.values?[verificationKey] = verification.jsonText
    }

    /// The report of a target, from its recorded verification.
    static func report(for target: Target) -> SplitTargetReport {
        var checks: [SplitCheck] = []
        if let text = target.values?[verificationKey], case .object(let record)? = try? JSONValue.parse(text) {
            let order =
                target.schema.tables.values.sorted(by: { $0.name < $1.name }).flatMap(\.entities)
                + target.schema.joinTables.map(\.name)
            for name in order + record.keys.sorted().filter({ !order.contains($0) }) {
                guard let entry = record[name]?.objectValue, case .integer(let rows)? = entry["rows"],
                    let checksum = entry["checksum"]?.stringValue
                else { continue }
                checks.append(SplitCheck(name: name, rows: Int(rows), checksum: checksum))
            }
        }
        return SplitTargetReport(
            configuration: target.configuration, url: target.url, storeIdentifier: target.values?["uuid"] ?? "",
            skipped: target.skipped || target.values?["splitSkipped"] == "true", checks: checks)
    }
}
