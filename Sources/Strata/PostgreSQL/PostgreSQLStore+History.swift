import Foundation

/// A PostgreSQL store's persistent history (see `SQLHistory`), in the store's schema beside its
/// tables, shared by every server that opens the store.
///
/// Numbers come from a one-row counter that each save raises as the last write of its
/// transaction: the row stays locked until the transaction ends, so the next save's number is
/// taken only after this one committed (or rolled back, taking its number back). Numbers thus
/// follow commit order without gaps, and a reader that saw number n has seen everything before
/// it; the price is that the last moments of two history-recording saves (the counter, the
/// history rows, the commit) do not overlap.
extension PostgreSQLStore {
    /// The one-row table holding the last history number issued.
    static let historyCounterTable = "_strata_history_counter"

    /// The history tables, created with the other housekeeping tables.
    static let historyTables: [(String, String)] = [
        (historyCounterTable, "id integer PRIMARY KEY, last bigint NOT NULL"),
        (
            SQLHistory.transactions,
            "number bigint PRIMARY KEY, at double precision NOT NULL, author text, context text"
        ),
        (
            SQLHistory.changes,
            "number bigint NOT NULL, position integer NOT NULL, entity text NOT NULL, pk bigint NOT NULL, "
                + "op text NOT NULL, version bigint NOT NULL, changed text, tombstone text, PRIMARY KEY (number, position)"
        ),
    ]

    func storedRow(_ id: ObjectID, _ c: PGConnection) throws -> StoreRow? {
        guard let pk = id.primaryKey, let table = schema.base.table(for: id.entityName) else { return nil }
        return try row(pk, table: table, c)
    }

    func beginHistory(at date: Date, _ authorship: HistoryAuthorship, _ c: PGConnection) throws -> Int64 {
        let rows = try c.execute(
            "WITH n AS (UPDATE \(schema.qualified(Self.historyCounterTable)) SET last = last + 1 WHERE id = 1 RETURNING last) "
                + "INSERT INTO \(schema.qualified(SQLHistory.transactions)) (number, at, author, context) "
                + "SELECT last, $1::double precision, $2, $3 FROM n RETURNING number",
            [
                .text(String(date.timeIntervalSince1970)), authorship.author.map { .text($0) } ?? .null,
                authorship.contextName.map { .text($0) } ?? .null,
            ]
        ).rows
        guard let number = rows.first?.first.flatMap({ $0 }).flatMap({ Int64($0) }) else {
            throw StoreError(.io, "the store's history counter is missing", storeURL: url)
        }
        return number
    }

    /// Whether the store's schema holds the history tables.
    private func hasHistory(_ c: PGConnection) throws(PGError) -> Bool {
        try c.execute("SELECT to_regclass($1) IS NOT NULL", [.text(schema.qualified(Self.historyCounterTable))])
            .rows.first?.first == "t"
    }

    public func history(_ request: HistoryRequest) throws(StoreError) -> [HistoryTransaction] {
        try SQLHistory.collect(request, model: model) { (after, count) throws(StoreError) in
            try read { (c: PGConnection) throws(PGError) in
                // One snapshot for the transactions and their changes, whatever pruning runs meanwhile.
                try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                do throws(PGError) {
                    let page = try historyPage(after: after, count: count, c)
                    try c.execute("COMMIT")
                    return page
                } catch {
                    _ = try? c.execute("ROLLBACK")
                    throw error
                }
            }
        }
    }

    /// Up to `count` transactions numbered after `after`, with their changes.
    private func historyPage(after: Int64, count: Int, _ c: PGConnection) throws(PGError) -> [HistoryTransaction] {
        guard try hasHistory(c) else { return [] }
        let transactions = try c.execute(
            "SELECT number, at, author, context FROM \(schema.qualified(SQLHistory.transactions)) "
                + "WHERE number > $1 ORDER BY number LIMIT $2",
            [.integer(after), .integer(Int64(count))]
        ).rows.map {
            SQLHistory.TransactionRow(
                number: Int64($0[0] ?? "") ?? 0, at: Double($0[1] ?? "") ?? 0, author: $0[2], context: $0[3])
        }
        guard let last = transactions.last else { return [] }
        let changes = try c.execute(
            "SELECT number, \(SQLHistory.changeColumns) FROM \(schema.qualified(SQLHistory.changes)) "
                + "WHERE number > $1 AND number <= $2 ORDER BY number, position",
            [.integer(after), .integer(last.number)]
        ).rows.map {
            SQLHistory.ChangeRow(
                number: Int64($0[0] ?? "") ?? 0, entity: $0[1] ?? "", pk: Int64($0[2] ?? "") ?? 0,
                op: $0[3] ?? "", version: Int64($0[4] ?? "") ?? 0, changed: $0[5], tombstone: $0[6])
        }
        return SQLHistory.assemble(transactions, changes, store: metadata.identifier, model: model)
    }

