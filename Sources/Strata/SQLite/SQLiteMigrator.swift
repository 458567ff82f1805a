import Foundation

/// Plans and applies lightweight migrations of SQLite stores.
///
/// A migration of one store runs in one transaction: tables of new entities are created, columns
/// are added in place when only additions happened (`ALTER TABLE … ADD COLUMN`), and a table whose
/// columns are removed, renamed, or whose entities are renamed is rebuilt (new table, `INSERT …
/// SELECT`, old table dropped); indexes are brought in line with the model; the metadata records
/// the new hashes, version and model. SQLite DDL is transactional, so a failure leaves the store as
/// it was.
enum SQLiteMigrator {
    /// The prefix of a table being rebuilt, while the migration's transaction is open.
    static let oldTablePrefix = "_strata_old_"

    /// Plans the migration of a store with metadata `values` to `model`.
    static func plan(
        values: [String: String], storedHashes: [String: String], configuration: String?, model: ObjectModel,
        history: [ObjectModel], url: URL?
    ) -> MigrationPlan {
        var recorded: ObjectModel?
        if let text = values["model"] { recorded = try? ObjectModel.load(json: Array(text.utf8)) }
        return MigrationPlanner.plan(
            storedHashes: storedHashes, storedVersion: values["modelVersion"], recorded: recorded,
            configuration: configuration, model: model, history: history, url: url)
    }

    /// Applies `plan` inside a transaction the caller has opened, and records `model` in the
    /// metadata.
    /// - Throws: ``StoreError``: `.uniqueViolation` when existing objects break a new uniqueness
    ///   constraint, `.io` for other SQLite failures.
    static func apply(
        _ plan: MigrationPlan, model: ObjectModel, configuration: String?, db: SQLiteConnection, url: URL?
    ) throws(StoreError) {
        do {
            for step in plan.steps { try apply(step, db: db) }
            let hashes = MigrationPlanner.hashes(of: model, configuration: configuration) ?? [:]
            let table = SQLiteStore.metadataTable
            let values: [(String, String)] = [
                ("entityHashes", JSONValue.object(hashes.mapValues { .string($0) }).jsonText),
                ("model", model.canonicalJSON),
            ]
            for (key, value) in values {
                try db.run("INSERT OR REPLACE INTO \(table) (key, value) VALUES (?, ?)", [.text(key), .text(value)])
            }
            if let version = model.version {
                try db.run(
                    "INSERT OR REPLACE INTO \(table) (key, value) VALUES ('modelVersion', ?)", [.text(version)])
            } else {
                try db.run("DELETE FROM \(table) WHERE key = 'modelVersion'")
            }
        } catch {
            if error.isUniqueViolation || (error.sql ?? "").hasPrefix("CREATE UNIQUE INDEX") {
                throw StoreError(
                    .uniqueViolation,
                    "the migration cannot add a uniqueness constraint: existing objects are not unique (\(error.message))",
                    storeURL: url, underlying: error)
            }
            throw StoreError(.io, "the migration failed: \(error.message)", storeURL: url, underlying: error)
        }
    }

    /// Runs `plan` on `db` in its own transaction and commits it.
    static func migrate(
        _ plan: MigrationPlan, model: ObjectModel, configuration: String?, db: SQLiteConnection, url: URL?
    ) throws(StoreError) {
        let prepared = try prepare(plan, model: model, configuration: configuration, db: db, url: url)
        try prepared.commit()
    }

