import Foundation

/// The steps of a lightweight migration that every SQL store takes alike, written in its
/// dialect and run on its connection inside the migration's transaction: copying rows and pairs
/// from the old tables, clearing references to objects removed with their entity, and recording
/// the model in the metadata. What a database does its own way (SQLite alters a table in place
/// or rebuilds it under a temporary name; PostgreSQL moves the old tables to a scratch schema)
/// stays with its migrator.
struct SQLMigrationSteps<Dialect: SQLDialect, Connection: SQLExecutor> where Connection.Value == Dialect.Value {
    let dialect: Dialect
    let connection: Connection
    /// The store's metadata table (its name, unquoted).
    let metadataTable: String

    /// Records `model` in the metadata: its entity hashes for `configuration`, its canonical JSON,
    /// and its version (removed when it has none).
    func recordModel(_ model: ObjectModel, configuration: String?) throws(Connection.Failure) {
        let hashes = MigrationPlanner.hashes(of: model, configuration: configuration) ?? [:]
        try setMetadata("entityHashes", JSONValue.object(hashes.mapValues { .string($0) }).jsonText)
        try setMetadata("model", model.canonicalJSON)
        try setMetadata("modelVersion", model.version)
    }

    /// Sets metadata `key` to `value`, or removes it when `value` is nil.
    func setMetadata(_ key: String, _ value: String?) throws(Connection.Failure) {
        let table = dialect.table(metadataTable)
        var arguments = SQLArguments(dialect)
        let sql: String
        if let value {
            sql =
                "INSERT INTO \(table) (key, value) VALUES (\(arguments.add(Dialect.text(key))), \(arguments.add(Dialect.text(value)))) "
                + "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        } else {
            sql = "DELETE FROM \(table) WHERE key = \(arguments.add(Dialect.text(key)))"
        }
        try connection.run(sql, arguments.values)
    }

    /// Fills join table `join` from the old one, named `old` as statements write it; source and
    /// target change places when the relationship's sides did.
    func copyPairs(into join: String, from old: String, swapped: Bool) throws(Connection.Failure) {
        let columns = swapped ? "\"target\", \"source\"" : "\"source\", \"target\""
        try connection.run(
            "INSERT INTO \(dialect.table(join)) (\"source\", \"target\", \"position\") SELECT \(columns), \"position\" FROM \(old)",
            [])
    }

    /// Copies the rows of `entities` (new names, all mapped from old ones) from `old`, named
    /// `source` as statements write it, into the new `table`, with their keys and versions,
    /// mapping entity names and columns.
    func copyRows(
        into table: SQLiteSchema.Table, from old: SQLiteSchema.Table, at source: String, entities: [String],
        step: MigrationStep, newSchema: SQLiteSchema
    ) throws(Connection.Failure) {
        guard !entities.isEmpty else { return }
        let oldName = { (entity: String) in step.mapping.entities[entity]! }
        var names = ["\"_pk\"", "\"_entity\"", "\"_version\""]
        var expressions = ["\"_pk\""]
        var arguments = SQLArguments(dialect)
        let renames = entities.filter { oldName($0) != $0 }
        if renames.isEmpty {
            expressions.append("\"_entity\"")
        } else {
            var expression = "CASE \"_entity\""
            for entity in renames {
                expression +=
                    " WHEN \(arguments.add(Dialect.text(oldName(entity)))) THEN \(arguments.add(Dialect.text(entity)))"
            }
            expressions.append(expression + " ELSE \"_entity\" END")
        }
        expressions.append("\"_version\"")
        let oldColumns = Set(old.columns.map(\.name))
        for column in table.columns {
            names.append(dialect.quote(column.name))
            let sources = entities.map { step.source(of: column, for: $0, newSchema: newSchema) }
            // One expression when every entity's is the same; otherwise one per entity.
            var first = SQLArguments(dialect, after: arguments.count)
            let firstSQL = value(sources[0], column, oldColumns, &first)
            let same = sources.dropFirst().allSatisfy {
                var other = SQLArguments(dialect, after: arguments.count)
                return value($0, column, oldColumns, &other) == firstSQL && other.values == first.values
            }
            if same {
                expressions.append(firstSQL)
                arguments.append(first)
            } else {
                var expression = "CASE \"_entity\""
                for (entity, source) in zip(entities, sources) {
                    expression +=
                        " WHEN \(arguments.add(Dialect.text(oldName(entity)))) THEN \(value(source, column, oldColumns, &arguments))"
                }
                expressions.append(expression + " ELSE NULL END")
            }
        }
        var oldNames: [String] = []
        for entity in entities { oldNames.append(arguments.add(Dialect.text(oldName(entity)))) }
        try connection.run(
            "INSERT INTO \(dialect.table(table.name)) (\(names.joined(separator: ", "))) SELECT \(expressions.joined(separator: ", ")) FROM \(source) WHERE \"_entity\" IN (\(oldNames.joined(separator: ", ")))",
            arguments.values)
    }

