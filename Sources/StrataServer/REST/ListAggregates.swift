import Foundation
import Strata
import StrataHTTP

/// `select=` with aggregates on a list (PostgREST's aggregate functions): the objects the filters
/// match, grouped by the plain columns selected, one item per group.
///
/// `select=year,count(),rating.avg(),total:price.sum()`: each item is a column (`year`: grouped by
/// it), `count()` (the objects of the group), or `col.fn()` with `fn` one of `count`, `sum`, `avg`,
/// `min`, `max`; `alias:` before an item renames its member. A plain column is named after itself,
/// `count()` is `count`, `col.fn()` is `fn`. `order=` takes grouped columns and aggregate
/// expressions (`order=count().desc,year`); `having=count().gt.5,rating.avg().gte.4` keeps the
/// groups whose aggregates pass every comparison (`eq`, `neq`, `gt`, `gte`, `lt`, `lte` with a
/// number). Expressions in `order` and `having` need not be selected.
struct ListAggregates {
    /// One selected member.
    struct Item {
        /// The member's name in each group object.
        var name: String
        /// The grouped attribute or to-one relationship, or the aggregate's canonical text.
        var column: String
    }

    static let parameter = "select"
    static let havingParameter = "having"
    /// The most plain columns `select` takes before its first aggregate.
    static let maxLeading = 9
    /// The most items `select` takes after its first aggregate.
    static let maxTrailing = 10
    /// The most comparisons `having` takes.
    static let maxConditions = 10

    /// The members of each group object, in order.
    var items: [Item] = []
    /// The request, without its filter, window and stores.
    var request: AggregateRequest

    /// Whether `query` asks for aggregates.
    static func applies(to query: [(name: String, value: String)]) -> Bool {
        query.contains { $0.name == parameter }
    }

    /// Parses `select`, `order` and `having` of `query` for `entity`.
    /// - Throws: a 400 ``Problem`` naming the parameter and the item at fault.
    init(_ query: [(name: String, value: String)], entity: String, model: ObjectModel, limits: RequestLimits)
        throws(Problem)
    {
        request = AggregateRequest(entityName: entity, expressions: [])
        var values: [String: String] = [:]
        for (name, value) in query where [Self.parameter, Self.havingParameter, "order"].contains(name) {
            guard values.updateValue(value, forKey: name) == nil else {
                throw Problem.badRequest("'\(name)' is given more than once")
            }
        }
        let select = values[Self.parameter] ?? ""
        let parts = select.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        // As the document's pattern states it: the bounds apply around the first aggregate.
        var leading = 0
        var firstAggregate: Int?
        var names: Set<String> = []
        for part in parts {
            var text = part
            var alias: String?
            if let colon = part.firstIndex(of: ":") {
                alias = String(part[..<colon])
                text = String(part[part.index(after: colon)...])
                guard let alias, Self.isAlias(alias) else {
                    throw Self.problem(
                        Self.parameter, "select: '\(part)' has an alias that is not a name (letters, digits, _)")
                }
            }
            let name: String
            let column: String
            if let (function, key) = try Self.aggregate(text, parameter: Self.parameter, entity: entity, model: model) {
                column = addExpression(function, key)
                name = alias ?? function.rawValue
                if firstAggregate == nil { firstAggregate = items.count }
            } else {
                guard ListFacets.isFacetable(text, entity: entity, model: model) else {
                    throw Self.problem(
                        Self.parameter,
                        "select: '\(text)' is not an attribute or to-one relationship of \(entity) to group by, nor an aggregate (count(), col.count(), col.sum(), col.avg(), col.min(), col.max())"
                    )
                }
                if !request.propertiesToGroupBy.contains(text) { request.propertiesToGroupBy.append(text) }
                (name, column) = (alias ?? text, text)
                if firstAggregate == nil { leading += 1 }
            }
            guard leading <= Self.maxLeading, items.count - (firstAggregate ?? items.count) <= Self.maxTrailing else {
                throw Self.problem(
                    Self.parameter,
                    "select takes at most \(Self.maxLeading) plain columns before its first aggregate and \(Self.maxTrailing) items after it"
                )
            }
            guard names.insert(name).inserted else {
                throw Self.problem(
                    Self.parameter, "select: two members are named '\(name)'; give one an alias (alias:col.fn())")
            }
            items.append(Item(name: name, column: column))
        }
        guard !request.expressions.isEmpty else {
            throw Self.problem(
                Self.parameter,
                "select needs at least one aggregate (count(), col.sum(), …); the plain columns beside it are the grouping"
            )
        }
        if let order = values["order"] { try parseOrder(order, entity: entity, model: model, limits: limits) }
        if let having = values[Self.havingParameter] { try parseHaving(having, entity: entity, model: model) }
    }

