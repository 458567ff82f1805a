import Foundation

/// A function of an aggregate expression, as `NSExpression` names them (`@count`, `@sum`, `@avg`,
/// `@min`, `@max`).
public enum AggregateFunction: String, Sendable, Hashable, CaseIterable {
    /// How many objects (no key path), or how many have a value for the key path.
    case count
    /// The sum of a numeric attribute's values.
    case sum
    /// The mean of a numeric attribute's values.
    case average = "avg"
    /// The least value of a numeric, decimal, date or string attribute.
    case min
    /// The greatest value of a numeric, decimal, date or string attribute.
    case max

    /// The function's name in `NSExpression`'s key path form (`@sum`).
    public var expressionName: String { "@" + rawValue }

    /// Whether the function applies to attributes of `type`: `count` to any, `sum` and `avg` to
    /// integers, floating point and decimals, `min` and `max` to those and dates and strings.
    public func applies(to type: AttributeType) -> Bool {
        switch self {
        case .count: true
        case .sum, .average: type.isNumeric
        case .min, .max: type.isNumeric || type == .date || type == .string
        }
    }
}

/// One aggregate column of a dictionary-result fetch (Core Data's `NSExpressionDescription`): a
/// function over an attribute (or, for `count`, over the objects), named in the result.
public struct AggregateExpression: Sendable, Hashable {
    /// The column's name in each result row.
    public var name: String
    /// The function.
    public var function: AggregateFunction
    /// The attribute (or, for `count`, a to-one relationship) the function reads; nil counts the
    /// objects (`count(*)`), and only `count` takes nil.
    public var keyPath: String?

    /// An expression named `name` of `function` over `keyPath`.
    public init(name: String, function: AggregateFunction, keyPath: String? = nil) {
        self.name = name
        self.function = function
        self.keyPath = keyPath
    }

    /// An expression named `name` from `NSExpression`'s text: `@count` (the objects),
    /// `@sum.price`, or the function form `sum:(price)` (`count:`, `sum:`, `average:`, `min:`,
    /// `max:`).
    /// - Throws: ``PredicateError`` for text of neither form.
    public init(name: String, expression: String) throws(PredicateError) {
        let text = expression.trimmingCharacters(in: .whitespaces)
        self.name = name
        if text.hasPrefix("@") {
            let parts = text.dropFirst().split(separator: ".", maxSplits: 1).map(String.init)
            guard let function = AggregateFunction(rawValue: parts.first ?? "") else {
                throw PredicateError("'\(expression)' is not an aggregate expression (@count, @sum, @avg, @min, @max)")
            }
            self.function = function
            keyPath = parts.count > 1 ? parts[1] : nil
        } else if let colon = text.firstIndex(of: ":"), text.hasSuffix(")"),
            text[text.index(after: colon)...].hasPrefix("(")
        {
            let word = String(text[..<colon])
            let function = word == "average" ? AggregateFunction.average : AggregateFunction(rawValue: word)
            guard let function else {
                throw PredicateError(
                    "'\(expression)' is not an aggregate function (count:, sum:, average:, min:, max:)")
            }
            self.function = function
            let inner = text[text.index(colon, offsetBy: 2)..<text.index(before: text.endIndex)]
            let key = inner.trimmingCharacters(in: .whitespaces)
            keyPath = key.isEmpty || key == "SELF" ? nil : key
        } else {
            throw PredicateError("'\(expression)' is not an aggregate expression (@sum.price or sum:(price))")
        }
        if keyPath == nil && function != .count {
            throw PredicateError("'\(expression)': only @count takes no key path")
        }
    }
}

/// A dictionary-result fetch with grouping (Core Data's `NSFetchRequest` with
/// `resultType = .dictionaryResultType`, `propertiesToFetch`, `propertiesToGroupBy` and a
/// `havingPredicate`): the objects the predicate matches, grouped by equal values of the grouping
/// properties, one row per group with those values and each expression's result.
///
/// The predicate filters before grouping; the having predicate filters the groups over the row's
/// named columns; the sort descriptors order the rows by named columns (ties by the grouping
/// columns, ascending); the offset and limit then cut the rows. With no grouping property the
/// whole set is one group, so the result is one row even when no object matches.
public struct AggregateRequest: Sendable, Hashable {
    /// The entity whose objects are grouped.
    public var entityName: String
    /// Whether objects of subentities are included (default true).
    public var includesSubentities: Bool
    /// The filter applied before grouping; nil takes every object.
    public var predicate: FetchPredicate?
    /// The attributes and to-one relationships to group by; each is a column of the result,
    /// named after it (a to-one relationship holds the related object's primary key, and
    /// ``AggregateRow/objectIDs`` its ID).
    public var propertiesToGroupBy: [String]
    /// The aggregate columns.
    public var expressions: [AggregateExpression]
    /// A filter over the result's rows, by column name (`count > 5`); nil keeps every group.
    public var havingPredicate: FetchPredicate?
    /// The order of the rows, by column name.
    public var sortDescriptors: [SortKey]
    /// The most rows to return.
    public var fetchLimit: Int?
    /// How many rows to skip.
    public var fetchOffset: Int
    /// The identifiers of the stores to read (nil: every store holding the entity).
    public var affectedStores: Set<String>? = nil

    /// Creates a request.
    public init(
        entityName: String, predicate: FetchPredicate? = nil, propertiesToGroupBy: [String] = [],
        expressions: [AggregateExpression], havingPredicate: FetchPredicate? = nil, sortDescriptors: [SortKey] = [],
        fetchLimit: Int? = nil, fetchOffset: Int = 0, includesSubentities: Bool = true
    ) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToGroupBy = propertiesToGroupBy
        self.expressions = expressions
        self.havingPredicate = havingPredicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesSubentities = includesSubentities
    }

    /// The fetch that selects the objects to group: the entity, predicate and stores, no order and
    /// no window.
    public var filter: FetchRequest {
        var request = FetchRequest(
            entityName: entityName, predicate: predicate, includesSubentities: includesSubentities)
        request.affectedStores = affectedStores
        return request
    }

    /// Every column name of a result row: the grouping properties, then the expressions.
    public var columnNames: [String] { propertiesToGroupBy + expressions.map(\.name) }
}

/// One row of an aggregate fetch: a group's values by column name.
public struct AggregateRow: Sendable, Hashable {
    /// Every column's value: a grouping attribute's value, a to-one grouping relationship's related
    /// primary key as an integer (null for none), and each expression's result: `count` an integer;
    /// `sum` of integers an integer, of floating point a double, of decimals an exact decimal; `avg`
    /// of integers or floating point a double, of decimals a decimal; `min` and `max` of the
    /// attribute's type. `sum`, `avg`, `min` and `max` are null for a group with no value.
    public var values: [String: AttributeValue]
    /// The related object of each to-one grouping relationship that has one.
    public var objectIDs: [String: ObjectID]

    /// A row of `values`, with the related objects of to-one grouping columns.
    public init(values: [String: AttributeValue], objectIDs: [String: ObjectID] = [:]) {
        self.values = values
        self.objectIDs = objectIDs
    }

    /// The value of column `name`, `.null` when absent.
    public subscript(name: String) -> AttributeValue { values[name] ?? .null }
}
