import Foundation

/// An ``AggregateRequest`` checked against a model: what each grouping column and expression reads,
/// and the one place where groups become result rows (results finished, the having predicate
/// applied, sorted and windowed), whichever store computed them, so that every store answers alike.
struct AggregatePlan: Sendable {
    /// What a grouping column reads.
    enum Column: Sendable {
        /// An attribute's value.
        case attribute(AttributeDescription)
        /// A to-one relationship's related object.
        case toOne(RelationshipDescription)
    }

    /// What an expression reads: nothing (`count` of the objects), an attribute, or a to-one
    /// relationship (`count` of the objects that have one).
    enum Operand: Sendable {
        case objects
        case attribute(AttributeDescription)
        case toOne(RelationshipDescription)
    }

    let request: AggregateRequest
    let columns: [(name: String, column: Column)]
    let operands: [Operand]

    /// Checks `request` against `model`.
    /// - Throws: ``StoreError`` `.invalidRequest` naming a property the entity lacks or cannot be
    ///   grouped by, a function that does not fit an attribute's type, a repeated column name, or a
    ///   having or sort key that names no column.
    init(_ request: AggregateRequest, model: ObjectModel) throws(StoreError) {
        let entity = request.entityName
        func refuse(_ message: String) -> StoreError { StoreError(.invalidRequest, message, entity: entity) }
        guard model.entity(named: entity) != nil else {
            throw StoreError(.notFound, "the model has no entity '\(entity)'", entity: entity)
        }
        guard !request.columnNames.isEmpty else {
            throw refuse("an aggregate fetch needs at least one grouping property or expression")
        }
        var names: Set<String> = []
        var columns: [(name: String, column: Column)] = []
        for name in request.propertiesToGroupBy {
            guard names.insert(name).inserted else { throw refuse("the column '\(name)' is named twice") }
            if let attribute = model.attribute(name, of: entity), Self.groups(attribute.type), !attribute.isComposite {
                columns.append((name, .attribute(attribute)))
            } else if let relationship = model.relationship(name, of: entity), !relationship.isToMany {
                columns.append((name, .toOne(relationship)))
            } else if let attribute = model.attribute(name, of: entity) {
                throw refuse(
                    "cannot group by '\(name)': a \(attribute.isComposite ? "composite" : attribute.type.rawValue) attribute has no grouping"
                )
            } else {
                throw refuse("cannot group by '\(name)': not an attribute or to-one relationship of \(entity)")
            }
        }
        var operands: [Operand] = []
        for expression in request.expressions {
            guard !expression.name.isEmpty else { throw refuse("an aggregate expression has no name") }
            guard names.insert(expression.name).inserted else {
                throw refuse("the column '\(expression.name)' is named twice")
            }
            operands.append(try Self.operand(expression, entity: entity, model: model))
        }
        if let having = request.havingPredicate {
            for key in having.keyPaths where !names.contains(key) {
                throw refuse(
                    "the having predicate names '\(key)', which is not a column of the result (\(request.columnNames.joined(separator: ", ")))"
                )
            }
        }
        for key in request.sortDescriptors.map(\.key) where !names.contains(key) {
            throw refuse(
                "cannot sort by '\(key)': not a column of the result (\(request.columnNames.joined(separator: ", ")))")
        }
        guard request.fetchOffset >= 0, (request.fetchLimit ?? 0) >= 0 else {
            throw refuse("an aggregate fetch's limit and offset cannot be negative")
        }
        self.request = request
        self.columns = columns
        self.operands = operands
    }

    /// Whether attributes of `type` can be grouped by (binary and JSON values cannot).
    static func groups(_ type: AttributeType) -> Bool { type != .binary && type != .json }

    private static func operand(_ expression: AggregateExpression, entity: String, model: ObjectModel)
        throws(StoreError) -> Operand
    {
        let function = expression.function
        guard let key = expression.keyPath else {
            guard function == .count else {
                throw StoreError(
                    .invalidRequest, "\(function.expressionName) needs an attribute (only @count counts the objects)",
                    entity: entity)
            }
            return .objects
        }
        if let attribute = model.attribute(key, of: entity), !attribute.isComposite {
            guard function.applies(to: attribute.type) else {
                throw StoreError(
                    .invalidRequest,
                    "\(function.expressionName) does not apply to '\(key)', a \(attribute.type.rawValue) attribute (sum and avg take numbers, min and max numbers, dates and strings)",
                    entity: entity, fields: [key])
            }
            return .attribute(attribute)
        }
        if function == .count, let relationship = model.relationship(key, of: entity), !relationship.isToMany {
            return .toOne(relationship)
        }
        throw StoreError(
            .invalidRequest,
            "\(function.expressionName) of '\(key)': not an attribute of \(entity)\(function == .count ? " or a to-one relationship" : "")",
            entity: entity, fields: [key])
    }

    /// The type of what expression `index` reads; nil for objects and relationships.
    func type(of index: Int) -> AttributeType? {
        if case .attribute(let attribute) = operands[index] { return attribute.type }
        return nil
    }

