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
}