    /// A 400 problem for `parameter`.
    static func problem(_ parameter: String, _ detail: String) -> Problem {
        Problem.badRequest(detail, errors: [.init(field: parameter, code: "invalid", message: detail)])
    }

    /// Whether `text` is an alias: a letter or `_`, then letters, digits and `_` (ASCII), at most 64.
    static func isAlias(_ text: String) -> Bool {
        func letter(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "_") || (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A
        }
        guard let first = text.utf8.first, letter(first), text.utf8.count <= 64 else { return false }
        return text.utf8.allSatisfy { letter($0) || (0x30...0x39).contains($0) }
    }

    /// `count()` or `col.fn()` as a function and key (nil: the objects); nil for text of neither form.
    /// - Throws: a 400 problem for a function that does not fit the column, or an unknown column.
    static func aggregate(_ text: String, parameter: String, entity: String, model: ObjectModel) throws(Problem)
        -> (AggregateFunction, String?)?
    {
        if text == "count()" { return (.count, nil) }
        guard text.hasSuffix("()"), let dot = text.lastIndex(of: ".") else { return nil }
        let key = String(text[..<dot])
        let word = String(text[text.index(after: dot)..<text.index(text.endIndex, offsetBy: -2)])
        guard let function = AggregateFunction(rawValue: word) else {
            throw problem(parameter, "\(parameter): '\(text)': '\(word)' is not count, sum, avg, min or max")
        }
        if let attribute = model.attribute(key, of: entity), !attribute.isComposite {
            guard function.applies(to: attribute.type) else {
                throw problem(
                    parameter,
                    "\(parameter): '\(text)': \(word)() does not apply to '\(key)', a \(attribute.type.rawValue) attribute (sum and avg take numbers, min and max numbers, dates and strings)"
                )
            }
            return (function, key)
        }
        if function == .count, let relationship = model.relationship(key, of: entity), !relationship.isToMany {
            return (function, key)
        }
        throw problem(
            parameter,
            "\(parameter): '\(text)': '\(key)' is not an attribute of \(entity)\(function == .count ? " or a to-one relationship" : "") that \(word)() applies to"
        )
    }

    /// The column of an aggregate, added to the request once: named by its canonical text.
    mutating func addExpression(_ function: AggregateFunction, _ key: String?) -> String {
        let column = key.map { "\($0).\(function.rawValue)()" } ?? "count()"
        if !request.expressions.contains(where: { $0.name == column }) {
            request.expressions.append(AggregateExpression(name: column, function: function, keyPath: key))
        }
        return column
    }

    /// `order=`: grouped columns and aggregates, each optionally `.asc` or `.desc`.
    mutating func parseOrder(_ value: String, entity: String, model: ObjectModel, limits: RequestLimits) throws(Problem)
    {
        let keys = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard keys.count <= limits.orderKeys else {
            throw Self.problem("order", "order has \(keys.count) keys; at most \(limits.orderKeys) are accepted")
        }
        for key in keys {
            var text = key
            var ascending = true
            if text.hasSuffix(".desc") || text.hasSuffix(".asc") {
                ascending = text.hasSuffix(".asc")
                text.removeSubrange(text.lastIndex(of: ".")!...)
            }
            if let (function, path) = try Self.aggregate(text, parameter: "order", entity: entity, model: model) {
                request.sortDescriptors.append(SortKey(addExpression(function, path), ascending: ascending))
            } else if request.propertiesToGroupBy.contains(text) {
                request.sortDescriptors.append(SortKey(text, ascending: ascending))
            } else {
                throw Self.problem(
                    "order",
                    "order: '\(text)' is not a grouped column of select (\(request.propertiesToGroupBy.joined(separator: ", "))) nor an aggregate such as count()"
                )
            }
        }
    }

