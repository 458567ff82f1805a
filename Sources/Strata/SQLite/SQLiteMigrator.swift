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
        var failure: MigrationCheck.Failure?
        do {
            for step in plan.steps {
                failure = try steps(db).check(
                    step, oldSchema: SQLiteSchema(model: step.old, entities: step.oldEntities))
                if failure != nil { break }
                try apply(step, db: db)
            }
            if failure == nil { try steps(db).recordModel(model, configuration: configuration) }
        } catch {
            if error.isUniqueViolation || (error.sql ?? "").hasPrefix("CREATE UNIQUE INDEX") {
                throw StoreError(
                    .uniqueViolation,
                    "the migration cannot add a uniqueness constraint: existing objects are not unique (\(error.message))",
                    storeURL: url, underlying: error)
            }
            throw StoreError(.io, "the migration failed: \(error.message)", storeURL: url, underlying: error)
        }
        if let failure { throw StoreError(.incompatibleModel, failure.message, storeURL: url) }
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

    /// The steps every SQL store's migration shares, on `db`.
    static func steps(_ db: SQLiteConnection) -> SQLMigrationSteps<SQLiteDialect, SQLiteConnection> {
        SQLMigrationSteps(dialect: SQLiteDialect(), connection: db, metadataTable: SQLiteStore.metadataTable)
    }

    /// What happens to one table of the new schema.
    private enum Action {
        /// It is new: created empty.
        case create
        /// The old table of the same name is altered in place.
        case alter(old: SQLiteSchema.Table)
        /// Built from the old table (renamed out of the way first).
        case rebuild(old: SQLiteSchema.Table)
    }

    /// One step's schemas and what happens to each table.
    private struct StepPlan {
        let step: MigrationStep
        let oldSchema: SQLiteSchema
        let newSchema: SQLiteSchema
        /// Each entity table of the new schema and what happens to it.
        var actions: [(SQLiteSchema.Table, Action)] = []
        /// The old entity tables that a new one is made from.
        var consumed: Set<String> = []
        /// Where each join table takes its rows from.
        var joins: [SQLJoinSource] = []
        /// The old join tables used.
        var consumedJoins: Set<String> = []
        /// The new schema's statements.
        let statements: [String]

        init(_ step: MigrationStep) {
            self.step = step
            oldSchema = SQLiteSchema(model: step.old, entities: step.oldEntities)
            newSchema = SQLiteSchema(model: step.new, entities: step.newEntities)
            statements = newSchema.createStatements
            for table in newSchema.tables.values.sorted(by: { $0.name < $1.name }) {
                let matched = table.entities.compactMap { step.mapping.entities[$0] }
                guard let oldTable = matched.first.flatMap({ oldSchema.table(for: $0) }) else {
                    actions.append((table, .create))
                    continue
                }
                consumed.insert(oldTable.name)
                let inPlace = canAlterInPlace(table, oldTable, step: step, newSchema: newSchema)
                actions.append((table, inPlace ? .alter(old: oldTable) : .rebuild(old: oldTable)))
            }
            (joins, consumedJoins) = step.joinSources(oldSchema: oldSchema, newSchema: newSchema)
        }

        func createStatement(_ table: String) -> String? {
            statements.first { $0.hasPrefix("CREATE TABLE \(quote(table)) (") }
        }

        func indexStatements(_ table: String) -> [String] {
            statements.filter { !$0.hasPrefix("CREATE TABLE ") && $0.contains(" ON \(quote(table)) (") }
        }
    }

    /// Applies one step; the transaction is open.
    static func apply(_ step: MigrationStep, db: SQLiteConnection) throws(SQLiteError) {
        if step.mappingModel != nil { return try SQLiteMappingMigrator.apply(step, db: db) }
        let plan = StepPlan(step)
        try moveOldTables(plan, db: db)
        try buildTables(plan, db: db)
        try alignIndexes(plan, db: db)
        try SQLiteFullText.align(plan.newSchema, db: db)
        try steps(db).clearLinksOutsideDestinations(step, in: plan.newSchema)
        if step.mapping.removesObjects { try steps(db).clearReferencesToRemovedObjects(in: plan.newSchema) }
        try steps(db).dropMembersTables(step, oldSchema: plan.oldSchema)
    }

    /// Moves tables to be rebuilt out of the way (their indexes dropped, names being global) and
    /// drops the tables nothing uses any more.
    private static func moveOldTables(_ plan: StepPlan, db: SQLiteConnection) throws(SQLiteError) {
        func moveAside(_ table: String) throws(SQLiteError) {
            for index in try indexes(of: table, db: db) { try db.execute("DROP INDEX \(quote(index.name))") }
            try db.execute("ALTER TABLE \(quote(table)) RENAME TO \(quote(oldTablePrefix + table))")
        }
        for (_, action) in plan.actions {
            if case .rebuild(let old) = action { try moveAside(old.name) }
        }
        for old in plan.oldSchema.tables.keys.sorted() where !plan.consumed.contains(old) {
            try db.execute("DROP TABLE \(quote(old))")
        }
        for join in plan.joins where !join.keep {
            if let old = join.old { try moveAside(old) }
        }
        for old in plan.oldSchema.joinTables where !plan.consumedJoins.contains(old.name) {
            try db.execute("DROP TABLE \(quote(old.name))")
        }
    }

    /// Creates and fills new and rebuilt tables, and alters the others in place.
    private static func buildTables(_ plan: StepPlan, db: SQLiteConnection) throws(SQLiteError) {
        let steps = steps(db)
        for (table, action) in plan.actions {
            switch action {
            case .create:
                if let sql = plan.createStatement(table.name) { try db.execute(sql) }
            case .rebuild(let old):
                if let sql = plan.createStatement(table.name) { try db.execute(sql) }
                try steps.copyRows(
                    into: table, from: old, at: quote(oldTablePrefix + old.name),
                    entities: table.entities.filter { plan.step.mapping.entities[$0] != nil }, step: plan.step,
                    newSchema: plan.newSchema)
                try db.execute("DROP TABLE \(quote(oldTablePrefix + old.name))")
            case .alter(let old):
                try alter(
                    table, old: old, step: plan.step, newSchema: plan.newSchema, oldSchema: plan.oldSchema, db: db)
            }
        }
        for join in plan.joins where !join.keep {
            if let sql = plan.createStatement(join.join.name) { try db.execute(sql) }
            try steps.fillJoin(join, from: join.old.map { quote(oldTablePrefix + $0) })
            if let old = join.old { try db.execute("DROP TABLE \(quote(oldTablePrefix + old))") }
        }
    }

    /// Brings every index in line with the new model: drops the unwanted ones first (names are
    /// global), then creates the missing ones.
    private static func alignIndexes(_ plan: StepPlan, db: SQLiteConnection) throws(SQLiteError) {
        let tableNames = plan.newSchema.tables.keys.sorted() + plan.newSchema.joinTables.map(\.name)
        var existing: [String: [(name: String, sql: String)]] = [:]
        for table in tableNames { existing[table] = try indexes(of: table, db: db) }
        for table in tableNames {
            let wanted = Set(plan.indexStatements(table))
            for index in existing[table] ?? [] where !wanted.contains(index.sql) {
                try db.execute("DROP INDEX \(quote(index.name))")
            }
        }
        for table in tableNames {
            let present = Set((existing[table] ?? []).map(\.sql))
            for sql in plan.indexStatements(table) where !present.contains(sql) { try db.execute(sql) }
        }
    }

    /// The indexes made for `table` (not those SQLite makes itself), with their SQL.
    private static func indexes(of table: String, db: SQLiteConnection) throws(SQLiteError) -> [(
        name: String, sql: String
    )] {
        try sqlite {
            try db.query(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
                [.text(table)]
            ) { ($0.text(0), $0.text(1)) }
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
                switch step.source(of: column, for: entity, newSchema: newSchema) {
                case .old(let name), .coalesce(let name, _):
                    if name != column.name || !existed { return false }
                case .converted, .member: return false
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
                switch step.source(of: column, for: entity, newSchema: newSchema) {
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
                case .old, .converted, .member: break
                }
            }
        }
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
            try SQLiteMigrator.steps(db).setMetadata(SQLiteStore.migrationRecordKey, record.text)
        } catch {
            throw error.storeError("cannot record the migration of several stores", url: url)
        }
    }

    func forgetRecord() {
        try? SQLiteMigrator.steps(db).setMetadata(SQLiteStore.migrationRecordKey, nil)
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
