import Foundation
import Strata
import StrataHTTP

/// What to do with a request that may carry an `Idempotency-Key`.
enum IdempotentStep {
    /// Answer with this at once (the first answer again, or a refusal).
    case answer(HTTPResponse)
    /// Run it; `keep` records its answer and returns it.
    case proceed(keep: @Sendable (HTTPResponse) -> HTTPResponse)
}

extension StrataServerInstance {
    /// The methods an `Idempotency-Key` applies to.
    static let idempotentMethods: Set<String> = ["POST", "PATCH", "PUT", "DELETE"]

    /// The step for `request` (see ``IdempotentStep``), the key scoped by the request's token.
    static func idempotencyStep(_ request: HTTPRequest, ledger: IdempotencyLedger?) -> IdempotentStep {
        let passThrough = IdempotentStep.proceed(keep: { $0 })
        guard let ledger, idempotentMethods.contains(request.method), let key = request.header("idempotency-key")
        else { return passThrough }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            return .answer(
                Problem.badRequest("Idempotency-Key must be 1 to 255 visible ASCII characters").response)
        }
        let scope = request.attributes["token"] ?? "anonymous"
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
            return .answer(Problem(503, "Service Unavailable", error.message, headers: [("Retry-After", "1")]).response)
        }
        switch claim {
        case .claimed:
            return .proceed { response in
                // A 5xx or 429 changed nothing: the key may be sent again.
                let kept =
                    response.status >= 500 || response.status == 429
                    ? nil
                    : IdempotencyLedger.Answer(status: response.status, headers: response.headers, body: response.body)
                ledger.finish(kept, scope: scope, key: key)
                return response
            }
        case .answered(let answer):
            return .answer(
                HTTPResponse(
                    status: answer.status, headers: answer.headers + [("Idempotent-Replayed", "true")],
                    body: answer.body))
        case .mismatch:
            return .answer(
                Problem(
                    422, "Unprocessable Content",
                    "Idempotency-Key '\(key)' was used for another request (method, path, query, preconditions or body); send a new key for a new request"
                ).response)
        case .inFlight:
            return .answer(
                Problem(
                    409, "Conflict",
                    "a request with Idempotency-Key '\(key)' is still running; retry when it is answered",
                    headers: [("Retry-After", "1")]
                ).response)
        case .interrupted:
            return .answer(
                Problem(
                    409, "Conflict",
                    "the request with Idempotency-Key '\(key)' was interrupted when the server stopped, so whether it was saved is unknown: read the resource to see, or send a new key"
                ).response)
        }
    }
}
