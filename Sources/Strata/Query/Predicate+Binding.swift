extension FetchPredicate {
    /// The predicate checked against `entity`, with every constant converted to the type of what it is
    /// compared with (an RFC 3339 string compared with a date becomes a date, say).
    ///
    /// Key paths must name attributes or relationships, possibly through relationships
    /// (`author.name`, `tags.name`, `tags.@count`); a path through a to-many relationship must be on
    /// the left, `ANY`/`ALL`/`NONE` need such a path, relationships compare only with objects or nil,
    /// two key paths must hold comparable values, `IN` needs a list and `BETWEEN` a list of two, and
    /// no variable may be left.
    ///
    /// Every store binds a predicate this way before using it, so all of them accept and refuse the
    /// same predicates and compare the same values.
    /// - Throws: ``PredicateError`` naming the key path or value that does not fit.
    public func bound(to entity: String, in model: ObjectModel) throws(PredicateError) -> FetchPredicate {
        switch self {
        case .always, .never: return self
        case .textSearch(let search): return .textSearch(try search.bound(to: entity, in: model))
        case .not(let item): return .not(try item.bound(to: entity, in: model))
        case .and(let items):
            return .and(try items.map { item throws(PredicateError) in try item.bound(to: entity, in: model) })
        case .or(let items):
            return .or(try items.map { item throws(PredicateError) in try item.bound(to: entity, in: model) })
        case .comparison(var comparison):
            let lhs = try Self.check(comparison.lhs, entity, model)
            let rhs = try Self.check(comparison.rhs, entity, model)
            if let rhs, rhs.isCollection {
                throw PredicateError(
                    "'\(rhs.text)' reads a to-many relationship; such a key path must be on the left, as in ANY \(rhs.text) == value"
                )
            }
            if comparison.modifier != .direct, !(lhs?.isCollection ?? false) {
                throw PredicateError(
                    "\(comparison.modifier.rawValue) needs a key path through a to-many relationship on its left, such as \(comparison.modifier.rawValue) tags.name"
                )
            }
            if case .list = comparison.lhs {
                throw PredicateError("a list is only allowed on the right of IN or BETWEEN")
            }
            switch comparison.op {
            case .in:
                guard case .list = comparison.rhs else { throw PredicateError("IN needs a list on its right") }
            case .between:
                guard case .list(let bounds) = comparison.rhs, bounds.count == 2 else {
                    throw PredicateError("BETWEEN needs a list of two values on its right")
                }
            default:
                if case .list = comparison.rhs {
                    throw PredicateError("a list is only allowed on the right of IN or BETWEEN")
                }
            }
            if let lhs { comparison.rhs = try Self.coerce(comparison.rhs, to: lhs) }
            if let rhs { comparison.lhs = try Self.coerce(comparison.lhs, to: rhs) }
            if let lhs, let rhs { try Self.checkComparable(lhs, rhs, model) }
            if let lhs, case .list(let items) = comparison.rhs {
                for case .keyPath(let text) in items {
                    try Self.checkComparable(lhs, try ModelKeyPath(text, from: entity, in: model), model)
                }
            }
            return .comparison(comparison)
        }
    }

    /// Checks the key paths of a term and returns the one it is, if it is one.
    private static func check(_ term: PredicateTerm, _ entity: String, _ model: ObjectModel) throws(PredicateError)
        -> ModelKeyPath?
    {
        switch term {
        case .keyPath(let path): return try ModelKeyPath(path, from: entity, in: model)
        case .variable(let name): throw PredicateError("no value for variable $\(name)")
        case .list(let items):
            for item in items {
                if case .list = item { throw PredicateError("a list cannot hold another list") }
                if let path = try check(item, entity, model), path.isCollection {
                    throw PredicateError("'\(path.text)' reads a to-many relationship; it cannot be in a list")
                }
            }
            return nil
        case .constant, .object: return nil
        }
    }

    /// Converts the constants of `term` to the type of what `path` ends on.
    private static func coerce(_ term: PredicateTerm, to path: ModelKeyPath) throws(PredicateError) -> PredicateTerm {
        switch term {
        case .list(let items):
            return .list(try items.map { item throws(PredicateError) in try coerce(item, to: path) })
        case .constant(let value):
            if let type = path.valueType {
                return .constant(try SQLPredicateBuilder.coerce(value, to: type, name: path.text))
            }
            guard value.isNull else {
                throw PredicateError(
                    "'\(path.text)' is a relationship; compare it with an object or nil, not \(value.kindName) \(value.json.jsonText)"
                )
            }
            return term
        case .object:
            if path.valueType != nil {
                throw PredicateError("'\(path.text)' is an attribute; it cannot be compared with an object")
            }
            return term
        case .keyPath, .variable: return term
        }
    }

    /// Checks that two key paths hold values that compare.
    private static func checkComparable(_ lhs: ModelKeyPath, _ rhs: ModelKeyPath, _ model: ObjectModel)
        throws(PredicateError)
    {
        func kind(_ path: ModelKeyPath) -> String {
            guard let type = path.valueType else {
                if case .object(let entity) = path.leaf { return "object of \(model.rootEntity(of: entity))" }
                return "object"
            }
            if type.isNumeric || type == .boolean { return "number" }
            if type == .string || type == .uri { return "text" }
            return type.rawValue
        }
        let (left, right) = (kind(lhs), kind(rhs))
        guard left == right else {
            throw PredicateError("cannot compare '\(lhs.text)' (\(left)) with '\(rhs.text)' (\(right))")
        }
    }
}
