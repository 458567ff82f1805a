import Foundation
import Strata
import StrataHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// An `Idempotency-Key` a request claimed, to finish with its answer.
struct IdempotencyClaim: Sendable {
    let ledger: IdempotencyLedger
    let scope: String
    let key: String
}

/// Keeps the answer to a write with an `Idempotency-Key` (for `--idempotency-hours`), per author:
/// the same key and request again gets the first answer back; the same key with another request,
/// or while the first runs, is refused. A write that was saved but whose answer the ledger never
/// kept (the server stopped in between) is answered from the receipt its save kept (see
/// ``RESTService/replay(scope:key:)``); one that was not saved runs again.
struct IdempotencyStage: ServerStage {
    /// The answers kept, once the server runs; nil also when keys are ignored.
    let ledger: Locked<IdempotencyLedger?>

    /// The methods an `Idempotency-Key` applies to.
    static let methods: Set<String> = ["POST", "PATCH", "PUT", "DELETE"]

    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse? {
        // Reads first: they never carry a key that counts, and they are most requests.
        guard request.method != "GET", request.method != "HEAD", let ledger = ledger.withLock({ $0 }),
            Self.methods.contains(request.method), let key = request.header("idempotency-key"),
            context.service?.isWrite(request) == true
        else { return nil }
        return claim(key, for: request, in: ledger, &context)
    }

    func leave(_ response: HTTPResponse, to request: HTTPRequest, _ context: RequestContext) -> HTTPResponse {
        guard let claim = context.idempotencyClaim else { return response }
        #if DEBUG
            Self.crashBeforeAnswer()
        #endif
        // A write whose outcome is unknown keeps its key unanswered: a retry is answered from the
        // receipt if it was saved after all, and runs if it was not.
        if response.headers.contains(where: { $0.name == Problem.outcomeHeader }) {
            claim.ledger.abandon(scope: claim.scope, key: claim.key)
            return response
        }
        // Any other 5xx, or a 429, changed nothing: the key may be sent again.
        let kept =
            response.status >= 500 || response.status == 429
            ? nil : IdempotencyLedger.Answer(status: response.status, headers: response.headers, body: response.body)
        claim.ledger.finish(kept, scope: claim.scope, key: claim.key)
        return response
    }

    /// Claims `key` for `request`: nil when it is new (the claim noted in `context`), else the
    /// first answer again or a refusal.
    private func claim(
        _ key: String, for request: HTTPRequest, in ledger: IdempotencyLedger, _ context: inout RequestContext
    ) -> HTTPResponse? {
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            return Problem.badRequest("Idempotency-Key must be 1 to 255 visible ASCII characters").response
        }
        let scope = context.author
        var digest = SHA256()
        digest.update(request.method + "\n" + request.path + "\n")
        for item in request.query { digest.update(item.name + "=" + item.value + "&") }
        for header in ["if-match", "if-none-match", "prefer", "content-type"] {
            digest.update("\n" + header + ":" + (request.header(header) ?? ""))
        }
        digest.update("\n")
        digest.update(request.body)
        let fingerprint = digest.finalize().map { String(format: "%02x", $0) }.joined()
        let claim: IdempotencyLedger.Claim
        do {
            claim = try ledger.claim(scope: scope, key: key, fingerprint: fingerprint)
        } catch {
            return Problem(503, "Service Unavailable", error.message, headers: [("Retry-After", "1")]).response
        }
        switch claim {
        case .claimed:
            context.idempotencyClaim = IdempotencyClaim(ledger: ledger, scope: scope, key: key)
            return nil
        case .answered(let answer):
            return HTTPResponse(
                status: answer.status, headers: answer.headers + [("Idempotent-Replayed", "true")], body: answer.body)
        case .mismatch:
            return Problem(
                422, "Unprocessable Content",
                "Idempotency-Key '\(key)' was used for another request (method, path, query, preconditions or body); send a new key for a new request"
            ).response
        case .inFlight:
            // Saved already (its answer on its way to the ledger): the receipt answers.
            if let replayed = replay(key, scope: scope, ledger: ledger, context) { return replayed }
            return Problem(
                409, "Conflict",
                "a request with Idempotency-Key '\(key)' is still running; retry when it is answered",
                headers: [("Retry-After", "1")]
            ).response
        case .interrupted:
            return resume(key, scope: scope, fingerprint: fingerprint, ledger: ledger, &context)
        }
    }

    /// The answer to a request whose first attempt was interrupted (the server stopped, or the
    /// commit's outcome was lost): rebuilt from the receipt its save kept, when it was saved;
    /// else the request runs again under the same key.
    private func resume(
        _ key: String, scope: String, fingerprint: String, ledger: IdempotencyLedger, _ context: inout RequestContext
    ) -> HTTPResponse? {
        if let replayed = replay(key, scope: scope, ledger: ledger, context) { return replayed }
        let taken: Bool
        do {
            taken = try ledger.takeOver(scope: scope, key: key, fingerprint: fingerprint)
        } catch {
            return Problem(503, "Service Unavailable", error.message, headers: [("Retry-After", "1")]).response
        }
        guard taken else {
            // Another request took it over at the same moment: it runs, this one waits for it.
            return Problem(
                409, "Conflict",
                "a request with Idempotency-Key '\(key)' is still running; retry when it is answered",
                headers: [("Retry-After", "1")]
            ).response
        }
        context.idempotencyClaim = IdempotencyClaim(ledger: ledger, scope: scope, key: key)
        return nil
    }

    /// The answer rebuilt from the receipt of `scope`'s write with `key`, kept in the ledger as
    /// its answer; nil when no store keeps a receipt (nothing was saved).
    private func replay(_ key: String, scope: String, ledger: IdempotencyLedger, _ context: RequestContext)
        -> HTTPResponse?
    {
        guard let service = context.service else { return nil }
        let rebuilt: HTTPResponse?
        do {
            rebuilt = try service.replay(scope: scope, key: key)
        } catch {
            return Problem(503, "Service Unavailable", error.detail, headers: [("Retry-After", "1")]).response
        }
        guard let rebuilt else { return nil }
        ledger.keep(
            IdempotencyLedger.Answer(status: rebuilt.status, headers: rebuilt.headers, body: rebuilt.body),
            scope: scope, key: key)
        return HTTPResponse(
            status: rebuilt.status, headers: rebuilt.headers + [("Idempotent-Replayed", "true")], body: rebuilt.body)
    }
}

#if DEBUG
    extension IdempotencyStage {
        /// For the crash harness: `STRATA_CRASH_AT=before-idempotency-answer` kills a debug build
        /// between a write's commit and keeping its answer (release builds never read it).
        static let crashesBeforeAnswer =
            ProcessInfo.processInfo.environment["STRATA_CRASH_AT"] == "before-idempotency-answer"

        static func crashBeforeAnswer() {
            if crashesBeforeAnswer { kill(getpid(), SIGKILL) }
        }
    }
#endif
