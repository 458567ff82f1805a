import CSQLite
import Foundation
import Synchronization

extension SQLiteStore {
    public func prepare(_ changes: StoreChanges) throws(StoreError) -> any PreparedSave {
        if options.readOnly { throw StoreError(.readOnly, "the store is read-only", storeURL: url) }
        let db = try acquireWriter()
        do {
            try writeKeptChanges(db)
        } catch {
            releaseWriter()
            throw error
        }
        do {
            let (versions, history) = try write(changes, db)
            return TransactionPreparedSave(
                versions: versions, historyNumber: history, changes: changes,
                keepReceipts: { (receipts) throws(StoreError) in try self.keepReceipts(receipts, db) }
            ) { (commit, keep) throws(StoreError) in try self.finish(commit: commit, keep: keep) }
        } catch {
            releaseWriter()
            throw error
        }
    }

    /// Begins a transaction on the writer (held by the caller) and writes `changes` with their
    /// participation and housekeeping in it, leaving it open; rolled back when anything fails.
    func write(_ changes: StoreChanges, _ db: SQLiteConnection) throws(StoreError) -> (
        versions: [ObjectID: Int64], history: Int64?
    ) {
        do {
            try db.execute("BEGIN IMMEDIATE")
        } catch {
            throw writeError(error, "cannot begin a transaction")
        }
        do {
            let versions = try apply(changes, db)
            try writeCrossStoreNotes(changes, db)
            return versions
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    /// Writes, each in its own transaction, the kept parts of saves across stores (writer held).
    /// - Throws: `.unsettled` naming why the oldest still cannot be written; nothing else is then
    ///   saved.
    func writeKeptChanges(_ db: SQLiteConnection) throws(StoreError) {
        while let kept = keptChanges.withLock({ $0.first }) {
            do {
                _ = try write(kept, db)
                do {
                    try commitTransaction(db)
                } catch {
                    throw writeError(error, "cannot commit")
                }
            } catch {
                try? db.execute("ROLLBACK")
                let reason = (error as? StoreError)?.message ?? "\(error)"
                throw StoreError(
                    .unsettled,
                    "the store still owes its part of a save across stores and cannot write it: \(reason)",
                    storeURL: url, underlying: error as? StoreError)
            }
            keptChanges.withLock { _ = $0.removeFirst() }
        }
    }

    /// Writes every change inside the open transaction and returns the new versions (see
    /// `writeChanges(_:_:)`, whose every failure is a store error: SQLite's own are turned into
    /// one where they happen, naming the entity written).
    private func apply(_ changes: StoreChanges, _ db: SQLiteConnection) throws(StoreError) -> (
        versions: [ObjectID: Int64], history: Int64?
    ) {
        do {
            let written = try writeChanges(changes, db)
            try raiseKeyFloors(changes.deletes, db)
            return written
        } catch {
            throw error as? StoreError ?? StoreError(.io, "SQLite write failed: \(error)", storeURL: url)
        }
    }

    /// Raises, inside the open transaction, the key floor (``keyFloorKey(_:)``) of every table
    /// `deletions` delete rows from above their keys.
    private func raiseKeyFloors(_ deletions: [StoreDeletion], _ db: SQLiteConnection) throws {
        var floors: [String: Int64] = [:]
        for deletion in deletions {
            guard let key = deletion.id.primaryKey, let table = schema.table(for: deletion.id.entityName) else {
                continue
            }
            floors[table.name] = max(floors[table.name] ?? 0, key + 1)
        }
        for (table, floor) in floors {
            try db.run(
                "INSERT INTO \(Self.metadataTable) (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                    + "value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                [.text(Self.keyFloorKey(table)), .integer(floor)])
        }
    }

    /// A failed write as a store error: UNIQUE failures become `.uniqueViolation` naming the fields.
    private func storeError(_ error: SQLiteError, entity: String) -> StoreError {
        if error.isUniqueViolation {
            // SQLite says "UNIQUE constraint failed: Book.title, Book.author".
            let fields =
                error.message.components(separatedBy: ": ").last?.components(separatedBy: ", ").map {
                    String($0.split(separator: ".").last ?? Substring($0))
                } ?? []
            return uniqueViolation(entity, fields, error)
        }
        return writeError(error, "SQLite write failed", entity: entity)
    }

    private func sqlite<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw Self.readError(error, url: url, budget: options.queryBudget)
        } catch {
            throw StoreError(.io, "SQLite read failed: \(error)", storeURL: url)
        }
    }

    /// Commits the writer's open transaction (writer held).
    func commitTransaction(_ db: SQLiteConnection) throws(SQLiteError) {
        #if DEBUG
            let failing = failingCommits.load(ordering: .relaxed)
            if failing > 0 {
                failingCommits.store(failing - 1, ordering: .relaxed)
                throw SQLiteError(code: SQLiteResultCode.full.rawValue, message: "database or disk is full")
            }
        #endif
        try db.execute("COMMIT")
    }

    /// Ends the open transaction; with `keep`, a failed commit's changes are kept to be written
    /// before the next save (under the writer, so no other save comes first).
    func finish(commit: Bool, keep: StoreChanges? = nil) throws(StoreError) {
        defer { releaseWriter() }
        do throws(SQLiteError) {
            if commit { try commitTransaction(writer) } else { try writer.execute("ROLLBACK") }
        } catch {
            try? writer.execute("ROLLBACK")
            if let keep { keptChanges.withLock { $0.append(keep) } }
            throw writeError(error, "cannot commit")
        }
    }
}

extension SQLiteStore: SQLStore {
    var layout: SQLiteSchema { schema }
    var dialect: SQLiteDialect { SQLiteDialect() }

    /// Reads each version with its own prepared `SELECT` (the writer holds the file: nothing
    /// needs locking).
    func storedVersions(_ keys: [(table: String, keys: [Int64])], _ db: SQLiteConnection) throws(StoreError)
        -> [String: [Int64: Int64]]
    {
        var stored: [String: [Int64: Int64]] = [:]
        for (table, keys) in keys {
            let sql = "SELECT \"_version\" FROM \(SQLiteSchema.quote(table)) WHERE \"_pk\" = ?"
            for key in keys {
                let version = try sqlite { try db.query(sql, [.integer(key)]) { $0.int64(0) }.first }
                if let version { stored[table, default: [:]][key] = version }
            }
        }
        return stored
    }

    /// One prepared INSERT per entity (cached by its connection), bound value by value and
    /// stepped once per row: no SQL text or argument array per row.
    func insert(
        _ rows: [StoreRow], _ range: Range<Int>, entity: String, plan: SQLiteSchema.RowPlan, _ db: SQLiteConnection
    ) throws {
        let statement: SQLiteStatement
        do {
            statement = try db.statement(schema.insertByEntity[entity]!)
        } catch {
            throw storeError(error, entity: entity)
        }
        for index in range {
            do {
                var parameter: Int32 = 1
                try insertValues(of: rows[index], rows[index].id.primaryKey!, entity: entity, plan: plan) {
                    try statement.bind($0, at: parameter)
                    parameter += 1
                }
                defer { statement.reset() }
                while try statement.step() {}
            } catch let error as SQLiteError {
                throw storeError(error, entity: entity)
            }
        }
    }

    func writeFailure(_ error: SQLiteError, entity: String) -> any Error { storeError(error, entity: entity) }
}
