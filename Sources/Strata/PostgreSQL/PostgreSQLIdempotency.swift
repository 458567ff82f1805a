import Foundation
import Synchronization

/// The idempotency ledger kept in a PostgreSQL store's schema, shared by every server over the
/// database (see ``IdempotencyLedger/init(sharedIn:lifetime:)``).
///
/// A claim is one statement in a transaction of its own (an insert that takes the key, or takes
/// over an answer past its lifetime), so two servers claiming the same key at once find one
/// winner. The answer is written when the request ends; while the database cannot take it (a
/// primary failing over) it is written again in the background until it can, for as long as
/// ``inFlightSeconds``. An unanswered claim of another server counts as running for
/// ``inFlightSeconds`` after it was made, and as interrupted after that: a retry is then answered
/// from the receipt its save kept, or takes the key over and runs (see ``SaveReceipt``; a receipt
/// is unique per key in the store deciding the save, so a first attempt still running cannot
/// also be saved — whichever commits second fails and answers as the first).
final class PostgreSQLIdempotency: @unchecked Sendable {
    // Safe to share: the store's pool lends connections one at a time; `running` and `pending`
    // live behind locks; the rest is immutable.
    static let table = "_strata_idempotency"
    /// How long another server's unanswered claim is taken to be running: longer than writes
    /// take, short enough that a server that died holding a key holds its client back briefly.
    static let inFlightSeconds = 30.0

    private let store: PostgreSQLStore
    private let lifetime: TimeInterval
    private let qualified: String
    /// This process's name in the claims it makes.
    private let owner = UUID().uuidString.lowercased()
    /// The keys claimed here whose requests still run (scope, NUL, key).
    private let running = Locked<Set<String>>([])
    private let claims = Atomic<Int>(0)

    init(store: PostgreSQLStore, lifetime: TimeInterval) {
        self.store = store
        self.lifetime = lifetime
        qualified = store.schema.qualified(Self.table)
    }

    /// Runs `body` on one of the store's connections, as a store error when it fails.
    @discardableResult
    private func run<T>(_ doing: String, _ body: (PGConnection) throws(PGError) -> T) throws(StoreError) -> T {
        do {
            return try store.pool.with(body)
        } catch {
            throw store.storeError(error, "the idempotency ledger cannot \(doing)")
        }
    }

    func purge() throws(StoreError) {
        try run("forget old answers") { (c: PGConnection) throws(PGError) in
            try c.execute(
                "DELETE FROM \(qualified) WHERE created < now() - make_interval(secs => $1)", [.double(lifetime)])
        }
    }

    func claim(scope: String, key: String, fingerprint: String) throws(StoreError) -> IdempotencyLedger.Claim {
        if claims.add(1, ordering: .relaxed).newValue % 1000 == 0 { try purge() }
        for _ in 0..<3 {
            if let found = try claimOnce(scope: scope, key: key, fingerprint: fingerprint) { return found }
        }
        return .inFlight
    }

    private func claimOnce(scope: String, key: String, fingerprint: String) throws(StoreError)
        -> IdempotencyLedger.Claim?
    {
        let id = scope + "\u{0}" + key
        let (owner, lifetime, qualified) = (self.owner, self.lifetime, self.qualified)
        let found = try run("claim a key") { (c: PGConnection) throws(PGError) -> (taken: Bool, rows: [[String?]]) in
            let taken = try c.execute(
                """
                INSERT INTO \(qualified) (scope, key, fingerprint, owner) VALUES ($1, $2, $3, $4)
                ON CONFLICT (scope, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, owner = EXCLUDED.owner,
                created = now(), status = NULL, headers = NULL, body = NULL
                WHERE \(qualified).created < now() - make_interval(secs => $5) RETURNING 1
                """,
                [.text(scope), .text(key), .text(fingerprint), .text(owner), .double(lifetime)])
            if !taken.rows.isEmpty { return (true, []) }
            let rows = try c.execute(
                "SELECT fingerprint, owner, status, headers, body, extract(epoch FROM now() - created) FROM \(qualified) WHERE scope = $1 AND key = $2",
                [.text(scope), .text(key)]
            ).rows
            return (false, rows)
        }
        if found.taken {
            running.withLock { _ = $0.insert(id) }
            return .claimed
        }
        // The row went between the two statements (its request gave the key up): nil, to claim again.
        guard let row = found.rows.first else { return nil }
        guard row[0] == fingerprint else { return .mismatch }
        guard let status = row[2].flatMap({ Int($0) }) else {
            if row[1] == owner { return running.withLock { $0.contains(id) } ? .inFlight : .interrupted }
            let age = row[5].flatMap { Double($0) } ?? .infinity
            return age < Self.inFlightSeconds ? .inFlight : .interrupted
        }
        return .answered(
            IdempotencyLedger.Answer(
                status: status, headers: IdempotencyLedger.headers(from: row[3] ?? "[]"),
                body: [UInt8](PGConnection.bytes(row[4] ?? "\\x"))))
    }

