import Foundation

/// An SQLite store's persistent history (see `SQLHistory`): its tables live in the store's file.
/// Numbers are the transactions table's `AUTOINCREMENT` keys: saves are written one at a time by
/// the writer connection, so numbers follow commit order, and a rolled-back save takes its number
/// back with it (no gaps); `AUTOINCREMENT` never reuses a number, even after pruning.
extension SQLiteStore {
    /// Creates the history tables where they are missing.
    static func createHistoryTables(_ db: SQLiteConnection, url: URL) throws(StoreError) {
        do {
            try db.execute(
                "CREATE TABLE IF NOT EXISTS \(SQLHistory.transactions) (number INTEGER PRIMARY KEY AUTOINCREMENT, "
                    + "at REAL NOT NULL, author TEXT, context TEXT); "
                    + "CREATE TABLE IF NOT EXISTS \(SQLHistory.changes) (number INTEGER NOT NULL, position INTEGER NOT NULL, "
                    + "entity TEXT NOT NULL, pk INTEGER NOT NULL, op TEXT NOT NULL, version INTEGER NOT NULL, "
                    + "changed TEXT, tombstone TEXT, PRIMARY KEY (number, position)) WITHOUT ROWID")
        } catch {
            throw error.storeError("cannot create the history tables", url: url, entity: nil)
        }
    }

    func storedRow(_ id: ObjectID, _ db: SQLiteConnection) throws -> StoreRow? {
        try keyedRead(id)?(db)
    }

    func beginHistory(at date: Date, _ authorship: HistoryAuthorship, _ db: SQLiteConnection) throws -> Int64 {
        do {
            try db.run(
                "INSERT INTO \(SQLHistory.transactions) (at, author, context) VALUES (?, ?, ?)",
                [
                    .real(date.timeIntervalSince1970), authorship.author.map { .text($0) } ?? .null,
                    authorship.contextName.map { .text($0) } ?? .null,
                ])
            return try db.query("SELECT last_insert_rowid()") { $0.int64(0) }.first ?? 0
        } catch let error as SQLiteError {
            throw writeError(error, "cannot record the history", entity: nil)
        }
    }

    /// Whether the file holds the history tables.
    private func hasHistory(_ db: SQLiteConnection) throws -> Bool {
        try db.query(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(SQLHistory.transactions)]
        ) { $0.int64(0) }.first == 1
    }

    public func history(_ request: HistoryRequest) throws(StoreError) -> [HistoryTransaction] {
        try SQLHistory.collect(request, model: model) { (after, count) throws(StoreError) in
            try read { db in
                guard try hasHistory(db) else { return [] }
                let transactions = try db.query(
                    "SELECT number, at, author, context FROM \(SQLHistory.transactions) WHERE number > ? ORDER BY number LIMIT ?",
                    [.integer(after), .integer(Int64(count))]
                ) {
                    SQLHistory.TransactionRow(
                        number: $0.int64(0), at: $0.double(1), author: $0.isNull(2) ? nil : $0.text(2),
                        context: $0.isNull(3) ? nil : $0.text(3))
                }
                guard let last = transactions.last else { return [] }
                let changes = try db.query(
                    "SELECT number, \(SQLHistory.changeColumns) FROM \(SQLHistory.changes) "
                        + "WHERE number > ? AND number <= ? ORDER BY number, position",
                    [.integer(after), .integer(last.number)]
                ) {
                    SQLHistory.ChangeRow(
                        number: $0.int64(0), entity: $0.text(1), pk: $0.int64(2), op: $0.text(3), version: $0.int64(4),
                        changed: $0.isNull(5) ? nil : $0.text(5), tombstone: $0.isNull(6) ? nil : $0.text(6))
                }
                return SQLHistory.assemble(transactions, changes, store: metadata.identifier, model: model)
            }
        }
    }

    public func lastHistoryNumber() throws(StoreError) -> Int64 {
        try read { db in
            guard try hasHistory(db) else { return 0 }
            return try db.query("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(SQLHistory.transactions)]) {
                $0.int64(0)
            }.first ?? 0
        }
    }

    public func firstHistoryNumber() throws(StoreError) -> Int64? {
        try read { db in
            guard try hasHistory(db) else { return nil }
            return try db.query("SELECT min(number) FROM \(SQLHistory.transactions)") {
                $0.isNull(0) ? nil : $0.int64(0)
            }.first ?? nil
        }
    }

    @discardableResult
    public func deleteHistory(_ pruning: HistoryPruning) throws(StoreError) -> Int {
        if options.readOnly { throw StoreError(.readOnly, "the store is read-only", storeURL: url) }
        let db = try acquireWriter()
        defer { releaseWriter() }
        let condition: String
        let argument: SQLiteValue
        switch pruning {
        case .through(let number): (condition, argument) = ("number <= ?", .integer(number))
        case .before(let date): (condition, argument) = ("at < ?", .real(date.timeIntervalSince1970))
        }
        do {
            guard try hasHistory(db) else { return 0 }
            try db.execute("BEGIN IMMEDIATE")
            try db.run(
                "DELETE FROM \(SQLHistory.changes) WHERE number IN "
                    + "(SELECT number FROM \(SQLHistory.transactions) WHERE \(condition))", [argument])
            try db.run("DELETE FROM \(SQLHistory.transactions) WHERE \(condition)", [argument])
            let deleted = try db.query("SELECT changes()") { $0.int64(0) }.first ?? 0
            try db.execute("COMMIT")
            return Int(deleted)
        } catch {
            try? db.execute("ROLLBACK")
            if let error = error as? SQLiteError { throw writeError(error, "cannot delete history") }
            throw StoreError(.io, "cannot delete history: \(error)", storeURL: url)
        }
    }

    public func expiredHistoryNumber(_ retention: HistoryRetention) throws(StoreError) -> Int64 {
        let transactions = SQLHistory.transactions
        return try read { db in
            guard try hasHistory(db) else { return 0 }
            var bound: Int64 = 0
            if let date = retention.writtenBefore {
                // Read in number order, this stops at the first transaction kept: it reads what
                // expired, and no more.
                let kept = try db.query(
                    "SELECT number FROM \(transactions) WHERE at >= ? ORDER BY number LIMIT 1",
                    [.real(date.timeIntervalSince1970)]
                ) { $0.int64(0) }.first
                if let kept {
                    bound = kept - 1
                } else {
                    bound =
                        try db.query("SELECT max(number) FROM \(transactions)") { $0.isNull(0) ? 0 : $0.int64(0) }
                        .first ?? 0
                }
            }
            if let cap = retention.maxChanges {
                let beyond = try db.query(
                    "SELECT number FROM \(SQLHistory.changes) ORDER BY number DESC, position DESC LIMIT 1 OFFSET ?",
                    [.integer(Int64(cap))]
                ) { $0.int64(0) }.first
                if let beyond { bound = max(bound, beyond) }
            }
            return bound
        }
    }
}
