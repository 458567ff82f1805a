import Foundation

/// The one definition of how values compare, shared by in-memory evaluation, in-memory sorting and
/// the SQL functions the SQLite store registers, so that every store answers alike.
public enum ValueOrdering {
    /// Orders two values: nil when they are not comparable (different kinds, or either is null).
    ///
    /// Numbers compare numerically (a decimal and another number exactly, as decimals; see
    /// ``decimalKey(_:)``), strings,
    /// URIs and UUIDs by their UTF-8 bytes (SQLite's BINARY collation), dates by microsecond,
    /// `false` before `true`, binary by bytes.
    public static func compare(_ lhs: AttributeValue, _ rhs: AttributeValue) -> Int? {
        switch (lhs, rhs) {
        case (.integer(let a), .integer(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.string(let a), .string(let b)), (.uri(let a), .uri(let b)), (.string(let a), .uri(let b)),
            (.uri(let a), .string(let b)):
            return compareBytes(a.utf8, b.utf8)
        case (.uuid(let a), .uuid(let b)):
            return compareBytes(a.uuidString.lowercased().utf8, b.uuidString.lowercased().utf8)
        case (.date(let a), .date(let b)):
            let (x, y) = (AttributeValue.microseconds(of: a), AttributeValue.microseconds(of: b))
            return x < y ? -1 : (x == y ? 0 : 1)
        case (.boolean(let a), .boolean(let b)): return a == b ? 0 : (a ? 1 : -1)
        case (.binary(let a), .binary(let b)): return compareBytes(a, b)
        case (.json(let a), .json(let b)): return compareBytes(a.jsonText.utf8, b.jsonText.utf8)
        default:
            if let order = compareDecimals(lhs, rhs) { return order }
            guard let a = number(lhs), let b = number(rhs) else { return nil }
            return a < b ? -1 : (a == b ? 0 : 1)
        }
    }

    /// Whether two values are equal for `==`: null equals only null.
    public static func equal(_ lhs: AttributeValue, _ rhs: AttributeValue) -> Bool {
        if lhs.isNull || rhs.isNull { return lhs.isNull && rhs.isNull }
        return compare(lhs, rhs) == 0
    }

    /// Sort order: null first, then values by ``compare(_:_:)``; values of different kinds keep a
    /// fixed order by kind.
    public static func sortOrder(_ lhs: AttributeValue, _ rhs: AttributeValue, caseInsensitive: Bool = false) -> Int {
        switch (lhs.isNull, rhs.isNull) {
        case (true, true): return 0
        case (true, false): return -1
        case (false, true): return 1
        default: break
        }
        if caseInsensitive, case .string(let a) = lhs, case .string(let b) = rhs {
            return compareBytes(fold(a, [.caseInsensitive]).utf8, fold(b, [.caseInsensitive]).utf8)
        }
        return compare(lhs, rhs) ?? compareBytes(lhs.kindName.utf8, rhs.kindName.utf8)
    }

    /// A number's value as a `Double`.
    public static func number(_ value: AttributeValue) -> Double? {
        switch value {
        case .integer(let i): Double(i)
        case .double(let d): d
        case .decimal(let d): NSDecimalNumber(decimal: d).doubleValue
        case .boolean(let b): b ? 1 : 0
        default: nil
        }
    }

    static func compareBytes<A: Sequence, B: Sequence>(_ a: A, _ b: B) -> Int
    where A.Element == UInt8, B.Element == UInt8 {
        var left = a.makeIterator()
        var right = b.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?) where x != y: return x < y ? -1 : 1
            default: continue
            }
        }
    }

    /// `text` with case and/or diacritics folded, as `[c]`, `[d]` and `[cd]` compare it.
    public static func fold(_ text: String, _ options: ComparisonOptions) -> String {
        if options.isEmpty { return text }
        var folding: String.CompareOptions = []
        if options.contains(.caseInsensitive) { folding.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { folding.insert(.diacriticInsensitive) }
        let folded = text.folding(options: folding, locale: nil)
        return options.contains(.caseInsensitive) ? folded.lowercased() : folded
    }

    /// Evaluates a string operator (`BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`, `MATCHES`).
    /// Returns false when either side is not a string.
    /// - Throws: for `MATCHES`, a pattern too long or too slow on `text` (ICU's regular expressions, with a step limit).
    public static func matchText(
        _ op: ComparisonOperator, _ text: String, _ pattern: String, _ options: ComparisonOptions
    ) throws(PredicateError) -> Bool {
        let value = fold(text, options)
        switch op {
        case .beginsWith: return value.unicodeScalars.starts(with: fold(pattern, options).unicodeScalars)
        case .endsWith:
            return value.unicodeScalars.reversed().starts(with: fold(pattern, options).unicodeScalars.reversed())
        case .contains:
            let needle = fold(pattern, options)
            return needle.isEmpty || value.range(of: needle, options: .literal) != nil
        case .like: return like(Array(value.unicodeScalars), Array(fold(pattern, options).unicodeScalars))
        case .matches: return try regexMatches(text, pattern, options)
        default: return false
        }
    }

    /// Core Data's `LIKE`: `*` matches any run of characters, `?` one character, `\` escapes.
    static func like(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        var t = 0
        var p = 0
        var starP = -1
        var starT = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "\\", p + 1 < pattern.count, pattern[p + 1] == text[t] {
                p += 2
                t += 1
            } else if p < pattern.count,
                pattern[p] == "?" || (pattern[p] != "*" && pattern[p] != "\\" && pattern[p] == text[t])
            {
                p += 1
                t += 1
            } else if p < pattern.count, pattern[p] == "*" {
                starP = p
                starT = t
                p += 1
            } else if starP >= 0 {
                p = starP + 1
                starT += 1
                t = starT
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// `MATCHES`: the whole text matches the regular expression (ICU syntax, as Core Data).
    /// A pattern ICU cannot compile matches nothing.
    /// - Throws: a pattern too long, or one that takes too many steps on `text` (``ICURegex``).
    static func regexMatches(_ text: String, _ pattern: String, _ options: ComparisonOptions) throws(PredicateError)
        -> Bool
    {
        guard let regex = try ICURegex.compiled(pattern, caseInsensitive: options.contains(.caseInsensitive)) else {
            return false
        }
        let subject = options.contains(.diacriticInsensitive) ? fold(text, [.diacriticInsensitive]) : text
        return try regex.matchesWhole(subject, patternText: pattern)
    }
}
