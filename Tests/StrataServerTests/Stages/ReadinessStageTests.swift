import Strata
import StrataHTTP
import StrataTestSupport
import Testing

@testable import StrataServer

/// The readiness stage alone: only `/live` answers before the stores are loaded.
@Suite struct ReadinessStageTests {
    @Test func onlyLiveAnswersBeforeTheStoresAreLoaded() throws {
        let stage = ReadinessStage(service: Locked(nil))
        #expect(Stage.enter(stage, Stage.request("GET", "/live")).answer?.status == 200)
        let ready = Stage.enter(stage, Stage.request("GET", "/ready")).answer
        #expect(ready?.status == 503)
        #expect(Stage.header(ready, "Content-Type") == "application/problem+json")
        #expect(Stage.enter(stage, Stage.request("GET", "/books")).answer?.status == 503)
        #expect(Stage.enter(stage, Stage.request("POST", "/books")).answer?.status == 503)
    }

    @Test func onceLoadedEveryRequestGoesToTheService() throws {
        let fixture = try ServerFixture()
        let service = try #require(fixture.server.restService)
        let stage = ReadinessStage(service: Locked(service))
        let (answer, context) = Stage.enter(stage, Stage.request("GET", "/ready"))
        #expect(answer == nil)
        #expect(context.service === service)
    }
}
