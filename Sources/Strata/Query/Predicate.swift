/// A filter over objects of one entity: the parsed form of a predicate format string.
///
/// Build one from a Core Data format string with ``init(format:arguments:)``, or from the cases
/// directly. Stores translate predicates to SQL with bound values only, or evaluate them in memory,
/// with the same results.
public indirect enum FetchPredicate: Sendable, Hashable {
    /// Matches every object (`TRUEPREDICATE`).
    case always
    /// Matches no object (`FALSEPREDICATE`).
    case never
    /// A comparison of two expressions.
    case comparison(Comparison)
    /// Matches when every operand does.
    case and([FetchPredicate])
    /// Matches when any operand does.
    case or([FetchPredicate])
    /// Matches when the operand does not.
    case not(FetchPredicate)
    /// Matches when a searchable attribute's words satisfy a text query (see ``TextSearch``).
    case textSearch(TextSearch)
}

/// An operand of a comparison.
public indirect enum PredicateTerm: Sendable, Hashable {
    /// A key path from the object being tested: an attribute (`title`), a relationship compared by ID
    /// (`author`), a path through relationships (`author.name`, `tags.name`), the size of a to-many
    /// relationship (`tags.@count`), or the object itself (`SELF`).
    ///
    /// A path through a to-many relationship yields one value per related object; the comparison's
    /// ``ComparisonModifier`` says how they combine (any of them, by default).
    case keyPath(String)
    /// A literal value.
    case constant(AttributeValue)
    /// An object ID (a relationship's value); nil is no object.
    case object(ObjectID?)
    /// A `$NAME` or `$NAME.key.path` variable, replaced by `FetchPredicate.substituting(_:)` before
    /// evaluation. The associated text is everything after the `$`.
    case variable(String)
    /// A list of expressions (for `IN` and `BETWEEN`).
    case list([PredicateTerm])
}

/// How a comparison treats letters.
public struct ComparisonOptions: OptionSet, Sendable, Hashable {
    /// The raw bits: 1 for `[c]`, 2 for `[d]`.
    public let rawValue: Int
    /// Creates options from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// `[c]`: ignore case.
    public static let caseInsensitive = ComparisonOptions(rawValue: 1)
    /// `[d]`: ignore diacritics.
    public static let diacriticInsensitive = ComparisonOptions(rawValue: 2)
}

/// The operator of a comparison.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    /// `==` (also written `=`).
    case equal = "=="
    /// `!=` (also written `<>`).
    case notEqual = "!="
    /// `<`.
    case less = "<"
    /// `<=` (also written `=<`).
    case lessOrEqual = "<="
    /// `>`.
    case greater = ">"
    /// `>=` (also written `=>`).
    case greaterOrEqual = ">="
    /// The text starts with the pattern.
    case beginsWith = "BEGINSWITH"
    /// The text ends with the pattern.
    case endsWith = "ENDSWITH"
    /// The text contains the pattern.
    case contains = "CONTAINS"
    /// The text matches a pattern with `*` and `?` wildcards.
    case like = "LIKE"
    /// The whole text matches a regular expression.
    case matches = "MATCHES"
    /// The value equals one of a list.
    case `in` = "IN"
    /// The value lies between two bounds, inclusive.
    case between = "BETWEEN"
}

/// How a comparison whose left side is a path through a to-many relationship combines the values
/// it yields (`ANY`, `ALL`, `NONE` in format strings).
public enum ComparisonModifier: String, Sendable, Hashable, CaseIterable {
    /// No modifier. A path through a to-many relationship is then treated as ``any``.
    case direct = ""
    /// `ANY` or `SOME`: at least one related value matches.
    case any = "ANY"
    /// `ALL`: every related value matches (true when there are none).
    case all = "ALL"
    /// `NONE`: no related value matches (true when there are none).
    case none = "NONE"
}

/// `[modifier] lhs op[options] rhs`.
public struct Comparison: Sendable, Hashable {
    /// The left operand.
    public var lhs: PredicateTerm
    /// The operator.
    public var op: ComparisonOperator
    /// The right operand.
    public var rhs: PredicateTerm
    /// Case and diacritic options.
    public var options: ComparisonOptions
    /// How the values of a to-many left side combine.
    public var modifier: ComparisonModifier

