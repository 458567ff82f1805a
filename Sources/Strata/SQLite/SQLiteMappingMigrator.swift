import Foundation

/// Runs a migration step that a ``MappingModel`` describes on an SQLite store, inside the
/// migration's open transaction, as Core Data's migration manager does: every object of the
/// source version is read, each entity mapping (in order) makes a destination object of each
/// object of its source entity (keeping its primary key when the destination table has it free),
/// sets its attributes from their value expressions, then its relationships, each related source
/// object becoming the destination object its entity mapping made of it. The old tables are then
/// replaced by the destination version's. The objects of the store are held in memory while the
/// step runs.
enum SQLiteMappingMigrator {
    /// A source or destination object: its table and primary key.
    struct Key: Hashable {
        var table: String
        var pk: Int64
    }

    struct Object {
        var entity: String
        /// Property name (attributes) or column name (destination objects) → value.
        var values: [String: SQLiteValue] = [:]
        /// Source objects: to-one relationship → related object.
        var toOne: [String: Key] = [:]
    }

    /// The objects of the store as the source version holds them.
    struct SourceGraph {
        let model: ObjectModel
        let schema: SQLiteSchema
        var objects: [Key: Object] = [:]
        var byEntity: [String: [Key]] = [:]
        /// Related object → to-one relationship → the objects that point at it.
        var reverse: [Key: [String: [Key]]] = [:]
        /// Join table → source key → targets in order, and target key → sources.
        var forward: [String: [Int64: [Int64]]] = [:]
        var backward: [String: [Int64: [Int64]]] = [:]

        /// The objects relationship `name` of `key` holds.
        func related(_ key: Key, _ name: String) -> [Key] {
            guard let object = objects[key] else { return [] }
            switch model.storage(of: name, in: object.entity) {
            case .foreignKey?: return object.toOne[name].map { [$0] } ?? []
            case .inverseForeignKey(let inverse)?: return reverse[key]?[inverse] ?? []
            case .joinTable(let join, let isSource)?:
                guard let table = schema.table(for: isSource ? join.targetEntity : join.sourceEntity) else { return [] }
                let pks = (isSource ? forward : backward)[join.name]?[key.pk] ?? []
                return pks.map { Key(table: table.name, pk: $0) }.filter { objects[$0] != nil }
            case nil: return []
            }
        }

        /// The objects `path` reaches from `key` (union operators only gather).
        func objects(_ path: [String], from key: Key) -> [Key] {
            var current = [key]
            for component in path where !MappingPlanner.unionOperators.contains(component) {
                var next: [Key] = []
                var seen: Set<Key> = []
                for item in current {
                    for related in related(item, component) where seen.insert(related).inserted { next.append(related) }
                }
                current = next
            }
            return current
        }

        /// The value `path` reaches from `key`: an attribute through to-one relationships, or `@count`.
        func value(_ path: [String], from key: Key) -> SQLiteValue {
            if path.last == "@count" { return .integer(Int64(objects(Array(path.dropLast()), from: key).count)) }
            guard let last = path.last, let holder = objects(Array(path.dropLast()), from: key).first else {
                return .null
            }
            return objects[holder]?.values[last] ?? .null
        }
    }

    /// Applies `step` (which has a mapping model) on `db`; the transaction is open.
    static func apply(_ step: MigrationStep, db: SQLiteConnection) throws(SQLiteError) {
        guard let mapping = step.mappingModel else { return }
        let oldSchema = SQLiteSchema(model: step.old, entities: step.oldEntities)
        let newSchema = SQLiteSchema(model: step.new, entities: step.newEntities)
        let graph = try read(oldSchema, db: db)
        let builder = Builder(step: step, mapping: mapping, graph: graph, schema: newSchema)
        do {
            try builder.run()
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw failure("a migration policy failed: \(error)")
        }
        try builder.checkRequired()
        for table in oldSchema.tables.values.map(\.name).sorted() + oldSchema.joinTables.map(\.name) {
            try db.execute("DROP TABLE IF EXISTS \(SQLiteSchema.quote(table))")
        }
        for statement in newSchema.createStatements { try db.execute(statement) }
        try write(builder, schema: newSchema, db: db)
    }

