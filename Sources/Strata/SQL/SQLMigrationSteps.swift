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

    /// Fills the new join table of `source` from its old join table, named `old` as statements
    /// write it, or from its temporary links table: source and target change places when the
    /// relationship's sides did, and each side's order comes from the old column that held it,
    /// or, for a side that had none, from the members' primary keys.
    func fillJoin(_ source: SQLJoinSource, from old: String?) throws(Connection.Failure) {
        let pairs: String
        if let old {
            let orders = source.readsTargetPosition ? ", \"target_position\" AS \"otp\"" : ""
            pairs = "SELECT \"source\" AS \"s\", \"target\" AS \"t\", \"position\" AS \"op\"\(orders) FROM \(old)"
        } else if let links = source.links {
            pairs =
                "SELECT \"owner\" AS \"s\", \"member\" AS \"t\" FROM \(dialect.quote(SQLJoinSource.linksTable(links.join)))"
        } else {
            return
        }
        let (from, to) = source.swapped ? ("\"t\"", "\"s\"") : ("\"s\"", "\"t\"")
        func order(_ column: String?, partition: String, by other: String) -> String {
            switch column {
            case "position": "\"op\""
            case "target_position": "\"otp\""
            default: "ROW_NUMBER() OVER (PARTITION BY \(partition) ORDER BY \(other)) - 1"
            }
        }
        var columns = "\"source\", \"target\", \"position\""
        var values = "\(from), \(to), \(order(source.position, partition: from, by: to))"
        if source.join.isTargetOrdered {
            columns += ", \"target_position\""
            values += ", \(order(source.targetPosition, partition: to, by: from))"
        }
        try connection.run(
            "INSERT INTO \(dialect.table(source.join.name)) (\(columns)) SELECT \(values) FROM (\(pairs)) AS \"pairs\"",
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
    var old: String? = nil
    /// Whether source and target change places (the old table's, or the links' owner and member).
    var swapped = false
    /// Whether it is the old table, kept as it is.
    var keep = false
    /// The old relationship whose links (from its foreign key, or its inverse's) fill it, kept
    /// in a temporary table (``linksTable(_:)``) made before the step moves anything.
    var links: Links? = nil
    /// The old column `position` is copied from (`position` or `target_position`); nil: the
    /// members' primary keys order each list.
    var position: String? = nil
    /// The old column `target_position` is copied from, when the new table has one; nil: keys.
    var targetPosition: String? = nil

    /// An old relationship of an entity, read into the links table of join table `join`.
    struct Links: Sendable, Hashable {
        var join: String
        var entity: String
        var relationship: String
    }

    /// Whether the copy reads the old table's `target_position`.
    var readsTargetPosition: Bool { position == "target_position" || targetPosition == "target_position" }

    /// The temporary table of (owner, member) pairs that fills join table `join`.
    static func linksTable(_ join: String) -> String { "_strata_links_\(join)" }
}

extension MigrationStep {
    /// The old relationships whose links fill a new join table through a temporary table.
    func links(oldSchema: SQLiteSchema) -> [SQLJoinSource.Links] {
        guard mappingModel == nil else { return [] }
        return joinSources(oldSchema: oldSchema, newSchema: SQLiteSchema(model: new, entities: newEntities)).0
            .compactMap(\.links)
    }

    /// Where each join table of `newSchema` takes its rows from, and the old join tables used:
    /// the old relationship of its source side (else of its target side, with the sides
    /// swapped) gives its pairs, from the old join table when it had one, else from its foreign
    /// key or its inverse's.
    func joinSources(oldSchema: SQLiteSchema, newSchema: SQLiteSchema) -> ([SQLJoinSource], Set<String>) {
        var sources: [SQLJoinSource] = []
        var consumed: Set<String> = []
        func side(_ entity: String, _ relationship: String?) -> (entity: String, name: String)? {
            guard let relationship, let oldEntity = mapping.entities[entity],
                let oldName = mapping.relationships[entity]?[relationship] ?? nil,
                old.relationship(oldName, of: oldEntity) != nil
            else { return nil }
            return (old.declaringEntity(of: oldName, in: oldEntity) ?? oldEntity, oldName)
        }
        for join in newSchema.joinTables {
            var source = SQLJoinSource(join: join)
            let reversed: Bool
            let from: (entity: String, name: String)
            if let found = side(join.sourceEntity, join.sourceRelationship) {
                (from, reversed) = (found, false)
            } else if let found = side(join.targetEntity, join.targetRelationship) {
                (from, reversed) = (found, true)
            } else {
                sources.append(source)
                continue
            }
            switch old.storage(of: from.name, in: from.entity) {
            case .joinTable(let oldJoin, let wasSource):
                guard oldSchema.joinTables.contains(where: { $0.name == oldJoin.name }),
                    !consumed.contains(oldJoin.name)
                else { break }
                consumed.insert(oldJoin.name)
                source.old = oldJoin.name
                source.swapped = wasSource == reversed
                let orders = (oldJoin.isOrdered ? "position" : nil, oldJoin.isTargetOrdered ? "target_position" : nil)
                let (sourceOrder, targetOrder) = source.swapped ? (orders.1, orders.0) : (orders.0, orders.1)
                // An ordered side takes its old order, or its members' keys when it had none; an
                // unordered one keeps the old positions of its side when it is the same side.
                if join.isOrdered {
                    source.position = sourceOrder
                } else {
                    source.position = source.swapped ? nil : "position"
                }
                source.targetPosition = targetOrder
                source.keep =
                    oldJoin.name == join.name && !source.swapped && source.position == "position"
                    && (!join.isTargetOrdered || source.targetPosition == "target_position")
            case .foreignKey, .inverseForeignKey:
                source.links = SQLJoinSource.Links(join: join.name, entity: from.entity, relationship: from.name)
                source.swapped = reversed
            case nil:
                break
            }
            sources.append(source)
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
            let place = new.declaringEntity(of: relationship.name, in: entity) ?? entity
            if mapping.inverseFills.contains(MigrationMapping.Link(entity: place, relationship: relationship.name)) {
                return .member(table: MigrationCheck.membersTable(entity: place, relationship: relationship.name))
            }
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
