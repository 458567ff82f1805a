import Foundation

/// Remembers the answers to requests sent with an idempotency key, so that a client retrying
/// one gets the first answer instead of a second write, keyed by who sent it (a token name) and
/// the key: an SQLite file of its own (`synchronous=FULL`) for one server, or a table in a
/// PostgreSQL store (``init(sharedIn:lifetime:)``) that every server over that database shares,
/// so that a retry may go to any of them.
///
/// A key is claimed before its request runs and the claim is durable first; the answer is kept
/// when the request ends. A claim left by a process that stopped mid-request stays unanswered
/// (the first attempt's outcome is unknown), and its retries are told so.
public final class IdempotencyLedger: @unchecked Sendable {
    // Safe to share: `db` is only used under `lock`; `shared` is safe to share itself.
    private let db: SQLiteConnection?
    private let shared: PostgreSQLIdempotency?
    private let lock = NSLock()
    /// Where the answers are kept: a file path, or the PostgreSQL store's table.
    public let location: String
    /// How long an answer is kept.
    public let lifetime: TimeInterval
    private var claims = 0

    /// A kept answer.
    public struct Answer: Sendable, Equatable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        public static func == (lhs: Answer, rhs: Answer) -> Bool {
            lhs.status == rhs.status && lhs.body == rhs.body
                && lhs.headers.map { "\($0.name):\($0.value)" } == rhs.headers.map { "\($0.name):\($0.value)" }
        }
    }

    /// What a claim found.
    public enum Claim: Sendable, Equatable {
        /// The key is new: run the request, then ``finish(_:scope:key:)``.
        case claimed
        /// The same request was answered already: send this again.
        case answered(Answer)
        /// The key was used for another request.
        case mismatch
        /// A request with the key is still running here.
        case inFlight
        /// A request with the key was interrupted by a stop of the server (or its write's outcome
        /// was lost); its outcome is unknown.
        case interrupted
    }

    private let running = Locked<Set<String>>([])

    /// Opens (or creates) the ledger at `path`, forgetting answers older than `lifetime`.
    public init(path: String, lifetime: TimeInterval = 24 * 3600) throws(StoreError) {
        shared = nil
        location = path
        do {
            let db = try SQLiteConnection(path: path)
            self.db = db
            try db.execute("PRAGMA journal_mode=WAL")
            try db.execute("PRAGMA synchronous=FULL")
            try db.execute(
                "CREATE TABLE IF NOT EXISTS idempotency (scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, created REAL NOT NULL, status INTEGER, headers TEXT, body BLOB, PRIMARY KEY (scope, key))"
            )
        } catch {
            throw StoreError(
                .io, "cannot open the idempotency ledger \(path): \(error.message)",
                storeURL: URL(fileURLWithPath: path))
        }
        self.lifetime = lifetime
        try purge()
    }

    /// Keeps the answers in `store`'s database (the table `_strata_idempotency` of its schema),
    /// shared by every server over it; forgets answers older than `lifetime`.
    public init(sharedIn store: PostgreSQLStore, lifetime: TimeInterval = 24 * 3600) throws(StoreError) {
        db = nil
        let shared = PostgreSQLIdempotency(store: store, lifetime: lifetime)
        self.shared = shared
        location = "\(store.displayURL) (\(store.schema.qualified(PostgreSQLIdempotency.table)))"
        self.lifetime = lifetime
        try shared.purge()
    }

    /// Forgets answers past their lifetime.
    public func purge() throws(StoreError) {
        if let shared { return try shared.purge() }
        guard let db else { return }
        try locked { () throws(SQLiteError) in
            try db.run("DELETE FROM idempotency WHERE created < ?", [.real(Date().timeIntervalSince1970 - lifetime)])
        }
    }

    /// Claims `key` for `scope`'s request with `fingerprint` (a digest of what the request asks).
    public func claim(scope: String, key: String, fingerprint: String) throws(StoreError) -> Claim {
        if let shared { return try shared.claim(scope: scope, key: key, fingerprint: fingerprint) }
        guard let db else { return .claimed }
        let id = scope + "\u{0}" + key
        return try locked { () throws(SQLiteError) -> Claim in
            claims += 1
            if claims % 1000 == 0 {
                try db.run(
                    "DELETE FROM idempotency WHERE created < ?", [.real(Date().timeIntervalSince1970 - lifetime)])
            }
            let rows = try sqliteRows(
                "SELECT fingerprint, status, headers, body, created FROM idempotency WHERE scope = ? AND key = ?",
                [.text(scope), .text(key)])
            if let row = rows.first, row.created >= Date().timeIntervalSince1970 - lifetime {
                guard row.fingerprint == fingerprint else { return .mismatch }
                guard let status = row.status else {
                    return running.withLock { $0.contains(id) } ? .inFlight : .interrupted
                }
                return .answered(Answer(status: status, headers: row.headers, body: row.body))
            }
            try db.run(
                "INSERT OR REPLACE INTO idempotency (scope, key, fingerprint, created) VALUES (?, ?, ?, ?)",
                [.text(scope), .text(key), .text(fingerprint), .real(Date().timeIntervalSince1970)])
            running.withLock { _ = $0.insert(id) }
            return .claimed
        }
    }

    /// Takes over the claim of `scope`'s `key`, left unanswered by a request that was interrupted
    /// (``Claim/interrupted``), to run the request again: for a caller that knows the first
    /// attempt saved nothing (no store keeps its ``SaveReceipt``). True when the caller holds the
    /// claim now and must ``finish(_:scope:key:)`` it; false when another took it or it was answered.
    public func takeOver(scope: String, key: String, fingerprint: String) throws(StoreError) -> Bool {
        if let shared { return try shared.takeOver(scope: scope, key: key, fingerprint: fingerprint) }
        guard let db else { return true }
        let id = scope + "\u{0}" + key
        return try locked { () throws(SQLiteError) -> Bool in
            guard !running.withLock({ $0.contains(id) }) else { return false }
            try db.run(
                "UPDATE idempotency SET created = ? WHERE scope = ? AND key = ? AND fingerprint = ? AND status IS NULL",
                [.real(Date().timeIntervalSince1970), .text(scope), .text(key), .text(fingerprint)])
            guard db.changes > 0 else { return false }
            running.withLock { _ = $0.insert(id) }
            return true
        }
    }

    /// Keeps `answer` for the claimed key; nil gives the key up (the request changed nothing and
    /// may be sent again).
    public func finish(_ answer: Answer?, scope: String, key: String) {
        if let shared { return shared.finish(answer, scope: scope, key: key) }
        guard let db else { return }
        _ = try? locked { () throws(SQLiteError) in
            if let answer {
                let headers = Self.headersText(answer.headers)
                try db.run(
                    "UPDATE idempotency SET status = ?, headers = ?, body = ? WHERE scope = ? AND key = ?",
                    [
                        .integer(Int64(answer.status)), .text(headers), .blob(Data(answer.body)), .text(scope),
                        .text(key),
                    ])
            } else {
                try db.run("DELETE FROM idempotency WHERE scope = ? AND key = ?", [.text(scope), .text(key)])
            }
        }
        running.withLock { _ = $0.remove(scope + "\u{0}" + key) }
    }

    /// Keeps `answer` for `scope`'s `key` while it has none, whoever claimed it: the answer a
    /// receipt rebuilt for a request whose first attempt was saved and never answered.
    public func keep(_ answer: Answer, scope: String, key: String) {
        if let shared { return shared.keep(answer, scope: scope, key: key) }
        guard let db else { return }
        _ = try? locked { () throws(SQLiteError) in
            try db.run(
                "UPDATE idempotency SET status = ?, headers = ?, body = ? WHERE scope = ? AND key = ? AND status IS NULL",
                [
                    .integer(Int64(answer.status)), .text(Self.headersText(answer.headers)), .blob(Data(answer.body)),
                    .text(scope), .text(key),
                ])
        }
    }

    /// Leaves the claimed key unanswered for good: the request's write may or may not have
    /// happened (its commit's outcome was lost), so a retry with the key is told so instead of
    /// running again.
    public func abandon(scope: String, key: String) {
        if let shared { return shared.abandon(scope: scope, key: key) }
        running.withLock { _ = $0.remove(scope + "\u{0}" + key) }
    }

    /// The headers of a kept answer as JSON text (`[[name, value], …]`).
    static func headersText(_ headers: [(name: String, value: String)]) -> String {
        JSONValue.array(headers.map { .array([.string($0.name), .string($0.value)]) }).jsonText
    }

    /// The headers `headersText(_:)` wrote.
    static func headers(from text: String) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        if case .array(let pairs)? = try? JSONValue.parse(Array(text.utf8)) {
            for pair in pairs {
                if case .array(let parts) = pair, parts.count == 2, let name = parts[0].stringValue,
                    let value = parts[1].stringValue
                {
                    headers.append((name, value))
                }
            }
        }
        return headers
    }

    private struct Row {
        var fingerprint: String
        var status: Int?
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        var created: Double
    }

    private func sqliteRows(_ sql: String, _ arguments: [SQLiteValue]) throws(SQLiteError) -> [Row] {
        do {
            guard let db else { return [] }
            return try db.query(sql, arguments) { statement in
                let headers = Self.headers(from: statement.text(2))
                let status = statement.isNull(1) ? nil : Int(statement.int64(1))
                return Row(
                    fingerprint: statement.text(0), status: status, headers: headers,
                    body: [UInt8](statement.blob(3)), created: statement.double(4))
            }
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw SQLiteError(code: 1, message: "\(error)")
        }
    }

    private func locked<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            return try body()
        } catch {
            throw StoreError(.io, "the idempotency ledger failed: \(error.message)")
        }
    }
}
