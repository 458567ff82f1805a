import Foundation
import Strata

/// A filter's value as the stores compare with it.
enum FilterConstant {
    /// A value the stores can hold (or `null`, or an object).
    case exact(PredicateTerm)
    /// A value no store can hold, strictly between the nearest two that can be held (nil: none on
    /// that side): an integer out of the attribute's range, a decimal past `NSDecimalNumber`'s
    /// digits, a date with a nonzero digit past the microsecond, an id past 64 bits. It equals no
    /// stored value, and orders as those neighbours do.
    case between(AttributeValue?, AttributeValue?)
}

extension ListQuery {
    /// A filter `attr=[not.]op.value`: refused unless `raw` matches the pattern the document
    /// states for the attribute's type (``FilterSyntax``), then converted, which every matching
    /// value does.
    static func filter(
        _ name: String, _ raw: String, entity: String, model: ObjectModel, objectID: (String, Int64) -> ObjectID?
    )
        throws(Problem) -> FetchPredicate
    {
        func bad(_ message: String) -> Problem {
            Problem.badRequest("\(name): \(message)", errors: [.init(field: name, code: "invalid", message: message)])
        }
        if name == ObjectCodec.idKey { return try idFilter(raw, entity: entity, objectID: objectID) }
        let attribute = model.attribute(name, of: entity)
        let relationship = model.relationship(name, of: entity).flatMap { $0.isToMany ? nil : $0 }
        guard attribute != nil || relationship != nil else {
            throw Problem.badRequest(
                "unknown query parameter '\(name)': not a filterable attribute or to-one relationship of \(entity)",
                errors: [.init(field: name, code: "unknown", message: "unknown filter")])
        }
        if let relationship {
            guard FilterSyntax.matches(raw, FilterSyntax.idPattern(null: true)) else {
                throw bad(
                    "expected eq.ID, neq.ID, in.(ID,…) or is.null (ID a \(relationship.destination) id or null), "
                        + "optionally after not., not '\(raw)'")
            }
            return try idPredicate(raw, path: name) { literal in
                if literal == "null" { return .exact(.object(nil)) }
                guard let pk = Int64(literal) else { return .between(nil, nil) }
                return objectID(relationship.destination, pk).map { .exact(.object($0)) } ?? .between(nil, nil)
            }
        }
        let type = attribute!.type
        let searchable = attribute!.isSearchable
        guard FilterSyntax.matches(raw, FilterSyntax.pattern(type, searchable: searchable)) else {
            if let refusal = FilterSyntax.textSearchRefusal(raw, attribute: attribute!, entity: entity, model: model) {
                throw bad(refusal)
            }
            throw bad("\(FilterSyntax.describe(type, searchable: searchable)), not '\(raw)'")
        }
        // Split by UTF-8 bytes: a value starting with a combining mark makes one character with
        // the dot before it.
        var text = Substring(raw)
        let negate = text.utf8.starts(with: "not.".utf8)
        if negate { text = text[text.utf8.index(text.startIndex, offsetBy: 4)...] }
        let dot = text.utf8.firstIndex(of: UInt8(ascii: "."))!
        let op = String(text[..<dot])
        let operand = String(text[text.utf8.index(after: dot)...])
        let path = PredicateTerm.keyPath(name)
        let predicate: FetchPredicate
        switch op {
        case "like", "ilike":
            predicate = .comparison(
                Comparison(path, .like, .constant(.string(operand)), options: op == "ilike" ? .caseInsensitive : []))
        case _ where FilterSyntax.textSearchOperators.contains(op):
            predicate = .textSearch(FilterSyntax.textSearch(name, op, operand))
        case "is":
            let value: AttributeValue = operand == "null" ? .null : .boolean(operand == "true")
            predicate = .comparison(Comparison(path, .equal, .constant(value)))
        default:
            predicate = try comparison(op, operand, path: path) { literal throws(Problem) in
                guard let constant = constant(literal, type) else { throw bad("'\(literal)' does not convert") }
                return constant
            }
        }
        return negate ? .not(predicate) : predicate
    }