    /// `having=`: comparisons of aggregates with numbers, all of which a group must pass.
    mutating func parseHaving(_ value: String, entity: String, model: ObjectModel) throws(Problem) {
        let conditions = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard conditions.count <= Self.maxConditions else {
            throw Self.problem(
                Self.havingParameter,
                "having has \(conditions.count) comparisons; at most \(Self.maxConditions) are accepted")
        }
        let operators: [String: ComparisonOperator] = [
            "eq": .equal, "neq": .notEqual, "gt": .greater, "gte": .greaterOrEqual, "lt": .less, "lte": .lessOrEqual,
        ]
        var comparisons: [FetchPredicate] = []
        for condition in conditions {
            // `expr.op.value`: the expression ends at "()".
            guard let end = condition.range(of: "()."),
                case let rest = condition[end.upperBound...], let dot = rest.firstIndex(of: "."),
                let op = operators[String(rest[..<dot])]
            else {
                throw Self.problem(
                    Self.havingParameter,
                    "having: '\(condition)' is not aggregate.op.number (e.g. count().gt.5, with eq, neq, gt, gte, lt, lte)"
                )
            }
            let text = String(condition[..<end.lowerBound]) + "()"
            let literal = String(rest[rest.index(after: dot)...])
            guard
                let (function, key) = try Self.aggregate(
                    text, parameter: Self.havingParameter, entity: entity, model: model),
                let number = Self.number(literal)
            else {
                throw Self.problem(
                    Self.havingParameter, "having: '\(condition)' does not compare an aggregate with a number")
            }
            if function == .min || function == .max, let key, let type = model.attribute(key, of: entity)?.type,
                !type.isNumeric
            {
                throw Self.problem(
                    Self.havingParameter, "having: '\(condition)': a \(type.rawValue) does not compare with a number")
            }
            let column = addExpression(function, key)
            comparisons.append(.comparison(Comparison(.keyPath(column), op, .constant(number))))
        }
        request.havingPredicate = comparisons.count == 1 ? comparisons[0] : .and(comparisons)
    }

    /// A number of `having` (``OpenAPIBuilder/havingNumber``: up to 18 digits, a point and up to 18
    /// more): an integer, else an exact decimal.
    static func number(_ text: String) -> AttributeValue? {
        let bytes = Array(text.utf8)
        let body = bytes.first == UInt8(ascii: "-") ? bytes.dropFirst() : bytes[...]
        let parts = body.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count),
            parts.allSatisfy({ (1...18).contains($0.count) && $0.allSatisfy { (0x30...0x39).contains($0) } })
        else { return nil }
        if parts.count == 1, let integer = Int64(text) { return .integer(integer) }
        return Decimal(string: text).map { .decimal($0) }
    }

    /// Writes one group object: the selected members in order, values as items show them.
    func write(_ row: AggregateRow, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (index, item) in items.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(item.name, to: &out)
            out.append(UInt8(ascii: ":"))
            ObjectCodec.write(row[item.column], to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension RESTService {
    /// `GET /books?select=…`: the groups of the objects the filters match (see ``ListAggregates``),
    /// in the list envelope: `{"items":[groups…],"next":…,"total":…}` (`total` the number of groups
    /// with `count=exact`), `facets` beside them when asked for.
    func listAggregates(_ entity: String, _ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        let aggregates = try ListAggregates(request.query, entity: entity, model: model, limits: limits)
        let rest = request.query.filter {
            ![ListAggregates.parameter, ListAggregates.havingParameter, "order"].contains($0.name)
        }
        let query = try ListQuery(
            rest, entity: entity, model: model, limits: limits,
            objectID: { prototypeByEntity[$0]?.withPrimaryKey($1) })
        let facets = try ListFacets(request.query, entity: entity, model: model)
        var aggregate = aggregates.request
        let filter = query.request(entity)
        aggregate.predicate = filter.predicate
        aggregate.affectedStores = homeStores[entity]
        aggregate.fetchOffset = query.position
        // One more than the page: whether there is a next one.
        aggregate.fetchLimit = query.limit + 1
        let rows: [AggregateRow]
        var total: Int?
        var counts: [[ValueCount]] = []
        do {
            rows = try reads.aggregate(aggregate)
            if query.countExact {
                var every = aggregate
                (every.fetchLimit, every.fetchOffset, every.sortDescriptors) = (nil, 0, [])
                total = try reads.aggregate(every).count
            }
            var every = filter
            (every.fetchLimit, every.fetchOffset, every.sortDescriptors) = (nil, 0, [])
            every.affectedStores = homeStores[entity]
            for name in facets.names { counts.append(try reads.valueCounts(every, key: name)) }
        } catch {
            throw error.code == .invalidRequest ? Problem.badRequest(error.message) : Problem(error)
        }
        var body = Array("{".utf8)
        if !facets.names.isEmpty {
            body += Array(#""facets":"#.utf8)
            facets.write(counts, to: &body)
            body.append(UInt8(ascii: ","))
        }
        body += Array(#""items":["#.utf8)
        for (index, row) in rows.prefix(query.limit).enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            aggregates.write(row, to: &body)
        }
        body += Array(#"],"next":"#.utf8)
        if rows.count > query.limit {
            let (position, overflow) = query.position.addingReportingOverflow(query.limit)
            JSONValue.writeString(nextLink(request, offset: overflow ? Int.max : position), to: &body)
        } else {
            body += Array("null".utf8)
        }
        body += Array(#","total":"#.utf8)
        if let total { JSONValue.writeInteger(Int64(total), to: &body) } else { body += Array("null".utf8) }
        body.append(UInt8(ascii: "}"))
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
    }
}
