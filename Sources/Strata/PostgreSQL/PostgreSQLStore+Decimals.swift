import Foundation

extension PostgreSQLStore {
    /// Converts a store's decimal columns held as `text` (their digits) to `numeric`, the type
    /// ``PostgreSQLSchema`` gives them, so that PostgreSQL compares them as numbers: in one
    /// transaction under the advisory lock that guards the store's creation and migration, before
    /// either runs (a migration copies the columns into `numeric` ones). Text that is not a
    /// decimal's digits becomes NULL.
    ///
    /// The columns are those of the decimal attributes of the model the store records (the one
    /// it was written with, which a pending migration differs from), else of `model`.
    /// - Returns: whether the store's decimal columns are `numeric`: false only for a read-only
    ///   store holding text ones, which is left as it is (its decimals are then compared by
    ///   Strata's evaluator alone, see ``PostgreSQLPrefilter``).
    static func convertTextDecimals(
        _ c: PGConnection, namespace: String, configuration: String?, model: ObjectModel, readOnly: Bool
    ) throws(PGError) -> Bool {
        guard let values = try metadataValues(c, namespace: namespace) else { return true }
        let recorded = values["model"].flatMap { try? ObjectModel.load(json: Array($0.utf8)) } ?? model
        let base = SQLiteSchema(
            model: recorded, entities: recorded.entityNames(inConfiguration: configuration) ?? [])
        var decimals: Set<[String]> = []
        for table in base.tables.values {
            for case .attribute(let attribute) in table.columns where attribute.type == .decimal {
                decimals.insert([table.name, attribute.columnName])
            }
        }
        guard !decimals.isEmpty else { return true }
        func textColumns() throws(PGError) -> [String: [String]] {
            let rows = try c.execute(
                "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1 AND data_type = 'text'",
                [.text(namespace)]
            ).rows
            var found: [String: [String]] = [:]
            for row in rows {
                guard let table = row[0], let column = row[1], decimals.contains([table, column]) else { continue }
                found[table, default: []].append(column)
            }
            return found
        }
        guard !(try textColumns()).isEmpty else { return true }
        if readOnly { return false }
        try c.execute("BEGIN")
        do throws(PGError) {
            try c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("strata:" + namespace)])
            // Another server may have converted them while this one waited for the lock.
            for (table, columns) in try textColumns().sorted(by: { $0.key < $1.key }) {
                let changes = columns.sorted().map { name in
                    let column = PostgreSQLSchema.quote(name)
                    return
                        "ALTER COLUMN \(column) TYPE numeric USING CASE WHEN \(column) ~ '\(Self.decimalText)' THEN \(column)::numeric END"
                }
                try c.execute(
                    "ALTER TABLE \(PostgreSQLSchema.quote(namespace)).\(PostgreSQLSchema.quote(table)) \(changes.joined(separator: ", "))"
                )
            }
            try c.execute("COMMIT")
        } catch {
            _ = try? c.execute("ROLLBACK")
            throw error
        }
        return true
    }

    /// A decimal written as text (`AttributeValue.decimalPattern`'s syntax), as a POSIX regular
    /// expression for PostgreSQL's `~`.
    static let decimalText = "^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]{1,3})?$"
}
