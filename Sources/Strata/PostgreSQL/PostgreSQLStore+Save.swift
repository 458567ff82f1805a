import Foundation
import Synchronization

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
                let marker = UUID().uuidString.lowercased()
                let (versions, history) = try write(changes, c, marker: marker)
                return TransactionPreparedSave(
                    versions: versions, historyNumber: history, changes: changes,
                    keepReceipts: { (receipts) throws(StoreError) in try self.keepReceipts(receipts, c) }
                ) { (commit, keep) throws(StoreError) in try self.finish(c, commit: commit, keep: keep, marker: marker)
                }
            } catch let error as PGError {
                pool.checkin(c, after: error)
                // Nothing was committed: a deadlock, or a server gone or demoted before the commit,
                // is run again (on a new connection, to whichever server is primary now).
                if (error.isRetryable || error.mustReconnect) && attempt <= Self.retries { continue }
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

    /// Begins a transaction on `c` and writes `changes`, their participation and housekeeping, the
    /// commit marker `marker` (nil for none) and the notification, leaving it open.
    func write(_ changes: StoreChanges, _ c: PGConnection, marker: String? = nil) throws -> (
        versions: [ObjectID: Int64], history: Int64?
    ) {
        try c.execute("BEGIN")
        // The query budget is for fetches; a save may wait for row locks as long as it must.
        if options.queryBudget != nil { try c.execute("SET LOCAL statement_timeout = 0") }
        let written = try writeChanges(changes, c)
        try writeCrossStoreNotes(changes, c)
        try notify(changes, c, marker: marker)
        return written
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

    /// One notification per save, naming the objects written (or `*` when they do not fit), sent
    /// in the statement that inserts the save's commit marker (one round trip for both).
    private func notify(_ changes: StoreChanges, _ c: PGConnection, marker: String?) throws {
        var ids: [ObjectID] = changes.inserts.map { $0.id }
        ids.append(contentsOf: changes.updates.map { $0.id })
        ids.append(contentsOf: changes.deletes.map { $0.id })
        let markers = schema.qualified(Self.commitMarkerTable)
        if marker != nil, commitMarkers.add(1, ordering: .relaxed).newValue % Self.markerPurgeInterval == 0 {
            try c.execute("DELETE FROM \(markers) WHERE at < now() - interval '1 hour'")
        }
        guard !ids.isEmpty else {
            if let marker { try c.execute("INSERT INTO \(markers) (token) VALUES ($1)", [.text(marker)]) }
            return
        }
        var payload = instance
        for id in ids {
            payload += " \(id.entityName)/\(id.primaryKey ?? 0)"
            if payload.utf8.count > Self.payloadLimit {
                payload = instance + " *"
                break
            }
        }
        if let marker {
            try c.execute(
                "WITH marker AS (INSERT INTO \(markers) (token) VALUES ($3)) SELECT pg_notify($1, $2)",
                [.text(notificationChannel), .text(payload), .text(marker)])
        } else {
            try c.execute("SELECT pg_notify($1, $2)", [.text(notificationChannel), .text(payload)])
        }
    }

    /// Saves between two purges of commit markers older than an hour.
    static let markerPurgeInterval = 1000

    /// The channel this store's saves are announced on.
    var notificationChannel: String { "strata_" + metadata.identifier.lowercased() }

    /// Ends the open transaction on `c`; with `keep`, a failed commit's changes are kept. A commit
    /// whose answer was lost with its connection is resolved by its `marker` (see
    /// ``resolveCommit(marker:)``): it succeeds when the transaction committed.
    func finish(_ c: PGConnection, commit: Bool, keep: StoreChanges? = nil, marker: String) throws(StoreError) {
        do throws(PGError) {
            try c.execute(commit ? "COMMIT" : "ROLLBACK")
            pool.checkin(c)
            return
        } catch {
            pool.checkin(c, after: error)
            if commit && error.isConnectionFailure {
                switch resolveCommit(marker: marker) {
                case true?: return
                case false?: break
                case nil:
                    throw StoreError(
                        .outcomeUnknown,
                        "the commit was sent to PostgreSQL but its answer was lost (\(error)), and no writable server could tell within \(Int(Self.resolveSeconds)) s whether it happened",
                        storeURL: url)
                }
            }
            if let keep { keptChanges.withLock { $0.append(keep) } }
            throw storeError(error, "cannot commit")
        }
    }

    /// How long a commit whose answer was lost is looked for on the primary of the moment.
    static let resolveSeconds = 60.0

    /// Whether the transaction that inserted commit marker `marker` committed, asked of a writable
    /// server (the primary, or the standby promoted in its place): inserting the same marker
    /// waits for that transaction if it still runs and conflicts if it committed; when the insert
    /// succeeds the transaction did not commit, and now never can. Either answer is given only
    /// once it is durable (see ``isReplicated(upTo:_:)``): a primary restarted in place may show
    /// a commit that no standby received, which a failover then drops. Nil when no writable
    /// server answered, durably, within ``resolveSeconds``.
    func resolveCommit(marker: String) -> Bool? {
        let markers = schema.qualified(Self.commitMarkerTable)
        let deadline = Date(timeIntervalSinceNow: Self.resolveSeconds)
        var pause = 0.1
        while Date() < deadline, !closed.load(ordering: .acquiring) {
            do throws(PGError) {
                let committed = try pool.with { (c: PGConnection) throws(PGError) -> Bool? in
                    let inserted = try c.execute(
                        "INSERT INTO \(markers) (token) VALUES ($1) ON CONFLICT (token) DO NOTHING", [.text(marker)]
                    ).affected
                    let lsn = try c.execute("SELECT pg_current_wal_lsn()::text").rows.first?.first ?? nil
                    // Asked on this connection's server only: after a failover the marker is looked
                    // for again on the new one.
                    while Date() < deadline {
                        if try Self.isReplicated(upTo: lsn ?? "0/0", c) { return inserted == 0 }
                        Thread.sleep(forTimeInterval: 0.1)
                    }
                    return nil
                }
                return committed
            } catch {
                Thread.sleep(forTimeInterval: pause)
                pause = min(pause * 2, 1)
            }
        }
        return nil
    }

    /// Whether what `c`'s server wrote up to `lsn` is as durable as a commit there promises: it
    /// waits for no synchronous standby (none named, or `synchronous_commit` off or local), or
    /// one of them has flushed it. Reading a standby's position needs `pg_read_all_stats` (or
    /// `pg_monitor`) when the role is no superuser; without it this is never true while
    /// standbys are named, and a lost commit is answered as of unknown outcome.
    static func isReplicated(upTo lsn: String, _ c: PGConnection) throws(PGError) -> Bool {
        try c.execute(
            """
            SELECT current_setting('synchronous_standby_names') = ''
                OR current_setting('synchronous_commit') IN ('off', 'local')
                OR EXISTS (SELECT 1 FROM pg_stat_replication
                           WHERE sync_state IN ('sync', 'quorum') AND flush_lsn >= $1::pg_lsn)
            """, [.text(lsn)]
        ).rows.first?.first == "t"
    }
}

extension PostgreSQLStore: SQLStore {
    var layout: SQLiteSchema { schema.base }
    var dialect: PostgreSQLDialect { PostgreSQLDialect(namespace: schema.namespace) }

    /// Locks the rows (`SELECT … FOR UPDATE`, tables and keys in one order, so two savers lock in
    /// the same order) and reads their versions.
    func storedVersions(_ keys: [(table: String, keys: [Int64])], _ c: PGConnection) throws(PGError)
        -> [String: [Int64: Int64]]
    {
        var stored: [String: [Int64: Int64]] = [:]
        for (table, keys) in keys {
            let rows = try c.execute(
                "SELECT \"_pk\", \"_version\" FROM \(schema.qualified(table)) WHERE \"_pk\" = ANY($1::bigint[]) ORDER BY \"_pk\" FOR UPDATE",
                [.text(PostgreSQLSchema.arrayLiteral(keys.map(String.init)))]
            ).rows
            for row in rows {
                if let pk = row[0].flatMap({ Int64($0) }), let version = row[1].flatMap({ Int64($0) }) {
                    stored[table, default: [:]][pk] = version
                }
            }
        }
        return stored
    }

    /// Multi-row statements (PostgreSQL allows 65535 parameters): one round trip for many rows.
    func insert(
        _ rows: [StoreRow], _ range: Range<Int>, entity: String, plan: SQLiteSchema.RowPlan, _ c: PGConnection
    ) throws {
        var columns: [String] = ["_pk", "_entity", "_version"]
        columns.append(contentsOf: plan.layout.names.map { model.columnName(of: $0, in: entity) })
        columns.append(contentsOf: plan.foreignKeys.map { $0.info.name })
        let columnList = columns.map { PostgreSQLSchema.quote($0) }.joined(separator: ", ")
        let table = schema.qualified(model.rootEntity(of: entity))
        let chunk = max(1, 60_000 / columns.count)
        for start in stride(from: range.lowerBound, to: range.upperBound, by: chunk) {
            var arguments = SQLArguments(dialect)
            var tuples: [String] = []
            for index in start..<min(range.upperBound, start + chunk) {
                var placeholders: [String] = []
                try insertValues(of: rows[index], rows[index].id.primaryKey!, entity: entity, plan: plan) {
                    placeholders.append(arguments.add($0))
                }
                tuples.append("(" + placeholders.joined(separator: ", ") + ")")
            }
            try write(
                "INSERT INTO \(table) (\(columnList)) VALUES \(tuples.joined(separator: ", "))", arguments.values,
                entity: entity, c)
        }
    }

    /// A unique violation names its index `_unique_<entity>_<n>`: the entity's n-th uniqueness
    /// constraint. Any other failure is thrown as it is (a save meeting a deadlock is run again).
    func writeFailure(_ error: PGError, entity: String) -> any Error {
        guard error.isUniqueViolation else { return error }
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
        return uniqueViolation(owner, fields, nil)
    }
}
