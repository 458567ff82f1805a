import Foundation
import Strata
import StrataHTTP
import StrataTestSupport
import Testing

@testable import StrataServer

/// The stages together, in order: which answers each later stage sees on the way out.
@Suite struct RequestPipelineTests {
    static let app = "https://app.example.org"
    static let readerSecret = "reader-secret-0123456789"
    static let writerSecret = "writer-secret-0123456789"

    /// A pipeline with CORS for ``app``, a reader token, and the service given (none: still loading).
    static func pipeline(
        service: RESTService? = nil, ledger: IdempotencyLedger? = nil, lines: Locked<[String]>
    ) throws -> RequestPipeline {
        var options = ServerOptions()
        options.maxBodyBytes = 10
        return RequestPipeline(
            accessLog: AccessLogStage(
                format: .text, buffered: nil, write: { line in lines.withLock { $0.append(line) } }),
            cors: CORSStage(policy: try CORSPolicy(origins: [app], tokensInForce: true)),
            limits: LimitsStage(options: options),
            authentication: AuthenticationStage(
                control: try AccessControl(
                    tokens: ["reader:read:\(readerSecret)", "app:write:\(writerSecret)"], file: nil,
                    privateOpenAPI: false)),
            rateLimit: RateLimitStage(rate: 0, burst: 0), readiness: ReadinessStage(service: Locked(service)),
            idempotency: IdempotencyStage(ledger: Locked(ledger)))
    }

    static func request(_ method: String, _ path: String, headers: [String: String] = [:]) -> HTTPRequest {
        Stage.request(method, path, headers: ["origin": app].merging(headers) { $1 })
    }

    @Test func aRefusalIsLoggedAndCarriesTheCORSHeaders() throws {
        let lines = Locked<[String]>([])
        let pipeline = try Self.pipeline(lines: lines)
        let refused = pipeline.respond(Self.request("GET", "/books"))
        #expect(refused.status == 401)
        #expect(Stage.header(refused, "Access-Control-Allow-Origin") == Self.app)
        #expect(lines.current.count == 1)
        #expect(lines.current.first?.contains(#""GET /books" 401"#) == true)
    }

    @Test func aPreflightIsAnsweredBeforeAuthenticationAndLogged() throws {
        let lines = Locked<[String]>([])
        let pipeline = try Self.pipeline(lines: lines)
        let preflight = pipeline.respond(
            Self.request("OPTIONS", "/books", headers: ["access-control-request-method": "DELETE"]))
        #expect(preflight.status == 204)
        #expect(Stage.header(preflight, "Access-Control-Allow-Methods") != nil)
        // The preflight's own headers, not those added to other answers.
        #expect(Stage.header(preflight, "Access-Control-Expose-Headers") == nil)
        #expect(lines.current.first?.contains(#""OPTIONS /books" 204"#) == true)
    }

    @Test func aRequestOverALimitIsAnsweredByTheLimitsStageWithCORSHeaders() throws {
        let lines = Locked<[String]>([])
        let pipeline = try Self.pipeline(lines: lines)
        var request = Self.request("OPTIONS", "/books", headers: ["access-control-request-method": "POST"])
        request.exceededLimit = .body
        let answer = pipeline.respond(request)
        #expect(answer.status == 413)
        #expect(Stage.header(answer, "Access-Control-Allow-Origin") == Self.app)
        #expect(lines.current.first?.contains(" 413 ") == true)
    }

    @Test func beforeTheStoresLoadAnAuthorizedRequestIs503AndLoggedWithItsToken() throws {
        let lines = Locked<[String]>([])
        let pipeline = try Self.pipeline(lines: lines)
        let answer = pipeline.respond(
            Self.request("GET", "/books", headers: ["authorization": "Bearer \(Self.readerSecret)"]))
        #expect(answer.status == 503)
        #expect(lines.current.first?.hasSuffix("token=reader") == true)
        #expect(pipeline.respond(Self.request("GET", "/live")).status == 200)
    }

    @Test func theServiceAnswersWhatEveryStageLetThroughWithTheTokensScopes() throws {
        let fixture = try ServerFixture()
        let lines = Locked<[String]>([])
        let pipeline = try Self.pipeline(service: fixture.server.restService, lines: lines)
        let index = pipeline.respond(
            Self.request("GET", "/", headers: ["authorization": "Bearer \(Self.readerSecret)"]))
        #expect(index.status == 200)
        #expect(Stage.header(index, "Access-Control-Allow-Origin") == Self.app)
        // A reader is no admin: no store locations.
        let stores = try Stage.json(index).objectValue?["stores"]?.arrayValue
        #expect(stores?.first?.objectValue?["url"] == .null)
        #expect(lines.current.last?.hasSuffix("token=reader") == true)
    }

    @Test func onlyTheServicesOwnAnswerIsKeptForAnIdempotencyKey() throws {
        let fixture = try ServerFixture()
        let ledger = try IdempotencyLedger(path: fixture.folder.file("keys.sqlite").path)
        let lines = Locked<[String]>([])
        let pipeline = try Self.pipeline(service: fixture.server.restService, ledger: ledger, lines: lines)
        func post(_ secret: String) -> HTTPRequest {
            var request = Self.request(
                "POST", "/authors",
                headers: [
                    "authorization": "Bearer \(secret)", "idempotency-key": "k", "content-type": "application/json",
                ])
            request.body = Array(#"{"name": "A"}"#.utf8)
            return request
        }
        // Refused by authentication (a reader may not write): no key is claimed.
        #expect(pipeline.respond(post(Self.readerSecret)).status == 403)
        #expect(try ledger.claim(scope: "reader", key: "k", fingerprint: "f") == .claimed)
        // The service's answer is kept, and given again with the CORS headers of this request.
        let created = pipeline.respond(post(Self.writerSecret))
        #expect(created.status == 201)
        #expect(Stage.header(created, "Idempotent-Replayed") == nil)
        let replayed = pipeline.respond(post(Self.writerSecret))
        #expect(replayed.status == 201)
        #expect(replayed.body == created.body)
        #expect(Stage.header(replayed, "Idempotent-Replayed") == "true")
        #expect(replayed.headers.filter { $0.name == "Access-Control-Allow-Origin" }.count == 1)
    }
}
