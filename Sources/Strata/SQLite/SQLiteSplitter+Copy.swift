import Foundation

/// Copying rows in chunked, resumable transactions.
extension SQLiteSplitter {
    /// Copies up to `chunkSize` rows of `table` after the last copied key, in one transaction.
    /// - Returns: the rows copied.
    static func copyChunk(
        _ table: SQLiteSchema.Table, target: Target, source: SQLiteConnection, sourceSchema: SQLiteSchema,
        last: inout [String: JSONValue], chunkSize: Int
    ) throws(StoreError) -> Int {
        let db = target.db!
        let columns = ["\"_pk\"", "\"_entity\"", "\"_version\""] + table.columns.map { quote($0.name) }
        var (filter, arguments) = entityFilter(table, sourceSchema: sourceSchema)
        filter = filter.isEmpty ? " WHERE \"_pk\" > ?" : filter + " AND \"_pk\" > ?"
        var after: Int64 = Int64.min
        if case .integer(let key)? = last[table.name] { after = key }
        arguments += [.integer(after), .integer(Int64(chunkSize))]
        let list = columns.joined(separator: ", ")
        var count = 0
        do {
            let select = try source.statement(
                "SELECT \(list) FROM \(quote(table.name))\(filter) ORDER BY \"_pk\" LIMIT ?")
            try select.bind(arguments)
            try db.execute("BEGIN IMMEDIATE")
            let insert = try db.statement(
                "INSERT INTO \(quote(table.name)) (\(list)) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
            )
            let width = Int32(columns.count)
            while try select.step() {
                try insert.copyRow(of: select, columns: width)
                after = select.int64(0)
                count += 1
            }
            insert.reset()
            if count > 0 {
                last[table.name] = .integer(after)
                try recordProgress(last, in: db)
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw fail(target, error)
        }
        return count
    }

    /// Copies up to `chunkSize` pairs of a join table after the last copied pair, in one transaction.
    static func copyJoinChunk(
        _ join: JoinTableDescription, target: Target, source: SQLiteConnection, last: inout [String: JSONValue],
        chunkSize: Int
    ) throws(StoreError) -> Int {
        let db = target.db!
        var after: (Int64, Int64) = (Int64.min, Int64.min)
        if case .array(let pair)? = last[join.name], pair.count == 2, case .integer(let first) = pair[0],
            case .integer(let second) = pair[1]
        {
            after = (first, second)
        }
        var count = 0
        // A many-to-many ordered on both sides keeps the other side's order too.
        let columns = ["source", "target", "position"] + (join.isTargetOrdered ? ["target_position"] : [])
        let list = columns.map(quote).joined(separator: ", ")
        do {
            let select = try source.statement(
                "SELECT \(list) FROM \(quote(join.name)) WHERE (\"source\", \"target\") > (?, ?) ORDER BY \"source\", \"target\" LIMIT ?"
            )
            try select.bind([.integer(after.0), .integer(after.1), .integer(Int64(chunkSize))])
            try db.execute("BEGIN IMMEDIATE")
            let insert = try db.statement(
                "INSERT INTO \(quote(join.name)) (\(list)) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
            )
            while try select.step() {
                try insert.copyRow(of: select, columns: Int32(columns.count))
                after = (select.int64(0), select.int64(1))
                count += 1
            }
            insert.reset()
            if count > 0 {
                last[join.name] = .array([.integer(after.0), .integer(after.1)])
                try recordProgress(last, in: db)
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw fail(target, error)
        }
        return count
    }

    /// Saves the last copied key of every table in the target, inside the chunk's transaction, so a
    /// rerun continues after it.
    static func recordProgress(_ last: [String: JSONValue], in db: SQLiteConnection) throws(SQLiteError) {
        try db.run(
            "UPDATE \(SQLiteStore.metadataTable) SET value = ? WHERE key = ?",
            [.text(JSONValue.object(last).jsonText), .text(progressKey)])
    }
}
