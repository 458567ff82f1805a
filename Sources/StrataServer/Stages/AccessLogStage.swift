import Foundation
import Strata
import StrataHTTP

/// How the access log writes its lines (`--log-format`).
public enum AccessLogFormat: String, Sendable, CaseIterable {
    /// `remote "METHOD path?query" status bytes 0.123ms[ token=name]`.
    case text
    /// One JSON object per line: `time`, `remote`, `method`, `path`, `status`, `bytes`, `ms` and
    /// `token` (null for an anonymous request).
    case json
}

/// The outermost stage: one access-log line per answered request, with the time the pipeline
/// took to answer it.
struct AccessLogStage: ServerStage {
    let format: AccessLogFormat
    /// The default log (stderr, written by a thread of its own): text lines go to it as bytes,
    /// never built as a `String`.
    let buffered: BufferedLog?
    /// Where lines go otherwise (a log the caller gave, or any JSON line).
    let write: @Sendable (String) -> Void

    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse? {
        context.started = DispatchTime.now().uptimeNanoseconds
        return nil
    }

    func leave(_ response: HTTPResponse, to request: HTTPRequest, _ context: RequestContext) -> HTTPResponse {
        let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - context.started) / 1e6
        if let buffered, format == .text {
            var line: [UInt8] = []
            Self.appendLine(request, response, milliseconds, token: context.tokenName, to: &line)
            buffered.write(line)
        } else {
            write(Self.line(request, response, milliseconds, token: context.tokenName, format: format))
        }
        return response
    }

    /// One access-log line for `response` to `request`, answered in `milliseconds` on behalf of
    /// the token named `token`.
    static func line(
        _ request: HTTPRequest, _ response: HTTPResponse, _ milliseconds: Double, token: String?,
        format: AccessLogFormat
    ) -> String {
        switch format {
        case .json:
            let query =
                request.query.isEmpty
                ? "" : "?" + request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            let duration = (milliseconds * 1000).rounded() / 1000
            return JSONValue.object([
                "time": .string(AttributeValue.formatDate(Date())), "remote": .string(request.remoteAddress),
                "method": .string(request.method), "path": .string(request.path + query),
                "status": .integer(Int64(response.status)),
                "bytes": .integer(Int64(response.body.count) + (response.file?.size ?? 0)),
                "ms": .double(duration), "token": token.map { .string($0) } ?? .null,
            ]).jsonText
        case .text:
            var line: [UInt8] = []
            appendLine(request, response, milliseconds, token: token, to: &line)
            return String(decoding: line, as: UTF8.self)
        }
    }

    /// Appends the text line `remote "METHOD path?query" status bytes 0.123ms[ token=name]` to
    /// `out` as UTF-8, written as bytes: building it as a `String` was a tenth of a cached GET's
    /// instructions.
    static func appendLine(
        _ request: HTTPRequest, _ response: HTTPResponse, _ milliseconds: Double, token: String?,
        to out: inout [UInt8]
    ) {
        out.reserveCapacity(out.count + 64 + request.remoteAddress.utf8.count + request.path.utf8.count)
        out += request.remoteAddress.utf8
        out += #" ""#.utf8
        out += request.method.utf8
        out.append(UInt8(ascii: " "))
        out += request.path.utf8
        for (index, item) in request.query.enumerated() {
            out.append(UInt8(ascii: index == 0 ? "?" : "&"))
            out += item.name.utf8
            out.append(UInt8(ascii: "="))
            out += item.value.utf8
        }
        out += #"" "#.utf8
        JSONValue.writeInteger(Int64(response.status), to: &out)
        out.append(UInt8(ascii: " "))
        JSONValue.writeInteger(Int64(response.body.count) + (response.file?.size ?? 0), to: &out)
        out.append(UInt8(ascii: " "))
        appendMilliseconds(milliseconds, to: &out)
        out += "ms".utf8
        if let token {
            out += " token=".utf8
            out += token.utf8
        }
    }

    /// Milliseconds to three decimals as `Double`'s description writes them once rounded (`0.25`,
    /// `3.0`, `12.125`), appended as bytes without formatting a `Double` (formatting it was a tenth
    /// of the access line's cost).
    static func appendMilliseconds(_ milliseconds: Double, to out: inout [UInt8]) {
        guard milliseconds.isFinite, milliseconds >= 0, milliseconds < 1e12 else {
            out += "\((milliseconds * 1000).rounded() / 1000)".utf8
            return
        }
        let micro = Int64((milliseconds * 1000).rounded())
        JSONValue.writeInteger(micro / 1000, to: &out)
        out.append(UInt8(ascii: "."))
        var fraction = micro % 1000
        guard fraction != 0 else {
            out.append(UInt8(ascii: "0"))
            return
        }
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        // Leading zeros of the kept digits: 0.05 is "05" after the point.
        var width = 1
        var rest = fraction / 10
        while rest > 0 {
            width += 1
            rest /= 10
        }
        for _ in width..<digits { out.append(UInt8(ascii: "0")) }
        JSONValue.writeInteger(fraction, to: &out)
    }

    /// Milliseconds to three decimals as `Double`'s description writes them once rounded (`0.25`,
    /// `3.0`, `12.125`), without formatting a `Double` (see ``appendMilliseconds(_:to:)``).
    static func millisecondsText(_ milliseconds: Double) -> String {
        var out: [UInt8] = []
        appendMilliseconds(milliseconds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
