import Foundation
import Strata
import StrataHTTP
import StrataServer
import StrataTestSupport
import Testing

@testable import StrataServer

/// Bearer tokens with scopes over a live server, the tokens file, and the safe default host.
@Suite struct AccessControlTests {
    static let reader = "reader-secret-0123456789"
    static let writer = "writer-secret-0123456789"
    static let admin = "admin-secret-0123456789ab"

    static func tokens(_ options: inout ServerOptions) {
        options.tokens = [
            "reader:read:\(reader)", "app:write:\(writer)", "ops:admin:sha256:\(SHA256.hex(admin))",
        ]
    }

    static func bearer(_ secret: String) -> [String: String] { ["Authorization": "Bearer \(secret)"] }

    @Test func everyRouteNeedsTheScopeItsMethodNeeds() throws {
        let fixture = try ServerFixture(options: Self.tokens)
        let client = fixture.client
        // No token, and a token the server does not know: 401 with a challenge, as a problem.
        let missing = try client.send("GET", "/books")
        #expect(missing.status == 401)
        #expect(missing.header("WWW-Authenticate") == #"Bearer realm="strata""#)
        #expect(missing.header("Content-Type") == "application/problem+json")
        let wrong = try client.send("GET", "/books", headers: Self.bearer("not-a-token-at-all"))
        #expect(wrong.status == 401)
        #expect(wrong.header("WWW-Authenticate")?.contains(#"error="invalid_token""#) == true)
        #expect(try client.send("GET", "/books", headers: ["Authorization": "Basic abc"]).status == 401)
        // read: GET and HEAD; not writes, not /metrics.
        #expect(try client.send("GET", "/books", headers: Self.bearer(Self.reader)).status == 200)
        #expect(try client.send("HEAD", "/books", headers: Self.bearer(Self.reader)).status == 200)
        let denied = try client.send("POST", "/authors", json: #"{"name": "A"}"#, headers: Self.bearer(Self.reader))
        #expect(denied.status == 403)
        #expect(denied.header("WWW-Authenticate")?.contains(#"scope="write""#) == true)
        #expect(
            try client.send("POST", "/_batch", json: #"{"operations": []}"#, headers: Self.bearer(Self.reader)).status
                == 403)
        #expect(try client.send("GET", "/metrics", headers: Self.bearer(Self.reader)).status == 403)
        // write: every entity operation and batches, reads included.
        let created = try client.send("POST", "/authors", json: #"{"name": "A"}"#, headers: Self.bearer(Self.writer))
        #expect(created.status == 201)
        #expect(try client.send("GET", "/authors/1", headers: Self.bearer(Self.writer)).status == 200)
        #expect(
            try client.send("PATCH", "/authors/1", json: #"{"name": "B"}"#, headers: Self.bearer(Self.writer)).status
                == 200)
        #expect(try client.send("GET", "/metrics", headers: Self.bearer(Self.writer)).status == 403)
        // admin (given as a SHA-256 digest): /metrics, and the stores' locations in /; not entities.
        #expect(try client.send("GET", "/metrics", headers: Self.bearer(Self.admin)).status == 200)
        #expect(try client.send("GET", "/books", headers: Self.bearer(Self.admin)).status == 403)
        let detailed = try client.send("GET", "/", headers: Self.bearer(Self.admin)).json
        let plain = try client.send("GET", "/", headers: Self.bearer(Self.reader)).json
        #expect(detailed.objectValue?["stores"]?.arrayValue?.first?.objectValue?["url"]?.stringValue != nil)
        #expect(plain.objectValue?["stores"]?.arrayValue?.first?.objectValue?["url"] == .null)
        // Always open: health, and the document unless --private-openapi.
        #expect(try client.send("GET", "/live").status == 200)
        #expect(try client.send("GET", "/ready").status == 200)
        let document = try client.send("GET", "/openapi.yaml")
        #expect(document.status == 200)
        #expect(String(decoding: document.body, as: UTF8.self).contains("bearerAuth"))
        // The log names the token and never shows a secret.
        let log = fixture.logLines.current.joined(separator: "\n")
        #expect(log.contains("\"POST /authors\" 201") && log.contains("token=app"))
        #expect(log.contains("\"POST /authors\" 403") && log.contains("token=reader"))
        for secret in [Self.reader, Self.writer, Self.admin] { #expect(!log.contains(secret)) }
    }

    @Test func aPrivateDocumentNeedsAReadToken() throws {
        let fixture = try ServerFixture {
            Self.tokens(&$0)
            $0.privateOpenAPI = true
        }
        #expect(try fixture.client.send("GET", "/openapi.json").status == 401)
        #expect(try fixture.client.send("GET", "/openapi.json", headers: Self.bearer(Self.reader)).status == 200)
        #expect(try fixture.client.send("GET", "/live").status == 200)
    }

    @Test func theTokensFileIsReadAgainOnReloadAndABadOneChangesNothing() throws {
        let folder = TemporaryDirectory()
        let file = folder.file("tokens")
        try "# the first token\nfirst:read:\(Self.reader)\n".write(to: file, atomically: true, encoding: .utf8)
        let fixture = try ServerFixture { $0.tokensFile = file.path }
        #expect(try fixture.client.send("GET", "/books", headers: Self.bearer(Self.reader)).status == 200)
        try "second:read,write:sha256:\(SHA256.hex(Self.writer))\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(try fixture.server.reloadTokens() == 1)
        #expect(try fixture.client.send("GET", "/books", headers: Self.bearer(Self.reader)).status == 401)
        #expect(try fixture.client.send("GET", "/books", headers: Self.bearer(Self.writer)).status == 200)
        try "broken line\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(throws: ServeError.self) { try fixture.server.reloadTokens() }
        #expect(try fixture.client.send("GET", "/books", headers: Self.bearer(Self.writer)).status == 200)
    }

    @Test(arguments: [
        ("reader:read:short", "at least 16 characters"), ("reader:fly:\(reader)", "unknown scope 'fly'"),
        ("no-colons", "NAME:SCOPE"), ("bad name:read:\(reader)", "must be letters"),
        ("x:read:sha256:abc", "64 hex digits"),
    ])
    func malformedTokensAreRefusedWithoutShowingTheSecret(token: String, message: String) {
        var thrown: ServeError?
        do { _ = try AccessToken(parsing: token) } catch { thrown = error }
        #expect(thrown?.message.contains(message) == true, "\(String(describing: thrown))")
        #expect(thrown?.message.contains(Self.reader) != true)
    }

    @Test func aPublicAddressWithoutTokensRefusesToStartAndSaysBothWaysForward() throws {
        let folder = TemporaryDirectory()
        let refused = try StrataProcess(["serve", "--host", "0.0.0.0", "--port", "0", "--data-dir", folder.url.path])
        let status = refused.waitForExit()
        #expect(status != nil && status != 0)
        let output = refused.stderr.current
        #expect(output.contains("refusing to serve 0.0.0.0 without access tokens"), "\(output)")
        #expect(output.contains("--token") && output.contains("--allow-anonymous"))
        #expect(output.split(separator: "\n").count == 1, "\(output)")
        // Either way forward starts it.
        let anonymous = try StrataProcess(
            ["serve", "--host", "0.0.0.0", "--port", "0", "--data-dir", folder.file("a").path],
            environment: ["STRATA_ALLOW_ANONYMOUS": "1"])
        #expect(anonymous.port() != nil, "\(anonymous.stderr.current)")
        #expect(anonymous.stderr.current.contains("anonymous access"))
        let guarded = try StrataProcess(
            [
                "serve", "--host", "0.0.0.0", "--port", "0", "--data-dir", folder.file("b").path, "--token",
                "app:write:\(Self.writer)",
            ])
        let port = try #require(guarded.port(), "\(guarded.stderr.current)")
        #expect(try TestClient(port: port).send("GET", "/books").status == 401)
        #expect(!guarded.stderr.current.contains(Self.writer))
    }
}

/// Browsers: which pages may call the server (`--cors-origin`).
@Suite struct CORSTests {
    static let app = "https://app.example.org"

    @Test func anAllowedOriginGetsPreflightsAndReadableHeadersAndOthersGetNothing() throws {
        let fixture = try ServerFixture {
            AccessControlTests.tokens(&$0)
            $0.corsOrigins = [Self.app]
        }
        let client = fixture.client
        // The preflight needs no token and names what a page may send.
        let preflight = try client.send(
            "OPTIONS", "/books/1",
            headers: [
                "Origin": Self.app, "Access-Control-Request-Method": "PATCH",
                "Access-Control-Request-Headers": "authorization, if-match, content-type",
            ])
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == Self.app)
        #expect(preflight.header("Access-Control-Allow-Methods")?.contains("PATCH") == true)
        let allowed = preflight.header("Access-Control-Allow-Headers") ?? ""
        for header in ["Authorization", "If-Match", "Idempotency-Key", "Content-Type"] {
            #expect(allowed.contains(header), "\(allowed)")
        }
        #expect(preflight.header("Access-Control-Max-Age") == "600")
        #expect(preflight.header("Vary") == "Origin")
        // The request itself: the origin echoed, ETag and Location readable, Vary set.
        let created = try client.send(
            "POST", "/authors", json: #"{"name": "Page"}"#,
            headers: ["Origin": Self.app, "Authorization": "Bearer \(AccessControlTests.writer)"])
        #expect(created.status == 201)
        #expect(created.header("Access-Control-Allow-Origin") == Self.app)
        #expect(created.header("Access-Control-Expose-Headers")?.contains("ETag") == true)
        #expect(created.header("Access-Control-Expose-Headers")?.contains("Location") == true)
        // Refusals carry the headers too, so the page can read the problem.
        let refused = try client.send("GET", "/books", headers: ["Origin": Self.app])
        #expect(refused.status == 401 && refused.header("Access-Control-Allow-Origin") == Self.app)
        // Another origin: no CORS header at all, in the preflight or the answer.
        let other = try client.send(
            "OPTIONS", "/books", headers: ["Origin": "https://evil.example", "Access-Control-Request-Method": "GET"])
        #expect(
            other.header("Access-Control-Allow-Origin") == nil && other.header("Access-Control-Allow-Methods") == nil)
        let read = try client.send(
            "GET", "/books",
            headers: ["Origin": "https://evil.example", "Authorization": "Bearer \(AccessControlTests.reader)"])
        #expect(read.status == 200 && read.header("Access-Control-Allow-Origin") == nil)
        #expect(read.header("Vary") == "Origin")
    }

    @Test func anyOriginIsForAnonymousServersOnly() throws {
        let anonymous = try ServerFixture { $0.corsOrigins = ["*"] }
        let response = try anonymous.client.send("GET", "/books", headers: ["Origin": "https://any.example"])
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        #expect(throws: ServeError.self) {
            _ = try ServerFixture {
                AccessControlTests.tokens(&$0)
                $0.corsOrigins = ["*"]
            }
        }
        #expect(throws: ServeError.self) { _ = try ServerFixture { $0.corsOrigins = ["app.example.org/path"] } }
    }
}

