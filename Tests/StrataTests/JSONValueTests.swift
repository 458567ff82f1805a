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
