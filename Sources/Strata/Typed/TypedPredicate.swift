import Foundation

/// A filter over the objects of a generated type, built from its key paths:
/// `\.year > 1960 && \.title != "Kindred"`, `.contains(\.title, "ind", options: .caseInsensitive)`,
/// `\.author == author`, `.contains(\.tags, tag)`.
///
/// It lowers to the ``FetchPredicate`` the equivalent format string parses to (`year > 1960`), so
/// stores translate both to the same SQL. A key path that reads no generated property (a path
/// through an optional relationship such as `\.author?.name`, a computed property) is recorded as
/// a problem that fails the fetch with `.invalidPredicate`; compare through relationships with
/// ``TypedPredicate/init(format:_:)`` or a format-string filter.
public struct TypedPredicate<Root: TypedObject>: Sendable, Hashable {
    /// The predicate the stores receive.
    public var predicate: FetchPredicate
    /// The key paths that named no generated property.
    public var problems: [String] = []

    /// Wraps a predicate over `Root`'s entity.
    public init(_ predicate: FetchPredicate) { self.predicate = predicate }

    /// Parses a format string over `Root`'s entity.
    /// - Throws: ``PredicateError`` for a format string that does not parse.
    public init(format: String, _ arguments: PredicateArgument...) throws(PredicateError) {
        predicate = try FetchPredicate(format: format, arguments: arguments)
    }

    init(_ predicate: FetchPredicate, problems: [String]) {
        self.predicate = predicate
        self.problems = problems
    }

    /// The model property `keyPath` reads; a problem noted (and a name no entity has) otherwise.
    static func name(of keyPath: PartialKeyPath<Root>, problems: inout [String]) -> String {
        if let name = Root.propertyNames[keyPath] { return name }
        problems.append("\(keyPath) is not a generated property of \(Root.entityName)")
        return "\(keyPath)"
    }

    /// `keyPath op rhs`, with `keyPath` resolved to its property's name.
    static func comparing(
        _ keyPath: PartialKeyPath<Root>, _ op: ComparisonOperator, _ rhs: PredicateTerm,
        options: ComparisonOptions = []
    ) -> Self {
        var problems: [String] = []
        let name = name(of: keyPath, problems: &problems)
        return Self(.comparison(Comparison(.keyPath(name), op, rhs, options: options)), problems: problems)
    }

    static func term<Value: TypedAttributeValue>(_ value: Value?) -> PredicateTerm {
        .constant(value?.attributeValue ?? .null)
    }

    /// An object's ID; nil as the parser reads `nil`, a null constant.
    static func term<Object: TypedObject>(_ object: Object?) -> PredicateTerm {
        object.map { .object($0.objectID) } ?? .constant(.null)
    }

    /// Matches every object.
    public static var always: Self { Self(.always) }
    /// Matches no object.
    public static var never: Self { Self(.never) }

    /// Both predicates match (lowered to one `AND` of every operand, as the parser makes it).
    public static func && (lhs: Self, rhs: Self) -> Self {
        Self(.and(lhs.conjuncts + rhs.conjuncts), problems: lhs.problems + rhs.problems)
    }

    /// Either predicate matches (lowered to one `OR` of every operand, as the parser makes it).
    public static func || (lhs: Self, rhs: Self) -> Self {
        Self(.or(lhs.disjuncts + rhs.disjuncts), problems: lhs.problems + rhs.problems)
    }

    /// The predicate does not match.
    public static prefix func ! (operand: Self) -> Self { Self(.not(operand.predicate), problems: operand.problems) }

    private var conjuncts: [FetchPredicate] { if case .and(let items) = predicate { items } else { [predicate] } }
    private var disjuncts: [FetchPredicate] { if case .or(let items) = predicate { items } else { [predicate] } }
}

// MARK: - Comparisons of attributes

