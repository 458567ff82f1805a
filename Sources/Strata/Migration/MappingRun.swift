import Foundation

/// A migration step that a ``MappingModel`` describes, as every SQL store runs it, whatever its
/// database: Core Data's migration manager's work. Every object of the source version is read
/// into a ``SourceGraph`` (the store's migrator reads its tables), each entity mapping (in order)
/// makes a destination object of each object of its source entity (keeping its primary key when
/// the destination table has it free), sets its attributes from their value expressions, then its
/// relationships, each related source object becoming the destination object its entity mapping
/// made of it (``Builder``). The store's migrator then replaces the old tables by the destination
/// version's and writes ``Builder/row(_:)`` and ``Builder/joinRows(_:)`` into them. The objects
/// of the store are held in memory while the step runs.
///
/// Both SQL stores lay their tables out alike (``SQLiteSchema``), and values are held in the form
/// an SQLite column holds them (``SQLiteValue``, as ``SQLiteSchema/encode(_:)`` writes an
/// attribute's value): a store that keeps them otherwise converts them as it reads and writes
/// (``decode(_:_:)``), so that an expression gives the same value in every store.
enum MappingRun {
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

    /// Why a mapping step cannot finish; the step's transaction is rolled back.
    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static func failure(_ message: String) -> Failure { Failure(message: message) }

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

        init(_ schema: SQLiteSchema) {
            model = schema.model
            self.schema = schema
        }

        /// Adds the object of `entity` stored in the row `key` names, whose columns hold `cells`
        /// (by column name; a column of another entity of the table is not read).
        mutating func add(_ key: Key, entity: String, cells: [String: SQLiteValue]) {
            var object = Object(entity: entity)
            for column in schema.columnsByEntity[entity] ?? [] {
                guard let cell = cells[column.name] else { continue }
                switch column {
                case .attribute(let attribute): object.values[attribute.name] = cell
                case .foreignKey(let relationship):
                    guard cell != .null, let destination = schema.table(for: relationship.destination) else {
                        continue
                    }
                    object.toOne[relationship.name] = Key(table: destination.name, pk: cell.key)
                }
            }
            objects[key] = object
            byEntity[entity, default: []].append(key)
            for (name, target) in object.toOne { reverse[target, default: [:]][name, default: []].append(key) }
        }

        /// Adds the pairs of join table `join`, each with its place in its source's list and in
        /// its target's (read where the target's side is ordered, else 0). Each source's targets
        /// are in its order; each target's sources in its order when that side is ordered, else
        /// by key (as a store reads them).
        mutating func addPairs(
            _ join: JoinTableDescription,
            _ pairs: [(source: Int64, target: Int64, position: Int64, targetPosition: Int64)]
        ) {
            for pair in pairs.sorted(by: { ($0.source, $0.position, $0.target) < ($1.source, $1.position, $1.target) })
            {
                forward[join.name, default: [:]][pair.source, default: []].append(pair.target)
            }
            let byTarget = pairs.sorted {
                join.isTargetOrdered
                    ? ($0.target, $0.targetPosition, $0.source) < ($1.target, $1.targetPosition, $1.source)
                    : ($0.target, $0.source) < ($1.target, $1.source)
            }
            for pair in byTarget { backward[join.name, default: [:]][pair.target, default: []].append(pair.source) }
        }

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
}

extension SQLiteValue {
    /// The key a foreign-key column holds (as SQLite reads an integer from a column).
    fileprivate var key: Int64 {
        switch self {
        case .integer(let i): i
        case .real(let d): Int64(exactly: d.rounded(.towardZero)) ?? 0
        case .text(let s): Int64(s) ?? 0
        case .null, .blob: 0
        }
    }
}
