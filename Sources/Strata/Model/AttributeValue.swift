import Foundation

/// A value of an attribute, as contexts, stores and predicates carry it.
public enum AttributeValue: Sendable, Hashable {
    /// No value.
    case null
    /// A string.
    case string(String)
    /// Any integer type.
    case integer(Int64)
    /// A double or float.
    case double(Double)
    /// An exact decimal.
    case decimal(Decimal)
    /// A Boolean.
    case boolean(Bool)
    /// A point in time; stores keep it to the microsecond.
    case date(Date)
    /// Bytes.
    case binary(Data)
    /// A UUID.
    case uuid(UUID)
    /// A URI, kept as its text.
    case uri(String)
    /// Any JSON value.
    case json(JSONValue)

    /// Whether this is `.null`.
    public var isNull: Bool { if case .null = self { true } else { false } }

    /// The date rounded to whole microseconds since 1970, the precision every store keeps.
    public static func microseconds(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    /// The date at `microseconds` since 1970.
    public static func date(microseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
    }

    /// Whether the value can be stored in an attribute of `type` (nil fits every type).
    public func fits(_ type: AttributeType) -> Bool {
        switch (self, type) {
        case (.null, _): true
        case (.string, .string): true
        case (.integer(let i), _) where type.isInteger: type.integerRange!.contains(i)
        case (.double, .double), (.double, .float): true
        case (.decimal, .decimal), (.boolean, .boolean), (.date, .date), (.binary, .binary): true
        case (.uuid, .uuid), (.uri, .uri), (.json, .json): true
        default: false
        }
    }

    /// A short description of the value's kind, for error messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .string: "string"
        case .integer: "integer"
        case .double: "double"
        case .decimal: "decimal"
        case .boolean: "boolean"
        case .date: "date"
        case .binary: "binary"
        case .uuid: "uuid"
        case .uri: "uri"
        case .json: "json"
        }
    }
}

extension AttributeValue {
    /// Converts a JSON value to a value of attribute type `type`, as the REST API and the model's
    /// `default`/`min`/`max` keys write it. Returns nil when the JSON does not fit the type.
    public init?(json: JSONValue, as type: AttributeType) {
        if json.isNull {
            self = .null
            return
        }
        switch type {
        case .string:
            guard let s = json.stringValue else { return nil }
            self = .string(s)
        case .integer16, .integer32, .integer64:
            let value: Int64
            switch json {
            case .integer(let i): value = i
            case .double(let d) where d == d.rounded() && abs(d) < 9.2e18: value = Int64(d)
            default: return nil
            }
            guard type.integerRange!.contains(value) else { return nil }
            self = .integer(value)
        case .double, .float:
            guard let d = json.doubleValue else { return nil }
            self = .double(d)
        case .decimal:
            switch json {
            case .string(let s):
                guard let d = AttributeValue.parseDecimal(s) else { return nil }
                self = .decimal(d)
            case .integer(let i): self = .decimal(Decimal(i))
            default: return nil
            }
        case .boolean:
            guard let b = json.boolValue else { return nil }
            self = .boolean(b)
        case .date:
            guard let s = json.stringValue, let date = AttributeValue.parseDate(s) else { return nil }
            self = .date(date)
        case .binary:
            guard let s = json.stringValue, let data = Data(base64Encoded: s) else { return nil }
            self = .binary(data)
        case .uuid:
            guard let s = json.stringValue, let uuid = UUID(uuidString: s) else { return nil }
            self = .uuid(uuid)
        case .uri:
            guard let s = json.stringValue, AttributeValue.isURI(s) else { return nil }
            self = .uri(s)
        case .json:
            self = .json(json)
        }
    }

    /// The JSON form of the value.
    public var json: JSONValue {
        switch self {
        case .null: .null
        case .string(let s): .string(s)
        case .integer(let i): .integer(i)
        case .double(let d): .double(d)
        case .decimal(let d): .string(d.description)
        case .boolean(let b): .bool(b)
        case .date(let date): .string(AttributeValue.formatDate(date))
        case .binary(let data): .string(data.base64EncodedString())
        case .uuid(let uuid): .string(uuid.uuidString.lowercased())
        case .uri(let s): .string(s)
        case .json(let value): value
        }
    }

    /// The most significant digits a decimal may have (`NSDecimalNumber`'s mantissa).
    public static let decimalMaxDigits = 38
    /// The exponents a decimal may have (`NSDecimalNumber`'s).
    public static let decimalExponents: ClosedRange<Int> = -128...127
    /// The limit a decimal keeps, as a refusal states it.
    public static let decimalLimit = "at most 38 significant digits and an exponent from -128 to 127"

    /// Parses a decimal written as digits with an optional sign, point and exponent (the syntax
    /// ``decimalPattern`` states) whose value `NSDecimalNumber` holds exactly: written as a
    /// mantissa without trailing zeros times a power of ten, the mantissa has at most
    /// ``decimalMaxDigits`` digits and the power is in ``decimalExponents``. Nil for anything else.
    public static func parseDecimal(_ text: String) -> Decimal? {
        guard let parts = decimalParts(text) else { return nil }
        return decimal(parts)
    }

    /// Whether `text` has the syntax of a decimal (``decimalPattern``), whatever its size.
    public static func isDecimalSyntax(_ text: String) -> Bool { decimalParts(text) != nil }

    /// A decimal's sign, its significant digits (no leading or trailing zeros; empty for zero)
    /// and the power of ten of the last one.
    struct DecimalParts {
        var negative: Bool
        var digits: [UInt8]
        var exponent: Int
    }

