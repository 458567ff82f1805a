import Foundation

/// A value for a `%@`, `%K`, `%d` or `%f` placeholder of a predicate format string, or for a
/// variable in ``FetchPredicate/substituting(_:)-([String:PredicateArgument])``.
///
/// Literals convert: `"Dune"` is a string value, `42` an integer, `4.5` a double, `true` a Boolean,
/// `nil` no value, and `[1, 2]` a list.
public enum PredicateArgument: Sendable, Hashable {
    /// An attribute value (for `%@`, `%d`, `%f`; a string value also works for `%K`).
    case value(AttributeValue)
    /// An object, compared with a relationship; nil is no object.
    case object(ObjectID?)
    /// A key path (for `%K`).
    case keyPath(String)
    /// A list (for `IN` and `BETWEEN`).
    case list([PredicateArgument])

    /// The predicate term the argument stands for.
    public var term: PredicateTerm {
        switch self {
        case .value(let value): .constant(value)
        case .object(let id): .object(id)
        case .keyPath(let path): .keyPath(path)
        case .list(let items): .list(items.map(\.term))
        }
    }
}

extension PredicateArgument: ExpressibleByStringLiteral {
    /// A string value.
    public init(stringLiteral value: String) { self = .value(.string(value)) }
}

extension PredicateArgument: ExpressibleByIntegerLiteral {
    /// An integer value.
    public init(integerLiteral value: Int64) { self = .value(.integer(value)) }
}

extension PredicateArgument: ExpressibleByFloatLiteral {
    /// A double value.
    public init(floatLiteral value: Double) { self = .value(.double(value)) }
}

extension PredicateArgument: ExpressibleByBooleanLiteral {
    /// A Boolean value.
    public init(booleanLiteral value: Bool) { self = .value(.boolean(value)) }
}

extension PredicateArgument: ExpressibleByNilLiteral {
    /// No value (`nil`).
    public init(nilLiteral: ()) { self = .value(.null) }
}

extension PredicateArgument: ExpressibleByArrayLiteral {
    /// A list.
    public init(arrayLiteral elements: PredicateArgument...) { self = .list(elements) }
}