/// `keyPath == value`.
public func == <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .equal, TypedPredicate<Root>.term(rhs))
}
/// `keyPath == value` for an optional attribute (`== nil` matches objects without a value).
public func == <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value?>, rhs: Value?) -> TypedPredicate<Root> {
    .comparing(lhs, .equal, TypedPredicate<Root>.term(rhs))
}
/// `keyPath != value`.
public func != <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .notEqual, TypedPredicate<Root>.term(rhs))
}
/// `keyPath != value` for an optional attribute (`!= nil` matches objects with a value).
public func != <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value?>, rhs: Value?) -> TypedPredicate<Root> {
    .comparing(lhs, .notEqual, TypedPredicate<Root>.term(rhs))
}
/// `keyPath < value`.
public func < <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .less, TypedPredicate<Root>.term(rhs))
}
/// `keyPath < value` for an optional attribute.
public func < <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value?>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .less, TypedPredicate<Root>.term(rhs))
}
/// `keyPath <= value`.
public func <= <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .lessOrEqual, TypedPredicate<Root>.term(rhs))
}
/// `keyPath <= value` for an optional attribute.
public func <= <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value?>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .lessOrEqual, TypedPredicate<Root>.term(rhs))
}
/// `keyPath > value`.
public func > <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .greater, TypedPredicate<Root>.term(rhs))
}
/// `keyPath > value` for an optional attribute.
public func > <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value?>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .greater, TypedPredicate<Root>.term(rhs))
}
/// `keyPath >= value`.
public func >= <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .greaterOrEqual, TypedPredicate<Root>.term(rhs))
}
/// `keyPath >= value` for an optional attribute.
public func >= <Root, Value: TypedAttributeValue>(lhs: KeyPath<Root, Value?>, rhs: Value) -> TypedPredicate<Root> {
    .comparing(lhs, .greaterOrEqual, TypedPredicate<Root>.term(rhs))
}

// MARK: - Comparisons of to-one relationships

/// `relationship == object` (`== nil`: objects whose relationship is empty).
public func == <Root, Object: TypedObject>(lhs: KeyPath<Root, Object?>, rhs: Object?) -> TypedPredicate<Root> {
    .comparing(lhs, .equal, TypedPredicate<Root>.term(rhs))
}
/// `relationship != object` (`!= nil`: objects whose relationship holds an object).
public func != <Root, Object: TypedObject>(lhs: KeyPath<Root, Object?>, rhs: Object?) -> TypedPredicate<Root> {
    .comparing(lhs, .notEqual, TypedPredicate<Root>.term(rhs))
}
/// `relationship == object` for a non-optional to-one relationship.
public func == <Root, Object: TypedObject>(lhs: KeyPath<Root, Object>, rhs: Object) -> TypedPredicate<Root> {
    .comparing(lhs, .equal, TypedPredicate<Root>.term(rhs))
}

// MARK: - String and list operators

