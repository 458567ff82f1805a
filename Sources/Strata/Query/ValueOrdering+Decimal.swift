import Foundation

extension ValueOrdering {
    /// A number as a `Decimal`, for comparing it exactly with a decimal: integers exactly, doubles
    /// as `Decimal(_:)` reads them (the same in every store). Nil for anything else.
    public static func decimal(_ value: AttributeValue) -> Decimal? {
        switch value {
        case .decimal(let d): d
        case .integer(let i): Decimal(i)
        case .double(let d) where d.isFinite: Decimal(d)
        default: nil
        }
    }

    /// Orders a decimal and another number exactly, or nil when either is not such a number.
    static func compareDecimals(_ lhs: AttributeValue, _ rhs: AttributeValue) -> Int? {
        guard lhs.kindName == "decimal" || rhs.kindName == "decimal", let a = decimal(lhs), let b = decimal(rhs)
        else { return nil }
        return a < b ? -1 : (a == b ? 0 : 1)
    }

    /// Text whose byte order is the numeric order of decimals (SQLite compares the key of a stored
    /// decimal with the key of a constant, so that it orders and filters as ``compare(_:_:)`` does).
    ///
    /// A sign (`0` negative, `1` zero, `2` positive), then for the value 0.d₁d₂…dₙ × 10^E (d₁ and dₙ
    /// not zero) E + 5000 in four digits and the digits; a negative value has E and its digits
    /// counted down from 9 and ends in `~`, so that of two negatives the greater magnitude sorts first.
    public static func decimalKey(_ value: Decimal) -> String {
        guard let parts = AttributeValue.decimalParts(value.description) else { return "1" }
        return decimalKey(parts)
    }

    /// The key of a decimal read from text (any number of digits: a stored value is keyed whatever
    /// its size), or nil when the text is not a decimal.
    public static func decimalKey(text: String) -> String? {
        AttributeValue.decimalParts(text).map(decimalKey)
    }

    static func decimalKey(_ parts: AttributeValue.DecimalParts) -> String {
        guard !parts.digits.isEmpty else { return "1" }
        let adjusted = parts.exponent + parts.digits.count + 5000
        let nine = UInt8(ascii: "9")
        let zero = UInt8(ascii: "0")
        guard parts.negative else {
            return "2" + String(decoding: Self.fourDigits(adjusted) + parts.digits, as: UTF8.self)
        }
        let digits = parts.digits.map { nine - $0 + zero }
        return "0" + String(decoding: Self.fourDigits(9999 - adjusted) + digits, as: UTF8.self) + "~"
    }

    /// `value` (0...9999, clamped) as four ASCII digits.
    private static func fourDigits(_ value: Int) -> [UInt8] {
        let clamped = min(max(value, 0), 9999)
        return Array(String(clamped + 10000).utf8.dropFirst())
    }
}
