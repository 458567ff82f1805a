import Foundation

extension PostgreSQLStore {
    /// The rows of an aggregate fetch, grouped in SQL (`GROUP BY`) when the prefilter states the
    /// whole predicate (exact) and decimals are `numeric`; else grouped over the rows a fetch
    /// decides, in memory. Sums are exact (`sum` of `bigint` and `numeric` is `numeric`); strings,
    /// kept as `bytea`, take their extremes in byte order through their hex text. The having
    /// predicate, order and window apply to the groups as in every store (`AggregatePlan.rows(_:)`).
    public func aggregate(_ request: AggregateRequest, model: ObjectModel) throws(StoreError) -> [AggregateRow] {
        let plan = try AggregatePlan(request, model: self.model)
        let filter = request.filter
        var (table, from, arguments) = try selection(filter)
        if let predicate = filter.predicate {
            let joiner = arguments.isEmpty ? " WHERE " : " AND "
            let condition: PostgreSQLPrefilter.Condition
            do throws(PredicateError) {
                var prefilter = PostgreSQLPrefilter(
                    model: self.model, entity: filter.entityName, table: table, storeIdentifier: metadata.identifier,
                    firstIndex: arguments.count + 1, numericDecimals: numericDecimals)
                condition = try prefilter.condition(try predicate.bound(to: filter.entityName, in: self.model))
                arguments += prefilter.arguments
            } catch {
                throw StoreError(.invalidRequest, error.message, storeURL: url, entity: filter.entityName)
            }
            guard condition.exact, numericDecimals else {
                return try plan.rows(try plan.groups(of: try reading { c in try matching(filter, c) }))
            }
            if let sql = condition.sql { from += joiner + "(\(sql))" }
        } else if !numericDecimals {
            return try plan.rows(try plan.groups(of: try reading { c in try matching(filter, c) }))
        }
        let sql = aggregateSQL(plan, from: from)
        let groups = try reading { c in
            try c.execute(sql, arguments).rows.map { values throws(StoreError) in try decodeGroup(values, plan) }
        }
        return try plan.rows(groups)
    }

    /// Whether a to-one relationship leads into a table of several entities, whose keys need their
    /// entity looked up.
    private func sharedDestination(_ relationship: RelationshipDescription) -> SQLiteSchema.Table? {
        guard let table = schema.base.table(for: relationship.destination), table.entities.count > 1 else {
            return nil
        }
        return table
    }

    /// The SQL of an aggregate fetch, its columns as ``SQLiteStore/aggregateSQL(_:from:)`` lays them out.
    func aggregateSQL(_ plan: AggregatePlan, from: String) -> String {
        var select: [String] = []
        var grouping: [String] = []
        for (_, column) in plan.columns {
            switch column {
            case .attribute(let attribute):
                let name = "t." + PostgreSQLSchema.quote(attribute.columnName)
                select.append(name)
                grouping.append(name)
            case .toOne(let relationship):
                let name = "t." + PostgreSQLSchema.quote(relationship.name)
                select.append(name)
                if let table = sharedDestination(relationship) {
                    select.append(
                        "(SELECT d.\"_entity\" FROM \(schema.qualified(table.name)) AS d WHERE d.\"_pk\" = \(name))")
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
            case .attribute(let attribute): column = "t." + PostgreSQLSchema.quote(attribute.columnName)
            case .toOne(let relationship): column = "t." + PostgreSQLSchema.quote(relationship.name)
            }
            let function = expression.function.rawValue
            switch (expression.function, plan.type(of: index)) {
            case (.count, _): select.append("count(\(column))")
            case (.min, .string?), (.max, .string?):
                select.append("decode(\(function)(encode(\(column), 'hex') COLLATE \"C\"), 'hex')")
            case (.min, _), (.max, _): select.append("\(function)(\(column))")
            default: select += ["sum(\(column))", "count(\(column))"]
            }
        }
        var sql = "SELECT \(select.joined(separator: ", ")) \(from)"
        if !grouping.isEmpty { sql += " GROUP BY \(grouping.joined(separator: ", "))" }
        return sql
    }

    /// One group from a row of ``aggregateSQL(_:from:)``.
    private func decodeGroup(_ values: [String?], _ plan: AggregatePlan) throws(StoreError) -> AggregateGroup {
        var group = AggregateGroup(values: [:], partials: [])
        var index = 0
        for (name, column) in plan.columns {
            switch column {
            case .attribute(let attribute):
                group.values[name] = PostgreSQLSchema.decode(values[index], as: attribute.type)
                index += 1
            case .toOne(let relationship):
                let key = values[index].flatMap { Int64($0) }
                index += 1
                var entity = relationship.destination
                if sharedDestination(relationship) != nil {
                    if let found = values[index] { entity = found }
                    index += 1
                }
                group.values[name] = key.map { .integer($0) } ?? .null
                if let key {
                    group.objectIDs[name] = ObjectID(store: metadata.identifier, entity: entity, primaryKey: key)
                }
            }
        }
        let entity = plan.request.entityName
        for (position, expression) in plan.request.expressions.enumerated() {
            let type = plan.type(of: position)
            switch (expression.function, type) {
            case (.min, let type?), (.max, let type?):
                group.partials.append(.extreme(PostgreSQLSchema.decode(values[index], as: type)))
                index += 1
            case (.count, _), (_, nil):
                group.partials.append(.count(values[index].flatMap { Int($0) } ?? 0))
                index += 1
            case (_, let type?):
                let count = values[index + 1].flatMap { Int($0) } ?? 0
                let text = values[index] ?? "0"
                if type == .decimal {
                    group.partials.append(
                        try AggregatePartial.decimalSum(
                            text: text, count: count, key: expression.keyPath ?? "", entity: entity))
                } else if type.isInteger {
                    guard let sum = Int128(text) else {
                        throw StoreError(.io, "PostgreSQL answered '\(text)' for an integer sum", storeURL: url)
                    }
                    group.partials.append(.integerSum(sum, count))
                } else {
                    let sum: Double =
                        if case .double(let number) = PostgreSQLSchema.decode(text, as: .double) { number } else { 0 }
                    group.partials.append(.doubleSum(sum, count))
                }
                index += 2
            }
        }
        return group
    }
}
