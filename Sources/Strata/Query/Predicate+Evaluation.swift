/// A resolved operand during in-memory evaluation.
public enum PredicateOperand: Sendable, Hashable {
    /// An attribute value.
    case value(AttributeValue)
    /// A to-one relationship's object (nil when empty).
    case object(ObjectID?)
    /// A list (for `IN` and `BETWEEN`).
    case list([PredicateOperand])
}

extension FetchPredicate {
    /// Evaluates the predicate in memory.
    /// - Parameter resolve: returns the operand for a key path of the object being tested.
    /// - Throws: ``PredicateError`` for a variable that was not substituted, or what `resolve` throws.
    public func evaluate(_ resolve: (String) throws -> PredicateOperand) throws -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .not(let item): return try !item.evaluate(resolve)
        case .and(let items):
            for item in items where try !item.evaluate(resolve) { return false }
            return true
        case .or(let items):
            for item in items where try item.evaluate(resolve) { return true }
            return false
        case .comparison(let comparison):
            let lhs = try comparison.lhs.operand(resolve)
            let rhs = try comparison.rhs.operand(resolve)
            return Self.compare(lhs, comparison.op, rhs, comparison.options)
        }
    }

    static func equal(_ lhs: PredicateOperand, _ rhs: PredicateOperand, _ options: ComparisonOptions) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)): return a == b
        case (.object(nil), .value(.null)), (.value(.null), .object(nil)): return true
        case (.value(.string(let a)), .value(.string(let b))) where !options.isEmpty:
            return ValueOrdering.fold(a, options) == ValueOrdering.fold(b, options)
        case (.value(let a), .value(let b)): return ValueOrdering.equal(a, b)
        default: return false
        }
    }

    static func order(_ lhs: PredicateOperand, _ rhs: PredicateOperand, _ options: ComparisonOptions) -> Int? {
        guard case .value(let a) = lhs, case .value(let b) = rhs else { return nil }
        if case .string(let x) = a, case .string(let y) = b, !options.isEmpty {
            return ValueOrdering.compareBytes(ValueOrdering.fold(x, options).utf8, ValueOrdering.fold(y, options).utf8)
        }
        return ValueOrdering.compare(a, b)
    }

    static func compare(
        _ lhs: PredicateOperand, _ op: ComparisonOperator, _ rhs: PredicateOperand, _ options: ComparisonOptions
    ) -> Bool {
        switch op {
        case .equal: return equal(lhs, rhs, options)
        case .notEqual: return !equal(lhs, rhs, options)
        case .less: return order(lhs, rhs, options).map { $0 < 0 } ?? false
        case .lessOrEqual: return order(lhs, rhs, options).map { $0 <= 0 } ?? false
        case .greater: return order(lhs, rhs, options).map { $0 > 0 } ?? false
        case .greaterOrEqual: return order(lhs, rhs, options).map { $0 >= 0 } ?? false
        case .in:
            guard case .list(let items) = rhs else { return false }
            return items.contains { equal(lhs, $0, options) }
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2 else { return false }
            guard let low = order(lhs, bounds[0], options), let high = order(lhs, bounds[1], options) else { return false }
            return low >= 0 && high <= 0
        case .beginsWith, .endsWith, .contains, .like, .matches:
            guard case .value(let a) = lhs, case .value(let b) = rhs, let text = a.textValue, let pattern = b.textValue
            else { return false }
            return ValueOrdering.matchText(op, text, pattern, options)
        }
    }
}

extension PredicateTerm {
    func operand(_ resolve: (String) throws -> PredicateOperand) throws -> PredicateOperand {
        switch self {
        case .keyPath(let path): return try resolve(path)
        case .constant(let value): return .value(value)
        case .object(let id): return .object(id)
        case .list(let items): return .list(try items.map { try $0.operand(resolve) })
        case .variable(let name): throw PredicateError("no value for variable $\(name)")
        }
    }
}

extension AttributeValue {
    /// The text of a string or URI value, which the string operators accept.
    var textValue: String? {
        switch self {
        case .string(let s), .uri(let s): s
        default: nil
        }
    }
}