    /// Takes over an interrupted claim (see ``IdempotencyLedger/takeOver(scope:key:fingerprint:)``):
    /// this process's own claim whose request is not running, or another server's older than
    /// ``inFlightSeconds``; one statement, so that of two servers taking it over one wins.
    func takeOver(scope: String, key: String, fingerprint: String) throws(StoreError) -> Bool {
        let id = scope + "\u{0}" + key
        guard running.withLock({ $0.insert(id).inserted }) else { return false }
        let (owner, qualified) = (self.owner, self.qualified)
        let taken: Bool
        do {
            taken = try run("take over a key") { (c: PGConnection) throws(PGError) -> Bool in
                try !c.execute(
                    """
                    UPDATE \(qualified) SET owner = $4, created = now() WHERE scope = $1 AND key = $2
                    AND fingerprint = $3 AND status IS NULL
                    AND (owner = $4 OR created < now() - make_interval(secs => $5)) RETURNING 1
                    """,
                    [.text(scope), .text(key), .text(fingerprint), .text(owner), .double(Self.inFlightSeconds)]
                ).rows.isEmpty
            }
        } catch {
            running.withLock { _ = $0.remove(id) }
            throw error
        }
        if !taken { running.withLock { _ = $0.remove(id) } }
        return taken
    }

    func finish(_ answer: IdempotencyLedger.Answer?, scope: String, key: String) {
        let deadline = Date(timeIntervalSinceNow: Self.inFlightSeconds)
        if (try? write(answer, scope: scope, key: key)) == nil {
            retry(answer, scope: scope, key: key, until: deadline, pause: 0.25)
        } else {
            running.withLock { _ = $0.remove(scope + "\u{0}" + key) }
        }
    }

    func keep(_ answer: IdempotencyLedger.Answer, scope: String, key: String) {
        let qualified = self.qualified
        _ = try? run("keep an answer") { (c: PGConnection) throws(PGError) in
            try c.execute(
                "UPDATE \(qualified) SET status = $1, headers = $2, body = $3 WHERE scope = $4 AND key = $5 AND status IS NULL",
                [
                    .integer(Int64(answer.status)), .text(IdempotencyLedger.headersText(answer.headers)),
                    .bytes(Data(answer.body)), .text(scope), .text(key),
                ])
        }
    }

    func abandon(scope: String, key: String) {
        running.withLock { _ = $0.remove(scope + "\u{0}" + key) }
    }

    /// Writes the answer again in the background until the database takes it or `deadline`
    /// passes (the claim then counts as interrupted).
    private func retry(
        _ answer: IdempotencyLedger.Answer?, scope: String, key: String, until deadline: Date, pause: Double
    ) {
        DispatchQueue.global().asyncAfter(deadline: .now() + pause) { [self] in
            if (try? write(answer, scope: scope, key: key)) != nil || Date() >= deadline {
                running.withLock { _ = $0.remove(scope + "\u{0}" + key) }
                return
            }
            retry(answer, scope: scope, key: key, until: deadline, pause: min(pause * 2, 2))
        }
    }

    private func write(_ answer: IdempotencyLedger.Answer?, scope: String, key: String) throws(StoreError) {
        let (owner, qualified) = (self.owner, self.qualified)
        try run("keep an answer") { (c: PGConnection) throws(PGError) in
            if let answer {
                try c.execute(
                    "UPDATE \(qualified) SET status = $1, headers = $2, body = $3 WHERE scope = $4 AND key = $5 AND owner = $6",
                    [
                        .integer(Int64(answer.status)), .text(IdempotencyLedger.headersText(answer.headers)),
                        .bytes(Data(answer.body)), .text(scope), .text(key), .text(owner),
                    ])
            } else {
                try c.execute(
                    "DELETE FROM \(qualified) WHERE scope = $1 AND key = $2 AND owner = $3 AND status IS NULL",
                    [.text(scope), .text(key), .text(owner)])
            }
        }
    }
}
