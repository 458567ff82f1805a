import Foundation

/// Runs a migration step that a ``MappingModel`` describes on a PostgreSQL store, inside the
/// migration's open transaction (``MappingRun``, as SQLite stores run it): every object is read,
/// its values converted from PostgreSQL's column types to the form the mapping step holds them
/// in, the destination objects are made, the old tables are dropped and the destination
/// version's created, and the objects are written into them, each value converted to its
/// column's type. A hierarchy's key sequence stays when its table does, and continues past every
/// key written. PostgreSQL's DDL is transactional: a failure leaves the store as it was.
enum PostgreSQLMappingMigrator {
    typealias Key = MappingRun.Key

    /// Applies `step` (which has a mapping model) in `namespace` on `c`; the transaction is open.
    static func apply(_ step: MigrationStep, namespace: String, _ c: PGConnection) throws(PGError) {
        guard let mapping = step.mappingModel else { return }
        let old = PostgreSQLSchema(model: step.old, entities: step.oldEntities, namespace: namespace)
        let new = PostgreSQLSchema(model: step.new, entities: step.newEntities, namespace: namespace)
        let graph = try read(old, c)
        let builder = MappingRun.Builder(step: step, mapping: mapping, graph: graph, schema: new.base)
        do {
            try builder.run()
            try builder.checkRequired()
        } catch let error as MappingRun.Failure {
            throw PGError(message: error.message)
        } catch {
            throw PGError(message: "a migration policy failed: \(error)")
        }
        for name in old.base.tables.values.map(\.name).sorted() + old.base.joinTables.map(\.name) {
            try c.execute("DROP TABLE IF EXISTS \(old.qualified(name))")
        }
        let kept = Set(new.base.tables.values.map(\.name))
        for name in old.base.tables.values.map(\.name).sorted() where !kept.contains(name) {
            try c.execute("DROP SEQUENCE IF EXISTS \(old.sequence(of: name))")
        }
        try PostgreSQLMigrator.createTables(new, c)
        try write(builder, new, c)
        for name in kept.sorted() { try PostgreSQLMigrator.continueKeys(of: name, in: new, c) }
    }

    /// Reads every object and join table of `schema`.
    private static func read(_ schema: PostgreSQLSchema, _ c: PGConnection) throws(PGError) -> MappingRun.SourceGraph {
        var graph = MappingRun.SourceGraph(schema.base)
        for table in schema.base.tables.values.sorted(by: { $0.name < $1.name }) {
            let columns = ["\"_pk\"", "\"_entity\""] + table.columns.map { PostgreSQLSchema.quote($0.name) }
            let rows = try c.execute(
                "SELECT \(columns.joined(separator: ", ")) FROM \(schema.qualified(table.name)) ORDER BY \"_pk\""
            ).rows
            for row in rows {
                guard let pk = row[0].flatMap({ Int64($0) }), let entity = row[1] else { continue }
                var cells: [String: SQLiteValue] = [:]
                for (index, column) in table.columns.enumerated() where cells[column.name] == nil {
                    cells[column.name] = cell(row[index + 2], column)
                }
                graph.add(Key(table: table.name, pk: pk), entity: entity, cells: cells)
            }
        }
        for join in schema.base.joinTables {
            let targetPosition = join.isTargetOrdered ? "\"target_position\"" : "0"
            let rows = try c.execute(
                "SELECT \"source\", \"target\", \"position\", \(targetPosition) FROM \(schema.qualified(join.name))"
            ).rows
            graph.addPairs(
                join,
                rows.map { row in
                    let numbers = row.map { $0.flatMap { Int64($0) } ?? 0 }
                    return (numbers[0], numbers[1], numbers[2], numbers[3])
                })
        }
        return graph
    }

    /// A PostgreSQL column value (as text) in the form a mapping step holds it.
    private static func cell(_ text: String?, _ column: SQLiteSchema.Column) -> SQLiteValue {
        switch column {
        case .attribute(let attribute): SQLiteSchema.encode(PostgreSQLSchema.decode(text, as: attribute.type))
        case .foreignKey: text.flatMap { Int64($0) }.map { .integer($0) } ?? .null
        }
    }

    /// A value in the form a mapping step holds it, as PostgreSQL column `column` takes it.
    private static func parameter(_ cell: SQLiteValue, _ column: SQLiteSchema.Column) -> PGValue {
        switch column {
        case .attribute(let attribute): PostgreSQLSchema.encode(MappingRun.decode(cell, attribute.type))
        case .foreignKey:
            if case .integer(let pk) = cell { .integer(pk) } else { .null }
        }
    }

    /// Inserts the destination objects and join-table pairs.
    private static func write(_ builder: MappingRun.Builder, _ schema: PostgreSQLSchema, _ c: PGConnection)
        throws(PGError)
    {
        for key in builder.order {
            let (columns, cells) = builder.row(key)
            let names = ["\"_pk\"", "\"_entity\"", "\"_version\""] + columns.map { PostgreSQLSchema.quote($0.name) }
            let values: [PGValue] =
                [.integer(key.pk), .text(builder.objects[key]!.entity), .integer(1)]
                + zip(cells, columns).map { parameter($0, $1) }
            try c.execute(
                "INSERT INTO \(schema.qualified(key.table)) (\(names.joined(separator: ", "))) VALUES (\(placeholders(values.count)))",
                values)
        }
        for join in schema.base.joinTables {
            var columns = "\"source\", \"target\", \"position\""
            if join.isTargetOrdered { columns += ", \"target_position\"" }
            for row in builder.joinRows(join) {
                try c.execute(
                    "INSERT INTO \(schema.qualified(join.name)) (\(columns)) VALUES (\(placeholders(row.count))) ON CONFLICT DO NOTHING",
                    row.map { .integer($0) })
            }
        }
    }

    private static func placeholders(_ count: Int) -> String {
        (1...count).map { "$\($0)" }.joined(separator: ", ")
    }
}
