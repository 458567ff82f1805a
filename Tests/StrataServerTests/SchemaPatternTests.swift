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
            "1e127", "1e128", "10e127", "1e-128", "1e-129", "0.1e-127", "0.1e-128", "1e1000", "0e999",
            String(repeating: "9", count: 38), String(repeating: "9", count: 39),
            String(repeating: "9", count: 38) + "0000", "0000" + String(repeating: "9", count: 38),
            "." + String(repeating: "0", count: 127) + "1", "." + String(repeating: "0", count: 128) + "1",
            "1" + String(repeating: "0", count: 127), "1" + String(repeating: "0", count: 128),
            String(repeating: "9", count: 19) + "." + String(repeating: "9", count: 19) + "e99",
            String(repeating: "9", count: 20) + "." + String(repeating: "9", count: 19),
            "-." + String(repeating: "0", count: 18) + "1e-99", "-" + String(repeating: "0", count: 19) + ".e-5",
        ]
        let alphabet = Array("+-0123456789.eE")
        let digits = Array("0123456789")
        var generator = SystemRandomNumberGenerator()
        for index in 0..<40_000 {
            // Half short, half long enough to reach the digit limits.
            let length = Int.random(in: 1...(index % 2 == 0 ? 8 : 48), using: &generator)
            texts.append(String((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        for _ in 0..<4_000 {
            // Well-formed decimals around the limits: 30 to 45 digits, a point anywhere, an exponent.
            var text = (0..<Int.random(in: 30...45, using: &generator)).map { _ in digits.randomElement()! }
            text.insert(".", at: Int.random(in: 0...text.count, using: &generator))
            texts.append(String(text) + "e" + String(Int.random(in: -170...150, using: &generator)))
        }
        return texts
    }

    /// Whether `text`, read with the decimal syntax, is within the limit `NSDecimalNumber` keeps,
    /// worked out on the digits as text: the significant digits, and the power of ten of the last.
    static func withinLimit(_ text: String) -> Bool {
        var mantissa = Substring(text)
        var exponent = 0
        if let mark = mantissa.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(mantissa[mantissa.index(after: mark)...])!
            mantissa = mantissa[..<mark]
        }
        mantissa = mantissa.drop { $0 == "+" || $0 == "-" }
        let point = mantissa.firstIndex(of: ".")
        if let point { exponent -= mantissa.distance(from: point, to: mantissa.endIndex) - 1 }
        var digits = String(mantissa.filter { $0 != "." }.drop { $0 == "0" })
        guard !digits.isEmpty else { return true }
        while digits.last == "0" {
            digits.removeLast()
            exponent += 1
        }
        return digits.count <= 38 && (-128...127).contains(exponent)
    }

    @Test func signPatternsMatchWhatTheServerReads() {
        let any = Self.regex(AttributeValue.decimalPattern)
        let nonNegative = Self.regex(AttributeValue.nonNegativeDecimalPattern)
        let nonPositive = Self.regex(AttributeValue.nonPositiveDecimalPattern)
        let zero = Self.regex(AttributeValue.zeroDecimalPattern)
        var read = 0
        var beyond = 0
        for text in Self.samples {
            let value = AttributeValue.parseDecimal(text)
            // The pattern states the syntax; the server also keeps the value within the limit.
            #expect(Self.matches(any, text) == AttributeValue.isDecimalSyntax(text), "'\(text)'")
            #expect((value != nil) == (Self.matches(any, text) && Self.withinLimit(text)), "'\(text)'")
            guard let value else {
                if Self.matches(any, text) { beyond += 1 }
                continue
            }
            read += 1
            #expect(Self.matches(nonNegative, text) == (value >= 0), "'\(text)' read as \(value)")
            #expect(Self.matches(nonPositive, text) == (value <= 0), "'\(text)' read as \(value)")
            #expect(Self.matches(zero, text) == (value == 0), "'\(text)' read as \(value)")
        }
        #expect(read > 1_000)
        #expect(beyond > 100)
    }

    /// A decimal is read exactly: its written form, read again, is the same value, and has the
    /// same significant digits as the text it came from.
    @Test func decimalsWithinTheLimitAreReadExactly() throws {
        let cases = [
            ("190.123456789012345678901", "190.123456789012345678901"),
            ("12345678901234567890.123456789012345678", "12345678901234567890.123456789012345678"),
            ("-12345678901234567890.123456789012345678", "-12345678901234567890.123456789012345678"),
            ("1e127", "1" + String(repeating: "0", count: 127)),
            (
                "-" + String(repeating: "9", count: 38) + "e127",
                "-" + String(repeating: "9", count: 38) + String(repeating: "0", count: 127)
            ),
            ("1e-128", "0." + String(repeating: "0", count: 127) + "1"),
            ("1.2500", "1.25"), ("-0.000", "0"), ("007.0", "7"),
        ]
        for (text, written) in cases {
            let value = try #require(AttributeValue.parseDecimal(text), "'\(text)'")
            #expect(AttributeValue.decimal(value).json.stringValue == written, "'\(text)'")
            #expect(AttributeValue.parseDecimal(written) == value, "'\(written)'")
        }
        for text in [String(repeating: "1", count: 39), "1e128", "10e127", "1e-129", "0.1e-128"] {
            #expect(AttributeValue.parseDecimal(text) == nil, "'\(text)'")
        }
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
