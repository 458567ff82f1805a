import Foundation

/// Read snapshots (see ``PersistentStore/beginReadSnapshot()``) and the key-ordered reads an
/// export streams through one.
extension SQLiteStore {
    /// Opens a connection of the thread's own and begins a read transaction on it: SQLite takes
    /// its snapshot of the write-ahead log at the first read, made here, so that the snapshot is
    /// the state committed when this returns.
    public func beginReadSnapshot() throws(StoreError) {
        try checkOpen()
        guard let url else { throw StoreError(.invalidRequest, "the store has no file", storeURL: nil) }
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: url.path, readOnly: false)
            if options.memoryMapBytes > 0 { try connection.execute("PRAGMA mmap_size=\(options.memoryMapBytes)") }
            try connection.execute("BEGIN")
            _ = try connection.query("SELECT count(*) FROM \(Self.metadataTable)") { $0.int64(0) }
        } catch let error as SQLiteError {
            throw StoreError(.io, "cannot begin a read snapshot: \(error.message)", storeURL: url, underlying: error)
        } catch {
            throw StoreError(.io, "cannot begin a read snapshot: \(error)", storeURL: url)
        }
        guard snapshots.pin(connection) else {
            try? connection.execute("ROLLBACK")
            throw StoreError(.invalidRequest, "this thread is in a read snapshot of the store already", storeURL: url)
        }
    }

    /// Ends the thread's read transaction and closes its connection.
    public func endReadSnapshot() {
        guard let connection = snapshots.unpin() else { return }
        try? connection.execute("ROLLBACK")
    }

    /// Up to `limit` objects of exactly `entity` (no subentity) whose primary keys are above
    /// `after`, in key order: a walk over a large table in pages that each cost what their rows
    /// cost (an `OFFSET` would read every row before the page again).
    func rows(of entity: String, after: Int64, limit: Int) throws(StoreError) -> [StoreRow] {
        guard entityNames.contains(entity), let table = schema.table(for: entity) else {
            throw StoreError(.notFound, "the store does not hold entity '\(entity)'", storeURL: url, entity: entity)
        }
        let alias = SQLPredicateBuilder.rootAlias
        let columns = ["_pk", "_entity", "_version"] + table.columns.map(\.name)
        var sql = "SELECT " + columns.map { "\(alias).\(SQLiteSchema.quote($0))" }.joined(separator: ", ")
        sql += " FROM \(SQLiteSchema.quote(table.name)) AS \(alias) WHERE \(alias).\"_pk\" > ?"
        var arguments: [SQLiteValue] = [.integer(after)]
        if table.entities.count > 1 {
            sql += " AND \(alias).\"_entity\" = ?"
            arguments.append(.text(entity))
        }
        sql += " ORDER BY \(alias).\"_pk\" LIMIT ?"
        arguments.append(.integer(Int64(limit)))
        let only = schema.onlyPlan(of: table)
        let home = only.flatMap { homes[$0.entity] }
        return try read { db in
            try db.query(sql, arguments) { statement in try self.decodeRow(statement, only: only, home: home, db: db) }
        }
    }
}