    /// Reads `text` as ``decimalPattern`` states (scanned by hand: this runs for every decimal in
    /// every request body).
    static func decimalParts(_ text: String) -> DecimalParts? {
        var rest = text.utf8[...]
        var digits: [UInt8] = []
        func scan(into collect: Bool) -> Int {
            var count = 0
            while let byte = rest.first, (0x30...0x39).contains(byte) {
                count += 1
                if collect { digits.append(byte) }
                rest = rest.dropFirst()
            }
            return count
        }
        var negative = false
        if let sign = rest.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            negative = sign == UInt8(ascii: "-")
            rest = rest.dropFirst()
        }
        let whole = scan(into: true)
        var fraction = 0
        if rest.first == UInt8(ascii: ".") {
            rest = rest.dropFirst()
            fraction = scan(into: true)
        }
        guard whole + fraction > 0 else { return nil }
        var written = 0
        if let mark = rest.first, mark == UInt8(ascii: "e") || mark == UInt8(ascii: "E") {
            rest = rest.dropFirst()
            var exponentNegative = false
            if let sign = rest.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                exponentNegative = sign == UInt8(ascii: "-")
                rest = rest.dropFirst()
            }
            let start = rest
            let count = scan(into: false)
            guard (1...3).contains(count) else { return nil }
            written = Int(String(decoding: start.prefix(count), as: UTF8.self))!
            if exponentNegative { written = -written }
        }
        guard rest.isEmpty else { return nil }
        let first = digits.firstIndex { $0 != UInt8(ascii: "0") } ?? digits.endIndex
        let last = digits.lastIndex { $0 != UInt8(ascii: "0") }.map { $0 + 1 } ?? first
        let exponent = written - fraction + (digits.count - last)
        return DecimalParts(negative: negative, digits: Array(digits[first..<last]), exponent: exponent)
    }

    /// The value of `parts`, or nil when `NSDecimalNumber` cannot hold it exactly.
    static func decimal(_ parts: DecimalParts) -> Decimal? {
        guard !parts.digits.isEmpty else { return Decimal(0) }
        guard parts.digits.count <= decimalMaxDigits, decimalExponents.contains(parts.exponent) else { return nil }
        let text = (parts.negative ? "-" : "") + String(decoding: parts.digits, as: UTF8.self) + "e\(parts.exponent)"
        return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
    }

    /// A decimal's digits without the sign: digits with an optional point and more, or a point
    /// and digits (how many a value may have is ``decimalLimit``, which a pattern does not count).
    static let decimalDigits = #"([0-9]+(\.[0-9]*)?|\.[0-9]+)"#
    /// The digits of a zero.
    static let zeroDigits = #"(0+(\.0*)?|\.0+)"#
    static let decimalExponent = #"([eE][+-]?[0-9]{1,3})?"#
    /// The regular expression of a decimal written as a string (the syntax ``parseDecimal(_:)``
    /// reads; the value must also be within ``decimalLimit``).
    public static let decimalPattern = "^[+-]?\(decimalDigits)\(decimalExponent)$"
    /// The decimals ``parseDecimal(_:)`` reads as at least 0: no minus sign, or a minus before a zero.
    public static let nonNegativeDecimalPattern = "^(\\+?\(decimalDigits)|-\(zeroDigits))\(decimalExponent)$"
    /// The decimals ``parseDecimal(_:)`` reads as at most 0: a minus sign, or a zero.
    public static let nonPositiveDecimalPattern = "^(-\(decimalDigits)|\\+?\(zeroDigits))\(decimalExponent)$"
    /// The decimals ``parseDecimal(_:)`` reads as 0.
    public static let zeroDecimalPattern = "^[+-]?\(zeroDigits)\(decimalExponent)$"

    /// Whether `text` is an absolute URI with a scheme.
    public static func isURI(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme, !scheme.isEmpty else { return false }
        return !text.contains(" ")
    }

    /// Formats a date as RFC 3339 in UTC with microseconds (`2026-01-02T03:04:05.123456Z`).
    public static func formatDate(_ date: Date) -> String {
        let micros = microseconds(of: date)
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let s = String(value)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        var text = "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))"
        text += "T\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))"
        if fraction != 0 { text += "." + pad(Int32(fraction), 6) }
        return text + "Z"
    }

    /// Parses an RFC 3339 date-time (`Z` or a numeric offset; up to microseconds kept).
    public static func parseDate(_ text: String) -> Date? {
        let pattern =
            #/^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/#
        guard let match = text.wholeMatch(of: pattern) else { return nil }
        guard let year = Int32(match.1), let month = Int32(match.2), let day = Int32(match.3),
            let hour = Int32(match.4), let minute = Int32(match.5), let second = Int32(match.6),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = Int64(timegm(&parts))
        // timegm normalises out-of-range days (Feb 30 → Mar 2); refuse those.
        guard parts.tm_mday == day, parts.tm_mon == month - 1 else { return nil }
        var micros = seconds * 1_000_000
        if let fraction = match.7 {
            let digits = String(fraction.prefix(6))
            micros += Int64(digits + String(repeating: "0", count: 6 - digits.count))!
        }
        if let sign = match.9, let offsetHours = Int64(match.10!), let offsetMinutes = Int64(match.11!) {
            let offset = (offsetHours * 3600 + offsetMinutes * 60) * 1_000_000
            micros += sign == "+" ? -offset : offset
        }
        return date(microseconds: micros)
    }
}
