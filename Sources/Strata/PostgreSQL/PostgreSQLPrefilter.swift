import Foundation

/// The part of a fetch predicate PostgreSQL can check itself, as a condition in SQL, so a filtered
/// fetch reads the rows that can match (through the indexes the model declares) instead of the
/// whole table.
///
/// The condition is *necessary*: every object the predicate matches satisfies it. Strata's own
/// evaluator still runs over the rows read, so results are the other stores' by construction.
/// Comparisons of an attribute of the fetched entity with a constant are translated (numbers,
/// Booleans and dates through `bigint`/`double precision`, decimals and any number beside one as
/// `numeric`, exactly as ``ValueOrdering`` compares them, text as `bytea`, which orders by bytes as
/// Strata does; `BEGINSWITH` without options as a byte range), and a to-one relationship with an
/// object; anything else (other key paths, `[c]`/`[d]`, `LIKE`, `MATCHES`) reads every row. A part
/// is *exact* when PostgreSQL's answer equals Strata's for every row, which is what a `NOT` needs:
/// a comparison is written `column op $n AND column IS NOT NULL`, which is false (never NULL) for a
/// NULL column as Strata's comparison is, and which, unlike `COALESCE(…)` or `IS NOT DISTINCT
/// FROM`, a B-tree index on the column serves.
struct PostgreSQLPrefilter {
    /// A condition (nil: none, every row may match) and whether it is exact.
    typealias Condition = (sql: String?, exact: Bool)

    let model: ObjectModel
    let entity: String
    let table: SQLiteSchema.Table
    let storeIdentifier: String
    /// Whether decimal columns are `numeric` (a read-only store opened before its text decimal
    /// columns were converted keeps them as text: its decimals are left to Strata's evaluator).
    let numericDecimals: Bool
    /// The values of the parameters the conditions use, numbered after `firstIndex - 1`.
    private(set) var arguments: [PGValue] = []
    let firstIndex: Int

    init(
        model: ObjectModel, entity: String, table: SQLiteSchema.Table, storeIdentifier: String, firstIndex: Int,
        numericDecimals: Bool = true
    ) {
        self.model = model
        self.entity = entity
        self.table = table
        self.storeIdentifier = storeIdentifier
        self.numericDecimals = numericDecimals
        self.firstIndex = firstIndex
    }

    /// The condition for `predicate`.
    /// - Throws: what Strata's SQLite store throws for a constant that cannot compare with an
    ///   attribute, so both stores refuse the same requests.
    mutating func condition(_ predicate: FetchPredicate) throws(PredicateError) -> Condition {
        // A part that says nothing leaves no parameters behind (an `OR` with an unbounded branch,
        // an `IN` with one value that cannot be compared).
        let count = arguments.count
        let result = try body(predicate)
        if result.sql == nil { arguments.removeSubrange(count...) }
        return result
    }

    private mutating func body(_ predicate: FetchPredicate) throws(PredicateError) -> Condition {
        switch predicate {
        case .always: return (nil, true)
        case .never: return ("false", true)
        case .not(let item):
            let inner = try condition(item)
            guard inner.exact else { return (nil, false) }
            return (inner.sql.map { "NOT (\($0))" } ?? "false", true)
        case .and(let items):
            var parts: [String] = []
            var exact = true
            for item in items {
                let part = try condition(item)
                exact = exact && part.exact
                if let sql = part.sql { parts.append("(\(sql))") }
            }
            return (parts.isEmpty ? nil : parts.joined(separator: " AND "), exact)
        case .or(let items):
            if items.isEmpty { return ("false", true) }
            var parts: [String] = []
            var exact = true
            var unbounded = false
            for item in items {
                let part = try condition(item)
                exact = exact && part.exact
                if let sql = part.sql { parts.append("(\(sql))") } else { unbounded = true }
            }
            return (unbounded ? nil : parts.joined(separator: " OR "), exact)
        case .comparison(let comparison): return try self.comparison(comparison)
        case .textSearch(let search): return (fullText(search), false)
        }
    }

    /// How a column's values are compared in SQL.
    private enum Domain {
        case integer, double, decimal, boolean, date, text
    }

    private func domain(of type: AttributeType) -> Domain? {
        switch type {
        case .integer16, .integer32, .integer64: .integer
        case .double, .float: .double
        case .boolean: .boolean
        case .date: .date
        case .decimal: numericDecimals ? .decimal : nil
        case .string, .uri: .text
        case .uuid, .binary, .json: nil
        }
    }

    mutating func parameter(_ value: PGValue, cast: String) -> String {
        arguments.append(value)
        return "$\(firstIndex + arguments.count - 1)::\(cast)"
    }

    /// A constant as a parameter of the column's domain, and whether comparing it is exact; nil
    /// when it cannot be compared in SQL.
    private mutating func constant(_ value: AttributeValue, _ domain: Domain) -> (sql: String, exact: Bool)? {
        switch (domain, value) {
        case (.decimal, _), (.integer, .decimal):
            // Compared as Strata compares a decimal with any number (`ValueOrdering.decimal(_:)`):
            // exactly, the constant by its digits. (A double column beside a decimal is left to
            // Strata: PostgreSQL would compare them as doubles.)
            guard let decimal = ValueOrdering.decimal(value), !decimal.isNaN,
                AttributeValue.isDecimalSyntax(decimal.description)
            else { return nil }
            return (parameter(.text(decimal.description), cast: "numeric"), true)
        case (.integer, .integer(let i)): return (parameter(.integer(i), cast: "bigint"), true)
        case (.integer, .double(let d)) where !d.isNaN, (.double, .double(let d)) where !d.isNaN:
            return (parameter(.double(d), cast: "double precision"), true)
        case (.double, .integer(let i)): return (parameter(.integer(i), cast: "bigint"), true)
        case (.boolean, .boolean(let b)): return (parameter(.integer(b ? 1 : 0), cast: "bigint"), true)
        case (.date, .date(let date)):
            return (parameter(.integer(AttributeValue.microseconds(of: date)), cast: "bigint"), true)
        case (.text, .string(let s)), (.text, .uri(let s)):
            return (parameter(.bytes(Data(s.utf8)), cast: "bytea"), true)
        default: return nil
        }
    }

