import StrataTestSupport
import Testing

@testable import Strata

@Suite struct JSONValueTests {
    @Test func parsesAndWritesExactly() throws {
        let value = try JSONValue.parse(
            #"{"a": [1, -9223372036854775808, 2.5, true, null, "x\u00e9\ud83d\ude80\n"], "b": {}}"#)
        #expect(value.objectValue?["a"]?.arrayValue?[1] == .integer(Int64.min))
        #expect(value.objectValue?["a"]?.arrayValue?[5] == .string("xé🚀\n"))
        #expect(try JSONValue.parse(value.jsonText) == value)
    }

    /// Strings come back scalar for scalar, whether they are one run of bytes or runs between
    /// escapes, and bad UTF-8 is refused in any run.
    @Test func stringsKeepEveryScalar() throws {
        let cases: [(json: String, scalars: [UInt32])] = [
            (#""""#, []),
            (#""plain""#, Array("plain".unicodeScalars.map(\.value))),
            (#""\n""#, [0x0A]),
            (#""a\"b\\c\/d""#, [0x61, 0x22, 0x62, 0x5C, 0x63, 0x2F, 0x64]),
            // A combining accent after an escape stays its own scalar, joined to what came before.
            ("\"\\u0065\u{0301}x\"", [0x65, 0x301, 0x78]),
            ("\"é\\té\\u00e9\"", [0xE9, 0x09, 0xE9, 0xE9]),
            (#""\ud83d\ude80🚀\b\f\r""#, [0x1F680, 0x1F680, 0x08, 0x0C, 0x0D]),
        ]
        for (json, scalars) in cases {
            let value = try JSONValue.parse(json)
            guard case .string(let text) = value else {
                Issue.record("\(json) parsed to \(value)")
                continue
            }
            #expect(text.unicodeScalars.map(\.value) == scalars, "\(json)")
        }
        for bad: [UInt8] in [[0x22, 0x5C, 0x6E, 0xFF, 0x22], [0x22, 0x61, 0xC3, 0x22], [0x22, 0x5C, 0x74, 0x61]] {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(bad) }
        }
    }

    @Test func rejectsBadInput() {
        let bad: [[UInt8]] = [
            Array("{".utf8), Array("[1,]".utf8), Array("01".utf8), Array("{\"a\":1}x".utf8), Array("\"\\ud800\"".utf8),
            [0x22, 0xff, 0x22], Array("{\"a\":1,\"a\":2}".utf8), Array(String(repeating: "[", count: 100).utf8),
            Array("1e999".utf8), Array("\"a\u{01}\"".utf8),
        ]
        for input in bad {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(input) }
        }
    }
}
