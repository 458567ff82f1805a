import Strata
import StrataHTTP
import Testing

@testable import StrataServer

/// The rate-limit stage alone: a bucket per token, else per address; health checks never limited.
@Suite struct RateLimitStageTests {
    /// Two requests at once, then one per thousand seconds: a test never waits for a refill.
    static func stage() -> RateLimitStage { RateLimitStage(rate: 0.001, burst: 2) }

    @Test func aClientPastItsBurstIsAnswered429WithWhenToRetry() throws {
        let stage = Self.stage()
        let request = Stage.request("GET", "/books")
        #expect(Stage.enter(stage, request).answer == nil)
        #expect(Stage.enter(stage, request).answer == nil)
        let refused = Stage.enter(stage, request).answer
        #expect(refused?.status == 429)
        #expect(Int(Stage.header(refused, "Retry-After") ?? "") ?? 0 >= 900)
        let detail = try Stage.json(refused).objectValue?["detail"]?.stringValue ?? ""
        #expect(detail.contains("from 10.0.0.7"), "\(detail)")
    }

    @Test func aTokenHasItsOwnBucketApartFromItsAddress() throws {
        let stage = Self.stage()
        let request = Stage.request("GET", "/books")
        let reader = RequestContext(tokenName: "reader", scopes: [.read])
        for _ in 0..<2 { #expect(Stage.enter(stage, request).answer == nil) }
        #expect(Stage.enter(stage, request).answer?.status == 429)
        // Same address, with a token: a full bucket of its own.
        for _ in 0..<2 { #expect(Stage.enter(stage, request, context: reader).answer == nil) }
        let refused = Stage.enter(stage, request, context: reader).answer
        #expect(refused?.status == 429)
        #expect(try Stage.json(refused).objectValue?["detail"]?.stringValue?.contains("token reader") == true)
    }

    @Test func healthChecksAndAServerWithoutARateAreNeverLimited() {
        let stage = Self.stage()
        for _ in 0..<5 {
            #expect(Stage.enter(stage, Stage.request("GET", "/live")).answer == nil)
            #expect(Stage.enter(stage, Stage.request("GET", "/ready")).answer == nil)
        }
        let unlimited = RateLimitStage(rate: 0, burst: 0)
        #expect(unlimited.limiter == nil)
        for _ in 0..<100 { #expect(Stage.enter(unlimited, Stage.request("GET", "/books")).answer == nil) }
    }

    @Test func theBurstIsTwiceTheRateUnlessGiven() {
        #expect(RateLimitStage(rate: 5, burst: 0).limiter?.burst == 10)
        #expect(RateLimitStage(rate: 5, burst: 3).limiter?.burst == 3)
    }
}
