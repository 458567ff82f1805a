import Strata

/// What a list filter parameter accepts, as one regular expression per attribute type: the
/// OpenAPI document states it as the parameter's `pattern`, and the server refuses every value it
/// does not match (``ListQuery/filter(_:_:entity:model:objectID:)``), so the two cannot drift; every
/// value it matches converts (see ``ListQuery/constant(_:_:)``).
///
/// The expressions are written in the part of ECMA-262 (OpenAPI's dialect) that ICU (the
/// server's), Python's `re` (schemathesis, the Python clients) and JavaScript read alike: literal
/// characters, `[…]` classes with ranges and `\uXXXX` escapes, `(?:…)`, `|`, `?`, `*`, `+` and
/// `{m,n}`; no `\d`, `\s` or `.`, whose meaning differs between them.
enum FilterSyntax {
    /// `eq`, `neq`, `gt`, `gte`, `lt` and `lte`.
    static let comparisons = ["eq", "neq", "gt", "gte", "lt", "lte"]

    /// A decimal integer of any length (out of the attribute's range it compares as what it is:
    /// `gt.99999` on a 16-bit attribute matches nothing).
    static let integer = "-?[0-9]+"
    /// A decimal number: digits, an optional fraction and exponent, as JSON writes numbers (with
    /// leading zeros allowed); one too large for a `Double` compares as infinity.
    static let number = "-?[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
    /// `true` or `false`.
    static let boolean = "true|false"
    /// A UUID: 8-4-4-4-12 hexadecimal digits, either case.
    static let uuid = "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    /// Standard base64 with padding, as `Data(base64Encoded:)` reads it.
    static let base64 = "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
    /// Any text.
    static let text = "[\\s\\S]*"
    /// An item of an `in.(…)` list of text: anything but a comma, which separates the items.
    static let textItem = "[^,]*"
    /// The control characters (Unicode's Cc): C0, DEL and C1.
    static let controlCharacters = "\\u0000-\\u001F\\u007F-\\u009F"
    /// What `where` accepts before it is parsed: no control character.
    static let wherePattern = "^[^" + controlCharacters + "]*$"

    /// A value of `type` after a comparison operator (besides `null`); nil for JSON, which takes
    /// none.
    static func value(_ type: AttributeType) -> String? {
        switch type {
        case .string, .uri: text
        case .integer16, .integer32, .integer64: integer
        case .double, .float: number
        case .decimal: decimal
        case .boolean: boolean
        case .date: AttributeValue.dateTimePattern
        case .uuid: uuid
        case .binary: base64
        case .json: nil
        }
    }

    /// The comparison operators `type` takes: all six on values with an order every store keeps,
    /// `eq` and `neq` on bytes, none on JSON (whose text has no one form to compare).
    static func operators(_ type: AttributeType) -> [String] {
        switch type {
        case .binary: ["eq", "neq"]
        case .json: []
        default: comparisons
        }
    }

    /// A decimal's syntax: ``AttributeValue/decimalPattern`` without its anchors. A value
    /// `NSDecimalNumber` cannot hold compares as what it is (see ``ListQuery/constant(_:_:)``).
    static let decimal = String(AttributeValue.decimalPattern.dropFirst().dropLast())

    /// The pattern of a filter on an attribute of `type`: `[not.]op.value`, `[not.]in.(a,b)` (items
    /// are values or `null`), `[not.]is.null`, `like`/`ilike` on text, `is.true`/`is.false` on
    /// Booleans. On JSON only `is.null`.
    /// A searchable string attribute also takes the text search operators (``textSearchOperators``)
    /// with any text.
    static func pattern(_ type: AttributeType, searchable: Bool = false) -> String {
        searchable && type == .string ? searchablePattern : patterns[type]!
    }

    /// ``pattern(_:)`` of every type, built once.
    private static let patterns = Dictionary(uniqueKeysWithValues: AttributeType.allCases.map { ($0, build($0)) })
    private static let searchablePattern = build(.string, searchable: true)

    private static func build(_ type: AttributeType, searchable: Bool = false) -> String {
        var alternatives: [String] = []
        let operators = operators(type)
        if let value = value(type), !operators.isEmpty {
            let text = type == .string || type == .uri
            alternatives.append("(?:" + operators.joined(separator: "|") + ")\\.(?:null|" + value + ")")
            if text { alternatives.append("i?like\\." + Self.text) }
            if searchable {
                alternatives.append("(?:" + textSearchOperators.joined(separator: "|") + ")\\." + Self.text)
            }
            let item = text ? textItem : "(?:null|" + value + ")"
            alternatives.append("in\\.\\((?:" + item + "(?:," + item + ")*)?\\)")
        }
        alternatives.append(type == .boolean ? "is\\.(?:null|true|false)" : "is\\.null")
        return "^(?:not\\.)?(?:" + alternatives.joined(separator: "|") + ")$"
    }

    /// The pattern of a filter on object ids (`_id`, or a to-one relationship when `null` is
    /// `true`): `eq`, `neq` or `in.(…)` with decimal integers (an id no object has matches nothing),
    /// and `is.null` on a relationship.
    static func idPattern(null: Bool) -> String {
        let id = null ? "(?:null|" + integer + ")" : integer
        var alternatives = ["(?:eq|neq)\\." + id, "in\\.\\((?:" + id + "(?:," + id + ")*)?\\)"]
        if null { alternatives.append("is\\.null") }
        return "^(?:not\\.)?(?:" + alternatives.joined(separator: "|") + ")$"
    }

    /// Whether `value` matches `pattern` whole (a match that runs too long counts as none).
    static func matches(_ value: String, _ pattern: String) -> Bool {
        guard let regex = (try? ICURegex.compiled(pattern, caseInsensitive: false, maxLength: .max)) ?? nil else {
            return false
        }
        return (try? regex.matchesWhole(value, patternText: pattern)) == true
    }

    /// What a filter on `type` takes, for a refusal.
    static func describe(_ type: AttributeType, searchable: Bool) -> String {
        guard searchable, type == .string else { return describe(type) }
        return describe(type) + "; being searchable, also " + textSearchOperators.joined(separator: ", ")
            + " with words to search for"
    }

    /// What a filter on `type` takes, for a refusal.
    static func describe(_ type: AttributeType) -> String {
        let values: String =
            switch type {
            case .string, .uri: "any text"
            case .integer16, .integer32, .integer64: "a decimal integer"
            case .double, .float: "a decimal number such as 2.5 or -1e3"
            case .decimal: "a decimal number such as 9.99 or 1.5e-3"
            case .boolean: "true or false"
            case .date: "an RFC 3339 date-time such as 2024-01-01T00:00:00Z"
            case .uuid: "a UUID"
            case .binary: "base64 with padding"
            case .json: ""
            }
        if type == .json { return "a JSON attribute takes only is.null (and not.is.null)" }
        let operators = operators(type).joined(separator: ", ")
        return "\(type.rawValue) takes \(operators)\(type == .string || type == .uri ? ", like, ilike" : ""), "
            + "in.(a,b) or is.null\(type == .boolean ? ", is.true, is.false" : ""), optionally after not., "
            + "with \(values) or null as the value"
    }
}
