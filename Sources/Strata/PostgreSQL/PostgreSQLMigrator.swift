import Foundation

/// Lightweight migration of a PostgreSQL store: the same plans as SQLite stores
/// (``MigrationPlanner``), applied in one transaction under the advisory lock that also guards
/// the store's creation, so two servers starting together migrate it once (the second finds it
/// migrated and changes nothing).
///
/// Each step moves the old tables into a scratch schema, creates the new ones and copies every
/// object over with its key and version (PostgreSQL's DDL is transactional, so a failure leaves
/// everything as it was).
enum PostgreSQLMigrator {
    /// Applies `plan` on `c` inside its open transaction and records `model` in the metadata.
    static func apply(
        _ plan: MigrationPlan, model: ObjectModel, configuration: String?, namespace: String, _ c: PGConnection
    ) throws(PGError) {
        for step in plan.steps { try apply(step, namespace: namespace, c) }
        let target = PostgreSQLSchema(model: model, entities: [], namespace: namespace)
        let hashes = MigrationPlanner.hashes(of: model, configuration: configuration) ?? [:]
        var values: [(String, String?)] = [
            ("entityHashes", JSONValue.object(hashes.mapValues { .string($0) }).jsonText),
            ("model", model.canonicalJSON),
        ]
        values.append(("modelVersion", model.version))
        for (key, value) in values {
            if let value {
                try c.execute(
                    "INSERT INTO \(target.qualified(PostgreSQLSchema.metadataTable)) (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    [.text(key), .text(value)])
            } else {
                try c.execute(
                    "DELETE FROM \(target.qualified(PostgreSQLSchema.metadataTable)) WHERE key = $1", [.text(key)])
            }
        }
    }

    private static func apply(_ step: MigrationStep, namespace: String, _ c: PGConnection) throws(PGError) {
        let old = PostgreSQLSchema(model: step.old, entities: step.oldEntities, namespace: namespace)
        let new = PostgreSQLSchema(model: step.new, entities: step.newEntities, namespace: namespace)
        let stash = PostgreSQLSchema.quote(namespace + "_migrating")
        try c.execute("DROP SCHEMA IF EXISTS \(stash) CASCADE")
        try c.execute("CREATE SCHEMA \(stash)")
        // 1. The old tables (their indexes with them) out of the way.
        let oldTables = old.base.tables.keys.sorted() + old.base.joinTables.map(\.name)
        for name in oldTables { try c.execute("ALTER TABLE \(old.qualified(name)) SET SCHEMA \(stash)") }
        func stashed(_ name: String) -> String { stash + "." + PostgreSQLSchema.quote(name) }

        // 2. The new tables, sequences and indexes (a sequence of a table kept stays as it is).
        let creates = new.createStatements.filter {
            !$0.hasPrefix("CREATE SCHEMA") && !$0.contains(PostgreSQLSchema.quote(PostgreSQLSchema.metadataTable))
                && !$0.contains(PostgreSQLSchema.quote(PostgreSQLSchema.recordsTable))
                && !$0.contains(PostgreSQLSchema.quote(PostgreSQLSchema.appliedTable))
        }
        for statement in creates {
            try c.execute(
                statement.hasPrefix("CREATE SEQUENCE ")
                    ? "CREATE SEQUENCE IF NOT EXISTS " + statement.dropFirst("CREATE SEQUENCE ".count) : statement)
        }

        // 3. Every object of an entity both models have, into its new table.
        for table in new.base.tables.values.sorted(by: { $0.name < $1.name }) {
            for entity in table.entities {
                guard let oldEntity = step.mapping.entities[entity], let oldTable = old.base.table(for: oldEntity)
                else { continue }
                try copy(
                    entity, into: table, from: oldEntity, oldTable, step: step, new: new, stashed(oldTable.name), c)
            }
            // Keys continue past the objects copied (a renamed hierarchy's sequence is new).
            try c.execute(
                "SELECT setval($1::regclass, GREATEST((SELECT COALESCE(max(\"_pk\"), 0) + 1 FROM \(new.qualified(table.name))), nextval($1::regclass)), false)",
                [.text(new.sequence(of: table.name))])
        }
        let (joins, _) = SQLiteMigrator.joinSources(step: step, oldSchema: old.base, newSchema: new.base)
        for (join, oldJoin, swapped, _) in joins {
            guard let oldJoin else { continue }
            let columns = swapped ? "\"target\", \"source\"" : "\"source\", \"target\""
            try c.execute(
                "INSERT INTO \(new.qualified(join.name)) (\"source\", \"target\", \"position\") SELECT \(columns), \"position\" FROM \(stashed(oldJoin))"
            )
        }

        // 4. References to objects deleted with their entity are cleared.
        if step.mapping.removesObjects {
            for table in new.base.tables.values.sorted(by: { $0.name < $1.name }) {
                for column in table.columns {
                    guard case .foreignKey(let relationship) = column,
                        let destination = new.base.table(for: relationship.destination)
                    else { continue }
                    let name = PostgreSQLSchema.quote(column.name)
                    try c.execute(
                        "UPDATE \(new.qualified(table.name)) SET \(name) = NULL WHERE \(name) IS NOT NULL AND \(name) NOT IN (SELECT \"_pk\" FROM \(new.qualified(destination.name)))"
                    )
                }
            }
            for join in new.base.joinTables {
                guard let source = new.base.table(for: join.sourceEntity),
                    let target = new.base.table(for: join.targetEntity)
                else { continue }
                try c.execute(
                    "DELETE FROM \(new.qualified(join.name)) WHERE \"source\" NOT IN (SELECT \"_pk\" FROM \(new.qualified(source.name))) OR \"target\" NOT IN (SELECT \"_pk\" FROM \(new.qualified(target.name)))"
                )
            }
        }
        try c.execute("DROP SCHEMA \(stash) CASCADE")
        for name in old.base.tables.keys.sorted() where new.base.tables[name] == nil {
            try c.execute("DROP SEQUENCE IF EXISTS \(old.sequence(of: name))")
        }
    }

    /// Copies the objects of old entity `oldEntity` into `table` as objects of `entity`.
    private static func copy(
        _ entity: String, into table: SQLiteSchema.Table, from oldEntity: String, _ oldTable: SQLiteSchema.Table,
        step: MigrationStep, new: PostgreSQLSchema, _ source: String, _ c: PGConnection
    ) throws(PGError) {
        let oldColumns = Set(oldTable.columns.map(\.name))
        var names = ["\"_pk\"", "\"_entity\"", "\"_version\""]
        var expressions = ["\"_pk\"", "$1", "\"_version\""]
        var arguments: [PGValue] = [.text(entity), .text(oldEntity)]
        func parameter(_ value: AttributeValue, _ column: SQLiteSchema.Column) -> String {
            arguments.append(PostgreSQLSchema.encode(value))
            return "$\(arguments.count)::\(PostgreSQLSchema.sqlType(column))"
        }
        for column in table.columns {
            let expression: String
            switch SQLiteMigrator.source(of: column, for: entity, step: step, newSchema: new.base) {
            case .old(let name): expression = oldColumns.contains(name) ? PostgreSQLSchema.quote(name) : "NULL"
            case .coalesce(let name, let value):
                expression =
                    oldColumns.contains(name)
                    ? "COALESCE(\(PostgreSQLSchema.quote(name)), \(parameter(value, column)))"
                    : parameter(value, column)
            case .value(let value): expression = parameter(value, column)
            case .null: expression = "NULL"
            }
            names.append(PostgreSQLSchema.quote(column.name))
            expressions.append(expression)
        }
        try c.execute(
            "INSERT INTO \(new.qualified(table.name)) (\(names.joined(separator: ", "))) SELECT \(expressions.joined(separator: ", ")) FROM \(source) WHERE \"_entity\" = $2",
            arguments)
    }
}

/// A migration of one PostgreSQL store, planned and waiting to run.
final class PostgreSQLPendingMigration: PendingMigration {
    let url: URL
    let plan: MigrationPlan
    let model: ObjectModel
    let configuration: String?
    let storeIdentifier: String
    /// The hashes the store had when planned.
    let sourceHashes: [String: String]
    let targetHashes: [String: String]

