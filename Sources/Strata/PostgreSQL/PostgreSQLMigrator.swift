import Foundation

/// Lightweight migration of a PostgreSQL store: the same plans as SQLite stores
/// (``MigrationPlanner``), applied in one transaction under the advisory lock that also guards
/// the store's creation, so two servers starting together migrate it once (the second finds it
/// migrated and changes nothing).
///
/// Each step moves the old tables into a scratch schema, creates the new ones and copies every
/// object over with its key and version (PostgreSQL's DDL is transactional, so a failure leaves
/// everything as it was). A step that a mapping model describes runs as SQLite stores run it
/// (``PostgreSQLMappingMigrator``).
enum PostgreSQLMigrator {
    /// Applies `plan` on `c` inside its open transaction and records `model` in the metadata.
    /// - Returns: what the store's data holds that a step's new model cannot (the step then wrote
    ///   nothing, and the caller rolls the transaction back), or nil when the plan ran.
    static func apply(
        _ plan: MigrationPlan, model: ObjectModel, configuration: String?, namespace: String, _ c: PGConnection
    ) throws(PGError) -> MigrationCheck.Failure? {
        for step in plan.steps {
            let old = PostgreSQLSchema(model: step.old, entities: step.oldEntities, namespace: namespace)
            if let failure = try steps(namespace, c).check(step, oldSchema: old.base) { return failure }
            try apply(step, namespace: namespace, c)
        }
        try steps(namespace, c).recordModel(model, configuration: configuration)
        return nil
    }

    /// The steps every SQL store's migration shares, on `c` in `namespace`.
    static func steps(_ namespace: String, _ c: PGConnection) -> SQLMigrationSteps<PostgreSQLDialect, PGConnection> {
        SQLMigrationSteps(
            dialect: PostgreSQLDialect(namespace: namespace), connection: c,
            metadataTable: PostgreSQLSchema.metadataTable)
    }

    /// Creates the tables, sequences and indexes of `schema`'s entities (a sequence of a table
    /// kept stays as it is).
    static func createTables(_ schema: PostgreSQLSchema, _ c: PGConnection) throws(PGError) {
        let creates = schema.createStatements.filter {
            !$0.hasPrefix("CREATE SCHEMA") && !$0.contains(PostgreSQLSchema.quote(PostgreSQLSchema.metadataTable))
                && !$0.contains(PostgreSQLSchema.quote(PostgreSQLSchema.recordsTable))
                && !$0.contains(PostgreSQLSchema.quote(PostgreSQLSchema.appliedTable))
        }
        for statement in creates {
            try c.execute(
                statement.hasPrefix("CREATE SEQUENCE ")
                    ? "CREATE SEQUENCE IF NOT EXISTS " + statement.dropFirst("CREATE SEQUENCE ".count) : statement)
        }
    }

    /// Sets the sequence of `table` past every key the table holds (a renamed hierarchy's
    /// sequence is new), so that keys continue past the objects a step wrote.
    static func continueKeys(of table: String, in schema: PostgreSQLSchema, _ c: PGConnection) throws(PGError) {
        try c.execute(
            "SELECT setval($1::regclass, GREATEST((SELECT COALESCE(max(\"_pk\"), 0) + 1 FROM \(schema.qualified(table))), nextval($1::regclass)), false)",
            [.text(schema.sequence(of: table))])
    }

    private static func apply(_ step: MigrationStep, namespace: String, _ c: PGConnection) throws(PGError) {
        if step.mappingModel != nil { return try PostgreSQLMappingMigrator.apply(step, namespace: namespace, c) }
        let old = PostgreSQLSchema(model: step.old, entities: step.oldEntities, namespace: namespace)
        let new = PostgreSQLSchema(model: step.new, entities: step.newEntities, namespace: namespace)
        let steps = steps(namespace, c)
        let stash = PostgreSQLSchema.quote(namespace + "_migrating")
        try c.execute("DROP SCHEMA IF EXISTS \(stash) CASCADE")
        try c.execute("CREATE SCHEMA \(stash)")
        // 1. The old tables (their indexes with them) out of the way.
        let oldTables = old.base.tables.keys.sorted() + old.base.joinTables.map(\.name)
        for name in oldTables { try c.execute("ALTER TABLE \(old.qualified(name)) SET SCHEMA \(stash)") }
        func stashed(_ name: String) -> String { stash + "." + PostgreSQLSchema.quote(name) }

        // 2. The new tables, sequences and indexes.
        try createTables(new, c)

        // 3. Every object of an entity both models have, into its new table (one statement per old
        // table it comes from).
        for table in new.base.tables.values.sorted(by: { $0.name < $1.name }) {
            var byOldTable: [(old: SQLiteSchema.Table, entities: [String])] = []
            for entity in table.entities {
                guard let oldEntity = step.mapping.entities[entity], let oldTable = old.base.table(for: oldEntity)
                else { continue }
                if let index = byOldTable.firstIndex(where: { $0.old.name == oldTable.name }) {
                    byOldTable[index].entities.append(entity)
                } else {
                    byOldTable.append((oldTable, [entity]))
                }
            }
            for (oldTable, entities) in byOldTable {
                try steps.copyRows(
                    into: table, from: oldTable, at: stashed(oldTable.name), entities: entities, step: step,
                    newSchema: new.base)
            }
            try continueKeys(of: table.name, in: new, c)
        }
        for join in step.joinSources(oldSchema: old.base, newSchema: new.base).0 {
            try steps.fillJoin(join, from: join.old.map(stashed))
        }

        // 4. References to objects deleted with their entity are cleared.
        try steps.clearLinksOutsideDestinations(step, in: new.base)
        if step.mapping.removesObjects { try steps.clearReferencesToRemovedObjects(in: new.base) }
        try steps.dropMembersTables(step, oldSchema: old.base)
        try c.execute("DROP SCHEMA \(stash) CASCADE")
        for name in old.base.tables.keys.sorted() where new.base.tables[name] == nil {
            try c.execute("DROP SEQUENCE IF EXISTS \(old.sequence(of: name))")
        }
    }
}