    private mutating func comparison(_ comparison: Comparison) throws(PredicateError) -> Condition {
        guard comparison.modifier == .direct, comparison.options.isEmpty, case .keyPath(let text) = comparison.lhs,
            let path = try? ModelKeyPath(text, from: entity, in: model), path.steps.isEmpty
        else { return (nil, false) }
        switch path.leaf {
        case .attribute(let attribute):
            guard table.columns.contains(.attribute(attribute)), let domain = domain(of: attribute.type) else {
                return (nil, false)
            }
            let column = "t.\(PostgreSQLSchema.quote(attribute.columnName))"
            return try attributeComparison(comparison, column, attribute, domain)
        case .object where text == "SELF":
            // The object itself against a stored object of this store (a keyset cursor's
            // `SELF > object`): its primary key, as Strata orders objects of one store.
            let operators: [ComparisonOperator: String] = [
                .equal: "=", .notEqual: "<>", .less: "<", .lessOrEqual: "<=", .greater: ">", .greaterOrEqual: ">=",
            ]
            guard let sql = operators[comparison.op], case .object(let id?) = comparison.rhs, !id.isTemporary,
                id.storeIdentifier == storeIdentifier, let pk = id.primaryKey
            else { return (nil, false) }
            return ("t.\"_pk\" \(sql) \(parameter(.integer(pk), cast: "bigint"))", false)
        case .object:
            guard let relationship = model.relationship(text, of: entity), !relationship.isToMany,
                table.columns.contains(.foreignKey(relationship)), comparison.op == .equal
            else { return (nil, false) }
            let column = "t.\(PostgreSQLSchema.quote(relationship.name))"
            switch comparison.rhs {
            case .object(nil), .constant(.null): return ("\(column) IS NULL", false)
            case .object(let id?):
                guard !id.isTemporary, id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else {
                    return ("false", false)
                }
                return ("\(column) = \(parameter(.integer(pk), cast: "bigint"))", false)
            default: return (nil, false)
            }
        case .count, .element: return (nil, false)
        }
    }

    private mutating func attributeComparison(
        _ comparison: Comparison, _ column: String, _ attribute: AttributeDescription, _ domain: Domain
    ) throws(PredicateError) -> Condition {
        func coerced(_ term: PredicateTerm) throws(PredicateError) -> AttributeValue? {
            guard case .constant(let value) = term else { return nil }
            return try SQLPredicateBuilder.coerce(value, to: attribute)
        }
        switch comparison.op {
        case .equal, .notEqual:
            guard let value = try coerced(comparison.rhs) else { return (nil, false) }
            let equal = comparison.op == .equal
            if value.isNull { return ("\(column) IS \(equal ? "" : "NOT ")NULL", true) }
            guard let (sql, exact) = constant(value, domain) else { return (nil, false) }
            return (
                equal ? "(\(column) = \(sql) AND \(column) IS NOT NULL)" : "(\(column) <> \(sql) OR \(column) IS NULL)",
                exact
            )
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard let value = try coerced(comparison.rhs), !value.isNull, let (sql, exact) = constant(value, domain)
            else { return (nil, false) }
            return ("(\(column) \(comparison.op.rawValue) \(sql) AND \(column) IS NOT NULL)", exact)
        case .between:
            guard case .list(let bounds) = comparison.rhs, bounds.count == 2,
                let low = try coerced(bounds[0]), let high = try coerced(bounds[1]), !low.isNull, !high.isNull,
                let (lowSQL, lowExact) = constant(low, domain), let (highSQL, highExact) = constant(high, domain)
            else { return (nil, false) }
            return (
                "(\(column) >= \(lowSQL) AND \(column) <= \(highSQL) AND \(column) IS NOT NULL)", lowExact && highExact
            )
        case .in:
            guard case .list(let items) = comparison.rhs else { return (nil, false) }
            if items.isEmpty { return ("false", true) }
            var values: [String] = []
            var null = false
            var exact = true
            for item in items {
                guard let value = try coerced(item) else { return (nil, false) }
                if value.isNull {
                    null = true
                    continue
                }
                guard let (sql, itemExact) = constant(value, domain) else { return (nil, false) }
                values.append(sql)
                exact = exact && itemExact
            }
            var parts =
                values.isEmpty ? [] : ["(\(column) IN (\(values.joined(separator: ", "))) AND \(column) IS NOT NULL)"]
            if null { parts.append("\(column) IS NULL") }
            return ("(" + parts.joined(separator: " OR ") + ")", exact)
        case .beginsWith:
            // UTF-8 never holds the byte 0xFF, so the texts starting with p are those in [p, p‖FF).
            guard domain == .text, let value = try coerced(comparison.rhs), let prefix = value.textValue else {
                return (nil, false)
            }
            if prefix.isEmpty { return ("\(column) IS NOT NULL", true) }
            let low = parameter(.bytes(Data(prefix.utf8)), cast: "bytea")
            let high = parameter(.bytes(Data(prefix.utf8) + [0xFF]), cast: "bytea")
            return ("(\(column) >= \(low) AND \(column) < \(high) AND \(column) IS NOT NULL)", true)
        case .endsWith, .contains, .like, .matches: return (nil, false)
        }
    }
}
