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
            let versions = try write(changes, db)
            return TransactionPreparedSave(versions: versions, changes: changes) {
                (commit, keep) throws(StoreError) in try self.finish(commit: commit, keep: keep)
            }
        } catch {
            releaseWriter()
            throw error
        }
    }

    /// Begins a transaction on the writer (held by the caller) and writes `changes` with their
    /// participation and housekeeping in it, leaving it open; rolled back when anything fails.
    func write(_ changes: StoreChanges, _ db: SQLiteConnection) throws(StoreError) -> [ObjectID: Int64] {
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

    private func table(for id: ObjectID) throws(StoreError) -> SQLiteSchema.Table {
        guard id.storeIdentifier == metadata.identifier, id.primaryKey != nil, entityNames.contains(id.entityName),
            let table = schema.table(for: id.entityName)
        else {
            throw StoreError(
                .invalidRequest, "object \(id) does not belong to this store", storeURL: url, entity: id.entityName)
        }
        return table
    }

    private func foreignKey(_ value: ObjectID?, _ relationship: RelationshipDescription) throws(StoreError)
        -> SQLiteValue
    {
        try foreignKey(value, name: relationship.name, destination: relationship.destination)
    }

    private func foreignKey(_ value: ObjectID?, name: String, destination: String) throws(StoreError) -> SQLiteValue {
        guard let value else { return .null }
        guard value.storeIdentifier == metadata.identifier, let pk = value.primaryKey,
            value.entityName == destination || model.entity(value.entityName, isKindOf: destination)
        else {
            throw StoreError(
                .invalidRequest, "'\(name)' must refer to a \(destination) in the same store, not \(value)",
                storeURL: url, entity: destination, fields: [name])
        }
        return .integer(pk)
    }

    /// Writes every change inside the open transaction and returns the new versions.
    private func apply(_ changes: StoreChanges, _ db: SQLiteConnection) throws(StoreError) -> [ObjectID: Int64] {
        var versions: [ObjectID: Int64] = [:]
        var current: [ObjectID: Int64?] = [:]
        // Optimistic locking: check every expected version before writing anything.
        var conflicts: [VersionConflict] = []
        let checks =
            changes.updates.map { ($0.id, $0.expectedVersion) } + changes.deletes.map { ($0.id, $0.expectedVersion) }
        for (id, expected) in checks {
            let table = try table(for: id)
            let stored = try sqlite {
                try db.query(
                    "SELECT \"_version\" FROM \(SQLiteSchema.quote(table.name)) WHERE \"_pk\" = ?",
                    [.integer(id.primaryKey!)]
                ) {
                    $0.int64(0)
                }.first
            }
            current[id] = stored
            if let expected, stored != expected {
                conflicts.append(VersionConflict(id: id, expectedVersion: expected, storedVersion: stored))
            } else if stored == nil {
                throw StoreError(
                    .notFound, "object \(id) does not exist in the store", storeURL: url, entity: id.entityName)
            }
        }
        if !conflicts.isEmpty {
            throw StoreError(
                .conflict,
                "objects changed since they were read: " + conflicts.map(\.description).joined(separator: "; "),
                storeURL: url, conflicts: conflicts)
        }
        // One prepared INSERT per entity, bound value by value: no SQL text or argument array per row.
        // Its columns are the entity's attributes in layout order, then its foreign keys.
        var inserts: [String: (statement: SQLiteStatement, plan: SQLiteSchema.RowPlan)] = [:]
        versions.reserveCapacity(changes.inserts.count + changes.updates.count)
        /// The INSERT of `entity` and its plan, prepared on first use.
        func prepared(_ entity: String, _ id: ObjectID) throws(StoreError) -> (SQLiteStatement, SQLiteSchema.RowPlan) {
            if let known = inserts[entity] { return known }
            _ = try table(for: id)
            guard let plan = schema.rowPlans[entity] else {
                throw StoreError(.invalidRequest, "the store does not hold \(entity)", storeURL: url, entity: entity)
            }
            do {
                let made = (statement: try db.statement(schema.insertByEntity[entity]!), plan: plan)
                inserts[entity] = made
                return made
            } catch {
                throw storeError(error, entity: entity)
            }
        }
        /// Writes one row. The row is borrowed from the request, and the statement and plan are
        /// those of its run: copying either for each row cost a retain and a release of
        /// everything it holds.
        func insert(
            _ row: borrowing StoreRow, _ pk: Int64, _ entity: String, _ statement: SQLiteStatement,
            _ plan: borrowing SQLiteSchema.RowPlan
        ) throws(StoreError) {
            do {
                try statement.bind(.integer(pk), at: 1)
                try statement.bind(.text(entity), at: 2)
                try statement.bind(.integer(1), at: 3)
                var index: Int32 = 4
                let positional = row.attributes.follows(plan.layout)
                for (position, name) in plan.layout.names.enumerated() {
                    let value = positional ? row.attributes[position: position] : row.attributes[name]
                    try statement.bind(SQLiteSchema.encode(value ?? .null), at: index)
                    index += 1
                }
                for (_, column) in plan.foreignKeys {
                    let target = try foreignKey(
                        row.toOne[column.name] ?? nil, name: column.name, destination: column.destination)
                    try statement.bind(target, at: index)
                    index += 1
                }
                defer { statement.reset() }
                while try statement.step() {}
            } catch let error as SQLiteError {
                throw storeError(error, entity: entity)
            } catch let error as StoreError {
                throw error
            } catch {
                throw StoreError(.io, "SQLite write failed: \(error)", storeURL: url, entity: entity)
            }
            versions[row.id] = 1
        }
        // Inserts come in runs of one entity (one home): each run finds its statement once.
        let rows = changes.inserts
        var next = 0
        while next < rows.count {
            let home = rows[next].id.home
            let entity = home.entityName
            guard home.storeIdentifier == metadata.identifier else {
                _ = try table(for: rows[next].id)  // throws: the ID does not belong to this store
                next += 1
                continue
            }
            let (statement, plan) = try prepared(entity, rows[next].id)
            repeat {
                guard let pk = rows[next].id.primaryKey else {
                    _ = try table(for: rows[next].id)  // throws: a temporary ID
                    next += 1
                    continue
                }
                try insert(rows[next], pk, entity, statement, plan)
                next += 1
            } while next < rows.count && rows[next].id.home === home
        }
        for update in changes.updates {
            let table = try table(for: update.id)
            var assignments: [String] = []
            var arguments: [SQLiteValue] = []
            for (name, value) in update.attributes.sorted(by: { $0.key < $1.key }) {
                guard let attribute = model.attribute(name, of: update.id.entityName) else {
                    throw StoreError(
                        .invalidRequest, "'\(update.id.entityName)' has no attribute '\(name)'", storeURL: url,
                        entity: update.id.entityName, fields: [name])
                }
                assignments.append("\(SQLiteSchema.quote(attribute.name)) = ?")
                arguments.append(SQLiteSchema.encode(value))
            }
            for (name, value) in update.toOne.sorted(by: { $0.key < $1.key }) {
                guard let relationship = model.relationship(name, of: update.id.entityName), !relationship.isToMany
                else {
                    throw StoreError(
                        .invalidRequest, "'\(update.id.entityName)' has no to-one relationship '\(name)'",
                        storeURL: url, entity: update.id.entityName, fields: [name])
                }
                assignments.append("\(SQLiteSchema.quote(name)) = ?")
                arguments.append(try foreignKey(value, relationship))
            }
            assignments.append("\"_version\" = \"_version\" + 1")
            arguments.append(.integer(update.id.primaryKey!))
            let sql =
                "UPDATE \(SQLiteSchema.quote(table.name)) SET \(assignments.joined(separator: ", ")) WHERE \"_pk\" = ?"
            try write(db, sql, arguments, entity: update.id.entityName)
            versions[update.id] = ((current[update.id] ?? nil) ?? 0) + 1
        }
        try writeToMany(changes, db)
        for deletion in changes.deletes {
            let table = try table(for: deletion.id)
            let pk = SQLiteValue.integer(deletion.id.primaryKey!)
            try write(
                db, "DELETE FROM \(SQLiteSchema.quote(table.name)) WHERE \"_pk\" = ?", [pk],
                entity: deletion.id.entityName)
            for join in schema.joinTables {
                if model.entity(deletion.id.entityName, isKindOf: join.sourceEntity) {
                    try write(
                        db, "DELETE FROM \(SQLiteSchema.quote(join.name)) WHERE \"source\" = ?", [pk],
                        entity: deletion.id.entityName)
                }
                if model.entity(deletion.id.entityName, isKindOf: join.targetEntity) {
                    try write(
                        db, "DELETE FROM \(SQLiteSchema.quote(join.name)) WHERE \"target\" = ?", [pk],
                        entity: deletion.id.entityName)
                }
            }
        }
        return versions
    }

    /// Writes join-table relationships (see ``JoinTableEdit``).
    private func writeToMany(_ changes: StoreChanges, _ db: SQLiteConnection) throws(StoreError) {
        let edits = try JoinTableEdit.plan(changes, model: model, storeURL: url) {
            (target: ObjectID, relationship: RelationshipDescription) throws(StoreError) in
            _ = try foreignKey(target, relationship)
        }
        for edit in edits {
            switch edit {
            case .setTargets(let join, let source, let targets):
                // Pairs that stay keep their place in the other side's order.
                let table = SQLiteSchema.quote(join.name)
                let keep = targets.map { _ in "?" }.joined(separator: ", ")
                try write(
                    db,
                    "DELETE FROM \(table) WHERE \"source\" = ?"
                        + (targets.isEmpty ? "" : " AND \"target\" NOT IN (\(keep))"),
                    [.integer(source)] + targets.map { .integer($0) }, entity: join.sourceEntity)
                let targetPosition =
                    join.isTargetOrdered
                    ? (
                        "\"target_position\", ",
                        "(SELECT coalesce(max(\"target_position\"), -1) + 1 FROM \(table) WHERE \"target\" = ?), "
                    )
                    : ("", "")
                for (position, target) in targets.enumerated() {
                    try write(
                        db,
                        "INSERT INTO \(table) (\"source\", \"target\", \(targetPosition.0)\"position\") VALUES (?, ?, \(targetPosition.1)?) "
                            + "ON CONFLICT (\"source\", \"target\") DO UPDATE SET \"position\" = excluded.\"position\"",
                        [.integer(source), .integer(target)] + (join.isTargetOrdered ? [.integer(target)] : [])
                            + [.integer(Int64(position))], entity: join.sourceEntity)
                }
            case .setSources(let join, let target, let sources):
                // Pairs that stay keep their place in the source side's order; new ones go last.
                let table = SQLiteSchema.quote(join.name)
                let keep = sources.map { _ in "?" }.joined(separator: ", ")
                try write(
                    db,
                    "DELETE FROM \(table) WHERE \"target\" = ?"
                        + (sources.isEmpty ? "" : " AND \"source\" NOT IN (\(keep))"),
                    [.integer(target)] + sources.map { .integer($0) }, entity: join.targetEntity)
                for (position, source) in sources.enumerated() {
                    try write(
                        db,
                        "INSERT OR IGNORE INTO \(table) (\"source\", \"target\", \"position\") VALUES (?, ?, (SELECT coalesce(max(\"position\"), -1) + 1 FROM \(table) WHERE \"source\" = ?))",
                        [.integer(source), .integer(target), .integer(source)], entity: join.targetEntity)
                    if join.isTargetOrdered {
                        try write(
                            db, "UPDATE \(table) SET \"target_position\" = ? WHERE \"source\" = ? AND \"target\" = ?",
                            [.integer(Int64(position)), .integer(source), .integer(target)], entity: join.targetEntity)
                    }
                }
            }
        }
    }

    /// Runs a write, turning a UNIQUE failure into `.uniqueViolation` naming the fields.
    private func write(_ db: SQLiteConnection, _ sql: String, _ arguments: [SQLiteValue], entity: String)
        throws(StoreError)
    {
        do {
            try db.run(sql, arguments)
        } catch {
            throw storeError(error, entity: entity)
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
            return StoreError(
                .uniqueViolation, "another \(entity) already has the same \(fields.joined(separator: " and "))",
                storeURL: url, entity: entity, fields: fields, underlying: error)
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