/// A migration of one PostgreSQL store, planned and waiting to run.
final class PostgreSQLPendingMigration: PendingMigration {
    let target: SQLMigrationTarget
    var storeIdentifier: String { target.storeIdentifier }
    var targetHashes: [String: String] { target.targetHashes }
    var plan: MigrationPlan { target.plan }

    init(_ target: SQLMigrationTarget) { self.target = target }

    func prepare() throws(StoreError) -> any PreparedMigration {
        let url = target.url
        let (conninfo, namespace, _) = PostgreSQLStore.connection(from: url, configuration: target.configuration)
        let display = PGConnection.redacted(url.absoluteString)
        let c: PGConnection
        do {
            c = try PGConnection(conninfo)
            try c.execute("BEGIN")
            try c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("strata:" + namespace)])
        } catch {
            throw StoreError(.io, "cannot begin the migration of \(display): \(error)", storeURL: url)
        }
        do {
            let values = try PostgreSQLStore.metadataValues(c, namespace: namespace) ?? [:]
            let found = try SQLiteStore.metadata(from: values, url: url)
            if found.entityHashes == targetHashes {
                // Another server migrated it while this one waited for the lock.
                return PostgreSQLPreparedMigration(c, url: url, namespace: namespace)
            }
            guard found.entityHashes == target.sourceHashes else {
                _ = try? c.execute("ROLLBACK")
                throw StoreError(
                    .incompatibleModel,
                    "the store changed while its migration was planned: "
                        + SQLiteStore.describeDifferences(stored: found.entityHashes, model: targetHashes),
                    storeURL: url)
            }
            if let failure = try PostgreSQLMigrator.apply(
                plan, model: target.model, configuration: target.configuration, namespace: namespace, c)
            {
                _ = try? c.execute("ROLLBACK")
                throw StoreError(.incompatibleModel, failure.message, storeURL: url)
            }
        } catch let error as StoreError {
            throw error
        } catch let error as PGError {
            _ = try? c.execute("ROLLBACK")
            if error.isUniqueViolation {
                throw StoreError(
                    .uniqueViolation,
                    "the migration cannot add a uniqueness constraint: existing objects are not unique (\(error.message))",
                    storeURL: url)
            }
            throw StoreError(.io, "the migration of \(display) failed: \(error)", storeURL: url)
        } catch {
            _ = try? c.execute("ROLLBACK")
            throw StoreError(.io, "the migration of \(display) failed: \(error)", storeURL: url)
        }
        return PostgreSQLPreparedMigration(c, url: url, namespace: namespace)
    }
}

/// A PostgreSQL migration applied in its open transaction.
final class PostgreSQLPreparedMigration: PreparedMigration {
    let c: PGConnection
    let url: URL
    let namespace: String

    init(_ c: PGConnection, url: URL, namespace: String) {
        self.c = c
        self.url = url
        self.namespace = namespace
    }

    func keep(_ record: MigrationRecord) throws(StoreError) {
        do {
            try PostgreSQLMigrator.steps(namespace, c).setMetadata(SQLiteStore.migrationRecordKey, record.text)
        } catch {
            throw StoreError(.io, "cannot record the migration: \(error)", storeURL: url)
        }
    }

    func commit() throws(StoreError) {
        do {
            try c.execute("COMMIT")
        } catch {
            _ = try? c.execute("ROLLBACK")
            throw StoreError(.io, "cannot commit the migration: \(error)", storeURL: url)
        }
    }

    func rollback() { _ = try? c.execute("ROLLBACK") }

    func forgetRecord() {
        try? PostgreSQLMigrator.steps(namespace, c).setMetadata(SQLiteStore.migrationRecordKey, nil)
    }
}
