import Foundation
import Strata
import StrataHTTP
import StrataTestSupport
import Testing

@testable import StrataServer

/// The authentication stage alone: what it refuses, and the token and scopes it notes.
@Suite struct AuthenticationStageTests {
    static let readerSecret = "reader-secret-0123456789"
    static let writerSecret = "writer-secret-0123456789"
    static let adminSecret = "admin-secret-0123456789ab"

    static func stage() throws -> AuthenticationStage {
        AuthenticationStage(
            control: try AccessControl(
                tokens: [
                    "reader:read:\(readerSecret)", "app:write:\(writerSecret)", "ops:admin,read:\(adminSecret)",
                ], file: nil, privateOpenAPI: false))
    }

    static func bearer(_ secret: String) -> [String: String] { ["authorization": "Bearer \(secret)"] }

    @Test func withoutTokensEveryRequestMayDoEverything() throws {
        let stage = AuthenticationStage(control: try AccessControl(tokens: [], file: nil, privateOpenAPI: false))
        let (answer, context) = Stage.enter(stage, Stage.request("DELETE", "/books/1"))
        #expect(answer == nil)
        #expect(context.tokenName == nil)
        #expect(context.scopes == [.read, .write, .admin])
        #expect(context.author == "anonymous")
    }

    @Test func aKnownTokenLeavesItsNameAndItsScopesAsASet() throws {
        let stage = try Self.stage()
        let (answer, context) = Stage.enter(
            stage, Stage.request("GET", "/books", headers: Self.bearer(Self.adminSecret)))
        #expect(answer == nil)
        #expect(context.tokenName == "ops")
        #expect(context.author == "ops")
        #expect(context.scopes == [.admin, .read])
        let writer = Stage.enter(stage, Stage.request("POST", "/books", headers: Self.bearer(Self.writerSecret)))
        #expect(writer.answer == nil)
        #expect(writer.context.scopes == [.write])
    }

    @Test func aMissingOrUnknownTokenIs401AndAShortScope403NamingTheToken() throws {
        let stage = try Self.stage()
        let missing = Stage.enter(stage, Stage.request("GET", "/books"))
        #expect(missing.answer?.status == 401)
        #expect(Stage.header(missing.answer, "WWW-Authenticate") == #"Bearer realm="strata""#)
        #expect(missing.context.tokenName == nil)
        let unknown = Stage.enter(stage, Stage.request("GET", "/books", headers: Self.bearer("no-such-token-0123456")))
        #expect(unknown.answer?.status == 401)
        let short = Stage.enter(stage, Stage.request("POST", "/books", headers: Self.bearer(Self.readerSecret)))
        #expect(short.answer?.status == 403)
        #expect(Stage.header(short.answer, "WWW-Authenticate")?.contains(#"scope="write""#) == true)
        // The access log names who was refused.
        #expect(short.context.tokenName == "reader")
        #expect(short.context.scopes.isEmpty)
    }

    @Test func anOpenPathNeedsNoTokenAndGrantsNoScope() throws {
        let stage = try Self.stage()
        for path in ["/live", "/ready", "/openapi.json", "/docs"] {
            let (answer, context) = Stage.enter(stage, Stage.request("GET", path))
            #expect(answer == nil, "\(path)")
            #expect(context.tokenName == nil && context.scopes.isEmpty, "\(path)")
        }
    }

    /// A scope is a member of a set of ``AccessScope``, never a piece of text: a name that holds
    /// `admin` (`superadmin`, `nonadmin`) is no scope a token can carry, and a token's name grants
    /// nothing.
    @Test func scopesAreNamedExactlyAndNeverMatchedAsText() throws {
        for scope in ["superadmin", "nonadmin", "admins", "read,superadmin"] {
            #expect(throws: ServeError.self, "\(scope)") {
                try AccessToken(parsing: "x:\(scope):\(Self.readerSecret)")
            }
        }
        let fixture = try ServerFixture(options: { $0.tokens = ["admin:read,write:\(Self.readerSecret)"] })
        let service = try #require(fixture.server.restService)
        func storeURL(_ context: RequestContext) throws -> JSONValue? {
            let index = try Stage.json(service.handle(Stage.request("GET", "/"), context: context))
            return index.objectValue?["stores"]?.arrayValue?.first?.objectValue?["url"]
        }
        // The stores' locations are for the admin scope alone, whatever the token is called.
        #expect(try storeURL(RequestContext(tokenName: "superadmin", scopes: [.read, .write])) == .null)
        #expect(try storeURL(RequestContext(tokenName: "admin", scopes: [.read])) == .null)
        #expect(try storeURL(RequestContext(tokenName: "x", scopes: [.admin]))?.stringValue != nil)
        #expect(try storeURL(RequestContext())?.stringValue != nil)
        // Over the socket: the token named `admin` with read and write reads no location.
        let plain = try fixture.client.send("GET", "/", headers: ["Authorization": "Bearer \(Self.readerSecret)"])
        #expect(plain.status == 200)
        #expect(plain.json.objectValue?["stores"]?.arrayValue?.first?.objectValue?["url"] == .null)
    }
}
