import Strata
import StrataHTTP
import Testing

@testable import StrataServer

/// The limits stage alone: each limit of the HTTP server answered with its own status, naming it.
@Suite struct LimitsStageTests {
    static func stage() -> LimitsStage {
        var options = ServerOptions()
        options.maxBodyBytes = 100
        options.maxTargetBytes = 200
        options.maxHeaderBytes = 300
        options.maxConnectionsPerIP = 4
        options.requestTimeoutSeconds = 7
        return LimitsStage(options: options)
    }

    @Test func everyLimitHasItsOwnAnswer() throws {
        let expected: [(HTTPServerLimit, Int, String)] = [
            (.body, 413, "larger than 100 bytes"), (.target, 414, "longer than 200 bytes"),
            (.headers, 431, "larger than 300 bytes"), (.connections, 429, "4 connections open"),
            (.time, 408, "longer than 7 s"), (.parameters, 414, "more than 256 parameters"),
        ]
        #expect(Set(expected.map(\.0)) == Set(HTTPServerLimit.allCases))
        for (limit, status, detail) in expected {
            let (answer, _) = Stage.enter(Self.stage(), Stage.request("POST", "/books", exceeded: limit))
            #expect(answer?.status == status, "\(limit)")
            #expect(Stage.header(answer, "Content-Type") == "application/problem+json")
            let text = try Stage.json(answer).objectValue?["detail"]?.stringValue ?? ""
            #expect(text.contains(detail), "\(limit): \(text)")
        }
        let (connections, _) = Stage.enter(Self.stage(), Stage.request("GET", "/", exceeded: .connections))
        #expect(Stage.header(connections, "Retry-After") == "1")
    }

    @Test func aRequestWithinTheLimitsGoesThrough() {
        let (answer, _) = Stage.enter(Self.stage(), Stage.request("GET", "/books"))
        #expect(answer == nil)
    }
}