    /// The rows of `groups`: each expression finished, the having predicate applied, sorted (ties
    /// by the grouping columns ascending) and windowed.
    func rows(_ groups: [AggregateGroup]) throws(StoreError) -> [AggregateRow] {
        var rows: [AggregateRow] = []
        rows.reserveCapacity(groups.count)
        for group in groups {
            var row = AggregateRow(values: group.values, objectIDs: group.objectIDs)
            for (index, expression) in request.expressions.enumerated() {
                row.values[expression.name] = try finish(group.partials[index], expression, type(of: index))
            }
            if let having = request.havingPredicate {
                do {
                    guard try having.evaluate({ key in .value(row[key]) }) else { continue }
                } catch let error as PredicateError {
                    throw StoreError(error, storeURL: nil, entity: request.entityName)
                } catch {
                    throw StoreError(.invalidRequest, "\(error)", entity: request.entityName)
                }
            }
            rows.append(row)
        }
        let order = request.sortDescriptors + columns.map { SortKey($0.name) }
        rows.sort { lhs, rhs in
            for key in order {
                let result = ValueOrdering.sortOrder(
                    lhs[key.key], rhs[key.key], caseInsensitive: key.caseInsensitive)
                if result != 0 { return key.ascending ? result < 0 : result > 0 }
            }
            return false
        }
        let start = min(request.fetchOffset, rows.count)
        let end = request.fetchLimit.map { start + min(rows.count - start, $0) } ?? rows.count
        return Array(rows[start..<end])
    }

    /// An expression's result from its partial.
    private func finish(_ partial: AggregatePartial, _ expression: AggregateExpression, _ type: AttributeType?)
        throws(StoreError) -> AttributeValue
    {
        switch (partial, expression.function) {
        case (.count(let count), _): return .integer(Int64(count))
        case (.extreme(let value), _): return value
        case (.integerSum(_, 0), _), (.doubleSum(_, 0), _), (.decimalSum(_, 0), _): return .null
        case (.integerSum(let sum, let count), .average): return .double(Double(sum) / Double(count))
        case (.integerSum(let sum, _), _):
            guard let value = Int64(exactly: sum) else {
                throw StoreError(
                    .invalidRequest,
                    "the sum of '\(expression.keyPath ?? "")' in a group is \(sum), past the 64-bit integer range; ask for its average, or sum fewer objects",
                    entity: request.entityName, fields: [expression.name])
            }
            return .integer(value)
        case (.doubleSum(let sum, let count), .average): return .double(sum / Double(count))
        case (.doubleSum(let sum, _), _): return .double(sum)
        case (.decimalSum(var sum, let count), .average):
            var divisor = Decimal(count)
            var mean = Decimal()
            _ = NSDecimalDivide(&mean, &sum, &divisor, .plain)
            return .decimal(mean)
        case (.decimalSum(let sum, _), _): return .decimal(sum)
        }
    }
}

/// What one store computed for one expression of one group, before it is finished into a value.
enum AggregatePartial: Sendable, Hashable {
    /// A count.
    case count(Int)
    /// The exact sum of integers, and how many were added.
    case integerSum(Int128, Int)
    /// The sum of doubles, and how many were added.
    case doubleSum(Double, Int)
    /// The exact sum of decimals, and how many were added.
    case decimalSum(Decimal, Int)
    /// The least or greatest value (null when none).
    case extreme(AttributeValue)
}

/// One group as a store computed it: its grouping columns' values and each expression's partial.
struct AggregateGroup: Sendable {
    var values: [String: AttributeValue]
    var objectIDs: [String: ObjectID] = [:]
    var partials: [AggregatePartial]
}

extension AggregatePartial {
    /// The significant digits a decimal surely keeps (`Decimal`'s precision: 38, some values 39).
    static let decimalDigits = 38

    /// A decimal sum read from a database's exact text.
    /// - Throws: for a sum a decimal cannot hold exactly (past ``decimalDigits`` significant digits).
    static func decimalSum(text: String, count: Int, key: String, entity: String) throws(StoreError)
        -> AggregatePartial
    {
        guard let parts = AttributeValue.decimalParts(text), let value = Decimal(string: text) else {
            throw StoreError(.io, "the database answered '\(text)' for a decimal sum", entity: entity)
        }
        // Exact only when the decimal keeps every digit of the database's exact sum.
        guard let kept = AttributeValue.decimalParts(value.description), kept.digits == parts.digits,
            kept.exponent == parts.exponent
        else { throw decimalOverflow(key, entity: entity) }
        return .decimalSum(value, count)
    }

    /// The error for a decimal sum past ``decimalDigits`` significant digits.
    static func decimalOverflow(_ key: String, entity: String) -> StoreError {
        StoreError(
            .invalidRequest,
            "the sum of '\(key)' in a group needs more than \(decimalDigits) significant digits, past what a decimal holds exactly",
            entity: entity, fields: [key])
    }
}

extension FetchPredicate {
    /// Every key path the predicate reads.
    var keyPaths: [String] {
        switch self {
        case .always, .never: return []
        case .not(let item): return item.keyPaths
        case .and(let items), .or(let items): return items.flatMap(\.keyPaths)
        case .comparison(let comparison): return comparison.lhs.keyPaths + comparison.rhs.keyPaths
        case .textSearch(let search): return [search.keyPath]
        }
    }
}

extension PredicateTerm {
    fileprivate var keyPaths: [String] {
        switch self {
        case .keyPath(let path): [path]
        case .list(let items): items.flatMap(\.keyPaths)
        default: []
        }
    }
}
