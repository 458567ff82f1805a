/// A resolved operand during in-memory evaluation.
public enum PredicateOperand: Sendable, Hashable {
    /// An attribute value.
    case value(AttributeValue)
    /// A relationship's object (nil when empty).
    case object(ObjectID?)
    /// A list: the right side of `IN` and `BETWEEN`, or the values of a key path through a to-many
    /// relationship.
    case list([PredicateOperand])
}

extension FetchPredicate {
    /// Evaluates the predicate in memory.
    ///
    /// A key path on the left of a comparison that resolves to a `.list` (a path through a to-many
    /// relationship) is quantified by the comparison's ``ComparisonModifier``: `ANY` (also with no
    /// modifier) matches when some element matches, `ALL` when every element does, `NONE` when no
    /// element does; `ALL` and `NONE` match an empty list.
    /// - Parameter resolve: returns the operand for a key path of the object being tested; a path
    ///   through a to-many relationship returns a `.list` of its values.
    /// - Throws: ``PredicateError`` for a variable that was not substituted, or what `resolve` throws.
    public func evaluate(_ resolve: (String) throws -> PredicateOperand) throws -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .textSearch(let search):
            guard case .value(.string(let text)) = try resolve(search.keyPath) else { return search.matches(nil) }
            return search.matches(text)
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
            let elements: [PredicateOperand]
            if case .keyPath = comparison.lhs, case .list(let items) = lhs {
                elements = items
            } else if comparison.modifier != .direct {
                elements = [lhs]
            } else {
                return try Self.compare(lhs, comparison.op, rhs, comparison.options)
            }
            let matches = { (element: PredicateOperand) throws(PredicateError) -> Bool in
                try Self.compare(element, comparison.op, rhs, comparison.options)
            }
            switch comparison.modifier {
            case .direct, .any: return try elements.contains(where: matches)
            case .all: return try elements.allSatisfy(matches)
            case .none: return try !elements.contains(where: matches)
            }
        }
    }

    /// Evaluates the predicate in memory for `object`, walking key paths through `model`.
    ///
    /// Dotted key paths read through relationships, a path through a to-many relationship yields one
    /// value per related object (quantified as described in ``evaluate(_:)``), `rel.@count` yields the
    /// number of related objects, and a path through an empty to-one relationship yields nil.
    /// - Parameters:
    ///   - object: the object being tested.
    ///   - model: the model the object's entity belongs to.
    ///   - property: reads one key of one object: an attribute as `.value` (`.value(.null)` when
    ///     nil), a to-one relationship as `.object`, a to-many relationship as a `.list` of
    ///     `.object`s.
    /// - Throws: ``PredicateError`` for a key path the entity does not have or a variable that was not
    ///   substituted, or what `property` throws.
    public func evaluate(
        object: ObjectID, in model: ObjectModel, property: (ObjectID, String) throws -> PredicateOperand
    ) throws -> Bool {
        var paths: [String: ModelKeyPath] = [:]
        return try evaluate(object: object, in: model, paths: &paths, property: property)
    }

    /// ``evaluate(object:in:property:)`` keeping the key paths it checks in `paths` (keyed by entity
    /// and path), so that testing many objects checks each path once per entity.
    func evaluate(
        object: ObjectID, in model: ObjectModel, paths: inout [String: ModelKeyPath],
        property: (ObjectID, String) throws -> PredicateOperand
    ) throws -> Bool {
        try evaluate { text in
            let key = object.entityName + "\u{0}" + text
            let path: ModelKeyPath
            if let known = paths[key] {
                path = known
            } else {
                path = try ModelKeyPath(text, from: object.entityName, in: model)
                paths[key] = path
            }
            return try path.resolve(from: object, property: property)
        }
    }

    static func equal(_ lhs: PredicateOperand, _ rhs: PredicateOperand, _ options: ComparisonOptions) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)): return a == b
        case (.object(nil), .value(.null)), (.value(.null), .object(nil)): return true
        case (.value(let a), .value(let b)):
            if !options.isEmpty, let x = a.textValue, let y = b.textValue {
                // Byte equality of the folded text, as SQLite compares it (not canonical equivalence).
                return ValueOrdering.compareBytes(
                    ValueOrdering.fold(x, options).utf8, ValueOrdering.fold(y, options).utf8)
                    == 0
            }
            return ValueOrdering.equal(a, b)
        default: return false
        }
    }

    static func order(_ lhs: PredicateOperand, _ rhs: PredicateOperand, _ options: ComparisonOptions) -> Int? {
        // Two stored objects of one store order by primary key, as SQL compares `_pk` (a keyset
        // cursor's `SELF > object`).
        if case .object(let x?) = lhs, case .object(let y?) = rhs {
            guard x.storeIdentifier == y.storeIdentifier, let a = x.primaryKey, let b = y.primaryKey else { return nil }
            return a < b ? -1 : (a == b ? 0 : 1)
        }
        guard case .value(let a) = lhs, case .value(let b) = rhs else { return nil }
        if !options.isEmpty, let x = a.textValue, let y = b.textValue {
            return ValueOrdering.compareBytes(ValueOrdering.fold(x, options).utf8, ValueOrdering.fold(y, options).utf8)
        }
        return ValueOrdering.compare(a, b)
    }

    static func compare(
        _ lhs: PredicateOperand, _ op: ComparisonOperator, _ rhs: PredicateOperand, _ options: ComparisonOptions
    ) throws(PredicateError) -> Bool {
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
            guard let low = order(lhs, bounds[0], options), let high = order(lhs, bounds[1], options) else {
                return false
            }
            return low >= 0 && high <= 0
        case .beginsWith, .endsWith, .contains, .like, .matches:
            guard case .value(let a) = lhs, case .value(let b) = rhs, let text = a.textValue, let pattern = b.textValue
            else { return false }
            return try ValueOrdering.matchText(op, text, pattern, options)
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
