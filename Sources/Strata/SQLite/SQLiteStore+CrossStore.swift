import Foundation

/// What an SQLite store keeps of saves across stores (see ``SaveParticipation``): the records it
/// holds as a commit point, and the saves it applied as another participant. Both tables are made
/// by the first such save, inside its transaction, so a store that never takes part has neither.
extension SQLiteStore {
    static let recordsTable = "_strata_cross_saves"
    static let appliedTable = "_strata_applied_saves"

    /// Writes `changes`' participation and housekeeping inside the open transaction.
    func writeCrossStoreNotes(_ changes: StoreChanges, _ db: SQLiteConnection) throws(StoreError) {
        guard changes.participation != nil || !changes.housekeeping.isEmpty else { return }
        do {
            if let participation = changes.participation {
                try createNoteTables(db)
                try writeParticipation(participation, records: Self.recordsTable, applied: Self.appliedTable, db)
            }
            try deleteNotes(changes.housekeeping, db)
        } catch {
            throw writeError(error, "cannot record the save across stores")
        }
    }

    private func createNoteTables(_ db: SQLiteConnection) throws(SQLiteError) {
        try db.execute(
            "CREATE TABLE IF NOT EXISTS \(Self.recordsTable) (id TEXT PRIMARY KEY, record TEXT NOT NULL); "
                + "CREATE TABLE IF NOT EXISTS \(Self.appliedTable) (id TEXT PRIMARY KEY, commit_point TEXT NOT NULL)")
    }

    private func deleteNotes(_ housekeeping: StoreHousekeeping, _ db: SQLiteConnection) throws(SQLiteError) {
        guard !housekeeping.isEmpty, try hasNoteTables(db) else { return }
        for id in housekeeping.finishedRecords {
            try db.run("DELETE FROM \(Self.recordsTable) WHERE id = ?", [.text(id)])
        }
        for id in housekeeping.releasedMarks {
            try db.run("DELETE FROM \(Self.appliedTable) WHERE id = ?", [.text(id)])
        }
    }

    private func hasNoteTables(_ db: SQLiteConnection) throws(SQLiteError) -> Bool {
        let statement = try db.statement(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)")
        defer { statement.reset() }
        try statement.bind([.text(Self.recordsTable), .text(Self.appliedTable)])
        _ = try statement.step()
        return statement.int64(0) == 2
    }

    public func crossStoreRecords() throws(StoreError) -> [CrossStoreRecord] {
        try read { db in
            guard try hasNoteTables(db) else { return [] }
            return try db.query("SELECT record FROM \(Self.recordsTable) ORDER BY rowid") {
                CrossStoreRecord(text: $0.text(0))
            }.compactMap { $0 }
        }
    }

    public func hasApplied(saveID: String) throws(StoreError) -> Bool {
        try read { db in
            guard try hasNoteTables(db) else { return false }
            return try db.query("SELECT count(*) FROM \(Self.appliedTable) WHERE id = ?", [.text(saveID)]) {
                $0.int64(0)
            }.first == 1
        }
    }

    public func appliedSaves() throws(StoreError) -> [AppliedSave] {
        try read { db in
            guard try hasNoteTables(db) else { return [] }
            return try db.query("SELECT id, commit_point FROM \(Self.appliedTable)") {
                AppliedSave(saveID: $0.text(0), commitPoint: $0.text(1))
            }
        }
    }

    public func forget(_ housekeeping: StoreHousekeeping) throws(StoreError) {
        guard !housekeeping.isEmpty else { return }
        let db = try acquireWriter()
        defer { releaseWriter() }
        do {
            try db.execute("BEGIN IMMEDIATE")
            try deleteNotes(housekeeping, db)
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw writeError(error, "cannot forget finished saves across stores")
        }
    }
}

/// The receipts an SQLite store keeps (see ``SaveReceipt``), in a table the first one creates
/// inside its transaction.
extension SQLiteStore {
    /// Writes `receipts` in the open transaction on the writer `db`.
    func keepReceipts(_ receipts: [KeptReceipt], _ db: SQLiteConnection) throws(StoreError) {
        do {
            try db.execute(
                "CREATE TABLE IF NOT EXISTS \(KeptReceipt.table) (scope TEXT NOT NULL, key TEXT NOT NULL, "
                    + "expires INTEGER NOT NULL, receipt TEXT NOT NULL, PRIMARY KEY (scope, key))")
            try writeReceipts(receipts, table: KeptReceipt.table, db)
        } catch {
            if error.isUniqueViolation {
                throw StoreError(
                    .uniqueViolation, KeptReceipt.savedAlready, storeURL: url)
            }
            throw writeError(error, "cannot keep the save's receipt")
        }
    }

    public func receipt(scope: String, key: String) throws(StoreError) -> KeptReceipt? {
        try read { db in
            let exists =
                try db.query(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(KeptReceipt.table)]
                ) { $0.int64(0) }.first == 1
            guard exists else { return nil }
            return try keptReceipt(scope: scope, key: key, table: KeptReceipt.table, db)
        }
    }
}

extension SQLiteStore {
    /// Limits the file to its current size plus `pages` pages on the writer connection (nil
    /// lifts the limit): what the tests use to make the disk "full" at a chosen moment.
    func limitPages(to pages: Int?) throws(StoreError) {
        let db = try acquireWriter()
        defer { releaseWriter() }
        do {
            let current = try db.query("PRAGMA page_count") { $0.int64(0) }.first ?? 0
            let limit = pages.map { current + Int64($0) } ?? 1_073_741_823
            _ = try db.query("PRAGMA max_page_count = \(limit)") { $0.int64(0) }
        } catch {
            throw StoreError(.io, "cannot set the page limit: \(error)", storeURL: url)
        }
    }
}
