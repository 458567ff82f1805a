import Foundation

/// Translates a ``FetchPredicate`` into a SQL condition over an entity table. Values are only ever
/// bound as parameters, never spliced into the SQL text; identifiers come from the validated model.
struct SQLPredicateBuilder {
    let model: ObjectModel
    let entity: String
    let storeIdentifier: String
    var arguments: [SQLiteValue] = []

    init(model: ObjectModel, entity: String, storeIdentifier: String) {
        self.model = model
        self.entity = entity
        self.storeIdentifier = storeIdentifier
    }

    /// What an operand turned into.
    private enum Operand {
        case column(sql: String, attribute: AttributeDescription)
        case foreignKey(sql: String, relationship: RelationshipDescription)
        case value(AttributeValue)
        case object(ObjectID?)
        case list([Operand])
    }

    mutating func build(_ predicate: FetchPredicate) throws(PredicateError) -> String {
        switch predicate {
        case .always: return "1"
        case .never: return "0"
        case .not(let item): return "NOT (\(try build(item)))"
        case .and(let items):
            if items.isEmpty { return "1" }
            var parts: [String] = []
            for item in items { parts.append("(\(try build(item)))") }
            return parts.joined(separator: " AND ")
        case .or(let items):
            if items.isEmpty { return "0" }
            var parts: [String] = []
            for item in items { parts.append("(\(try build(item)))") }
            return parts.joined(separator: " OR ")
        case .comparison(let comparison): return try build(comparison)
        }
    }

    private func operand(_ expression: PredicateTerm) throws(PredicateError) -> Operand {
        switch expression {
        case .keyPath(let path):
            if path.contains(".") {
                throw PredicateError("key path '\(path)' reads through a relationship; the SQLite store does not support that yet")
            }
            if let attribute = model.attribute(path, of: entity) {
                let column = SQLiteSchema.quote(path)
                return .column(sql: attribute.type == .decimal ? "CAST(\(column) AS REAL)" : column, attribute: attribute)
            }
            if let relationship = model.relationship(path, of: entity), !relationship.isToMany {
                return .foreignKey(sql: SQLiteSchema.quote(path), relationship: relationship)
            }
            throw PredicateError("'\(entity)' has no attribute or to-one relationship '\(path)'")
        case .constant(let value): return .value(value)
        case .object(let id): return .object(id)
        case .variable(let name): throw PredicateError("no value for variable $\(name)")
        case .list(let items):
            var operands: [Operand] = []
            for item in items { operands.append(try operand(item)) }
            return .list(operands)
        }
    }

    /// Converts a constant to the form stored for `attribute`, or fails when it cannot compare.
    static func coerce(_ value: AttributeValue, to attribute: AttributeDescription) throws(PredicateError) -> AttributeValue {
        let type = attribute.type
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
        throw PredicateError("'\(attribute.name)' is \(type.rawValue); cannot compare it with \(value.kindName) \(value.json.jsonText)")
    }

    private mutating func bind(_ value: AttributeValue, decimalAsReal: Bool) -> String {
        if decimalAsReal, let number = ValueOrdering.number(value), value.kindName == "decimal" {
            arguments.append(.real(number))
        } else {
            arguments.append(SQLiteSchema.encode(value))
        }
        return "?"
    }

    /// SQL for an operand, given the other side (to coerce constants to a column's type).
    private mutating func sql(_ operand: Operand, against other: Operand?, _ options: ComparisonOptions) throws(PredicateError) -> String {
        var text: String
        switch operand {
        case .column(let sql, _), .foreignKey(let sql, _): text = sql
        case .value(let value):
            var coerced = value
            var isDecimalColumn = false
            if case .column(_, let attribute)? = other {
                coerced = try Self.coerce(value, to: attribute)
                isDecimalColumn = attribute.type == .decimal
            } else if case .foreignKey(_, let relationship)? = other {
                guard value.isNull else {
                    throw PredicateError("'\(relationship.name)' is a relationship; compare it with an object or nil")
                }
            }
            // Decimal columns compare through REAL on both sides, as in-memory evaluation does.
            text = bind(coerced, decimalAsReal: isDecimalColumn || coerced.kindName == "decimal")
        case .object(let id):
            guard let id else { return "NULL" }
            guard case .foreignKey(_, let relationship)? = other else {
                throw PredicateError("an object can only be compared with a to-one relationship")
            }
            guard !id.isTemporary, id.storeIdentifier == storeIdentifier, let pk = id.primaryKey,
                model.entity(id.entityName, isKindOf: relationship.destination)
            else {
                // An object of another store or entity never equals a stored reference.
                arguments.append(.integer(Int64.min))
                return "?"
            }
            arguments.append(.integer(pk))
            text = "?"
        case .list: throw PredicateError("a list is only allowed after IN or BETWEEN")
        }
        if !options.isEmpty { text = "strata_fold(\(text), \(options.rawValue))" }
        return text
    }

    private mutating func build(_ comparison: Comparison) throws(PredicateError) -> String {
        let lhs = try operand(comparison.lhs)
        let rhs = try operand(comparison.rhs)
        let options = comparison.options
        switch comparison.op {
        case .equal, .notEqual:
            let left = try sql(lhs, against: rhs, options)
            let right = try sql(rhs, against: lhs, options)
            return "\(left) \(comparison.op == .equal ? "IS" : "IS NOT") \(right)"
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let left = try sql(lhs, against: rhs, options)
            let right = try sql(rhs, against: lhs, options)
            return "COALESCE(\(left) \(comparison.op.rawValue) \(right), 0)"
        case .in:
            guard case .list(let items) = rhs else { throw PredicateError("IN needs a list on its right") }
            if items.isEmpty { return "0" }
            var parts: [String] = []
            for item in items {
                let left = try sql(lhs, against: item, options)
                parts.append("\(left) IS \(try sql(item, against: lhs, options))")
            }
            return "(" + parts.joined(separator: " OR ") + ")"
        case .between:
            guard case .list(let bounds) = rhs, bounds.count == 2 else {
                throw PredicateError("BETWEEN needs a list of two values on its right")
            }
            let low = try sql(bounds[0], against: lhs, options)
            let left1 = try sql(lhs, against: bounds[0], options)
            let high = try sql(bounds[1], against: lhs, options)
            let left2 = try sql(lhs, against: bounds[1], options)
            return "COALESCE(\(left1) >= \(low) AND \(left2) <= \(high), 0)"
        case .beginsWith, .endsWith, .contains, .like, .matches:
            let index = ComparisonOperator.allCases.firstIndex(of: comparison.op)!
            let left = try sql(lhs, against: rhs, [])
            let right = try sql(rhs, against: lhs, [])
            return "strata_match(\(index), \(options.rawValue), \(left), \(right))"
        }
    }
}