    /// The SQL of a column's value taken from `source`, its parameters added to `arguments`.
    private func value(
        _ source: MigrationMapping.Source, _ column: SQLiteSchema.Column, _ oldColumns: Set<String>,
        _ arguments: inout SQLArguments<Dialect>
    ) -> String {
        switch source {
        case .old(let name):
            return oldColumns.contains(name) ? dialect.quote(name) : "NULL"
        case .coalesce(let name, let value):
            let parameter = arguments.add(Dialect.encode(value), for: column)
            return oldColumns.contains(name) ? "COALESCE(\(dialect.quote(name)), \(parameter))" : parameter
        case .converted(let name, let from, let to, let value):
            guard oldColumns.contains(name) else { return "NULL" }
            let converted = dialect.convert(dialect.quote(name), from: from, to: to)
            guard let value else { return converted }
            return "COALESCE(\(converted), \(arguments.add(Dialect.encode(value), for: column)))"
        case .member(let table):
            return "(SELECT \"member\" FROM \(dialect.quote(table)) WHERE \"owner\" = \"_pk\")"
        case .value(let value):
            return arguments.add(Dialect.encode(value), for: column)
        case .null:
            return "NULL"
        }
    }

    /// Clears references to objects deleted with their entity: foreign keys to them become NULL,
    /// join-table pairs with them go.
    func clearReferencesToRemovedObjects(in schema: SQLiteSchema) throws(Connection.Failure) {
        for table in schema.tables.values.sorted(by: { $0.name < $1.name }) {
            for column in table.columns {
                guard case .foreignKey(let relationship) = column,
                    let destination = schema.table(for: relationship.destination)
                else { continue }
                let name = dialect.quote(column.name)
                try connection.run(
                    "UPDATE \(dialect.table(table.name)) SET \(name) = NULL WHERE \(name) IS NOT NULL AND \(name) NOT IN (SELECT \"_pk\" FROM \(dialect.table(destination.name)))",
                    [])
            }
        }
        for join in schema.joinTables {
            guard let source = schema.table(for: join.sourceEntity), let target = schema.table(for: join.targetEntity)
            else { continue }
            try connection.run(
                "DELETE FROM \(dialect.table(join.name)) WHERE \"source\" NOT IN (SELECT \"_pk\" FROM \(dialect.table(source.name))) OR \"target\" NOT IN (SELECT \"_pk\" FROM \(dialect.table(target.name)))",
                [])
        }
    }
}

/// Where a new join table takes its rows from.
struct SQLJoinSource {
    /// The join table of the new schema.
    let join: JoinTableDescription
    /// The old join table its pairs come from, if any.
    let old: String?
    /// Whether the old table's source and target columns change places.
    let swapped: Bool
    /// Whether it is the old table, kept as it is.
    let keep: Bool
}

extension MigrationStep {
    /// Where each join table of `newSchema` takes its rows from, and the old join tables used.
    func joinSources(oldSchema: SQLiteSchema, newSchema: SQLiteSchema) -> ([SQLJoinSource], Set<String>) {
        var sources: [SQLJoinSource] = []
        var consumed: Set<String> = []
        for join in newSchema.joinTables {
            var source: (String, Bool)?
            if let oldEntity = mapping.entities[join.sourceEntity],
                let oldName = mapping.relationships[join.sourceEntity]?[join.sourceRelationship] ?? nil,
                case .joinTable(let oldJoin, let wasSource)? = old.storage(of: oldName, in: oldEntity),
                oldSchema.joinTables.contains(where: { $0.name == oldJoin.name }), !consumed.contains(oldJoin.name)
            {
                source = (oldJoin.name, !wasSource)
                consumed.insert(oldJoin.name)
            }
            let keep = source.map { $0.0 == join.name && !$0.1 } ?? false
            sources.append(SQLJoinSource(join: join, old: source?.0, swapped: source?.1 ?? false, keep: keep))
        }
        return (sources, consumed)
    }

    /// Where the values of `column` come from for rows of new entity `entity`.
    func source(of column: SQLiteSchema.Column, for entity: String, newSchema: SQLiteSchema) -> MigrationMapping.Source
    {
        guard (newSchema.columnsByEntity[entity] ?? []).contains(where: { $0.name == column.name }) else {
            return .null
        }
        switch column {
        case .attribute(let attribute):
            // The mapping names old attributes; their columns may carry a suffix.
            let oldEntity = mapping.entities[entity] ?? entity
            switch mapping.attributes[entity]?[attribute.name] ?? .null {
            case .old(let name): return .old(old.columnName(of: name, in: oldEntity))
            case .coalesce(let name, let value): return .coalesce(old.columnName(of: name, in: oldEntity), value)
            case .converted(let name, let from, let to, let value):
                return .converted(old.columnName(of: name, in: oldEntity), from: from, to: to, default: value)
            case let other: return other
            }
        case .foreignKey(let relationship):
            guard let oldName = mapping.relationships[entity]?[relationship.name] ?? nil else { return .null }
            let oldEntity = mapping.entities[entity] ?? entity
            if old.relationship(oldName, of: oldEntity)?.isToMany == true {
                let place = new.declaringEntity(of: relationship.name, in: entity) ?? entity
                return .member(table: MigrationCheck.membersTable(entity: place, relationship: relationship.name))
            }
            return .old(oldName)
        }
    }
}
