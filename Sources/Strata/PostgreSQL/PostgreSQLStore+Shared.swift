import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a PostgreSQL store keeps of saves across stores (see ``SaveParticipation``), in the two
/// tables its schema creates.
extension PostgreSQLStore {
    func writeCrossStoreNotes(_ changes: StoreChanges, _ c: PGConnection) throws {
        if let participation = changes.participation {
            try writeParticipation(
                participation, records: PostgreSQLSchema.recordsTable, applied: PostgreSQLSchema.appliedTable, c)
        }
        try deleteNotes(changes.housekeeping, c)
    }

    private func deleteNotes(_ housekeeping: StoreHousekeeping, _ c: PGConnection) throws(PGError) {
        guard !housekeeping.isEmpty else { return }
        if !housekeeping.finishedRecords.isEmpty {
            try c.execute(
                "DELETE FROM \(schema.qualified(PostgreSQLSchema.recordsTable)) WHERE id = ANY($1::text[])",
                [.text(PostgreSQLSchema.arrayLiteral(Array(housekeeping.finishedRecords)))])
        }
        if !housekeeping.releasedMarks.isEmpty {
            try c.execute(
                "DELETE FROM \(schema.qualified(PostgreSQLSchema.appliedTable)) WHERE id = ANY($1::text[])",
                [.text(PostgreSQLSchema.arrayLiteral(Array(housekeeping.releasedMarks)))])
        }
    }

    public func crossStoreRecords() throws(StoreError) -> [CrossStoreRecord] {
        let table = schema.qualified(PostgreSQLSchema.recordsTable)
        return try read { (c: PGConnection) throws(PGError) in
            try c.execute("SELECT record FROM \(table) ORDER BY at").rows.compactMap {
                $0[0].flatMap(CrossStoreRecord.init(text:))
            }
        }
    }

    public func hasApplied(saveID: String) throws(StoreError) -> Bool {
        let table = schema.qualified(PostgreSQLSchema.appliedTable)
        return try read { (c: PGConnection) throws(PGError) in
            try c.execute("SELECT count(*) FROM \(table) WHERE id = $1", [.text(saveID)]).rows.first?[0] == "1"
        }
    }

    public func appliedSaves() throws(StoreError) -> [AppliedSave] {
        let table = schema.qualified(PostgreSQLSchema.appliedTable)
        return try read { (c: PGConnection) throws(PGError) in
            try c.execute("SELECT id, commit_point FROM \(table)").rows.map {
                AppliedSave(saveID: $0[0] ?? "", commitPoint: $0[1] ?? "")
            }
        }
    }

    public func forget(_ housekeeping: StoreHousekeeping) throws(StoreError) {
        guard !housekeeping.isEmpty else { return }
        try read { (c: PGConnection) throws(PGError) in
            try c.execute("BEGIN")
            try deleteNotes(housekeeping, c)
            try c.execute("COMMIT")
        }
    }

    /// Calls `handler` (on the listener's thread) whenever another process saves into this store,
    /// with the objects it wrote, or `.everything` when they were too many to name or when
    /// notifications may have been missed (the listening connection dropped).
    public func onExternalChange(_ handler: @escaping @Sendable (ExternalStoreChange) -> Void) {
        externalHandlers.withLock { $0.append(handler) }
        listener.withLock { listener in
            guard listener == nil else { return }
            let started = PostgreSQLListener(store: self)
            started.start()
            listener = started
        }
    }

    /// Hands a notification's payload to the handlers, unless it is this instance's own.
    func deliver(_ payload: String) {
        var words = payload.split(separator: " ")
        guard let sender = words.first, sender != instance else { return }
        words.removeFirst()
        let change: ExternalStoreChange
        if words.first == "*" {
            change = .everything
        } else {
            change = .objects(
                words.compactMap { word in
                    guard let slash = word.lastIndex(of: "/"), let pk = Int64(word[word.index(after: slash)...])
                    else { return nil }
                    return id(String(word[..<slash]), pk)
                })
        }
        deliver(change)
    }

    func deliver(_ change: ExternalStoreChange) {
        for handler in externalHandlers.withLock({ $0 }) { handler(change) }
    }
}

/// Listens, on a connection of its own and a thread of its own, for the notifications other
/// processes' saves send.
final class PostgreSQLListener: @unchecked Sendable {
    // Safe to share: `connection` is used only by the listener's thread; `stopped` is atomic.
    weak var store: PostgreSQLStore?
    private let conninfo: String
    private let channel: String
    private let stopped = Atomic<Bool>(false)

    init(store: PostgreSQLStore) {
        self.store = store
        conninfo = store.pool.conninfo
        channel = store.notificationChannel
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "strata-pg-listener"
        thread.start()
    }

    func stop() { stopped.store(true, ordering: .releasing) }

    private func run() {
        var connected = false
        while !stopped.load(ordering: .acquiring) {
            guard let connection = try? PGConnection(conninfo),
                (try? connection.execute("LISTEN \(PostgreSQLSchema.quote(channel))")) != nil
            else {
                Thread.sleep(forTimeInterval: 0.5)
                continue
            }
            // Whatever was sent while no connection listened is lost: everything may have changed.
            if connected { store?.deliver(.everything) }
            connected = true
            while !stopped.load(ordering: .acquiring) {
                var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
                let ready = poll(&descriptor, 1, 200)
                if ready < 0 && errno != EINTR { break }
                guard let received = try? connection.notifications() else { break }
                for notification in received { store?.deliver(notification.payload) }
                if !connection.isOK { break }
            }
        }
    }
}

/// The receipts a PostgreSQL store keeps (see ``SaveReceipt``), in a table of its schema that
/// every server over the database reads.
extension PostgreSQLStore {
    /// Writes `receipts` in the open transaction on `c`.
    func keepReceipts(_ receipts: [KeptReceipt], _ c: PGConnection) throws(StoreError) {
        do {
            try writeReceipts(receipts, table: KeptReceipt.table, c)
        } catch {
            if error.sqlState == "23505" {
                throw StoreError(
                    .uniqueViolation, KeptReceipt.savedAlready, storeURL: url)
            }
            throw storeError(error, "cannot keep the save's receipt")
        }
    }

    public func receipt(scope: String, key: String) throws(StoreError) -> KeptReceipt? {
        try read { (c: PGConnection) throws(PGError) in
            try keptReceipt(scope: scope, key: key, table: KeptReceipt.table, c)
        }
    }
}
