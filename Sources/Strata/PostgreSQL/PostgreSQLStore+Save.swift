import Foundation

/// Parameters of one statement, numbered as they are added.
struct PGParameters {
    var values: [PGValue] = []

    /// Adds `value` and returns its placeholder (`$1`, `$2`, …).
    mutating func add(_ value: PGValue) -> String {
        values.append(value)
        return "$\(values.count)"
    }
}

extension PostgreSQLStore {
    /// How many times a save that met a deadlock or serialization failure is run again.
    static let retries = 3

    public func prepare(_ changes: StoreChanges) throws(StoreError) -> any PreparedSave {
        if options.readOnly { throw StoreError(.readOnly, "the store is read-only", storeURL: url) }
        try checkOpen()
        var attempt = 0
        while true {
            attempt += 1
            let c: PGConnection
            do {
                c = try pool.checkout()
            } catch {
                throw storeError(error, "cannot connect to PostgreSQL")
            }
            do {
                try writeKeptChanges(c)
                let versions = try write(changes, c)
                return TransactionPreparedSave(versions: versions, changes: changes) {
                    (commit, keep) throws(StoreError) in try self.finish(c, commit: commit, keep: keep)
                }
            } catch let error as PGError {
                _ = try? c.execute("ROLLBACK")
                pool.checkin(c)
                if (error.isRetryable || (error.isConnectionFailure && !c.isOK)) && attempt <= Self.retries {
                    continue
                }
                throw storeError(error, "PostgreSQL write failed")
            } catch let error as StoreError {
                _ = try? c.execute("ROLLBACK")
                pool.checkin(c)
                throw error
            } catch {
                _ = try? c.execute("ROLLBACK")
                pool.checkin(c)
                throw StoreError(.io, "PostgreSQL write failed: \(error)", storeURL: url)
            }
        }
    }

    /// Begins a transaction on `c` and writes `changes`, their participation and housekeeping, and
    /// the notification, leaving it open.
    func write(_ changes: StoreChanges, _ c: PGConnection) throws -> [ObjectID: Int64] {
        try c.execute("BEGIN")
        // The query budget is for fetches; a save may wait for row locks as long as it must.
        if options.queryBudget != nil { try c.execute("SET LOCAL statement_timeout = 0") }
        let versions = try apply(changes, c)
        try writeCrossStoreNotes(changes, c)
        try notify(changes, c)
        return versions
    }

    /// Writes, each in its own transaction, the kept parts of saves across stores.
    func writeKeptChanges(_ c: PGConnection) throws {
        while let kept = keptChanges.withLock({ $0.first }) {
            do {
                _ = try write(kept, c)
                try c.execute("COMMIT")
            } catch {
                _ = try? c.execute("ROLLBACK")
                throw StoreError(
                    .unsettled,
                    "the store still owes its part of a save across stores and cannot write it: \(error)",
                    storeURL: url, underlying: error as? StoreError)
            }
            keptChanges.withLock { _ = $0.removeFirst() }
        }
    }

    private func table(for id: ObjectID) throws(StoreError) -> SQLiteSchema.Table {
        guard id.storeIdentifier == metadata.identifier, id.primaryKey != nil, entityNames.contains(id.entityName),
            let table = schema.base.table(for: id.entityName)
        else {
            throw StoreError(
                .invalidRequest, "object \(id) does not belong to this store", storeURL: url, entity: id.entityName)
        }
        return table
    }