    /// Reads every object and join table of `schema`.
    private static func read(_ schema: SQLiteSchema, db: SQLiteConnection) throws(SQLiteError) -> SourceGraph {
        var graph = SourceGraph(model: schema.model, schema: schema)
        for table in schema.tables.values.sorted(by: { $0.name < $1.name }) {
            let columns = ["\"_pk\"", "\"_entity\""] + table.columns.map { SQLiteSchema.quote($0.name) }
            let index = Dictionary(
                table.columns.enumerated().map { ($1.name, Int32($0 + 2)) }, uniquingKeysWith: { first, _ in first })
            let rows: [(Key, Object)] = try sqlite {
                try db.query(
                    "SELECT \(columns.joined(separator: ", ")) FROM \(SQLiteSchema.quote(table.name)) ORDER BY \"_pk\""
                ) { row in
                    var object = Object(entity: row.text(1))
                    for column in schema.columnsByEntity[object.entity] ?? [] {
                        guard let at = index[column.name] else { continue }
                        switch column {
                        case .attribute(let attribute): object.values[attribute.name] = row.value(at)
                        case .foreignKey(let relationship):
                            guard !row.isNull(at), let destination = schema.table(for: relationship.destination)
                            else { continue }
                            object.toOne[relationship.name] = Key(table: destination.name, pk: row.int64(at))
                        }
                    }
                    return (Key(table: table.name, pk: row.int64(0)), object)
                }
            }
            for (key, object) in rows {
                graph.objects[key] = object
                graph.byEntity[object.entity, default: []].append(key)
                for (name, target) in object.toOne {
                    graph.reverse[target, default: [:]][name, default: []].append(key)
                }
            }
        }
        for join in schema.joinTables {
            let pairs: [(Int64, Int64)] = try sqlite {
                try db.query(
                    "SELECT \"source\", \"target\" FROM \(SQLiteSchema.quote(join.name)) ORDER BY \"source\", \"position\", \"target\""
                ) { ($0.int64(0), $0.int64(1)) }
            }
            for (source, target) in pairs {
                graph.forward[join.name, default: [:]][source, default: []].append(target)
                graph.backward[join.name, default: [:]][target, default: []].append(source)
            }
        }
        return graph
    }

    /// Inserts the destination objects and join-table pairs.
    private static func write(_ builder: Builder, schema: SQLiteSchema, db: SQLiteConnection) throws(SQLiteError) {
        for key in builder.order {
            let object = builder.objects[key]!
            let columns = (schema.columnsByEntity[object.entity] ?? []).map(\.name)
            let names = ["\"_pk\"", "\"_entity\"", "\"_version\""] + columns.map { SQLiteSchema.quote($0) }
            let values: [SQLiteValue] =
                [.integer(key.pk), .text(object.entity), .integer(1)] + columns.map { object.values[$0] ?? .null }
            try db.run(
                "INSERT INTO \(SQLiteSchema.quote(key.table)) (\(names.joined(separator: ", "))) VALUES (\(values.map { _ in "?" }.joined(separator: ", ")))",
                values)
        }
        for join in schema.joinTables {
            let pairs = builder.pairs[join.name] ?? []
            let positions = places(
                of: pairs, by: { $0.source }, given: builder.sourcePlaces[join.name] ?? [:])
            let targetPositions = places(
                of: pairs, by: { $0.target }, given: builder.targetPlaces[join.name] ?? [:])
            for (index, pair) in pairs.enumerated() {
                var columns = "\"source\", \"target\", \"position\""
                var values: [SQLiteValue] = [
                    .integer(pair.source), .integer(pair.target), .integer(Int64(positions[index])),
                ]
                if join.isTargetOrdered {
                    columns += ", \"target_position\""
                    values.append(.integer(Int64(targetPositions[index])))
                }
                try db.run(
                    "INSERT OR IGNORE INTO \(SQLiteSchema.quote(join.name)) (\(columns)) VALUES (\(values.map { _ in "?" }.joined(separator: ", ")))",
                    values)
            }
        }
    }

    /// Each pair's place in the list of the object `owner` names: the order the relationship
    /// mapping of that side gave (`given`), then, for pairs only the other side linked, the order
    /// they were linked in.
    private static func places(
        of pairs: [(source: Int64, target: Int64)], by owner: ((source: Int64, target: Int64)) -> Int64,
        given: [[Int64]: Int]
    ) -> [Int] {
        var byOwner: [Int64: [Int]] = [:]
        for (index, pair) in pairs.enumerated() { byOwner[owner(pair), default: []].append(index) }
        var result = [Int](repeating: 0, count: pairs.count)
        for indexes in byOwner.values {
            let sorted = indexes.sorted { first, second in
                let a = given[[pairs[first].source, pairs[first].target]] ?? Int.max
                let b = given[[pairs[second].source, pairs[second].target]] ?? Int.max
                return (a, first) < (b, second)
            }
            for (place, index) in sorted.enumerated() { result[index] = place }
        }
        return result
    }

    /// A column value as an attribute value of `type`.
    static func decode(_ value: SQLiteValue, _ type: AttributeType) -> AttributeValue {
        switch (value, type) {
        case (.null, _): return .null
        case (.integer(let i), .boolean): return .boolean(i != 0)
        case (.integer(let i), .date): return .date(AttributeValue.date(microseconds: i))
        case (.integer(let i), .double), (.integer(let i), .float): return .double(Double(i))
        case (.integer(let i), _): return .integer(i)
        case (.real(let d), _): return .double(d)
        case (.text(let s), .decimal): return Decimal(string: s).map { .decimal($0) } ?? .null
        case (.text(let s), .uuid): return UUID(uuidString: s).map { .uuid($0) } ?? .null
        case (.text(let s), .uri): return .uri(s)
        case (.text(let s), .json): return (try? JSONValue.parse(s)).map { .json($0) } ?? .null
        case (.text(let s), _): return .string(s)
        case (.blob(let data), _): return .binary(data)
        }
    }

    static func failure(_ message: String) -> SQLiteError {
        SQLiteError(code: SQLiteResultCode.error.rawValue, message: message)
    }

    /// Runs an SQLite call that throws untyped errors, rethrowing its `SQLiteError`.
    static func sqlite<T>(_ body: () throws -> T) throws(SQLiteError) -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw failure("\(error)")
        }
    }
}
