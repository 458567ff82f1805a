import Foundation

/// SQL text together with the values bound to its `?` parameters, in order.
///
/// Interpolating a fragment into another appends its text and its values, so a piece of SQL used
/// twice carries its values twice; `\(bind:)` adds a parameter, `\(identifier:)` a quoted name from
/// the model, and `\(raw:)` trusted text generated here (table aliases).
struct SQLFragment: ExpressibleByStringInterpolation, Sendable {
    var sql: String
    var arguments: [SQLiteValue]

    init(sql: String, arguments: [SQLiteValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    init(stringLiteral value: String) { self.init(sql: value) }

    init(stringInterpolation: StringInterpolation) {
        self.init(sql: stringInterpolation.sql, arguments: stringInterpolation.arguments)
    }

    struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var arguments: [SQLiteValue] = []

        init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }

        mutating func appendLiteral(_ literal: String) { sql += literal }

        mutating func appendInterpolation(_ fragment: SQLFragment) {
            sql += fragment.sql
            arguments += fragment.arguments
        }

        mutating func appendInterpolation(identifier: String) { sql += SQLiteSchema.quote(identifier) }

        mutating func appendInterpolation(bind value: SQLiteValue) {
            sql += "?"
            arguments.append(value)
        }

        mutating func appendInterpolation(raw text: String) { sql += text }
    }

    /// The fragments one after another with `separator` between them.
    static func joined(_ fragments: [SQLFragment], separator: String) -> SQLFragment {
        var result = SQLFragment(sql: "")
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { result.sql += separator }
            result.sql += fragment.sql
            result.arguments += fragment.arguments
        }
        return result
    }
}

/// Translates a ``FetchPredicate`` into a SQL condition over an entity table aliased
/// ``rootAlias``. Values are only ever bound as parameters, never spliced into the SQL text;
/// identifiers come from the validated model and are quoted.
///
/// Key paths through to-one relationships become correlated scalar subqueries, paths through
/// to-many relationships `EXISTS` subqueries over the relationship's storage (`ALL` and `NONE` as
/// `NOT EXISTS`), and `@count` a `count(*)` subquery.
struct SQLPredicateBuilder {
    /// The alias of the table being filtered.
    static let rootAlias = "t0"

    let model: ObjectModel
    let schema: SQLiteSchema
    let entity: String
    let storeIdentifier: String
    /// The values for the `?` parameters of the SQL returned by ``build(_:)``, in order.
    var arguments: [SQLiteValue] = []
    private var aliasCount = 0

    init(model: ObjectModel, schema: SQLiteSchema, entity: String, storeIdentifier: String) {
        self.model = model
        self.schema = schema
        self.entity = entity
        self.storeIdentifier = storeIdentifier
    }

    /// What an operand turned into.
    private enum Operand {
        /// A value read from the store: an attribute or a count.
        case column(SQLFragment, type: AttributeType, name: String)
        /// The primary key of an object of `entity` (or NULL for none).
        case objectKey(SQLFragment, entity: String, name: String)
        case value(AttributeValue)
        case object(ObjectID?)
        case list([Operand])
    }

    /// The object whose properties a key path reads next: a table row under `alias`, or only its
    /// primary key (`key`, possibly NULL) after a to-one relationship.
    private struct Scope {
        var entity: String
        var alias: String?
        var key: SQLFragment
    }

    private var root: Scope { Scope(entity: entity, alias: Self.rootAlias, key: "\(raw: Self.rootAlias).\"_pk\"") }

    /// The SQL condition for `predicate`; its parameter values are appended to ``arguments``.
    mutating func build(_ predicate: FetchPredicate) throws(PredicateError) -> String {
        let result = try fragment(predicate)
        arguments += result.arguments
        return result.sql
    }

    private mutating func fragment(_ predicate: FetchPredicate) throws(PredicateError) -> SQLFragment {
        switch predicate {
        case .always: return "1"
        case .never: return "0"
        case .not(let item): return "NOT (\(try fragment(item)))"
        case .and(let items):
            if items.isEmpty { return "1" }
            var parts: [SQLFragment] = []
            for item in items { parts.append("(\(try fragment(item)))") }
            return .joined(parts, separator: " AND ")
        case .or(let items):
            if items.isEmpty { return "0" }
            var parts: [SQLFragment] = []
            for item in items { parts.append("(\(try fragment(item)))") }
            return .joined(parts, separator: " OR ")
        case .comparison(let comparison): return try fragment(comparison)
        case .textSearch(let search): return try fullText(search)
        }
    }