/// Entities served read-only or hidden, from the model or a server option.
@Suite struct EntityAccessTests {
    @Test func readOnlyEntitiesRefuseWritesAndHiddenOnesAreNowhere() throws {
        let fixture = try ServerFixture { $0.entityAccess = ["Tag": .readOnly, "SearchLog": .hidden] }
        let client = fixture.client
        #expect(try client.send("GET", "/tags").status == 200)
        for (method, path, body) in [
            ("POST", "/tags", #"{"name": "x"}"#), ("PATCH", "/tags/1", #"{"name": "y"}"#), ("PUT", "/tags/1", "{}"),
            ("DELETE", "/tags/1", ""),
        ] {
            let response = try client.send(method, path, json: body)
            #expect(response.status == 405, "\(method) \(path)")
            #expect(response.header("Allow") == "GET, HEAD")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        let batch = try client.send(
            "POST", "/_batch", json: #"{"operations": [{"method": "POST", "path": "/tags", "body": {"name": "z"}}]}"#)
        #expect(batch.status == 405)
        #expect(try client.send("GET", "/tags?count=exact").json.objectValue?["total"] == .integer(0))
        // Hidden: 404 everywhere, including a fetched property that leads to it.
        #expect(try client.send("GET", "/search-logs").status == 404)
        #expect(try client.send("POST", "/search-logs", json: #"{"query": "q"}"#).status == 404)
        #expect(try client.send("POST", "/authors", json: #"{"name": "A"}"#).status == 201)
        #expect(try client.send("POST", "/books", json: #"{"title": "T", "author": 1}"#).status == 201)
        #expect(try client.send("GET", "/books/1/searches").status == 404)
        #expect(try client.send("GET", "/books/1/author").status == 200)
        let index = String(decoding: try client.send("GET", "/").body, as: UTF8.self)
        #expect(!index.contains("SearchLog") && index.contains("\"Tag\""))
        // The document: no hidden paths or schemas, only reads of read-only ones.
        let yaml = String(decoding: try client.send("GET", "/openapi.yaml").body, as: UTF8.self)
        #expect(!yaml.contains("/search-logs") && !yaml.contains("SearchLog") && !yaml.contains("/books/{id}/searches"))
        let json = try client.send("GET", "/openapi.json").json
        let tags = json.objectValue?["paths"]?.objectValue?["/tags"]?.objectValue
        #expect(tags?["get"] != nil && tags?["post"] == nil)
        let item = json.objectValue?["paths"]?.objectValue?["/tags/{id}"]?.objectValue
        #expect(item?["get"] != nil && item?["patch"] == nil && item?["put"] == nil && item?["delete"] == nil)
    }

    @Test func theModelCanSayItAndTheServerCanOverrideIt() throws {
        var json = ObjectModel.exampleJSON
        json = json.replacingOccurrences(
            of: #""name": "Tag","#, with: #""name": "Tag", "access": "hidden","#)
        let model = try ObjectModel.load(json: Array(json.utf8))
        #expect(model.entity(named: "Tag")?.access == .hidden)
        let hidden = try ServerFixture(model: model)
        #expect(try hidden.client.send("GET", "/tags").status == 404)
        let shown = try ServerFixture(model: model) { $0.entityAccess = ["Tag": .readWrite] }
        #expect(try shown.client.send("POST", "/tags", json: #"{"name": "t"}"#).status == 201)
        #expect(throws: ModelError.self) {
            try ObjectModel.load(
                json: Array(
                    ObjectModel.exampleJSON.replacingOccurrences(
                        of: #""name": "Tag","#, with: #""name": "Tag", "access": "secret","#
                    ).utf8))
        }
    }
}