extension TypedPredicate {
    /// `keyPath CONTAINS text` (with `[c]`, `[d]` options).
    public static func contains(
        _ keyPath: KeyPath<Root, String?>, _ text: String, options: ComparisonOptions = []
    ) -> Self {
        comparing(keyPath, .contains, term(text), options: options)
    }
    /// `keyPath CONTAINS text` for a non-optional string.
    public static func contains(_ keyPath: KeyPath<Root, String>, _ text: String, options: ComparisonOptions = [])
        -> Self
    {
        comparing(keyPath, .contains, term(text), options: options)
    }
    /// `keyPath BEGINSWITH text`.
    public static func beginsWith(
        _ keyPath: KeyPath<Root, String?>, _ text: String, options: ComparisonOptions = []
    ) -> Self {
        comparing(keyPath, .beginsWith, term(text), options: options)
    }
    /// `keyPath BEGINSWITH text` for a non-optional string.
    public static func beginsWith(_ keyPath: KeyPath<Root, String>, _ text: String, options: ComparisonOptions = [])
        -> Self
    {
        comparing(keyPath, .beginsWith, term(text), options: options)
    }
    /// `keyPath ENDSWITH text`.
    public static func endsWith(_ keyPath: KeyPath<Root, String?>, _ text: String, options: ComparisonOptions = [])
        -> Self
    {
        comparing(keyPath, .endsWith, term(text), options: options)
    }
    /// `keyPath ENDSWITH text` for a non-optional string.
    public static func endsWith(_ keyPath: KeyPath<Root, String>, _ text: String, options: ComparisonOptions = [])
        -> Self
    {
        comparing(keyPath, .endsWith, term(text), options: options)
    }
    /// `keyPath LIKE pattern` (`*` and `?` wildcards).
    public static func like(_ keyPath: KeyPath<Root, String?>, _ pattern: String, options: ComparisonOptions = [])
        -> Self
    {
        comparing(keyPath, .like, term(pattern), options: options)
    }
    /// `keyPath LIKE pattern` for a non-optional string.
    public static func like(_ keyPath: KeyPath<Root, String>, _ pattern: String, options: ComparisonOptions = [])
        -> Self
    {
        comparing(keyPath, .like, term(pattern), options: options)
    }
    /// `keyPath MATCHES regex` (the whole text).
    public static func matches(_ keyPath: KeyPath<Root, String?>, _ regex: String, options: ComparisonOptions = [])
        -> Self
    {
        comparing(keyPath, .matches, term(regex), options: options)
    }
    /// `keyPath MATCHES regex` for a non-optional string.
    public static func matches(_ keyPath: KeyPath<Root, String>, _ regex: String, options: ComparisonOptions = [])
        -> Self
    {
        comparing(keyPath, .matches, term(regex), options: options)
    }
    /// `keyPath IN {values}`.
    public static func `in`<Value: TypedAttributeValue>(_ keyPath: KeyPath<Root, Value?>, _ values: [Value]) -> Self {
        comparing(keyPath, .in, .list(values.map { term($0) }))
    }
    /// `keyPath IN {values}` for a non-optional attribute.
    public static func `in`<Value: TypedAttributeValue>(_ keyPath: KeyPath<Root, Value>, _ values: [Value]) -> Self {
        comparing(keyPath, .in, .list(values.map { term($0) }))
    }
    /// `keyPath BETWEEN {lower, upper}` (inclusive).
    public static func between<Value: TypedAttributeValue>(
        _ keyPath: KeyPath<Root, Value?>, _ range: ClosedRange<Value>
    )
        -> Self where Value: Comparable
    {
        comparing(keyPath, .between, .list([term(range.lowerBound), term(range.upperBound)]))
    }
    /// `keyPath BETWEEN {lower, upper}` (inclusive) for a non-optional attribute.
    public static func between<Value: TypedAttributeValue>(_ keyPath: KeyPath<Root, Value>, _ range: ClosedRange<Value>)
        -> Self where Value: Comparable
    {
        comparing(keyPath, .between, .list([term(range.lowerBound), term(range.upperBound)]))
    }

    /// `ANY relationship == object`: to-many `keyPath` holds `object`.
    public static func contains<Object: TypedObject>(_ keyPath: KeyPath<Root, Set<Object>>, _ object: Object) -> Self {
        holding(keyPath, object)
    }
    /// `ANY relationship == object`: ordered to-many `keyPath` holds `object`.
    public static func contains<Object: TypedObject>(_ keyPath: KeyPath<Root, [Object]>, _ object: Object) -> Self {
        holding(keyPath, object)
    }

    private static func holding<Object: TypedObject>(_ keyPath: PartialKeyPath<Root>, _ object: Object) -> Self {
        var problems: [String] = []
        let name = name(of: keyPath, problems: &problems)
        let comparison = Comparison(.keyPath(name), .equal, .object(object.objectID), modifier: .any)
        return Self(.comparison(comparison), problems: problems)
    }
}
