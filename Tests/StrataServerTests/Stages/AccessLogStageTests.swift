import Foundation
import Strata
import StrataHTTP
import StrataTestSupport
import Testing

@testable import StrataServer

/// The access-log stage alone: one line per answer, in the format asked for, naming the token.
@Suite struct AccessLogStageTests {
    /// A stage writing into `lines` (no default log).
    static func stage(_ format: AccessLogFormat, into lines: Locked<[String]>) -> AccessLogStage {
        AccessLogStage(format: format, buffered: nil, write: { line in lines.withLock { $0.append(line) } })
    }

    static let response = HTTPResponse(status: 201, body: Array("{}".utf8))

    @Test func aTextLineNamesTheRequestItsAnswerAndItsToken() throws {
        let lines = Locked<[String]>([])
        let stage = Self.stage(.text, into: lines)
        var request = Stage.request("POST", "/books")
        request.query = [("limit", "2")]
        var (answer, context) = Stage.enter(stage, request)
        #expect(answer == nil)
        #expect(context.started > 0)
        context.tokenName = "app"
        let response = stage.leave(Self.response, to: request, context)
        #expect(response.status == 201)
        let line = try #require(lines.current.first)
        #expect(line.hasPrefix(#"10.0.0.7 "POST /books?limit=2" 201 2 "#), "\(line)")
        #expect(line.hasSuffix("ms token=app"), "\(line)")
        #expect(lines.current.count == 1)
    }

    @Test func aJSONLineHoldsEveryFieldAndANullTokenWhenAnonymous() throws {
        let lines = Locked<[String]>([])
        let stage = Self.stage(.json, into: lines)
        let request = Stage.request("GET", "/books/1")
        let (_, context) = Stage.enter(stage, request)
        _ = stage.leave(Self.response, to: request, context)
        let line = try #require(lines.current.first)
        let fields = try #require(try JSONValue.parse(line).objectValue)
        #expect(Set(fields.keys) == ["time", "remote", "method", "path", "status", "bytes", "ms", "token"])
        #expect(fields["remote"] == .string("10.0.0.7"))
        #expect(fields["path"] == .string("/books/1"))
        #expect(fields["status"] == .integer(201))
        #expect(fields["bytes"] == .integer(2))
        #expect(fields["token"] == .null)
    }

    @Test func theDefaultLogGetsTextLinesAsBytes() throws {
        let folder = TemporaryDirectory()
        let path = folder.file("log").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(descriptor) }
        let log = BufferedLog(descriptor: descriptor)
        let unused = Locked<[String]>([])
        let stage = AccessLogStage(format: .text, buffered: log, write: { line in unused.withLock { $0.append(line) } })
        let request = Stage.request("GET", "/live")
        let (_, context) = Stage.enter(stage, request, context: RequestContext(tokenName: "ops", scopes: [.admin]))
        _ = stage.leave(HTTPResponse(status: 200), to: request, context)
        log.flush()
        let written = try String(contentsOfFile: path, encoding: .utf8)
        #expect(written.hasPrefix(#"10.0.0.7 "GET /live" 200 0 "#), "\(written)")
        #expect(written.hasSuffix("ms token=ops\n"), "\(written)")
        #expect(unused.current.isEmpty)
        log.close()
    }

    @Test func theFormatsAreTheOptionsValues() {
        #expect(AccessLogFormat.allCases.map(\.rawValue) == ["text", "json"])
        #expect(ServerOptions().logFormat == .text)
    }
}
