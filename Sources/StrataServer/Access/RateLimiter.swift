import Dispatch
import Strata

/// A request rate per client (`--rate-limit`): a token bucket per bearer token, or per IP address
/// for anonymous requests, refilled at `rate` per second and holding up to `burst`.
final class RateLimiter: Sendable {
    let rate: Double
    let burst: Double
    private struct Bucket {
        var tokens: Double
        var updated: UInt64
    }
    private let buckets = Locked<[String: Bucket]>([:])
    /// Buckets kept before the full ones are forgotten.
    static let keep = 10_000

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = max(1, burst)
    }

    /// Takes one request from `client`'s bucket; nil when allowed, else the seconds until it
    /// would be.
    func take(_ client: String) -> Int? {
        let now = DispatchTime.now().uptimeNanoseconds
        return buckets.withLock { buckets -> Int? in
            if buckets.count > Self.keep {
                // Forget the clients whose buckets have refilled: they start full again anyway.
                buckets = buckets.filter { Double(now - $0.value.updated) / 1e9 * rate + $0.value.tokens < burst }
            }
            var bucket = buckets[client] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + Double(now - bucket.updated) / 1e9 * rate)
            bucket.updated = now
            defer { buckets[client] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
        }
    }
}
