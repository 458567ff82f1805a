import Foundation
import Strata
import Testing

@testable import StrataServer

/// The patterns the document gives decimal strings and the server agree: a string matches the
/// pattern exactly when the server reads it as a decimal, and the sign patterns (for a bound of 0)
/// match exactly the decimals the server finds at least or at most 0.
@Suite struct SchemaPatternTests {
    static func regex(_ pattern: String) -> NSRegularExpression { try! NSRegularExpression(pattern: pattern) }
    static func matches(_ regex: NSRegularExpression, _ text: String) -> Bool {
        regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    static var samples: [String] {
        var texts = [
            "0", "-0", "+0", "-0.0", "-.0", "0.", "-0e5", "-0.000e-3", "1", "-1", "+1", "9.99", "-9.99", ".5", "-.5",
            "1e3", "-1e-3", "1E+2", "-", "+", ".", "e1", "1e", "--1", "1.2.3", "", "1e99", "1e100", "-9e-99",
            String(repeating: "9", count: 19), String(repeating: "9", count: 20),
            "." + String(repeating: "0", count: 19),
            String(repeating: "9", count: 19) + "." + String(repeating: "9", count: 19) + "e99",
            "-." + String(repeating: "0", count: 18) + "1e-99", "-" + String(repeating: "0", count: 19) + ".e-5",
        ]
        let alphabet = Array("+-0123456789.eE")
        var generator = SystemRandomNumberGenerator()
        for index in 0..<40_000 {
            // Half short, half long enough to reach the digit limits.
            let length = Int.random(in: 1...(index % 2 == 0 ? 8 : 48), using: &generator)
            texts.append(String((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        return texts
    }

    @Test func signPatternsMatchWhatTheServerReads() {
        let any = Self.regex(AttributeValue.decimalPattern)
        let nonNegative = Self.regex(AttributeValue.nonNegativeDecimalPattern)
        let nonPositive = Self.regex(AttributeValue.nonPositiveDecimalPattern)
        let zero = Self.regex(AttributeValue.zeroDecimalPattern)
        var read = 0
        for text in Self.samples {
            let value = AttributeValue.parseDecimal(text)
            #expect(Self.matches(any, text) == (value != nil), "'\(text)'")
            guard let value else {
                #expect(!Self.matches(nonNegative, text) && !Self.matches(nonPositive, text), "'\(text)'")
                continue
            }
            read += 1
            #expect(Self.matches(nonNegative, text) == (value >= 0), "'\(text)' read as \(value)")
            #expect(Self.matches(nonPositive, text) == (value <= 0), "'\(text)' read as \(value)")
            #expect(Self.matches(zero, text) == (value == 0), "'\(text)' read as \(value)")
        }
        #expect(read > 1_000)
    }
}

extension SchemaPatternTests {
    /// Every decimal the server reads is written back in the form the read schemas state.
    @Test func writtenDecimalsMatchTheReadPattern() {
        let written = Self.regex(OpenAPIBuilder.decimalOutputPattern)
        var count = 0
        for text in Self.samples {
            guard let value = AttributeValue.parseDecimal(text) else { continue }
            let description = AttributeValue.decimal(value).json.stringValue ?? ""
            #expect(Self.matches(written, description), "'\(text)' written as '\(description)'")
            count += 1
        }
        #expect(count > 1_000)
    }

    /// A model's `\s` (ICU's White_Space) is spelled out in the schema pattern, so Python's and
    /// ECMA-262's own `\s` (which differ from ICU's) do not change what the pattern accepts.
    @Test func whiteSpaceInAModelRegexIsSpelledOutAsICUReadsIt() throws {
        let original = try NSRegularExpression(pattern: #"^(?:[^@\s]+@\S+\s?)$"#)
        let spelled = try NSRegularExpression(
            pattern: "^(?:" + OpenAPIBuilder.schemaPattern(icu: #"[^@\s]+@\S+\s?"#) + ")$")
        #expect(!OpenAPIBuilder.schemaPattern(icu: #"[^@\s]+@\S+\s?"#).contains(#"\s"#))
        for scalar in (0...0x3100).compactMap(Unicode.Scalar.init) + [Unicode.Scalar(0xFEFF)!] {
            for text in ["a\(scalar)@b", "a@b\(scalar)", "a@\(scalar)b"] {
                func matches(_ regex: NSRegularExpression) -> Bool {
                    regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
                }
                #expect(matches(original) == matches(spelled), "U+\(String(scalar.value, radix: 16)) in '\(text)'")
            }
        }
    }
}
