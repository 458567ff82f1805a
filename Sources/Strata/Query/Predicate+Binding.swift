extension FetchPredicate {
    /// The predicate checked against `entity`: every key path must name an attribute or to-one
    /// relationship, and every constant compared with an attribute is converted to the attribute's
    /// type (an RFC 3339 string compared with a date becomes a date, say).
    ///
    /// Every store binds a predicate this way before using it, so all of them accept and refuse the
    /// same predicates and compare the same values.
    /// - Throws: ``PredicateError`` naming the key path or value that does not fit.
    public func bound(to entity: String, in model: ObjectModel) throws(PredicateError) -> FetchPredicate {
        switch self {
        case .always, .never: return self
        case .not(let item): return .not(try item.bound(to: entity, in: model))
        case .and(let items): return .and(try items.map { item throws(PredicateError) in try item.bound(to: entity, in: model) })
        case .or(let items): return .or(try items.map { item throws(PredicateError) in try item.bound(to: entity, in: model) })
        case .comparison(var comparison):
            let lhsAttribute = try Self.check(comparison.lhs, entity, model)
            let rhsAttribute = try Self.check(comparison.rhs, entity, model)
            if let attribute = lhsAttribute { comparison.rhs = try Self.coerce(comparison.rhs, to: attribute) }
            if let attribute = rhsAttribute { comparison.lhs = try Self.coerce(comparison.lhs, to: attribute) }
            return .comparison(comparison)
        }
    }

    /// Checks a key path and returns its attribute, if it is one.
    private static func check(_ expression: PredicateTerm, _ entity: String, _ model: ObjectModel) throws(PredicateError) -> AttributeDescription? {
        switch expression {
        case .keyPath(let path):
            if let attribute = model.attribute(path, of: entity) { return attribute }
            if let relationship = model.relationship(path, of: entity), !relationship.isToMany { return nil }
            throw PredicateError("'\(entity)' has no attribute or to-one relationship '\(path)'")
        case .list(let items):
            for item in items { _ = try check(item, entity, model) }
            return nil
        default: return nil
        }
    }

    private static func coerce(_ expression: PredicateTerm, to attribute: AttributeDescription) throws(PredicateError) -> PredicateTerm {
        switch expression {
        case .constant(let value): return .constant(try SQLPredicateBuilder.coerce(value, to: attribute))
        case .list(let items): return .list(try items.map { item throws(PredicateError) in try coerce(item, to: attribute) })
        case .object: throw PredicateError("'\(attribute.name)' is an attribute; it cannot be compared with an object")
        default: return expression
        }
    }
}