    public func lastHistoryNumber() throws(StoreError) -> Int64 {
        try read { (c: PGConnection) throws(PGError) in
            guard try hasHistory(c) else { return 0 }
            let rows = try c.execute("SELECT last FROM \(schema.qualified(Self.historyCounterTable)) WHERE id = 1").rows
            return rows.first?.first.flatMap { $0 }.flatMap { Int64($0) } ?? 0
        }
    }

    public func firstHistoryNumber() throws(StoreError) -> Int64? {
        try read { (c: PGConnection) throws(PGError) in
            guard try hasHistory(c) else { return nil }
            let rows = try c.execute("SELECT min(number) FROM \(schema.qualified(SQLHistory.transactions))").rows
            return rows.first?.first.flatMap { $0 }.flatMap { Int64($0) }
        }
    }

    @discardableResult
    public func deleteHistory(_ pruning: HistoryPruning) throws(StoreError) -> Int {
        if options.readOnly { throw StoreError(.readOnly, "the store is read-only", storeURL: url) }
        let condition: String
        let argument: PGValue
        switch pruning {
        case .through(let number): (condition, argument) = ("number <= $1", .integer(number))
        case .before(let date):
            (condition, argument) = ("at < $1::double precision", .text(String(date.timeIntervalSince1970)))
        }
        let transactions = schema.qualified(SQLHistory.transactions)
        return try read { (c: PGConnection) throws(PGError) in
            guard try hasHistory(c) else { return 0 }
            try c.execute("BEGIN")
            do throws(PGError) {
                // Servers over one database prune one at a time: the next waits for this
                // transaction, then finds what it deleted gone.
                try c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("strata-history:" + transactions)])
                try c.execute(
                    "DELETE FROM \(schema.qualified(SQLHistory.changes)) WHERE number IN "
                        + "(SELECT number FROM \(transactions) WHERE \(condition))", [argument])
                let deleted = try c.execute("DELETE FROM \(transactions) WHERE \(condition)", [argument]).affected
                try c.execute("COMMIT")
                return deleted
            } catch {
                _ = try? c.execute("ROLLBACK")
                throw error
            }
        }
    }

    public func expiredHistoryNumber(_ retention: HistoryRetention) throws(StoreError) -> Int64 {
        let transactions = schema.qualified(SQLHistory.transactions)
        let changes = schema.qualified(SQLHistory.changes)
        func number(_ rows: PGRows) -> Int64? { rows.rows.first?.first.flatMap { $0 }.flatMap { Int64($0) } }
        return try read { (c: PGConnection) throws(PGError) in
            guard try hasHistory(c) else { return 0 }
            var bound: Int64 = 0
            if let date = retention.writtenBefore {
                // Read in number order, this stops at the first transaction kept.
                let kept = number(
                    try c.execute(
                        "SELECT number FROM \(transactions) WHERE at >= $1::double precision ORDER BY number LIMIT 1",
                        [.text(String(date.timeIntervalSince1970))]))
                if let kept {
                    bound = kept - 1
                } else {
                    bound = number(try c.execute("SELECT max(number) FROM \(transactions)")) ?? 0
                }
            }
            if let cap = retention.maxChanges {
                let beyond = number(
                    try c.execute(
                        "SELECT number FROM \(changes) ORDER BY number DESC, position DESC LIMIT 1 OFFSET $1",
                        [.integer(Int64(cap))]))
                if let beyond { bound = max(bound, beyond) }
            }
            return bound
        }
    }
}
