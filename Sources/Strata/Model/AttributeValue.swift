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
    package struct DecimalParts {
        package var negative: Bool
        package var digits: [UInt8]
        package var exponent: Int
    }

    /// Reads `text` as ``decimalPattern`` states (scanned by hand: this runs for every decimal in
    /// every request body).
    package static func decimalParts(_ text: String) -> DecimalParts? {
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

    /// The RFC 3339 date-times ``parseDate(_:)`` reads, as a regular expression (ECMA-262, as
    /// OpenAPI's `pattern`; ICU, Python and Swift read it alike): a four-digit year, a month and a day
    /// that exist (February 29 in leap years only), `T`, `t` or a space, hours 00–23, minutes 00–59,
    /// seconds 00–60, up to nine fraction digits, then `Z`, `z` or an offset from -23:59 to +23:59.
    /// A second of 60 is read as the next minute's first, as PostgreSQL reads it: a leap second
    /// names the instant POSIX time gives the second after it. The one definition: the parser
    /// checks it before reading the digits at their fixed places.
    public static let dateTimePattern: String = {
        let monthDay =
            "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
            + "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
        // Divisible by 4 and not by 100 (the last two digits), or by 400 (the first two, then 00).
        let leapYear = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
        let date = "(?:[0-9]{4}-\(monthDay)|\(leapYear)-02-29)"
        let time = "[Tt ](?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]{1,9})?"
        let zone = "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
        return date + time + zone
    }()

    private static let dateTimeRegex = (try? ICURegex.compiled(dateTimePattern, caseInsensitive: false)) ?? nil

    /// Parses an RFC 3339 date-time as ``dateTimePattern`` states it (up to microseconds kept;
    /// further fraction digits are dropped).
    public static func parseDate(_ text: String) -> Date? {
        guard let regex = dateTimeRegex, (try? regex.matchesWhole(text, patternText: "date-time")) == true else {
            return nil
        }
        // Every field is at a fixed place, all ASCII digits, in its range.
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int64 {
            bytes[start..<start + count].reduce(0) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
        }
        let days = daysSince1970(year: number(0, 4), month: number(5, 2), day: number(8, 2))
        let seconds = ((days * 24 + number(11, 2)) * 60 + number(14, 2)) * 60 + number(17, 2)
        var micros = seconds * 1_000_000
        var index = 19
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100_000
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                micros += Int64(bytes[index] - UInt8(ascii: "0")) * scale
                scale /= 10
                index += 1
            }
        }
        if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let offset = (number(index + 1, 2) * 60 + number(index + 4, 2)) * 60_000_000
            micros += bytes[index] == UInt8(ascii: "+") ? -offset : offset
        }
        return date(microseconds: micros)
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
    /// `days_from_civil`).
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