    /// Creates a comparison.
    public init(
        _ lhs: PredicateTerm, _ op: ComparisonOperator, _ rhs: PredicateTerm, options: ComparisonOptions = [],
        modifier: ComparisonModifier = .direct
    ) {
        self.lhs = lhs
        self.op = op
        self.rhs = rhs
        self.options = options
        self.modifier = modifier
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

    /// The predicate with every variable replaced by a value from `variables`.
    ///
    /// A variable `$NAME` takes `variables["NAME"]`. A variable followed by a key path, such as
    /// `$FETCH_SOURCE.title`, takes `variables["FETCH_SOURCE.title"]` when present; otherwise it falls
    /// back to `variables["FETCH_SOURCE"]`, which must then be a ``PredicateArgument/keyPath(_:)``
    /// (the rest of the path is appended to it). Resolving a path through an object given as
    /// ``PredicateArgument/object(_:)`` is not supported: give the value for the full dotted name.
    /// - Throws: ``PredicateError`` naming a variable that has no usable value.
    public func substituting(_ variables: [String: PredicateArgument]) throws(PredicateError) -> FetchPredicate {
        try substituting(variables.mapValues(\.term))
    }

    /// The predicate with every variable replaced by a term from `variables`, by the rules of
    /// the `PredicateArgument` overload (a bare name bound to a ``PredicateTerm/keyPath(_:)`` extends it).
    /// - Throws: ``PredicateError`` naming a variable that has no usable value.
    @_disfavoredOverload
    public func substituting(_ variables: [String: PredicateTerm]) throws(PredicateError) -> FetchPredicate {
        switch self {
        case .always, .never, .textSearch: return self
        case .and(let items):
            return .and(try items.map { item throws(PredicateError) in try item.substituting(variables) })
        case .or(let items):
            return .or(try items.map { item throws(PredicateError) in try item.substituting(variables) })
        case .not(let item): return .not(try item.substituting(variables))
        case .comparison(var comparison):
            comparison.lhs = try comparison.lhs.substituting(variables)
            comparison.rhs = try comparison.rhs.substituting(variables)
            return .comparison(comparison)
        }
    }

    /// The names of the variables the predicate uses (the text after `$`), each once, in order.
    public var variableNames: [String] {
        var names: [String] = []
        func visit(_ term: PredicateTerm) {
            switch term {
            case .variable(let name) where !names.contains(name): names.append(name)
            case .list(let items): items.forEach(visit)
            default: break
            }
        }
        func visit(_ predicate: FetchPredicate) {
            switch predicate {
            case .always, .never, .textSearch: break
            case .and(let items), .or(let items): items.forEach(visit)
            case .not(let item): visit(item)
            case .comparison(let comparison):
                visit(comparison.lhs)
                visit(comparison.rhs)
            }
        }
        visit(self)
        return names
    }
}

extension PredicateTerm {
    func substituting(_ variables: [String: PredicateTerm]) throws(PredicateError) -> PredicateTerm {
        switch self {
        case .variable(let name):
            if let value = variables[name] { return value }
            guard let dot = name.firstIndex(of: "."), let base = variables[String(name[..<dot])] else {
                throw PredicateError("no value for variable $\(name)")
            }
            guard case .keyPath(let path) = base else {
                throw PredicateError(
                    "no value for variable $\(name): give one for '\(name)'; "
                        + "$\(name[..<dot]) is not a key path, so '\(name[name.index(after: dot)...])' cannot be read from it"
                )
            }
            return .keyPath(path + name[dot...])
        case .list(let items):
            return .list(try items.map { item throws(PredicateError) in try item.substituting(variables) })
        default: return self
        }
    }
}

/// A predicate that cannot be parsed, bound or applied to an entity.
public struct PredicateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong; for a format string, it names the offset and what was expected there.
    public var message: String
    /// For an error in a format string: where it is, in characters from the start (0-based).
    public var offset: Int?
    /// The predicate is well formed but needs more work on one value than is allowed (a
    /// `MATCHES` pattern that backtracks catastrophically).
    public var isTooExpensive = false

    /// Creates an error.
    public init(_ message: String, offset: Int? = nil) {
        self.message = message
        self.offset = offset
    }

    /// The message.
    public var description: String { message }
}