    /// Begins a transaction on `db` and applies `plan` in it, leaving it open.
    static func prepare(
        _ plan: MigrationPlan, model: ObjectModel, configuration: String?, db: SQLiteConnection, url: URL?
    ) throws(StoreError) -> SQLitePreparedMigration {
        do {
            try db.execute("BEGIN IMMEDIATE")
        } catch {
            throw StoreError(
                .io, "cannot begin the migration's transaction: \(error.message)", storeURL: url, underlying: error)
        }
        do {
            try apply(plan, model: model, configuration: configuration, db: db, url: url)
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
        return SQLitePreparedMigration(db: db, url: url, plan: plan)
    }

    private static func quote(_ name: String) -> String { SQLiteSchema.quote(name) }

    /// What happens to one table of the new schema.
    private enum Action {
        /// It is new: created empty.
        case create
        /// The old table of the same name is altered in place.
        case alter(old: SQLiteSchema.Table)
        /// Built from the old table (renamed out of the way first).
        case rebuild(old: SQLiteSchema.Table)
    }

    /// Applies one step; the transaction is open.
    static func apply(_ step: MigrationStep, db: SQLiteConnection) throws(SQLiteError) {
        let oldSchema = SQLiteSchema(model: step.old, entities: step.oldEntities)
        let newSchema = SQLiteSchema(model: step.new, entities: step.newEntities)
        let mapping = step.mapping
        let statements = newSchema.createStatements
        func createStatement(_ table: String) -> String? {
            statements.first { $0.hasPrefix("CREATE TABLE \(quote(table)) (") }
        }
        func indexStatements(_ table: String) -> [String] {
            statements.filter { !$0.hasPrefix("CREATE TABLE ") && $0.contains(" ON \(quote(table)) (") }
        }

        // 1. Decide what happens to each entity table.
        var actions: [(SQLiteSchema.Table, Action)] = []
        var consumed: Set<String> = []
        for table in newSchema.tables.values.sorted(by: { $0.name < $1.name }) {
            let matched = table.entities.compactMap { mapping.entities[$0] }
            guard let oldTable = matched.first.flatMap({ oldSchema.table(for: $0) }) else {
                actions.append((table, .create))
                continue
            }
            consumed.insert(oldTable.name)
            if canAlterInPlace(table, oldTable, step: step, newSchema: newSchema) {
                actions.append((table, .alter(old: oldTable)))
            } else {
                actions.append((table, .rebuild(old: oldTable)))
            }
        }
        // 2. Decide what happens to each join table.
        let (joinActions, consumedJoins) = joinSources(step: step, oldSchema: oldSchema, newSchema: newSchema)

        // 3. Move rebuilt tables out of the way; drop the tables nothing uses any more.
        func dropIndexes(of table: String) throws(SQLiteError) {
            let names = try sqlite {
                try db.query(
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
                    [.text(table)]
                ) { $0.text(0) }
            }
            for name in names { try db.execute("DROP INDEX \(quote(name))") }
        }
        for (_, action) in actions {
            if case .rebuild(let old) = action {
                try dropIndexes(of: old.name)
                try db.execute("ALTER TABLE \(quote(old.name)) RENAME TO \(quote(oldTablePrefix + old.name))")
            }
        }
        for old in oldSchema.tables.keys.sorted() where !consumed.contains(old) {
            try db.execute("DROP TABLE \(quote(old))")
        }
        for join in joinActions where !join.keep {
            if let old = join.old {
                try dropIndexes(of: old)
                try db.execute("ALTER TABLE \(quote(old)) RENAME TO \(quote(oldTablePrefix + old))")
            }
        }
        for old in oldSchema.joinTables where !consumedJoins.contains(old.name) {
            try db.execute("DROP TABLE \(quote(old.name))")
        }

        // 4. Create and fill new and rebuilt tables; alter the others in place.
        for (table, action) in actions {
            switch action {
            case .create:
                if let sql = createStatement(table.name) { try db.execute(sql) }
            case .rebuild(let old):
                if let sql = createStatement(table.name) { try db.execute(sql) }
                try copy(into: table, from: old, step: step, newSchema: newSchema, oldSchema: oldSchema, db: db)
                try db.execute("DROP TABLE \(quote(oldTablePrefix + old.name))")
            case .alter(let old):
                try alter(table, old: old, step: step, newSchema: newSchema, oldSchema: oldSchema, db: db)
            }
        }
        for join in joinActions where !join.keep {
            if let sql = createStatement(join.0.name) { try db.execute(sql) }
            if let old = join.old {
                let columns = join.swapped ? "\"target\", \"source\"" : "\"source\", \"target\""
                try db.execute(
                    "INSERT INTO \(quote(join.0.name)) (\"source\", \"target\", \"position\") SELECT \(columns), \"position\" FROM \(quote(oldTablePrefix + old))"
                )
                try db.execute("DROP TABLE \(quote(oldTablePrefix + old))")
            }
        }

        // 5. Bring every index in line with the new model: drop the unwanted ones first (names are
        // global), then create the missing ones.
        let tableNames = newSchema.tables.keys.sorted() + newSchema.joinTables.map(\.name)
        var existing: [String: [(name: String, sql: String)]] = [:]
        for table in tableNames {
            existing[table] = try sqlite {
                try db.query(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
                    [.text(table)]
                ) { ($0.text(0), $0.text(1)) }
            }
        }
        for table in tableNames {
            let wanted = Set(indexStatements(table))
            for index in existing[table] ?? [] where !wanted.contains(index.sql) {
                try db.execute("DROP INDEX \(quote(index.name))")
            }
        }
        for table in tableNames {
            let present = Set((existing[table] ?? []).map(\.sql))
            for sql in indexStatements(table) where !present.contains(sql) { try db.execute(sql) }
        }

        // 6. Clear references to objects that were deleted with their entity.
        if mapping.removesObjects {
            for table in newSchema.tables.values.sorted(by: { $0.name < $1.name }) {
                for column in table.columns {
                    guard case .foreignKey(let relationship) = column,
                        let destination = newSchema.table(for: relationship.destination)
                    else { continue }
                    try db.execute(
                        "UPDATE \(quote(table.name)) SET \(quote(column.name)) = NULL WHERE \(quote(column.name)) IS NOT NULL AND \(quote(column.name)) NOT IN (SELECT \"_pk\" FROM \(quote(destination.name)))"
                    )
                }
            }
            for join in newSchema.joinTables {
                guard let source = newSchema.table(for: join.sourceEntity),
                    let target = newSchema.table(for: join.targetEntity)
                else { continue }
                try db.execute(
                    "DELETE FROM \(quote(join.name)) WHERE \"source\" NOT IN (SELECT \"_pk\" FROM \(quote(source.name))) OR \"target\" NOT IN (SELECT \"_pk\" FROM \(quote(target.name)))"
                )
            }
        }
    }

    /// Where each join table of `newSchema` takes its rows from: the old join table (and whether
    /// its source and target columns swap), and whether it is the old one kept as it is; and the
    /// old join tables used.
    static func joinSources(step: MigrationStep, oldSchema: SQLiteSchema, newSchema: SQLiteSchema) -> (
        [(JoinTableDescription, old: String?, swapped: Bool, keep: Bool)], Set<String>
    ) {
        var joinActions: [(JoinTableDescription, old: String?, swapped: Bool, keep: Bool)] = []
        var consumedJoins: Set<String> = []
        let mapping = step.mapping
        for join in newSchema.joinTables {
            var source: (String, Bool)?
            if let oldEntity = mapping.entities[join.sourceEntity],
                let oldName = mapping.relationships[join.sourceEntity]?[join.sourceRelationship] ?? nil,
                case .joinTable(let oldJoin, let wasSource)? = step.old.storage(of: oldName, in: oldEntity),
                oldSchema.joinTables.contains(where: { $0.name == oldJoin.name }), !consumedJoins.contains(oldJoin.name)
            {
                source = (oldJoin.name, !wasSource)
                consumedJoins.insert(oldJoin.name)
            }
            let keep = source.map { $0.0 == join.name && !$0.1 } ?? false
            joinActions.append((join, source?.0, source?.1 ?? false, keep))
        }
        return (joinActions, consumedJoins)
    }

    /// Where the values of `column` come from for rows of new entity `entity`.
    static func source(
        of column: SQLiteSchema.Column, for entity: String, step: MigrationStep, newSchema: SQLiteSchema
    ) -> MigrationMapping.Source {
        guard (newSchema.columnsByEntity[entity] ?? []).contains(where: { $0.name == column.name }) else {
            return .null
        }
        switch column {
        case .attribute(let attribute):
            return step.mapping.attributes[entity]?[attribute.name] ?? .null
        case .foreignKey(let relationship):
            guard let oldName = step.mapping.relationships[entity]?[relationship.name] ?? nil else { return .null }
            return .old(oldName)
        }
    }

    /// Whether `table` can be reached from `old` by adding columns and updating values only.
    private static func canAlterInPlace(
        _ table: SQLiteSchema.Table, _ old: SQLiteSchema.Table, step: MigrationStep, newSchema: SQLiteSchema
    ) -> Bool {
        guard table.name == old.name else { return false }
        let matched = table.entities.filter { step.mapping.entities[$0] != nil }
        guard matched.allSatisfy({ step.mapping.entities[$0] == $0 }) else { return false }
        let oldColumns = Dictionary(old.columns.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let newNames = Set(table.columns.map(\.name))
        // Every old column must survive with the same kind and storage type.
        for column in old.columns {
            guard newNames.contains(column.name),
                let new = table.columns.first(where: { $0.name == column.name }), sameKind(new, column)
            else { return false }
        }
        for column in table.columns {
            let existed = oldColumns[column.name] != nil
            for entity in matched {
                switch source(of: column, for: entity, step: step, newSchema: newSchema) {
                case .old(let name), .coalesce(let name, _):
                    if name != column.name || !existed { return false }
                case .value, .null: break
                }
            }
        }
        return true
    }

    private static func sameKind(_ lhs: SQLiteSchema.Column, _ rhs: SQLiteSchema.Column) -> Bool {
        switch (lhs, rhs) {
        case (.attribute, .attribute), (.foreignKey, .foreignKey): lhs.sqlType == rhs.sqlType
        default: false
        }
    }

    /// Alters `table` in place: deletes removed entities' rows, adds columns, fills defaults.
    private static func alter(
        _ table: SQLiteSchema.Table, old: SQLiteSchema.Table, step: MigrationStep, newSchema: SQLiteSchema,
        oldSchema: SQLiteSchema, db: SQLiteConnection
    ) throws(SQLiteError) {
        let name = quote(table.name)
        let matchedOld = Set(table.entities.compactMap { step.mapping.entities[$0] })
        let removed = old.entities.filter { !matchedOld.contains($0) }
        if !removed.isEmpty {
            try db.run(
                "DELETE FROM \(name) WHERE \"_entity\" IN (\(removed.map { _ in "?" }.joined(separator: ", ")))",
                removed.map { .text($0) })
        }
        let oldNames = Set(old.columns.map(\.name))
        for column in table.columns where !oldNames.contains(column.name) {
            try db.execute("ALTER TABLE \(name) ADD COLUMN \(quote(column.name)) \(column.sqlType)")
        }
        let matched = table.entities.filter { step.mapping.entities[$0] != nil }
        for column in table.columns {
            for entity in matched {
                let had = (oldSchema.columnsByEntity[entity] ?? []).contains { $0.name == column.name }
                switch source(of: column, for: entity, step: step, newSchema: newSchema) {
                case .value(let value):
                    try db.run(
                        "UPDATE \(name) SET \(quote(column.name)) = ? WHERE \"_entity\" = ?",
                        [SQLiteSchema.encode(value), .text(entity)])
                case .coalesce(_, let value):
                    try db.run(
                        "UPDATE \(name) SET \(quote(column.name)) = ? WHERE \(quote(column.name)) IS NULL AND \"_entity\" = ?",
                        [SQLiteSchema.encode(value), .text(entity)])
                case .null:
                    // The entity lost the property but the column stays (a sibling keeps it): clear its values.
                    if had && oldNames.contains(column.name) {
                        try db.run(
                            "UPDATE \(name) SET \(quote(column.name)) = NULL WHERE \"_entity\" = ?", [.text(entity)])
                    }
                case .old: break
                }
            }
        }
    }

    /// Copies the rows of `old` (renamed out of the way) into the new `table`, mapping entities and columns.
    private static func copy(
        into table: SQLiteSchema.Table, from old: SQLiteSchema.Table, step: MigrationStep, newSchema: SQLiteSchema,
        oldSchema: SQLiteSchema, db: SQLiteConnection
    ) throws(SQLiteError) {
        let matched = table.entities.filter { step.mapping.entities[$0] != nil }
        guard !matched.isEmpty else { return }
        var names = ["\"_pk\"", "\"_entity\"", "\"_version\""]
        var expressions = ["\"_pk\""]
        var arguments: [SQLiteValue] = []
        let renames = matched.filter { step.mapping.entities[$0] != $0 }
        if renames.isEmpty {
            expressions.append("\"_entity\"")
        } else {
            var expression = "CASE \"_entity\""
            for entity in renames {
                expression += " WHEN ? THEN ?"
                arguments += [.text(step.mapping.entities[entity]!), .text(entity)]
            }
            expressions.append(expression + " ELSE \"_entity\" END")
        }
        expressions.append("\"_version\"")
        let oldColumns = Set(old.columns.map(\.name))
        func sql(_ source: MigrationMapping.Source) -> (String, [SQLiteValue]) {
            switch source {
            case .old(let name): oldColumns.contains(name) ? (quote(name), []) : ("NULL", [])
            case .coalesce(let name, let value):
                oldColumns.contains(name)
                    ? ("COALESCE(\(quote(name)), ?)", [SQLiteSchema.encode(value)])
                    : ("?", [SQLiteSchema.encode(value)])
            case .value(let value): ("?", [SQLiteSchema.encode(value)])
            case .null: ("NULL", [])
            }
        }
        for column in table.columns {
            names.append(quote(column.name))
            let parts = matched.map { sql(source(of: column, for: $0, step: step, newSchema: newSchema)) }
            if parts.allSatisfy({ $0.0 == parts[0].0 && $0.1 == parts[0].1 }) {
                expressions.append(parts[0].0)
                arguments += parts[0].1
            } else {
                var expression = "CASE \"_entity\""
                for (entity, part) in zip(matched, parts) {
                    expression += " WHEN ? THEN \(part.0)"
                    arguments.append(.text(step.mapping.entities[entity]!))
                    arguments += part.1
                }
                expressions.append(expression + " ELSE NULL END")
            }
        }
        let oldNames = matched.map { step.mapping.entities[$0]! }
        arguments += oldNames.map { .text($0) }
        try db.run(
            "INSERT INTO \(quote(table.name)) (\(names.joined(separator: ", "))) SELECT \(expressions.joined(separator: ", ")) FROM \(quote(oldTablePrefix + old.name)) WHERE \"_entity\" IN (\(oldNames.map { _ in "?" }.joined(separator: ", ")))",
            arguments)
    }

    /// Runs an SQLite call that throws untyped errors, rethrowing its `SQLiteError`.
    private static func sqlite<T>(_ body: () throws -> T) throws(SQLiteError) -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw SQLiteError(code: SQLiteResultCode.error.rawValue, message: "\(error)")
        }
    }
}