    /// `op.operand` for a comparison operator or `in`, with each value converted by `constant`.
    private static func comparison(
        _ op: String, _ operand: String, path: PredicateTerm,
        constant: (String) throws(Problem) -> FilterConstant
    ) throws(Problem) -> FetchPredicate {
        let operators: [String: ComparisonOperator] = [
            "eq": .equal, "neq": .notEqual, "gt": .greater, "gte": .greaterOrEqual, "lt": .less,
            "lte": .lessOrEqual,
        ]
        if let comparison = operators[op] { return compare(path, comparison, try constant(operand)) }
        // `in.(…)`: by UTF-8 bytes, like the operator: an item may start with a combining mark.
        let inner = operand.utf8.dropFirst().dropLast()
        var items: [PredicateTerm] = []
        if !inner.isEmpty {
            for item in inner.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                // A value no store holds is in no list.
                if case .exact(let term) = try constant(String(decoding: item, as: UTF8.self)) { items.append(term) }
            }
        }
        return .comparison(Comparison(path, .in, .list(items)))
    }

    /// `path op constant`; for a value no store holds, the same set of objects said with its
    /// neighbours: equal to none, unequal to all (null included, as `neq` is), and greater (or
    /// less) than it exactly when greater than the neighbour below (less than the one above), or
    /// whenever not null when there is none.
    static func compare(_ path: PredicateTerm, _ op: ComparisonOperator, _ constant: FilterConstant) -> FetchPredicate {
        switch constant {
        case .exact(let term): return .comparison(Comparison(path, op, term))
        case .between(let lower, let upper):
            let notNull = FetchPredicate.comparison(Comparison(path, .notEqual, .constant(.null)))
            switch op {
            case .equal: return .never
            case .greater, .greaterOrEqual:
                return lower.map { .comparison(Comparison(path, .greater, .constant($0))) } ?? notNull
            case .less, .lessOrEqual:
                return upper.map { .comparison(Comparison(path, .less, .constant($0))) } ?? notNull
            default: return .always
            }
        }
    }

    /// A value of `type` from text its pattern matched (``FilterSyntax/value(_:)`` or `null`).
    static func constant(_ text: String, _ type: AttributeType) -> FilterConstant? {
        if text == "null" { return .exact(.constant(.null)) }
        switch type {
        case .string: return .exact(.constant(.string(text)))
        // Any text: one that is not a URI equals no stored value.
        case .uri: return .exact(.constant(.uri(text)))
        case .integer16, .integer32, .integer64:
            let range = type.integerRange!
            if let value = Int64(text), range.contains(value) { return .exact(.constant(.integer(value))) }
            return text.hasPrefix("-")
                ? .between(nil, .integer(range.lowerBound)) : .between(.integer(range.upperBound), nil)
        // Past a `Double`'s range: ±infinity, beyond every stored number.
        case .double, .float: return Double(text).map { .exact(.constant(.double($0))) }
        case .decimal: return decimalConstant(text)
        case .boolean: return .exact(.constant(.boolean(text == "true")))
        case .date: return dateConstant(text)
        case .uuid: return UUID(uuidString: text).map { .exact(.constant(.uuid($0))) }
        case .binary: return Data(base64Encoded: text).map { .exact(.constant(.binary($0))) }
        case .json: return nil
        }
    }

    /// A date; one with a nonzero digit past the microsecond (which stores do not keep) lies
    /// between the microseconds around it.
    static func dateConstant(_ text: String) -> FilterConstant? {
        guard let date = AttributeValue.parseDate(text) else { return nil }
        let value = AttributeValue.date(date)
        // The fraction, when there is one, starts at byte 20 (after `YYYY-MM-DDTHH:MM:SS.`).
        let bytes = Array(text.utf8)
        guard bytes.count > 26, bytes[19] == UInt8(ascii: ".") else { return .exact(.constant(value)) }
        let rest = bytes[26...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        guard rest.contains(where: { $0 != UInt8(ascii: "0") }) else { return .exact(.constant(value)) }
        // Sub-microsecond digits always count up from the microsecond below, whatever the offset.
        let micros = AttributeValue.microseconds(of: date)
        return .between(value, .date(AttributeValue.date(microseconds: micros + 1)))
    }

    /// The largest decimal `NSDecimalNumber` holds: 38 nines times 10^127.
    private static let decimalMaximum = (digits: [UInt8](repeating: UInt8(ascii: "9"), count: 38), exponent: 127)

    /// A decimal. One `NSDecimalNumber` cannot hold (more than 38 significant digits, or out of its
    /// exponents) compares as what it is: between the nearest two it can hold, m × 10^e with m
    /// below 10^38 and e from -128 to 127, found by cutting the digits past the 38th (or past
    /// 10^-128) and adding one unit there. A value that is m × 10^e only with trailing zeros in m
    /// (`1e128`) is held exactly.
    static func decimalConstant(_ text: String) -> FilterConstant? {
        if let value = AttributeValue.parseDecimal(text) { return .exact(.constant(.decimal(value))) }
        guard let parts = AttributeValue.decimalParts(text), !parts.digits.isEmpty else { return nil }
        let top = parts.exponent + parts.digits.count - 1
        let zero = UInt8(ascii: "0")
        // The neighbours of the magnitude.
        var lower: (digits: [UInt8], exponent: Int)?
        var upper: (digits: [UInt8], exponent: Int)?
        if top > decimalMaximum.exponent + 37 {
            lower = decimalMaximum
        } else if top < AttributeValue.decimalExponents.lowerBound {
            lower = ([zero], 0)
            upper = ([UInt8(ascii: "1")], AttributeValue.decimalExponents.lowerBound)
        } else {
            let unit = max(AttributeValue.decimalExponents.lowerBound, top - 37)
            let kept = Array(parts.digits.prefix(top - unit + 1))
            if kept.count == parts.digits.count {
                return decimal(kept, parts.exponent).map { .exact(.constant(.decimal(parts.negative ? -$0 : $0))) }
            }
            lower = (kept, unit)
            upper = (increment(kept), unit)
        }
        let low = lower.flatMap { decimal($0.digits, $0.exponent) }
        let high = upper.flatMap { decimal($0.digits, $0.exponent) }
        return parts.negative
            ? .between(high.map { .decimal(-$0) }, low.map { .decimal(-$0) })
            : .between(low.map { .decimal($0) }, high.map { .decimal($0) })
    }

    /// The decimal digits × 10^exponent, written with the exponent at most 127 (trailing zeros
    /// moved into the digits), or nil when that needs more than 38 digits.
    private static func decimal(_ digits: [UInt8], _ exponent: Int) -> Decimal? {
        var digits = digits
        var exponent = exponent
        while digits.count > 1, digits.last == UInt8(ascii: "0") {
            digits.removeLast()
            exponent += 1
        }
        let limit = AttributeValue.decimalExponents.upperBound
        if exponent > limit {
            digits += [UInt8](repeating: UInt8(ascii: "0"), count: exponent - limit)
            exponent = limit
        }
        guard digits.count <= AttributeValue.decimalMaxDigits else { return nil }
        return Decimal(
            string: String(decoding: digits, as: UTF8.self) + "e\(exponent)", locale: Locale(identifier: "en_US_POSIX"))
    }

    /// Decimal digits plus one in the last place (`999` → `1000`).
    private static func increment(_ digits: [UInt8]) -> [UInt8] {
        var digits = digits
        var index = digits.count - 1
        while index >= 0 {
            if digits[index] < UInt8(ascii: "9") {
                digits[index] += 1
                return digits
            }
            digits[index] = UInt8(ascii: "0")
            index -= 1
        }
        return [UInt8(ascii: "1")] + digits
    }

    /// A filter on the objects' own ids: `_id=[not.]eq.5`, `_id=[not.]neq.5`, `_id=[not.]in.(1,2)`.
    static func idFilter(_ raw: String, entity: String, objectID: (String, Int64) -> ObjectID?) throws(Problem)
        -> FetchPredicate
    {
        let name = ObjectCodec.idKey
        guard FilterSyntax.matches(raw, FilterSyntax.idPattern(null: false)) else {
            let message = "'\(raw)' must be eq.ID, neq.ID or in.(ID,…), optionally after not. (ids are integers)"
            throw Problem.badRequest(
                "\(name): \(message)", errors: [.init(field: name, code: "invalid", message: message)])
        }
        return try idPredicate(raw, path: "SELF") { literal in
            // An id past 64 bits, or one of no object, is no object's.
            guard let pk = Int64(literal), let id = objectID(entity, pk) else { return .between(nil, nil) }
            return .exact(.object(id))
        }
    }

    /// The predicate of an id filter whose text matched ``FilterSyntax/idPattern(null:)``.
    private static func idPredicate(_ raw: String, path: String, id: (String) -> FilterConstant) throws(Problem)
        -> FetchPredicate
    {
        var text = Substring(raw)
        let negate = text.hasPrefix("not.")
        if negate { text = text.dropFirst(4) }
        let predicate: FetchPredicate
        if text == "is.null" {
            predicate = .comparison(Comparison(.keyPath(path), .equal, .object(nil)))
        } else {
            let dot = text.firstIndex(of: ".")!
            predicate = try comparison(
                String(text[..<dot]), String(text[text.index(after: dot)...]), path: .keyPath(path)
            ) { literal throws(Problem) in id(literal) }
        }
        return negate ? .not(predicate) : predicate
    }
}
