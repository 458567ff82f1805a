import Foundation

/// Runs a migration step that a ``MappingModel`` describes on an SQLite store, inside the
/// migration's open transaction (``MappingRun``): every object is read, the destination objects
/// are made, the old tables are replaced by the destination version's, and the objects are
/// written into them.
enum SQLiteMappingMigrator {
    typealias Key = MappingRun.Key

    /// Applies `step` (which has a mapping model) on `db`; the transaction is open.
    static func apply(_ step: MigrationStep, db: SQLiteConnection) throws(SQLiteError) {
        guard let mapping = step.mappingModel else { return }
        let oldSchema = SQLiteSchema(model: step.old, entities: step.oldEntities)
        let newSchema = SQLiteSchema(model: step.new, entities: step.newEntities)
        let graph = try read(oldSchema, db: db)
        let builder = MappingRun.Builder(step: step, mapping: mapping, graph: graph, schema: newSchema)
        do {
            try builder.run()
            try builder.checkRequired()
        } catch let error as MappingRun.Failure {
            throw failure(error.message)
        } catch {
            throw failure("a migration policy failed: \(error)")
        }
        for table in oldSchema.tables.values.map(\.name).sorted() + oldSchema.joinTables.map(\.name) {
            try db.execute("DROP TABLE IF EXISTS \(SQLiteSchema.quote(table))")
        }
        for statement in newSchema.createStatements { try db.execute(statement) }
        try write(builder, schema: newSchema, db: db)
    }

    /// Reads every object and join table of `schema`.
    private static func read(_ schema: SQLiteSchema, db: SQLiteConnection) throws(SQLiteError)
        -> MappingRun.SourceGraph
    {
        var graph = MappingRun.SourceGraph(schema)
        for table in schema.tables.values.sorted(by: { $0.name < $1.name }) {
            let columns = ["\"_pk\"", "\"_entity\""] + table.columns.map { SQLiteSchema.quote($0.name) }
            let rows: [(Key, String, [String: SQLiteValue])] = try sqlite {
                try db.query(
                    "SELECT \(columns.joined(separator: ", ")) FROM \(SQLiteSchema.quote(table.name)) ORDER BY \"_pk\""
                ) { row in
                    var cells: [String: SQLiteValue] = [:]
                    for (index, column) in table.columns.enumerated() where cells[column.name] == nil {
                        cells[column.name] = row.value(Int32(index + 2))
                    }
                    return (Key(table: table.name, pk: row.int64(0)), row.text(1), cells)
                }
            }
            for (key, entity, cells) in rows { graph.add(key, entity: entity, cells: cells) }
        }
        for join in schema.joinTables {
            let targetPosition = join.isTargetOrdered ? "\"target_position\"" : "0"
            let pairs: [(source: Int64, target: Int64, position: Int64, targetPosition: Int64)] = try sqlite {
                try db.query(
                    "SELECT \"source\", \"target\", \"position\", \(targetPosition) FROM \(SQLiteSchema.quote(join.name))"
                ) { ($0.int64(0), $0.int64(1), $0.int64(2), $0.int64(3)) }
            }
            graph.addPairs(join, pairs)
        }
        return graph
    }

    /// Inserts the destination objects and join-table pairs.
    private static func write(_ builder: MappingRun.Builder, schema: SQLiteSchema, db: SQLiteConnection)
        throws(SQLiteError)
    {
        for key in builder.order {
            let (columns, cells) = builder.row(key)
            let names = ["\"_pk\"", "\"_entity\"", "\"_version\""] + columns.map { SQLiteSchema.quote($0.name) }
            let values: [SQLiteValue] = [.integer(key.pk), .text(builder.objects[key]!.entity), .integer(1)] + cells
            try db.run(
                "INSERT INTO \(SQLiteSchema.quote(key.table)) (\(names.joined(separator: ", "))) VALUES (\(values.map { _ in "?" }.joined(separator: ", ")))",
                values)
        }
        for join in schema.joinTables {
            var columns = "\"source\", \"target\", \"position\""
            if join.isTargetOrdered { columns += ", \"target_position\"" }
            for row in builder.joinRows(join) {
                try db.run(
                    "INSERT OR IGNORE INTO \(SQLiteSchema.quote(join.name)) (\(columns)) VALUES (\(row.map { _ in "?" }.joined(separator: ", ")))",
                    row.map { .integer($0) })
            }
        }
    }

    static func failure(_ message: String) -> SQLiteError {
        SQLiteError(code: SQLiteResultCode.error.rawValue, message: message)
    }

    /// Runs an SQLite call that throws untyped errors, rethrowing its `SQLiteError`.
    static func sqlite<T>(_ body: () throws -> T) throws(SQLiteError) -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw failure("\(error)")
        }
    }
}
