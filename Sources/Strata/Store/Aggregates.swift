import Foundation

/// In-memory grouping: what the in-memory store does, what a SQL store does when its SQL cannot
/// state the whole predicate, and what the coordinator does over several stores.
extension AggregatePlan {
    /// One grouping column's value as groups tell values apart: strings by their bytes (as SQL
    /// compares them, not by Unicode equivalence), dates by microsecond, decimals by value, doubles
    /// with -0 as 0, related objects by ID.
    private enum GroupPart: Hashable {
        case null
        case bytes([UInt8])
        case integer(Int64)
        case double(UInt64)
        case text(String)
        case object(ObjectID)
    }

    private static func part(_ value: AttributeValue) -> GroupPart {
        switch value {
        case .null: .null
        case .string(let text), .uri(let text): .bytes(Array(text.utf8))
        case .integer(let number): .integer(number)
        case .boolean(let flag): .integer(flag ? 1 : 0)
        case .date(let date): .integer(AttributeValue.microseconds(of: date))
        case .double(let number): .double(number.isNaN ? Double.nan.bitPattern : (number + 0).bitPattern)
        case .decimal(let number): .text(ValueOrdering.decimalKey(number))
        case .uuid(let id): .text(id.uuidString.lowercased())
        case .binary, .json: .text("\(value)")
        }
    }

    /// A value as the SQL stores read it back: dates to the microsecond.
    static func stored(_ value: AttributeValue) -> AttributeValue {
        if case .date(let date) = value {
            return .date(AttributeValue.date(microseconds: AttributeValue.microseconds(of: date)))
        }
        return value
    }

    /// The groups of `rows`, each expression accumulated in memory. With no grouping column the
    /// rows are one group, even when there are none.
    func groups(of rows: [StoreRow]) throws(StoreError) -> [AggregateGroup] {
        var index: [[GroupPart]: Int] = [:]
        var groups: [AggregateGroup] = []
        let empty = request.expressions.indices.map { AggregateAccumulator(request.expressions[$0], type(of: $0)) }
        var accumulators: [[AggregateAccumulator]] = []
        if columns.isEmpty {
            groups.append(AggregateGroup(values: [:], partials: []))
            accumulators.append(empty)
            index[[]] = 0
        }
        for row in rows {
            var key: [GroupPart] = []
            key.reserveCapacity(columns.count)
            for (name, column) in columns {
                switch column {
                case .attribute: key.append(Self.part(row[attribute: name]))
                case .toOne: key.append((row.toOne[name] ?? nil).map { .object($0) } ?? .null)
                }
            }
            let position: Int
            if let known = index[key] {
                position = known
            } else {
                position = groups.count
                index[key] = position
                var group = AggregateGroup(values: [:], partials: [])
                for (name, column) in columns {
                    switch column {
                    case .attribute: group.values[name] = Self.stored(row[attribute: name])
                    case .toOne:
                        let related = row.toOne[name] ?? nil
                        group.values[name] = related?.primaryKey.map { .integer($0) } ?? .null
                        if let related { group.objectIDs[name] = related }
                    }
                }
                groups.append(group)
                accumulators.append(empty)
            }
            for (expression, operand) in zip(accumulators[position].indices, operands) {
                let value: AttributeValue
                switch operand {
                case .objects: value = .integer(1)
                case .attribute(let attribute): value = row[attribute: attribute.name]
                case .toOne(let relationship):
                    value = (row.toOne[relationship.name] ?? nil) == nil ? .null : .integer(1)
                }
                try accumulators[position][expression].add(value, entity: request.entityName)
            }
        }
        for position in groups.indices { groups[position].partials = accumulators[position].map(\.partial) }
        return groups
    }
}

/// One expression's running result over one group's values, in memory.
struct AggregateAccumulator: Sendable {
    private(set) var partial: AggregatePartial
    private let function: AggregateFunction
    private let key: String

    init(_ expression: AggregateExpression, _ type: AttributeType?) {
        function = expression.function
        key = expression.keyPath ?? ""
        switch (expression.function, type) {
        case (.count, _): partial = .count(0)
        case (.min, _), (.max, _): partial = .extreme(.null)
        case (_, .decimal?): partial = .decimalSum(0, 0)
        case (_, let type?) where type.isInteger: partial = .integerSum(0, 0)
        default: partial = .doubleSum(0, 0)
        }
    }