    private func foreignKey(_ value: ObjectID?, name: String, destination: String) throws(StoreError) -> PGValue {
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

    /// Locks the objects the changes update or delete and checks their versions.
    private func checkVersions(_ changes: StoreChanges, _ c: PGConnection) throws -> [ObjectID: Int64] {
        var checks: [(ObjectID, Int64?)] = changes.updates.map { ($0.id, $0.expectedVersion) }
        checks.append(contentsOf: changes.deletes.map { ($0.id, $0.expectedVersion) })
        var byTable: [String: [Int64]] = [:]
        for (id, _) in checks { byTable[try table(for: id).name, default: []].append(id.primaryKey!) }
        var stored: [String: [Int64: Int64]] = [:]
        // Tables and keys in one order, so two savers lock in the same order.
        for (table, keys) in byTable.sorted(by: { $0.key < $1.key }) {
            let rows = try c.execute(
                "SELECT \"_pk\", \"_version\" FROM \(schema.qualified(table)) WHERE \"_pk\" = ANY($1::bigint[]) ORDER BY \"_pk\" FOR UPDATE",
                [.text(PostgreSQLSchema.arrayLiteral(keys.sorted().map(String.init)))]
            ).rows
            for row in rows {
                if let pk = row[0].flatMap({ Int64($0) }), let version = row[1].flatMap({ Int64($0) }) {
                    stored[table, default: [:]][pk] = version
                }
            }
        }
        var current: [ObjectID: Int64] = [:]
        var conflicts: [VersionConflict] = []
        for (id, expected) in checks {
            let version = stored[try table(for: id).name]?[id.primaryKey!]
            if let version { current[id] = version }
            if let expected, version != expected {
                conflicts.append(VersionConflict(id: id, expectedVersion: expected, storedVersion: version))
            } else if version == nil {
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
        return current
    }

    /// Writes every change inside the open transaction and returns the new versions.
    private func apply(_ changes: StoreChanges, _ c: PGConnection) throws -> [ObjectID: Int64] {
        let current = try checkVersions(changes, c)
        var versions: [ObjectID: Int64] = [:]
        // Inserts of one entity in multi-row statements (PostgreSQL allows 65535 parameters).
        var runs: [(entity: String, rows: [StoreRow])] = []
        for row in changes.inserts {
            _ = try table(for: row.id)
            if runs.last?.entity == row.id.entityName {
                runs[runs.count - 1].rows.append(row)
            } else {
                runs.append((row.id.entityName, [row]))
            }
        }
        for (entity, rows) in runs {
            guard let plan = schema.base.rowPlans[entity], let table = schema.base.table(for: entity) else {
                throw StoreError(.invalidRequest, "the store does not hold \(entity)", storeURL: url, entity: entity)
            }
            var columns: [String] = ["_pk", "_entity", "_version"]
            columns.append(contentsOf: plan.layout.names)
            columns.append(contentsOf: plan.foreignKeys.map { $0.info.name })
            let columnList = columns.map { PostgreSQLSchema.quote($0) }.joined(separator: ", ")
            let perRow = columns.count
            let chunk = max(1, 60_000 / perRow)
            for start in stride(from: 0, to: rows.count, by: chunk) {
                var parameters = PGParameters()
                var tuples: [String] = []
                for row in rows[start..<min(rows.count, start + chunk)] {
                    var placeholders = [
                        parameters.add(.integer(row.id.primaryKey!)), parameters.add(.text(entity)),
                        parameters.add(.integer(1)),
                    ]
                    let positional = row.attributes.follows(plan.layout)
                    for (position, name) in plan.layout.names.enumerated() {
                        let value = positional ? row.attributes[position: position] : row.attributes[name]
                        placeholders.append(parameters.add(PostgreSQLSchema.encode(value ?? .null)))
                    }
                    for (_, column) in plan.foreignKeys {
                        placeholders.append(
                            parameters.add(
                                try foreignKey(
                                    row.toOne[column.name] ?? nil, name: column.name, destination: column.destination)))
                    }
                    tuples.append("(" + placeholders.joined(separator: ", ") + ")")
                    versions[row.id] = 1
                }
                let values = tuples.joined(separator: ", ")
                let sql = "INSERT INTO \(schema.qualified(table.name)) (\(columnList)) VALUES \(values)"
                try run(c, sql, parameters.values, entity: entity)
            }
        }
        for update in changes.updates {
            let table = try table(for: update.id)
            var parameters = PGParameters()
            var assignments: [String] = []
            for (name, value) in update.attributes.sorted(by: { $0.key < $1.key }) {
                guard model.attribute(name, of: update.id.entityName) != nil else {
                    throw StoreError(
                        .invalidRequest, "'\(update.id.entityName)' has no attribute '\(name)'", storeURL: url,
                        entity: update.id.entityName, fields: [name])
                }
                assignments.append(
                    "\(PostgreSQLSchema.quote(name)) = \(parameters.add(PostgreSQLSchema.encode(value)))")
            }
            for (name, value) in update.toOne.sorted(by: { $0.key < $1.key }) {
                guard let relationship = model.relationship(name, of: update.id.entityName), !relationship.isToMany
                else {
                    throw StoreError(
                        .invalidRequest, "'\(update.id.entityName)' has no to-one relationship '\(name)'",
                        storeURL: url, entity: update.id.entityName, fields: [name])
                }
                let key = try foreignKey(value, name: name, destination: relationship.destination)
                assignments.append("\(PostgreSQLSchema.quote(name)) = \(parameters.add(key))")
            }
            assignments.append("\"_version\" = \"_version\" + 1")
            let key = parameters.add(.integer(update.id.primaryKey!))
            try run(
                c,
                "UPDATE \(schema.qualified(table.name)) SET \(assignments.joined(separator: ", ")) WHERE \"_pk\" = \(key)",
                parameters.values, entity: update.id.entityName)
            versions[update.id] = (current[update.id] ?? 0) + 1
        }
        try writeToMany(changes, c)
        for deletion in changes.deletes {
            let table = try table(for: deletion.id)
            let pk = PGValue.integer(deletion.id.primaryKey!)
            try run(
                c, "DELETE FROM \(schema.qualified(table.name)) WHERE \"_pk\" = $1", [pk],
                entity: deletion.id.entityName)
            for join in schema.base.joinTables {
                if model.entity(deletion.id.entityName, isKindOf: join.sourceEntity) {
                    try run(
                        c, "DELETE FROM \(schema.qualified(join.name)) WHERE \"source\" = $1", [pk],
                        entity: deletion.id.entityName)
                }
                if model.entity(deletion.id.entityName, isKindOf: join.targetEntity) {
                    try run(
                        c, "DELETE FROM \(schema.qualified(join.name)) WHERE \"target\" = $1", [pk],
                        entity: deletion.id.entityName)
                }
            }
        }
        return versions
    }

    /// Writes join-table relationships (see ``JoinTableEdit``), as the SQLite store does.
    private func writeToMany(_ changes: StoreChanges, _ c: PGConnection) throws {
        let edits = try JoinTableEdit.plan(changes, model: model, storeURL: url) {
            (target: ObjectID, relationship: RelationshipDescription) throws(StoreError) in
            _ = try foreignKey(target, name: relationship.name, destination: relationship.destination)
        }
        for edit in edits {
            switch edit {
            case .setTargets(let join, let source, let targets):
                let table = schema.qualified(join.name)
                try run(
                    c,
                    "DELETE FROM \(table) WHERE \"source\" = $1 AND NOT (\"target\" = ANY($2::bigint[]))",
                    [.integer(source), .text(PostgreSQLSchema.arrayLiteral(targets.map(String.init)))],
                    entity: join.sourceEntity)
                for (position, target) in targets.enumerated() {
                    let targetPosition =
                        join.isTargetOrdered
                        ? (
                            "\"target_position\", ",
                            "(SELECT coalesce(max(\"target_position\"), -1) + 1 FROM \(table) WHERE \"target\" = $2), "
                        ) : ("", "")
                    try run(
                        c,
                        "INSERT INTO \(table) (\"source\", \"target\", \(targetPosition.0)\"position\") VALUES ($1, $2, \(targetPosition.1)$3) "
                            + "ON CONFLICT (\"source\", \"target\") DO UPDATE SET \"position\" = excluded.\"position\"",
                        [.integer(source), .integer(target), .integer(Int64(position))], entity: join.sourceEntity)
                }
            case .setSources(let join, let target, let sources):
                let table = schema.qualified(join.name)
                try run(
                    c,
                    "DELETE FROM \(table) WHERE \"target\" = $1 AND NOT (\"source\" = ANY($2::bigint[]))",
                    [.integer(target), .text(PostgreSQLSchema.arrayLiteral(sources.map(String.init)))],
                    entity: join.targetEntity)
                for (position, source) in sources.enumerated() {
                    try run(
                        c,
                        "INSERT INTO \(table) (\"source\", \"target\", \"position\") VALUES ($1, $2, (SELECT coalesce(max(\"position\"), -1) + 1 FROM \(table) WHERE \"source\" = $1)) ON CONFLICT DO NOTHING",
                        [.integer(source), .integer(target)], entity: join.targetEntity)
                    if join.isTargetOrdered {
                        try run(
                            c, "UPDATE \(table) SET \"target_position\" = $1 WHERE \"source\" = $2 AND \"target\" = $3",
                            [.integer(Int64(position)), .integer(source), .integer(target)], entity: join.targetEntity)
                    }
                }
            }
        }
    }

    /// Runs a write, turning a unique violation into `.uniqueViolation` naming the fields.
    private func run(_ c: PGConnection, _ sql: String, _ parameters: [PGValue], entity: String) throws {
        do throws(PGError) {
            try c.execute(sql, parameters)
        } catch {
            guard error.isUniqueViolation else { throw error }
            // The index is named `_unique_<entity>_<n>`: the entity's n-th uniqueness constraint.
            var owner = entity
            var fields: [String] = []
            if let constraint = error.constraint, constraint.hasPrefix("_unique_"),
                let separator = constraint.lastIndex(of: "_"),
                let index = Int(constraint[constraint.index(after: separator)...])
            {
                let name = String(constraint["_unique_".endIndex..<separator])
                if let description = model.entity(named: name), index < description.uniqueness.count {
                    owner = name
                    fields = description.uniqueness[index]
                }
            }
            throw StoreError(
                .uniqueViolation, "another \(owner) already has the same \(fields.joined(separator: " and "))",
                storeURL: url, entity: owner, fields: fields)
        }
    }

    /// One notification per save, naming the objects written (or `*` when they do not fit).
    private func notify(_ changes: StoreChanges, _ c: PGConnection) throws {
        var ids: [ObjectID] = changes.inserts.map { $0.id }
        ids.append(contentsOf: changes.updates.map { $0.id })
        ids.append(contentsOf: changes.deletes.map { $0.id })
        guard !ids.isEmpty else { return }
        var payload = instance
        for id in ids {
            payload += " \(id.entityName)/\(id.primaryKey ?? 0)"
            if payload.utf8.count > Self.payloadLimit {
                payload = instance + " *"
                break
            }
        }
        try c.execute("SELECT pg_notify($1, $2)", [.text(notificationChannel), .text(payload)])
    }

    /// The channel this store's saves are announced on.
    var notificationChannel: String { "strata_" + metadata.identifier.lowercased() }

    /// Ends the open transaction on `c`; with `keep`, a failed commit's changes are kept.
    func finish(_ c: PGConnection, commit: Bool, keep: StoreChanges? = nil) throws(StoreError) {
        defer { pool.checkin(c) }
        do throws(PGError) {
            try c.execute(commit ? "COMMIT" : "ROLLBACK")
        } catch {
            _ = try? c.execute("ROLLBACK")
            if let keep { keptChanges.withLock { $0.append(keep) } }
            throw storeError(error, "cannot commit")
        }
    }
}
