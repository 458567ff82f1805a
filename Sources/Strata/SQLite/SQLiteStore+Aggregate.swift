import Foundation

extension SQLiteStore {
    /// The rows of an aggregate fetch, grouped in SQL (`GROUP BY` over the same FROM and WHERE as
    /// a fetch, which states every predicate): `count`, `min` and `max` by SQLite's own functions,
    /// integer and decimal sums and decimal extremes by exact functions of Strata's
    /// (`SQLiteFunctions.registerAggregates(on:)`). The having predicate, order and window apply
    /// to the groups as in every store (`AggregatePlan.rows(_:)`).
    public func aggregate(_ request: AggregateRequest, model: ObjectModel) throws(StoreError) -> [AggregateRow] {
        let plan = try AggregatePlan(request, model: self.model)
        let (_, from, arguments) = try selection(request.filter)
        let statement = aggregateSQL(plan, from: from)
        let groups = try read { db in
            try db.query(statement.sql, arguments) { row in try self.decodeGroup(row, plan) }
        }
        return try plan.rows(groups)
    }

    /// The SQL of an aggregate fetch: per grouping column its value (and, for a to-one leading into a
    /// table of several entities, the related object's entity), then per expression its columns
    /// (a count; a sum and how many values it added; an extreme).
    func aggregateSQL(_ plan: AggregatePlan, from: String) -> (sql: String, grouping: [String]) {
        let alias = SQLPredicateBuilder.rootAlias
        var select: [String] = []
        var grouping: [String] = []
        for (_, column) in plan.columns {
            switch column {
            case .attribute(let attribute):
                let name = "\(alias).\(SQLiteSchema.quote(attribute.columnName))"
                select.append(name)
                grouping.append(attribute.type == .decimal ? "strata_decimal(\(name))" : name)
            case .toOne(let relationship):
                let name = "\(alias).\(SQLiteSchema.quote(relationship.name))"
                select.append(name)
                if let table = schema.table(for: relationship.destination), table.entities.count > 1 {
                    select.append(
                        "(SELECT d.\"_entity\" FROM \(SQLiteSchema.quote(table.name)) AS d WHERE d.\"_pk\" = \(name))")
                }
                grouping.append(name)
            }
        }
        for (index, expression) in plan.request.expressions.enumerated() {
            let column: String
            switch plan.operands[index] {
            case .objects:
                select.append("count(*)")
                continue
            case .attribute(let attribute): column = "\(alias).\(SQLiteSchema.quote(attribute.columnName))"
            case .toOne(let relationship): column = "\(alias).\(SQLiteSchema.quote(relationship.name))"
            }
            let type = plan.type(of: index)
            switch (expression.function, type) {
            case (.count, _): select.append("count(\(column))")
            case (.min, .decimal?), (.max, .decimal?):
                select.append("strata_decimal_\(expression.function.rawValue)(\(column))")
            case (.min, _), (.max, _): select.append("\(expression.function.rawValue)(\(column))")
            case (_, .decimal?): select += ["strata_decimal_sum(\(column))", "count(\(column))"]
            case (_, let type?) where type.isInteger: select += ["strata_integer_sum(\(column))", "count(\(column))"]
            default: select += ["sum(\(column))", "count(\(column))"]
            }
        }
        var sql = "SELECT \(select.joined(separator: ", ")) \(from)"
        if !grouping.isEmpty { sql += " GROUP BY \(grouping.joined(separator: ", "))" }
        return (sql, grouping)
    }

    /// One group from a row of ``aggregateSQL(_:from:)``.
    private func decodeGroup(_ row: SQLiteStatement, _ plan: AggregatePlan) throws(StoreError) -> AggregateGroup {
        var group = AggregateGroup(values: [:], partials: [])
        var index: Int32 = 0
        for (name, column) in plan.columns {
            switch column {
            case .attribute(let attribute):
                group.values[name] = SQLiteSchema.decode(row, index, as: attribute.type)
                index += 1
            case .toOne(let relationship):
                let key = row.isNull(index) ? nil : row.int64(index)
                index += 1
                var entity = relationship.destination
                if let table = schema.table(for: relationship.destination), table.entities.count > 1 {
                    if !row.isNull(index) { entity = row.text(index) }
                    index += 1
                }
                group.values[name] = key.map { .integer($0) } ?? .null
                if let key {
                    group.objectIDs[name] = ObjectID(store: metadata.identifier, entity: entity, primaryKey: key)
                }
            }
        }
        for (position, expression) in plan.request.expressions.enumerated() {
            let type = plan.type(of: position)
            switch (expression.function, type) {
            case (.count, _):
                group.partials.append(.count(Int(row.int64(index))))
                index += 1
            case (.min, let type?), (.max, let type?):
                group.partials.append(.extreme(SQLiteSchema.decode(row, index, as: type)))
                index += 1
            case (_, let type?):
                let count = Int(row.int64(index + 1))
                if type == .decimal {
                    let text = row.isNull(index) ? "0" : row.text(index)
                    group.partials.append(
                        try AggregatePartial.decimalSum(
                            text: text, count: count, key: expression.keyPath ?? "", entity: plan.request.entityName))
                } else if type.isInteger {
                    group.partials.append(.integerSum(row.isNull(index) ? 0 : Int128(row.text(index)) ?? 0, count))
                } else {
                    group.partials.append(.doubleSum(row.double(index), count))
                }
                index += 2
            case (_, nil):
                group.partials.append(.count(Int(row.int64(index))))
                index += 1
            }
        }
        return group
    }
}
