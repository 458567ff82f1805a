import Foundation

/// Writes a Core Data store's objects into a Strata store of the model version that wrote it (the
/// staging store of ``CoreDataImporter``), chunk by chunk, and verifies it against the source.
struct CoreDataStagingWriter {
    static let verificationKey = "importVerification"

    let file: CoreDataStoreFile
    let model: ObjectModel
    let url: URL
    let options: CoreDataImportOptions
    let progress: ((CoreDataImportProgress) -> Void)?
    let mapping: CoreDataMapping
    let schema: SQLiteSchema
    private(set) var db: SQLiteConnection?
    /// `converting` until verified, then `converted`.
    private(set) var state: String
    /// Whether an earlier run had begun.
    let resumed: Bool
    private var last: [String: JSONValue] = [:]
    private var values: CoreDataValues

    init(
        file: CoreDataStoreFile, model: ObjectModel, url: URL, options: CoreDataImportOptions,
        progress: ((CoreDataImportProgress) -> Void)?
    ) throws(StoreError) {
        self.file = file
        self.model = model
        self.url = url
        self.options = options
        self.progress = progress
        mapping = try CoreDataMapping(file: file, model: model)
        schema = SQLiteSchema(model: model, entities: model.entityNames)
        values = CoreDataValues(storeURL: file.url)
        let exists = FileManager.default.fileExists(atPath: url.path)
        let db: SQLiteConnection
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            db = try SQLiteConnection(path: url.path)
            try db.execute("PRAGMA journal_mode=WAL")
            try db.execute("PRAGMA synchronous=\(options.durability == .full ? "FULL" : "NORMAL")")
        } catch let error as SQLiteError {
            throw StoreError(.io, "cannot open the staging store: \(error.message)", storeURL: url, underlying: error)
        } catch {
            throw StoreError(.io, "cannot create the staging store's folder: \(error)", storeURL: url)
        }
        self.db = db
        let recorded = exists ? SQLiteStore.metadataValues(in: db) : nil
        if let recorded {
            guard recorded[CoreDataImporter.sourceKey] == file.identifier else {
                throw StoreError(
                    .duplicateStore, "\(url.path) is not an import of \(file.url.path); remove it", storeURL: url)
            }
            state = recorded[CoreDataImporter.stateKey] ?? "converted"
            let hashes = MigrationPlanner.hashes(of: model, configuration: nil) ?? [:]
            if state == "converting", (try? SQLiteStore.metadata(from: recorded, url: url).entityHashes) != hashes {
                throw StoreError(
                    .invalidRequest,
                    "an interrupted import of this store used another model version; remove \(url.path) to start over",
                    storeURL: url)
            }
            if let text = recorded[CoreDataImporter.progressKey], case .object(let record)? = try? JSONValue.parse(text)
            {
                last = record
            }
            resumed = true
        } else {
            let metadata = StoreMetadata(
                identifier: file.identifier, configuration: nil, modelVersion: model.version,
                entityHashes: MigrationPlanner.hashes(of: model, configuration: nil) ?? [:])
            try SQLiteStore.createSchema(
                db, statements: schema.createStatements, metadata: metadata, model: model,
                extra: [
                    (CoreDataImporter.sourceKey, file.identifier), ("importSourcePath", file.url.path),
                    (CoreDataImporter.stateKey, "converting"), (CoreDataImporter.progressKey, "{}"),
                ], url: url)
            state = "converting"
            resumed = false
        }
    }

    var warnings: [String] {
        mapping.warnings
            + values.warnings.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.count) \($0.value.message)" }
    }

    mutating func close() { db = nil }

    private func fail(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        return StoreError(.io, "cannot import: \(error)", storeURL: url)
    }

    /// Writes every object and relationship not written yet.
    mutating func convert() throws(StoreError) {
        let db = self.db!
        var total = 0
        for table in mapping.tables.values {
            total += Int(
                (try? file.db.query("SELECT count(*) FROM \(SQLiteSchema.quote(table.name))") { $0.int64(0) })?.first
                    ?? 0)
        }
        var copied = 0
        for (root, table) in mapping.tables.sorted(by: { $0.key < $1.key }) where !file.columns(of: table.name).isEmpty
        {
            while true {
                let count = try copyChunk(root, table, db)
                copied += count
                progress?(
                    CoreDataImportProgress(phase: .converting, table: table.name, copiedRows: copied, totalRows: total))
                if count < options.chunkSize { break }
            }
        }
        for join in mapping.joins where last["join:" + join.join.name] == nil {
            try copyJoin(join, db)
            progress?(
                CoreDataImportProgress(phase: .converting, table: join.join.name, copiedRows: copied, totalRows: total))
        }
    }

    /// One chunk of a hierarchy's rows, in one transaction with the progress it makes.
    private mutating func copyChunk(_ root: String, _ table: CoreDataMapping.Table, _ db: SQLiteConnection)
        throws(StoreError) -> Int
    {
        var after = Int64.min
        if case .integer(let key)? = last[root] { after = key }
        let columns = ["Z_PK", "Z_ENT", "Z_OPT"] + table.columns
        let sql =
            "SELECT \(columns.map(SQLiteSchema.quote).joined(separator: ", ")) FROM \(SQLiteSchema.quote(table.name)) WHERE Z_PK > ? ORDER BY Z_PK LIMIT ?"
        var count = 0
        do {
            let rows = try file.db.query(sql, [.integer(after), .integer(Int64(options.chunkSize))]) { statement in
                (0..<Int32(columns.count)).map { statement.value($0) }
            }
            try db.execute("BEGIN IMMEDIATE")
            for row in rows {
                count += 1
                guard case .integer(let pk) = row[0] else { continue }
                after = pk
                guard case .integer(let number) = row[1], let entity = table.entityByNumber[Int(number)],
                    let plan = schema.rowPlans[entity], let insert = schema.insertByEntity[entity]
                else { continue }
                var version: Int64 = 1
                if case .integer(let opt) = row[2], opt > 0 { version = opt }
                var arguments: [SQLiteValue] = [.integer(pk), .text(entity), .integer(version)]
                for name in plan.layout.names {
                    guard let attribute = model.attribute(name, of: entity),
                        let value = table.value(of: name, attribute, entity: entity, row: row, values: &values)
                    else {
                        arguments.append(.null)
                        continue
                    }
                    arguments.append(SQLiteSchema.encode(value))
                }
                for (_, info) in plan.foreignKeys {
                    if let index = table.toOne[entity]?[info.name], case .integer(let key) = row[index + 3] {
                        arguments.append(.integer(key))
                    } else {
                        arguments.append(.null)
                    }
                }
                let statement = try db.statement(insert)
                try statement.bind(arguments)
                defer { statement.reset() }
                while try statement.step() {}
            }
            if count > 0 {
                last[root] = .integer(after)
                try recordProgress(db)
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw fail(error)
        }
        return count
    }

    /// The pairs of a join, with Strata's positions (0, 1, ... in the Core Data order).
    func pairs(_ join: CoreDataMapping.Join) throws(StoreError) -> [(Int64, Int64, Int64, Int64)] {
        let rows: [(Int64, Int64, Double?, Double?)] = try file.read {
            try file.db.query(join.query) { statement in
                (
                    statement.int64(0), statement.int64(1), statement.isNull(2) ? nil : statement.double(2),
                    statement.isNull(3) ? nil : statement.double(3)
                )
            }
        }
        var positions: [Int: Int64] = [:]
        var targetPositions: [Int: Int64] = [:]
        let bySource = Dictionary(grouping: rows.indices, by: { rows[$0].0 })
        for (_, indices) in bySource {
            let ordered = indices.sorted { (rows[$0].2 ?? 0, rows[$0].1) < (rows[$1].2 ?? 0, rows[$1].1) }
            for (position, index) in ordered.enumerated() { positions[index] = Int64(position) }
        }
        let byTarget = Dictionary(grouping: rows.indices, by: { rows[$0].1 })
        for (_, indices) in byTarget {
            let ordered = indices.sorted { (rows[$0].3 ?? 0, rows[$0].0) < (rows[$1].3 ?? 0, rows[$1].0) }
            for (position, index) in ordered.enumerated() { targetPositions[index] = Int64(position) }
        }
        return rows.indices.map { (rows[$0].0, rows[$0].1, positions[$0]!, targetPositions[$0]!) }.sorted {
            ($0.0, $0.1) < ($1.0, $1.1)
        }
    }

    /// A join's pairs, in one transaction.
    private mutating func copyJoin(_ join: CoreDataMapping.Join, _ db: SQLiteConnection) throws(StoreError) {
        let pairs = try pairs(join)
        let ordered = join.join.isTargetOrdered
        let columns = ["source", "target", "position"] + (ordered ? ["target_position"] : [])
        do {
            try db.execute("BEGIN IMMEDIATE")
            let insert = try db.statement(
                "INSERT OR IGNORE INTO \(SQLiteSchema.quote(join.join.name)) (\(columns.map(SQLiteSchema.quote).joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
            )
            for (source, target, position, targetPosition) in pairs {
                try insert.bind(
                    [.integer(source), .integer(target), .integer(position)]
                        + (ordered ? [.integer(targetPosition)] : []))
                defer { insert.reset() }
                while try insert.step() {}
            }
            last["join:" + join.join.name] = .bool(true)
            try recordProgress(db)
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw fail(error)
        }
    }

    private func recordProgress(_ db: SQLiteConnection) throws(SQLiteError) {
        try db.run(
            "UPDATE \(SQLiteStore.metadataTable) SET value = ? WHERE key = ?",
            [.text(JSONValue.object(last).jsonText), .text(CoreDataImporter.progressKey)])
    }

    /// Sets the staging store's state (and, once verified, forgets the progress).
    mutating func setState(_ state: String, checks: [SplitCheck] = []) throws(StoreError) {
        guard let db else { return }
        do {
            try db.execute("BEGIN IMMEDIATE")
            try db.run(
                "UPDATE \(SQLiteStore.metadataTable) SET value = ? WHERE key = ?",
                [.text(state), .text(CoreDataImporter.stateKey)])
            try db.execute("COMMIT")
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            try? db.execute("ROLLBACK")
            throw fail(error)
        }
        self.state = state
    }
}
