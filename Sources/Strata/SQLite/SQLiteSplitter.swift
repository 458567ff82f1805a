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
        let configurations = model.configurations.map(\.name)
        guard !configurations.isEmpty else {
            throw StoreError(
                .invalidRequest, "the model declares no configurations; there is nothing to split into",
                storeURL: source)
        }
        let unknown = targets.keys.filter { !configurations.contains($0) }.sorted()
        guard unknown.isEmpty else {
            throw StoreError(
                .unknownConfiguration,
                "the model has no configuration \(unknown.map { "'\($0)'" }.joined(separator: ", ")) (it has: \(configurations.joined(separator: ", ")))"
            )
        }
        let missing = configurations.filter { targets[$0] == nil }
        guard missing.isEmpty else {
            throw StoreError(
                .invalidRequest,
                "every configuration needs a target store; missing: \(missing.joined(separator: ", ")) (skip one with --skip, which still needs its path)"
            )
        }
        let unknownSkips = options.skip.filter { targets[$0] == nil }.sorted()
        guard unknownSkips.isEmpty else {
            throw StoreError(.invalidRequest, "cannot skip \(unknownSkips.joined(separator: ", ")): no such target")
        }
        guard options.chunkSize > 0 else { throw StoreError(.invalidRequest, "the chunk size must be positive") }
        var seen: [String: String] = [canonical(source): "the source"]
        for configuration in configurations {
            let path = canonical(targets[configuration]!)
            if let other = seen[path] {
                throw StoreError(
                    .duplicateStore,
                    "\(targets[configuration]!.path) is both \(other) and the target of '\(configuration)'; every store needs its own file",
                    storeURL: targets[configuration])
            }
            seen[path] = "the target of '\(configuration)'"
        }

        // The source: a Default store of this model.
        let sourceFile = try SQLiteStore.snapshot(of: source)
        guard let sourceValues = SQLiteStore.metadataValues(in: sourceFile) else {
            throw StoreError(.incompatibleModel, "the source is not a Strata store", storeURL: source)
        }
        let sourceMetadata = try SQLiteStore.metadata(from: sourceValues, url: source)
        if let configuration = sourceMetadata.configuration {
            throw StoreError(
                .invalidRequest,
                "the store is already split: it holds only configuration '\(configuration)'; there is nothing to split",
                storeURL: source)
        }
        let modelHashes = model.entityVersionHashes
        guard sourceMetadata.entityHashes == modelHashes else {
            throw StoreError(
                .incompatibleModel,
                SQLiteStore.describeDifferences(stored: sourceMetadata.entityHashes, model: modelHashes)
                    + "; split it with the model it was written with (or migrate a copy of it first)",
                storeURL: source)
        }
        let sourceSchema = SQLiteSchema(model: model, entities: model.entityNames)

        // Every entity with objects goes to exactly one store.
        for entity in model.entityNames {
            let holders = model.configurations(containing: entity)
            let written = holders.filter { !options.skip.contains($0) }
            if written.count > 1 {
                throw StoreError(
                    .invalidRequest,
                    "entity '\(entity)' belongs to configurations \(written.joined(separator: ", ")); a split cannot tell which store its objects go to (skip all but one)",
                    entity: entity)
            }
            if holders.isEmpty, let table = sourceSchema.table(for: entity) {
                let rows = sqliteCount(
                    sourceFile, "SELECT count(*) FROM \(quote(table.name)) WHERE \"_entity\" = ?", [.text(entity)])
                if rows > 0 {
                    throw StoreError(
                        .invalidRequest,
                        "entity '\(entity)' belongs to no configuration; its \(rows) objects would be lost",
                        entity: entity)
                }
            }
        }

        // Look at every target before writing anything.
        var states: [Target] = []
        for configuration in configurations {
            let url = targets[configuration]!
            let entities = model.entityNames(inConfiguration: configuration)!
            let target = Target(
                configuration: configuration, url: url, schema: SQLiteSchema(model: model, entities: entities),
                skipped: options.skip.contains(configuration))
            try inspectTarget(target, sourceIdentifier: sourceMetadata.identifier, model: model, source: source)
            states.append(target)
        }
        if states.allSatisfy(\.isComplete) {
            return SplitReport(
                outcome: .alreadySplit, sourceIdentifier: sourceMetadata.identifier,
                targets: states.map { report(for: $0) }, rowsCopied: 0, seconds: Date().timeIntervalSince(started))
        }
        let resumed = states.contains { $0.values != nil && !$0.isComplete }

        // Create the new targets.
        for target in states where target.values == nil {
            try create(
                target, sourceIdentifier: sourceMetadata.identifier, source: source, model: model, options: options)
        }

        // Count what there is to copy, and what is there already.
        var total = 0
        var copied = 0
        for target in states where !target.skipped {
            for table in target.schema.tables.values {
                let (filter, arguments) = entityFilter(table, sourceSchema: sourceSchema)
                total += sqliteCount(sourceFile, "SELECT count(*) FROM \(quote(table.name))\(filter)", arguments)
            }
            for join in target.schema.joinTables {
                total += sqliteCount(sourceFile, "SELECT count(*) FROM \(quote(join.name))", [])
            }
            if target.isComplete {
                copied += target.schema.tables.keys.reduce(0) { $0 + targetCount(target, $1) }
                copied += target.schema.joinTables.reduce(0) { $0 + targetCount(target, $1.name) }
            }
        }
        var rowsCopied = 0
        for target in states where !target.isComplete {
            try open(target, options: options)
            var last = progressRecord(target)
            copied += target.schema.tables.keys.reduce(0) { $0 + targetCount(target, $1) }
            copied += target.schema.joinTables.reduce(0) { $0 + targetCount(target, $1.name) }
            progress?(
                SplitProgress(
                    phase: .copying, configuration: target.configuration, table: nil, copiedRows: copied,
                    totalRows: total))
            for table in target.schema.tables.values.sorted(by: { $0.name < $1.name }) {
                while true {
                    let count = try copyChunk(
                        table, target: target, source: sourceFile, sourceSchema: sourceSchema, last: &last,
                        chunkSize: options.chunkSize)
                    copied += count
                    rowsCopied += count
                    if count > 0 {
                        progress?(
                            SplitProgress(
                                phase: .copying, configuration: target.configuration, table: table.name,
                                copiedRows: copied, totalRows: total))
                    }
                    if count < options.chunkSize { break }
                }
            }
            for join in target.schema.joinTables {
                while true {
                    let count = try copyJoinChunk(
                        join, target: target, source: sourceFile, last: &last, chunkSize: options.chunkSize)
                    copied += count
                    rowsCopied += count
                    if count > 0 {
                        progress?(
                            SplitProgress(
                                phase: .copying, configuration: target.configuration, table: join.name,
                                copiedRows: copied, totalRows: total))
                    }
                    if count < options.chunkSize { break }
                }
            }
            progress?(
                SplitProgress(
                    phase: .verifying, configuration: target.configuration, table: nil, copiedRows: copied,
                    totalRows: total))
            try finish(target, source: sourceFile, sourceSchema: sourceSchema)
        }
        progress?(
            SplitProgress(
                phase: .finished, configuration: states.last!.configuration, table: nil, copiedRows: copied,
                totalRows: total))
        return SplitReport(
            outcome: resumed ? .resumed : .split, sourceIdentifier: sourceMetadata.identifier,
            targets: states.map { report(for: $0) }, rowsCopied: rowsCopied, seconds: Date().timeIntervalSince(started))
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
