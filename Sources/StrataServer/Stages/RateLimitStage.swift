import Foundation
import StrataHTTP

/// Answers 429 to a client over its request rate (`--rate-limit`): a client is its bearer token,
/// else its IP address. The health checks are never limited.
struct RateLimitStage: ServerStage {
    /// The buckets; nil without a rate limit.
    let limiter: RateLimiter?

    /// - Parameters:
    ///   - rate: requests per second per client; 0: no limit.
    ///   - burst: requests a client may send at once above the rate; 0: twice the rate.
    init(rate: Double, burst: Double) {
        limiter = rate > 0 ? RateLimiter(rate: rate, burst: burst > 0 ? burst : 2 * rate) : nil
    }

    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse? {
        guard let limiter, request.path != "/live", request.path != "/ready" else { return nil }
        let client = context.tokenName.map { "token:" + $0 } ?? "ip:" + request.remoteAddress
        guard let wait = limiter.take(client) else { return nil }
        let who = context.tokenName.map { "token " + $0 } ?? request.remoteAddress
        return Problem(
            429, "Too Many Requests",
            "more than \(String(format: "%g", limiter.rate)) requests per second from \(who); try again in \(wait) s",
            headers: [("Retry-After", String(wait))]
        ).response
    }
}
