import Foundation

/// Read snapshots (see ``PersistentStore/beginReadSnapshot()``).
extension PostgreSQLStore {
    /// Takes a pooled connection for the thread and begins a `REPEATABLE READ` transaction on it:
    /// PostgreSQL takes the transaction's snapshot at its first statement, made here.
    public func beginReadSnapshot() throws(StoreError) {
        try checkOpen()
        let connection: PGConnection
        do {
            connection = try pool.checkout()
        } catch {
            throw storeError(error, "cannot connect to PostgreSQL")
        }
        do {
            _ = try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            _ = try connection.execute("SELECT 1")
        } catch {
            pool.checkin(connection, after: error)
            throw storeError(error, "cannot begin a read snapshot")
        }
        guard snapshots.pin(connection) else {
            _ = try? connection.execute("ROLLBACK")
            pool.checkin(connection)
            throw StoreError(.invalidRequest, "this thread is in a read snapshot of the store already", storeURL: url)
        }
    }

    /// Ends the thread's transaction and gives its connection back to the pool.
    public func endReadSnapshot() {
        guard let connection = snapshots.unpin() else { return }
        _ = try? connection.execute("ROLLBACK")
        pool.checkin(connection)
    }

    /// Up to `limit` objects of exactly `entity` (no subentity) whose primary keys are above
    /// `after`, in key order (see ``SQLiteStore``'s method of the same name).
    func rows(of entity: String, after: Int64, limit: Int) throws(StoreError) -> [StoreRow] {
        guard entityNames.contains(entity), let table = schema.base.table(for: entity) else {
            throw StoreError(.notFound, "the store does not hold entity '\(entity)'", storeURL: url, entity: entity)
        }
        var sql = "SELECT \(schema.selectList(table, alias: "t")) FROM \(schema.qualified(table.name)) AS t"
        sql += " WHERE t.\"_pk\" > $1"
        var arguments: [PGValue] = [.integer(after)]
        if table.entities.count > 1 {
            sql += " AND t.\"_entity\" = $2"
            arguments.append(.text(entity))
        }
        sql += " ORDER BY t.\"_pk\" LIMIT \(max(1, limit))"
        return try reading { c in
            let rows = try c.execute(sql, arguments).rows
            let resolver = PostgreSQLResolver(store: self, connection: c)
            return try rows.map { try decodeRow($0, table: table, resolver: resolver) }
        }
    }
}
