import Foundation
import Strata
import StrataHTTP
import StrataTestSupport
import Testing

@testable import StrataServer

/// The idempotency stage alone, over a real ledger and service: a claim on the way in, the answer
/// kept on the way out, per author.
@Suite struct IdempotencyStageTests {
    /// A stage with its own ledger, and a context that reached it (the service in it).
    struct Setting {
        let fixture: ServerFixture
        let stage: IdempotencyStage
        let context: RequestContext

        init() throws {
            fixture = try ServerFixture()
            let ledger = try IdempotencyLedger(path: fixture.folder.file("keys.sqlite").path)
            stage = IdempotencyStage(ledger: Locked(ledger))
            var context = RequestContext()
            context.service = fixture.server.restService
            self.context = context
        }
    }

    static func post(_ name: String, key: String) -> HTTPRequest {
        Stage.request(
            "POST", "/authors", headers: ["idempotency-key": key, "content-type": "application/json"],
            body: #"{"name": "\#(name)"}"#)
    }

    @Test func aClaimedKeyKeepsItsAnswerAndReplaysIt() throws {
        let setting = try Setting()
        let (answer, context) = Stage.enter(setting.stage, Self.post("A", key: "k-1"), context: setting.context)
        #expect(answer == nil)
        #expect(context.idempotencyClaim?.key == "k-1")
        #expect(context.idempotencyClaim?.scope == "anonymous")
        // While it runs the same key waits its turn.
        #expect(Stage.enter(setting.stage, Self.post("A", key: "k-1"), context: setting.context).answer?.status == 409)
        let created = HTTPResponse(status: 201, headers: [("Location", "/authors/1")], body: Array("{}".utf8))
        _ = setting.stage.leave(created, to: Self.post("A", key: "k-1"), context)
        let replay = Stage.enter(setting.stage, Self.post("A", key: "k-1"), context: setting.context).answer
        #expect(replay?.status == 201)
        #expect(Stage.header(replay, "Location") == "/authors/1")
        #expect(Stage.header(replay, "Idempotent-Replayed") == "true")
        // The same key for another request is refused.
        #expect(Stage.enter(setting.stage, Self.post("B", key: "k-1"), context: setting.context).answer?.status == 422)
    }

    @Test func keysArePerAuthor() throws {
        let setting = try Setting()
        let (_, anonymous) = Stage.enter(setting.stage, Self.post("A", key: "shared"), context: setting.context)
        _ = setting.stage.leave(HTTPResponse(status: 201), to: Self.post("A", key: "shared"), anonymous)
        var writer = setting.context
        writer.tokenName = "app"
        let (answer, context) = Stage.enter(setting.stage, Self.post("A", key: "shared"), context: writer)
        #expect(answer == nil)
        #expect(context.idempotencyClaim?.scope == "app")
    }

    @Test func anAnswerThatChangedNothingIsNotKept() throws {
        let setting = try Setting()
        for status in [503, 429] {
            let key = "retry-\(status)"
            let (_, context) = Stage.enter(setting.stage, Self.post("A", key: key), context: setting.context)
            _ = setting.stage.leave(HTTPResponse(status: status), to: Self.post("A", key: key), context)
            let again = Stage.enter(setting.stage, Self.post("A", key: key), context: setting.context)
            #expect(again.answer == nil, "\(status)")
            #expect(again.context.idempotencyClaim != nil, "\(status)")
        }
    }

    @Test func readsOtherPathsAndServersWithoutALedgerPassUntouched() throws {
        let setting = try Setting()
        let read = Stage.request("GET", "/authors", headers: ["idempotency-key": "k"])
        #expect(Stage.enter(setting.stage, read, context: setting.context).context.idempotencyClaim == nil)
        // Not a write this server takes: the header is not looked at, even when malformed.
        let unknown = Stage.request("POST", "/nowhere", headers: ["idempotency-key": "a b"])
        #expect(Stage.enter(setting.stage, unknown, context: setting.context).answer == nil)
        let malformed = Stage.enter(setting.stage, Self.post("A", key: "a b"), context: setting.context).answer
        #expect(malformed?.status == 400)
        let ignoring = IdempotencyStage(ledger: Locked(nil))
        let (answer, context) = Stage.enter(ignoring, Self.post("A", key: "k"), context: setting.context)
        #expect(answer == nil && context.idempotencyClaim == nil)
    }
}
