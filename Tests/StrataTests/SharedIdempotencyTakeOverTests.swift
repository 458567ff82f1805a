import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// The shared PostgreSQL idempotency ledger: a claim another server made and never answered
/// counts as running for ``PostgreSQLIdempotency/inFlightSeconds``, then may be taken over by
/// exactly one server; this process's own claim whose request stopped may be taken over at once.
@Suite(.enabled(if: PostgreSQLTestServer.requirement.runs)) struct SharedIdempotencyTakeOverTests {
    static let model = try! ObjectModel.load(
        json: Array(#"{"name": "Keys", "version": "1", "entities": [{"name": "Item", "attributes": []}]}"#.utf8))

    @Test func anUnansweredClaimIsTakenOverOnceWhenItsServerIsPresumedGone() throws {
        let folder = TemporaryDirectory()
        let url = try folder.postgreSQLURL(name: "keys")
        let first = try PostgreSQLStore(model: Self.model, configuration: nil, url: url)
        defer { first.close() }
        let second = try PostgreSQLStore(model: Self.model, configuration: nil, url: url)
        defer { second.close() }
        let a = try IdempotencyLedger(sharedIn: first)
        let b = try IdempotencyLedger(sharedIn: second)
        let c = try IdempotencyLedger(sharedIn: second)
        #expect(try a.claim(scope: "s", key: "k", fingerprint: "f") == .claimed)
        // Another server sees it running, and cannot take it over yet.
        #expect(try b.claim(scope: "s", key: "k", fingerprint: "f") == .inFlight)
        #expect(try b.takeOver(scope: "s", key: "k", fingerprint: "f") == false)
        // Past the window (the claim made long ago): interrupted, and one server of two takes it.
        let table = first.schema.qualified(PostgreSQLIdempotency.table)
        _ = try PostgreSQLTestServer.psql(
            "UPDATE \(table) SET created = now() - interval '\(Int(PostgreSQLIdempotency.inFlightSeconds) + 5) seconds'"
        )
        #expect(try b.claim(scope: "s", key: "k", fingerprint: "f") == .interrupted)
        #expect(try b.takeOver(scope: "s", key: "k", fingerprint: "other") == false)
        #expect(try b.takeOver(scope: "s", key: "k", fingerprint: "f") == true)
        #expect(try c.takeOver(scope: "s", key: "k", fingerprint: "f") == false)
        #expect(try a.claim(scope: "s", key: "k", fingerprint: "f") == .inFlight)
        // The taker's answer is the key's; the first server's late answer does not replace it.
        let answer = IdempotencyLedger.Answer(status: 201, headers: [], body: Array("{}".utf8))
        b.finish(answer, scope: "s", key: "k")
        a.finish(IdempotencyLedger.Answer(status: 500, headers: [], body: []), scope: "s", key: "k")
        #expect(try c.claim(scope: "s", key: "k", fingerprint: "f") == .answered(answer))
        // A claim of this process whose request stopped (its outcome lost): taken over at once.
        #expect(try a.claim(scope: "s", key: "own", fingerprint: "f") == .claimed)
        a.abandon(scope: "s", key: "own")
        #expect(try a.claim(scope: "s", key: "own", fingerprint: "f") == .interrupted)
        #expect(try a.takeOver(scope: "s", key: "own", fingerprint: "f") == true)
        #expect(try a.takeOver(scope: "s", key: "own", fingerprint: "f") == false)
    }
}