    /// Adds one object's value (nulls count for nothing, as in SQL).
    mutating func add(_ value: AttributeValue, entity: String) throws(StoreError) {
        if value.isNull { return }
        switch (partial, value) {
        case (.count(let count), _): partial = .count(count + 1)
        case (.integerSum(let sum, let count), .integer(let number)):
            partial = .integerSum(sum + Int128(number), count + 1)
        case (.doubleSum(let sum, let count), .double(let number)): partial = .doubleSum(sum + number, count + 1)
        case (.doubleSum(let sum, let count), .integer(let number)):
            partial = .doubleSum(sum + Double(number), count + 1)
        case (.decimalSum(var sum, let count), .decimal(var number)):
            var result = Decimal()
            let status = NSDecimalAdd(&result, &sum, &number, .plain)
            guard status == .noError else { throw AggregatePartial.decimalOverflow(key, entity: entity) }
            partial = .decimalSum(result, count + 1)
        case (.extreme(let current), _):
            let value = AggregatePlan.stored(value)
            if current.isNull
                || (function == .min
                    ? Self.precedes(value, current) : Self.precedes(current, value))
            {
                partial = .extreme(value)
            }
        default:
            throw StoreError(
                .invalidRequest, "'\(key)' holds a \(value.kindName) value that \(function.expressionName) cannot take",
                entity: entity)
        }
    }

    /// Whether `lhs` orders before `rhs` for `min` and `max`: as the stores compare, with NaN
    /// greater than every other double (PostgreSQL's order).
    static func precedes(_ lhs: AttributeValue, _ rhs: AttributeValue) -> Bool {
        if case .double(let a) = lhs, case .double(let b) = rhs, a.isNaN || b.isNaN { return !a.isNaN && b.isNaN }
        return (ValueOrdering.compare(lhs, rhs) ?? 0) < 0
    }
}

extension PersistentStore {
    /// The rows of an aggregate fetch over this store's objects (see ``AggregateRequest``), its
    /// names read in `model`. This default groups the fetched objects in memory; a store that can
    /// groups in its query language, with the same results.
    /// - Throws: ``StoreError`` `.invalidRequest` for a request the model does not fit (see
    ///   ``AggregateRequest``) or a sum past what its type holds.
    public func aggregate(_ request: AggregateRequest, model: ObjectModel) throws(StoreError) -> [AggregateRow] {
        let plan = try AggregatePlan(request, model: model)
        return try plan.rows(try plan.groups(of: try fetch(request.filter)))
    }
}

extension CommittedReads {
    /// The rows of an aggregate fetch over every store holding the entity, grouped over the
    /// fetched objects (``StoreCoordinator`` asks its store instead).
    public func aggregate(_ request: AggregateRequest) throws(StoreError) -> [AggregateRow] {
        let plan = try AggregatePlan(request, model: model)
        return try plan.rows(try plan.groups(of: try fetch(request.filter)))
    }
}

extension StoreCoordinator {
    /// The rows of an aggregate fetch (see ``AggregateRequest``) over committed state: grouped by
    /// the one store holding the entity (in SQL for SQLite and PostgreSQL), or, when several hold
    /// it, over the objects fetched from each.
    /// - Throws: ``StoreError``: `.invalidRequest` for a request the model does not fit or a sum past
    ///   what its type holds, `.noStoreForEntity` when no store holds the entity.
    public func aggregate(_ request: AggregateRequest) throws(StoreError) -> [AggregateRow] {
        let plan = try AggregatePlan(request, model: model)
        let holders = try holders(of: request.filter)
        if holders.count == 1 { return try holders[0].aggregate(request, model: model) }
        var rows: [StoreRow] = []
        for store in holders { rows += try store.fetch(request.filter) }
        return try plan.rows(try plan.groups(of: rows))
    }
}

extension ObjectContext {
    /// The rows of an aggregate fetch over the committed objects (as Core Data's dictionary
    /// results with `propertiesToGroupBy`, which never include pending changes).
    /// - Throws: ``ContextError`` `.invalidPredicate` for a request the model does not fit.
    public func aggregate(_ request: AggregateRequest) throws(ContextError) -> [AggregateRow] {
        do {
            return try coordinator.aggregate(request)
        } catch {
            throw Self.wrap(error)
        }
    }
}