    init(
        url: URL, plan: MigrationPlan, model: ObjectModel, configuration: String?, storeIdentifier: String,
        sourceHashes: [String: String], targetHashes: [String: String]
    ) {
        self.url = url
        self.plan = plan
        self.model = model
        self.configuration = configuration
        self.storeIdentifier = storeIdentifier
        self.sourceHashes = sourceHashes
        self.targetHashes = targetHashes
    }

    func prepare() throws(StoreError) -> any PreparedMigration {
        let (conninfo, namespace, _) = PostgreSQLStore.connection(from: url, configuration: configuration)
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
            guard found.entityHashes == sourceHashes else {
                _ = try? c.execute("ROLLBACK")
                throw StoreError(
                    .incompatibleModel,
                    "the store changed while its migration was planned: "
                        + SQLiteStore.describeDifferences(stored: found.entityHashes, model: targetHashes),
                    storeURL: url)
            }
            try PostgreSQLMigrator.apply(plan, model: model, configuration: configuration, namespace: namespace, c)
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
    private var metadata: String {
        PostgreSQLSchema.quote(namespace) + "." + PostgreSQLSchema.quote(PostgreSQLSchema.metadataTable)
    }

    init(_ c: PGConnection, url: URL, namespace: String) {
        self.c = c
        self.url = url
        self.namespace = namespace
    }

    func keep(_ record: MigrationRecord) throws(StoreError) {
        do {
            try c.execute(
                "INSERT INTO \(metadata) (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                [.text(SQLiteStore.migrationRecordKey), .text(record.text)])
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
        _ = try? c.execute("DELETE FROM \(metadata) WHERE key = $1", [.text(SQLiteStore.migrationRecordKey)])
    }
}