    private mutating func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount)"
    }

    private func table(of entity: String) throws(PredicateError) -> SQLiteSchema.Table {
        guard let table = schema.table(for: entity) else {
            throw PredicateError("the store has no table for entity '\(entity)'")
        }
        return table
    }

    /// The value of column `name` of the object in `scope`.
    private mutating func column(_ name: String, in scope: Scope) throws(PredicateError) -> SQLFragment {
        if let alias = scope.alias { return "\(raw: alias).\(identifier: name)" }
        let table = try table(of: scope.entity)
        let alias = newAlias()
        return
            "(SELECT \(raw: alias).\(identifier: name) FROM \(identifier: table.name) AS \(raw: alias) WHERE \(raw: alias).\"_pk\" = \(scope.key))"
    }

    /// The object a to-one relationship of the object in `scope` holds.
    private mutating func follow(_ step: ModelKeyPath.Step, from scope: Scope) throws(PredicateError) -> Scope {
        Scope(entity: step.relationship.destination, alias: nil, key: try column(step.relationship.name, in: scope))
    }

    /// `FROM … WHERE …` selecting the objects a to-many relationship of the object in `scope` holds,
    /// and the scope of one of them.
    private mutating func related(_ relationship: RelationshipDescription, from scope: Scope) throws(PredicateError)
        -> (from: SQLFragment, scope: Scope)
    {
        let destination = relationship.destination
        let table = try table(of: destination)
        let alias = newAlias()
        var conditions: [SQLFragment] = []
        switch model.storage(of: relationship.name, in: scope.entity) {
        case .inverseForeignKey(let inverse)?:
            conditions.append("\(raw: alias).\(identifier: inverse) = \(scope.key)")
        case .joinTable(let join, let isSource)?:
            let (near, far) = isSource ? ("source", "target") : ("target", "source")
            conditions.append(
                "\(raw: alias).\"_pk\" IN (SELECT \(identifier: far) FROM \(identifier: join.name) WHERE \(identifier: near) = \(scope.key))"
            )
        case .foreignKey?, nil:
            throw PredicateError(
                "'\(relationship.name)' of '\(scope.entity)' is not a to-many relationship in this store")
        }
        let family = model.entityAndSubentities(of: destination).filter { schema.entities.contains($0) }
        if family.count != table.entities.count {
            let names = SQLFragment.joined(family.map { "\(bind: .text($0))" }, separator: ", ")
            conditions.append("\(raw: alias).\"_entity\" IN (\(names))")
        }
        let from: SQLFragment =
            "FROM \(identifier: table.name) AS \(raw: alias) WHERE \(SQLFragment.joined(conditions, separator: " AND "))"
        return (from, Scope(entity: destination, alias: alias, key: "\(raw: alias).\"_pk\""))
    }

    /// What a key path ends on, read from the object in `scope`.
    private mutating func leaf(_ path: ModelKeyPath, in scope: Scope) throws(PredicateError) -> Operand {
        switch path.leaf {
        case .attribute(let attribute):
            return .column(try column(attribute.columnName, in: scope), type: attribute.type, name: path.text)
        case .element(let attribute, let elementPath, let element):
            // The composite's JSON text holds the element as its JSON form: strings, numbers and
            // Booleans compare as SQLite reads them back; other types are written differently.
            let readable: [AttributeType] = [.string, .integer16, .integer32, .integer64, .double, .float, .boolean]
            guard readable.contains(element.type) else {
                throw PredicateError(
                    "'\(path.text)' is a composite element of type \(element.type.rawValue); a predicate on a composite element must be on a string, integer, floating-point or Boolean element"
                )
            }
            let jsonPath = "$" + elementPath.map { "." + Self.jsonPathKey($0) }.joined()
            let column = try column(attribute.columnName, in: scope)
            return .column("json_extract(\(column), \(bind: .text(jsonPath)))", type: element.type, name: path.text)
        case .object(let entity):
            return .objectKey(scope.key, entity: entity, name: path.text)
        case .count(let relationship, _):
            let (from, _) = try related(relationship, from: scope)
            var sql: SQLFragment = "(SELECT count(*) \(from))"
            // Through an empty to-one relationship the count is nil, as in memory.
            if scope.alias == nil { sql = "(CASE WHEN \(scope.key) IS NULL THEN NULL ELSE \(sql) END)" }
            return .column(sql, type: .integer64, name: path.text)
        }
    }

    private mutating func operand(_ expression: PredicateTerm) throws(PredicateError) -> Operand {
        switch expression {
        case .keyPath(let text):
            let path = try ModelKeyPath(text, from: entity, in: model)
            if path.isCollection {
                throw PredicateError("'\(text)' reads a to-many relationship; such a key path must be on the left")
            }
            var scope = root
            for step in path.steps { scope = try follow(step, from: scope) }
            return try leaf(path, in: scope)
        case .constant(let value): return .value(value)
        case .object(let id): return .object(id)
        case .variable(let name): throw PredicateError("no value for variable $\(name)")
        case .list(let items):
            var operands: [Operand] = []
            for item in items { operands.append(try operand(item)) }
            return .list(operands)
        }
    }

    /// A key of a SQLite JSON path, quoted.
    static func jsonPathKey(_ key: String) -> String { "\"" + key + "\"" }

    /// Converts a constant to the form stored for `attribute`, or fails when it cannot compare.
    static func coerce(_ value: AttributeValue, to attribute: AttributeDescription) throws(PredicateError)
        -> AttributeValue
    {
        try coerce(value, to: attribute.type, name: attribute.name)
    }

    /// Converts a constant to the form stored for a value of `type` (read by key path `name`), or
    /// fails when it cannot compare.
    static func coerce(_ value: AttributeValue, to type: AttributeType, name: String) throws(PredicateError)
        -> AttributeValue
    {
        switch (value, type) {
        case (.null, _): return value
        case (_, _) where value.fits(type): return value
        case (.integer, _) where type.isNumeric || type == .boolean: return value
        case (.double, _) where type.isNumeric, (.decimal, _) where type.isNumeric: return value
        case (.boolean, _) where type.isInteger: return value
        case (.string(let s), .date): if let date = AttributeValue.parseDate(s) { return .date(date) }
        case (.string(let s), .uuid): if let uuid = UUID(uuidString: s) { return .uuid(uuid) }
        case (.string(let s), .uri): return .uri(s)
        case (.string(let s), .decimal): if let d = AttributeValue.parseDecimal(s) { return .decimal(d) }
        case (.uri(let s), .string): return .string(s)
        default: break
        }
        throw PredicateError(
            "'\(name)' is \(type.rawValue); cannot compare it with \(value.kindName) \(value.json.jsonText)")
    }

    private func bind(_ value: AttributeValue, decimalAsReal: Bool) -> SQLFragment {
        if decimalAsReal, let number = ValueOrdering.number(value), value.kindName == "decimal" {
            return "\(bind: .real(number))"
        }
        return "\(bind: SQLiteSchema.encode(value))"
    }

    /// Whether an operand is a decimal (a column or a constant).
    private static func isDecimal(_ operand: Operand?) -> Bool {
        switch operand {
        case .column(_, .decimal, _)?, .value(.decimal)?: true
        default: false
        }
    }

    /// Whether an operand is a number ``ValueOrdering/decimal(_:)`` takes (integer, double, decimal).
    private static func isNumber(_ operand: Operand?) -> Bool {
        switch operand {
        case .column(_, let type, _)?: type.isNumeric
        // Text is a number beside a decimal column, as ``coerce(_:to:name:)`` reads it.
        case .value(.string(let text))?: AttributeValue.parseDecimal(text) != nil
        case .value(let value)?: ValueOrdering.decimal(value) != nil
        default: false
        }
    }

    /// Whether `operand` compares with `other` as decimals do: exactly, through their order keys
    /// (``ValueOrdering/decimalKey(_:)``), as ``ValueOrdering/compare(_:_:)`` compares them.
    private static func comparesAsDecimals(_ operand: Operand, _ other: Operand?) -> Bool {
        (isDecimal(operand) && isNumber(other)) || (isNumber(operand) && isDecimal(other))
    }

    /// SQL for an operand, given the other side (to coerce constants to a column's type).
    private func sql(_ operand: Operand, against other: Operand?, _ options: ComparisonOptions) throws(PredicateError)
        -> SQLFragment
    {
        var text: SQLFragment
        switch operand {
        case .column(let sql, _, _) where Self.comparesAsDecimals(operand, other): text = "strata_decimal(\(sql))"
        case .column(let sql, .decimal, _):
            // A decimal in a string operation or beside a non-number: as REAL, which neither matches.
            text = "CAST(\(sql) AS REAL)"
        case .column(let sql, _, _), .objectKey(let sql, _, _): text = sql
        case .value(let value):
            var coerced = value
            var isDecimalColumn = false
            if case .column(_, let type, let name)? = other {
                coerced = try Self.coerce(value, to: type, name: name)
                isDecimalColumn = type == .decimal
            } else if case .objectKey(_, _, let name)? = other {
                guard value.isNull else {
                    throw PredicateError("'\(name)' is a relationship; compare it with an object or nil")
                }
            }
            if Self.comparesAsDecimals(.value(coerced), other), let decimal = ValueOrdering.decimal(coerced) {
                text = "\(bind: .text(ValueOrdering.decimalKey(decimal)))"
            } else {
                text = bind(coerced, decimalAsReal: isDecimalColumn || coerced.kindName == "decimal")
            }
        case .object(let id):
            guard let id else { return "NULL" }
            guard case .objectKey(_, let entity, _)? = other else {
                throw PredicateError("an object can only be compared with a relationship")
            }
            guard !id.isTemporary, id.storeIdentifier == storeIdentifier, let pk = id.primaryKey,
                model.entity(id.entityName, isKindOf: entity)
            else {
                // An object of another store or entity never equals a stored reference.
                return "\(bind: .integer(Int64.min))"
            }
            text = "\(bind: .integer(pk))"
        case .list: throw PredicateError("a list is only allowed after IN or BETWEEN")
        }
        if !options.isEmpty { text = "strata_fold(\(text), \(raw: String(options.rawValue)))" }
        return text
    }

    private mutating func fragment(_ comparison: Comparison) throws(PredicateError) -> SQLFragment {
        if case .keyPath(let text) = comparison.lhs {
            let path = try ModelKeyPath(text, from: entity, in: model)
            if path.isCollection {
                switch comparison.modifier {
                case .direct, .any: return try quantified(comparison, path, 0, root, negated: false)
                case .all: return "NOT \(try quantified(comparison, path, 0, root, negated: true))"
                case .none: return "NOT \(try quantified(comparison, path, 0, root, negated: false))"
                }
            }
        }
        guard comparison.modifier == .direct else {
            throw PredicateError(
                "\(comparison.modifier.rawValue) needs a key path through a to-many relationship on its left")
        }
        return try scalar(comparison, lhs: try operand(comparison.lhs))
    }

    /// `EXISTS` over the objects the steps of `path` from `index` reach, with the comparison (or its
    /// negation) for the value the path ends on.
    private mutating func quantified(
        _ comparison: Comparison, _ path: ModelKeyPath, _ index: Int, _ scope: Scope, negated: Bool
    ) throws(PredicateError) -> SQLFragment {
        var scope = scope
        var index = index
        while index < path.steps.count, !path.steps[index].relationship.isToMany {
            scope = try follow(path.steps[index], from: scope)
            index += 1
        }
        if index == path.steps.count {
            let condition = try scalar(comparison, lhs: try leaf(path, in: scope))
            return negated ? "NOT (\(condition))" : condition
        }
        let (from, inner) = try related(path.steps[index].relationship, from: scope)
        let rest = try quantified(comparison, path, index + 1, inner, negated: negated)
        return "EXISTS (SELECT 1 \(from) AND (\(rest)))"
    }

    /// The comparison of one left value with the right side.
    private mutating func scalar(_ comparison: Comparison, lhs: Operand) throws(PredicateError) -> SQLFragment {
        let rhs = try operand(comparison.rhs)
        let options = comparison.options
        switch comparison.op {
        case .equal, .notEqual:
            let left = try sql(lhs, against: rhs, options)
            let right = try sql(rhs, against: lhs, options)
            return "\(left) \(raw: comparison.op == .equal ? "IS" : "IS NOT") \(right)"
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let left = try sql(lhs, against: rhs, options)
            let right = try sql(rhs, against: lhs, options)
            // `l < r` is NULL when a side is NULL, and the predicate is false then, also under NOT:
            // spelled out as terms of their own (not hidden in a COALESCE) so that SQLite can take
            // the comparison to an index on the column.
            return "(\(left) \(raw: comparison.op.rawValue) \(right) AND \(left) IS NOT NULL AND \(right) IS NOT NULL)"
        case .in:
            guard case .list(let items) = rhs else { throw PredicateError("IN needs a list on its right") }
            if items.isEmpty { return "0" }
            var parts: [SQLFragment] = []
            for item in items {
                let left = try sql(lhs, against: item, options)
                parts.append("\(left) IS \(try sql(item, against: lhs, options))")
            }
            return "(\(SQLFragment.joined(parts, separator: " OR ")))"
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw PredicateError("BETWEEN needs a list of two values on its right")
            }
            let low = try sql(bounds[0], against: lhs, options)
            let left1 = try sql(lhs, against: bounds[0], options)
            let high = try sql(bounds[1], against: lhs, options)
            let left2 = try sql(lhs, against: bounds[1], options)
            return
                "(\(left1) >= \(low) AND \(left2) <= \(high) AND \(left1) IS NOT NULL AND \(low) IS NOT NULL AND \(high) IS NOT NULL)"
        case .beginsWith, .endsWith, .contains, .like, .matches:
            let index = ComparisonOperator.allCases.firstIndex(of: comparison.op)!
            let left = try sql(lhs, against: rhs, [])
            let right = try sql(rhs, against: lhs, [])
            let match: SQLFragment =
                "strata_match(\(raw: String(index)), \(raw: String(options.rawValue)), \(left), \(right))"
            // A case- and diacritic-sensitive prefix (BEGINSWITH, or LIKE up to its first wildcard)
            // is also a range of the column, which an index on it serves; the match still decides.
            guard comparison.op == .beginsWith || comparison.op == .like, options.isEmpty,
                case .column(_, .string, _) = lhs, case .value(.string(let pattern)) = rhs,
                let range = Self.prefixRange(pattern, like: comparison.op == .like)
            else { return match }
            let low = bind(.string(range.low), decimalAsReal: false)
            guard let high = range.high.map({ bind(.string($0), decimalAsReal: false) }) else {
                return "(\(match) AND \(left) >= \(low))"
            }
            return "(\(match) AND \(left) >= \(low) AND \(left) < \(high))"
        }
    }

    /// The range of strings that start with the literal prefix of `pattern` (all of it for
    /// BEGINSWITH; up to the first `*`, `?` or `\` for LIKE), compared as SQLite compares text by
    /// default (bytes of UTF-8, which orders as Unicode scalars do): from the prefix to the prefix
    /// with its last scalar raised by one (none when every scalar is the last one). Nil when there
    /// is no prefix.
    static func prefixRange(_ pattern: String, like: Bool) -> (low: String, high: String?)? {
        var prefix: [Unicode.Scalar] = []
        for scalar in pattern.unicodeScalars {
            if like && (scalar == "*" || scalar == "?" || scalar == "\\") { break }
            prefix.append(scalar)
        }
        guard !prefix.isEmpty else { return nil }
        var low = String.UnicodeScalarView()
        low.append(contentsOf: prefix)
        var upper = prefix
        while let last = upper.popLast() {
            var next = last.value + 1
            if (0xD800...0xDFFF).contains(next) { next = 0xE000 }
            if let raised = Unicode.Scalar(next) {
                upper.append(raised)
                var high = String.UnicodeScalarView()
                high.append(contentsOf: upper)
                return (String(low), String(high))
            }
        }
        return (String(low), nil)
    }
}