/// A migration applied in an SQLite store's open transaction, waiting to be committed or rolled
/// back with the other stores of its coordinator.
final class SQLitePreparedMigration: PreparedMigration {
    let db: SQLiteConnection
    let url: URL?
    let plan: MigrationPlan
    private var finished = false

    init(db: SQLiteConnection, url: URL?, plan: MigrationPlan) {
        self.db = db
        self.url = url
        self.plan = plan
    }

    func keep(_ record: MigrationRecord) throws(StoreError) {
        do {
            try db.run(
                "INSERT OR REPLACE INTO \(SQLiteStore.metadataTable) (key, value) VALUES (?, ?)",
                [.text(SQLiteStore.migrationRecordKey), .text(record.text)])
        } catch {
            throw error.storeError("cannot record the migration of several stores", url: url)
        }
    }

    func forgetRecord() {
        try? db.run("DELETE FROM \(SQLiteStore.metadataTable) WHERE key = ?", [.text(SQLiteStore.migrationRecordKey)])
    }

    /// Commits the migration.
    func commit() throws(StoreError) {
        guard !finished else { return }
        do {
            try db.execute("COMMIT")
            finished = true
        } catch {
            rollback()
            throw StoreError(.io, "cannot commit the migration: \(error.message)", storeURL: url, underlying: error)
        }
    }

    /// Discards the migration; the store is as it was.
    func rollback() {
        guard !finished else { return }
        finished = true
        try? db.execute("ROLLBACK")
    }

    deinit { rollback() }
}
