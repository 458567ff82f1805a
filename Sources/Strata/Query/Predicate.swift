/// A filter over objects of one entity: the parsed form of a predicate format string.
///
/// Stores translate predicates to SQL with bound values only, or evaluate them in memory, with the
/// same results.
public indirect enum FetchPredicate: Sendable, Hashable {
    /// Matches every object.
    case always
    /// Matches no object.
    case never
    /// A comparison of two expressions.
    case comparison(Comparison)
    /// Matches when every operand does.
    case and([FetchPredicate])
    /// Matches when any operand does.
    case or([FetchPredicate])
    /// Matches when the operand does not.
    case not(FetchPredicate)
}

/// An operand of a comparison.
public indirect enum PredicateTerm: Sendable, Hashable {
    /// An attribute, or a to-one relationship compared by ID; `a.b` reads through to-one relationships.
    case keyPath(String)
    /// A literal value.
    case constant(AttributeValue)
    /// An object ID (a to-one relationship's value).
    case object(ObjectID?)
    /// A `$NAME` variable, replaced before evaluation.
    case variable(String)
    /// A list of expressions (for `IN` and `BETWEEN`).
    case list([PredicateTerm])
}

/// How a comparison treats letters.
public struct ComparisonOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `[c]`: ignore case.
    public static let caseInsensitive = ComparisonOptions(rawValue: 1)
    /// `[d]`: ignore diacritics.
    public static let diacriticInsensitive = ComparisonOptions(rawValue: 2)
}

/// The operator of a comparison.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    case like = "LIKE"
    case matches = "MATCHES"
    case `in` = "IN"
    case between = "BETWEEN"
}

/// `lhs op rhs`, with `[cd]` options.
public struct Comparison: Sendable, Hashable {
    /// The left operand.
    public var lhs: PredicateTerm
    /// The operator.
    public var op: ComparisonOperator
    /// The right operand.
    public var rhs: PredicateTerm
    /// Case and diacritic options.
    public var options: ComparisonOptions

    /// Creates a comparison.
    public init(_ lhs: PredicateTerm, _ op: ComparisonOperator, _ rhs: PredicateTerm, options: ComparisonOptions = []) {
        self.lhs = lhs
        self.op = op
        self.rhs = rhs
        self.options = options
    }
}

extension FetchPredicate {
    /// `keyPath == value`.
    public static func equal(_ keyPath: String, _ value: AttributeValue) -> FetchPredicate {
        .comparison(Comparison(.keyPath(keyPath), .equal, .constant(value)))
    }

    /// `keyPath op value`.
    public static func compare(
        _ keyPath: String, _ op: ComparisonOperator, _ value: AttributeValue, options: ComparisonOptions = []
    ) -> FetchPredicate {
        .comparison(Comparison(.keyPath(keyPath), op, .constant(value), options: options))
    }

    /// The predicate with every `$NAME` variable replaced by `variables[NAME]`.
    /// - Throws: ``PredicateError`` naming a variable that has no value.
    public func substituting(_ variables: [String: PredicateTerm]) throws(PredicateError) -> FetchPredicate {
        switch self {
        case .always, .never: return self
        case .and(let items): return .and(try items.map { item throws(PredicateError) in try item.substituting(variables) })
        case .or(let items): return .or(try items.map { item throws(PredicateError) in try item.substituting(variables) })
        case .not(let item): return .not(try item.substituting(variables))
        case .comparison(var comparison):
            comparison.lhs = try comparison.lhs.substituting(variables)
            comparison.rhs = try comparison.rhs.substituting(variables)
            return .comparison(comparison)
        }
    }
}

extension PredicateTerm {
    func substituting(_ variables: [String: PredicateTerm]) throws(PredicateError) -> PredicateTerm {
        switch self {
        case .variable(let name):
            guard let value = variables[name] else { throw PredicateError("no value for variable $\(name)") }
            return value
        case .list(let items): return .list(try items.map { item throws(PredicateError) in try item.substituting(variables) })
        default: return self
        }
    }
}

/// A predicate that cannot be parsed, bound or applied to an entity.
public struct PredicateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
