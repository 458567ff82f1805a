import Strata
import StrataHTTP
import Testing

@testable import StrataServer

/// The CORS stage alone: preflights answered on the way in, headers added on the way out.
@Suite struct CORSStageTests {
    static let app = "https://app.example.org"

    static func stage(_ origins: [String] = [app]) throws -> CORSStage {
        CORSStage(policy: try CORSPolicy(origins: origins, tokensInForce: false))
    }

    static func preflight(origin: String = app, exceeded: HTTPServerLimit? = nil) -> HTTPRequest {
        Stage.request(
            "OPTIONS", "/books", headers: ["origin": origin, "access-control-request-method": "POST"],
            exceeded: exceeded)
    }

    @Test func aPreflightFromAnAllowedOriginIsAnsweredOnTheWayIn() throws {
        let (answer, _) = Stage.enter(try Self.stage(), Self.preflight())
        #expect(answer?.status == 204)
        #expect(Stage.header(answer, "Access-Control-Allow-Origin") == Self.app)
        #expect(Stage.header(answer, "Access-Control-Allow-Methods")?.contains("PATCH") == true)
        #expect(Stage.header(answer, "Vary") == "Origin")
        // Another origin: answered, without a header that lets it in.
        let (other, _) = Stage.enter(try Self.stage(), Self.preflight(origin: "https://evil.example"))
        #expect(other?.status == 204)
        #expect(Stage.header(other, "Access-Control-Allow-Origin") == nil)
    }

    @Test func otherRequestsGoThroughAndTheirAnswersGetTheOriginsHeaders() throws {
        let stage = try Self.stage()
        let request = Stage.request("GET", "/books", headers: ["origin": Self.app])
        let (answer, context) = Stage.enter(stage, request)
        #expect(answer == nil)
        let response = stage.leave(HTTPResponse(status: 401), to: request, context)
        #expect(Stage.header(response, "Access-Control-Allow-Origin") == Self.app)
        #expect(Stage.header(response, "Access-Control-Expose-Headers")?.contains("WWW-Authenticate") == true)
        let stranger = Stage.request("GET", "/books", headers: ["origin": "https://evil.example"])
        #expect(
            Stage.header(stage.leave(HTTPResponse(status: 200), to: stranger, context), "Access-Control-Allow-Origin")
                == nil)
    }

    @Test func withoutOriginsItAddsNothingAndAnswersNoPreflight() throws {
        let stage = try Self.stage([])
        let (answer, context) = Stage.enter(stage, Self.preflight())
        #expect(answer == nil)
        let response = stage.leave(HTTPResponse(status: 200), to: Self.preflight(), context)
        #expect(response.headers.isEmpty)
    }

    @Test func aRequestOverALimitIsLeftToTheLimitsStage() throws {
        let (answer, _) = Stage.enter(try Self.stage(), Self.preflight(exceeded: .headers))
        #expect(answer == nil)
    }
}
