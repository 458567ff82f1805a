import Foundation

/// How a store's entities map to PostgreSQL tables, in a schema (namespace) of the store's own:
/// the same layout as ``SQLiteSchema`` (one table per hierarchy with `_pk`, `_entity`, `_version`,
/// a column per attribute and to-one relationship, join tables with `position` and
/// `target_position`), with PostgreSQL types chosen so that SQL compares and sorts as Strata does
/// (``ValueOrdering``): text and URIs as `bytea` (byte order, and a NUL is a character like any
/// other), Booleans as 0/1 and dates as microseconds in `bigint`, decimals in unconstrained
/// `numeric` (which holds every value `NSDecimalNumber` does exactly, and compares them as numbers;
/// written and read as their digits, never through a double), UUIDs as lower-case text.
struct PostgreSQLSchema: Sendable {
    let base: SQLiteSchema
    /// The PostgreSQL schema holding the store's tables.
    let namespace: String

    /// ``relatedQuery(of:in:)``, worked out once.
    private let relatedQueries: [String: [String: (sql: String, destination: String)]]
    /// ``keyedRead(of:)``, worked out once.
    private let keyedReads: [String: KeyedRead]

    /// One statement reading an object by key (`$1`) with the keys of each of its to-many
    /// relationships, in order, as an array column after the row's own: the object and its
    /// relationships in one round trip and one snapshot.
    struct KeyedRead: Sendable {
        let sql: String
        /// The column of the first relationship's keys.
        let firstList: Int
        /// The to-many relationships in the order of their columns, with their destination (nil:
        /// nothing to read, the relationship is empty).
        let lists: [(name: String, destination: String?)]
        /// Whether a to-one relationship leads into a table of several entities, whose keys'
        /// entities decoding the row looks up.
        let needsLookups: Bool
    }

    init(model: ObjectModel, entities: [String], namespace: String) {
        base = SQLiteSchema(model: model, entities: entities)
        self.namespace = namespace
        var queries: [String: [String: (sql: String, destination: String)]] = [:]
        var keyed: [String: KeyedRead] = [:]
        for entity in entities {
            var lists: [(name: String, destination: String?)] = []
            var listings: [String] = []
            // A key of a destination sharing its table with other entities needs its own lookup.
            var single = base.table(for: entity)?.entities.count == 1
            for relationship in model.relationships(of: entity) where relationship.isToMany {
                guard let (sql, destination) = Self.relatedSQL(base, namespace, relationship.name, entity, key: "$1")
                else {
                    lists.append((relationship.name, nil))
                    continue
                }
                queries[entity, default: [:]][relationship.name] = (sql, destination)
                let table = base.table(for: destination)
                if (table?.entities.count ?? 1) != 1 { single = false }
                lists.append((relationship.name, destination))
                if let (inner, _) = Self.relatedSQL(base, namespace, relationship.name, entity, key: "t.\"_pk\"") {
                    listings.append("ARRAY(\(inner))")
                }
            }
            guard single, let table = base.table(for: entity) else { continue }
            let qualified = Self.quote(namespace) + "." + Self.quote(table.name)
            let columns = Self.selectList(table, alias: "t")
            keyed[entity] = KeyedRead(
                sql:
                    "SELECT \(([columns] + listings).joined(separator: ", ")) FROM \(qualified) AS t WHERE t.\"_pk\" = $1",
                firstList: 3 + table.columns.count, lists: lists,
                needsLookups: base.rowPlans[entity]?.foreignKeys.contains { $0.info.destinationIsHierarchy } ?? true)
        }
        relatedQueries = queries
        keyedReads = keyed
    }

    /// The statement reading object `$1` of `entity` with its to-many relationships; nil when the
    /// entity shares its table or one of them leads to an entity that does.
    func keyedRead(of entity: String) -> KeyedRead? { keyedReads[entity] }

    static func quote(_ identifier: String) -> String { SQLiteSchema.quote(identifier) }

    /// A PostgreSQL array literal of `items` (`{"a","b"}`), for `= ANY($1::text[])`.
    static func arrayLiteral(_ items: [String]) -> String {
        let quoted = items.map { (item: String) -> String in
            let escaped = item.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            return "\"\(escaped)\""
        }
        return "{\(quoted.joined(separator: ","))}"
    }

    /// A table (or sequence) of the store, qualified by its schema.
    func qualified(_ name: String) -> String { Self.quote(namespace) + "." + Self.quote(name) }

    static let metadataTable = "_strata_metadata"
    static let recordsTable = "_strata_cross_saves"
    static let appliedTable = "_strata_applied_saves"

    /// The sequence issuing a hierarchy's keys.
    func sequence(of table: String) -> String { qualified("_seq_" + table) }

    static func sqlType(_ column: SQLiteSchema.Column) -> String {
        switch column {
        case .foreignKey: return "bigint"
        case .attribute(let attribute): return sqlType(attribute.type)
        }
    }

    static func sqlType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean, .date: "bigint"
        case .double, .float: "double precision"
        case .string, .uri, .binary: "bytea"
        case .decimal: "numeric"
        case .uuid, .json: "text"
        }
    }

    /// Every statement that creates the store's schema, tables, sequences and indexes.
    var createStatements: [String] {
        var statements = [
            "CREATE SCHEMA IF NOT EXISTS \(Self.quote(namespace))",
            "CREATE TABLE \(qualified(Self.metadataTable)) (key text PRIMARY KEY, value text NOT NULL)",
            "CREATE TABLE \(qualified(Self.recordsTable)) (id text PRIMARY KEY, record text NOT NULL, at bigserial)",
            "CREATE TABLE \(qualified(Self.appliedTable)) (id text PRIMARY KEY, commit_point text NOT NULL)",
        ]
        for table in base.tables.values.sorted(by: { $0.name < $1.name }) {
            let columns =
                ["\"_pk\" bigint PRIMARY KEY", "\"_entity\" text NOT NULL", "\"_version\" bigint NOT NULL"]
                + table.columns.map { "\(Self.quote($0.name)) \(Self.sqlType($0))" }
            statements.append("CREATE TABLE \(qualified(table.name)) (\(columns.joined(separator: ", ")))")
            statements.append("CREATE SEQUENCE \(sequence(of: table.name)) INCREMENT BY \(PostgreSQLStore.keyBlock)")
            statements += indexStatements(table)
            statements += fullTextStatements(table)
        }
        for join in base.joinTables {
            let targetPosition = join.isTargetOrdered ? ", \"target_position\" bigint NOT NULL DEFAULT 0" : ""
            statements.append(
                "CREATE TABLE \(qualified(join.name)) (\"source\" bigint NOT NULL, \"target\" bigint NOT NULL, \"position\" bigint NOT NULL DEFAULT 0\(targetPosition), PRIMARY KEY (\"source\", \"target\"))"
            )
            statements.append(
                "CREATE INDEX \(Self.quote(join.name + "_target")) ON \(qualified(join.name)) (\"target\")")
        }
        return statements
    }

    /// The indexes of one hierarchy's table: foreign keys, uniqueness constraints, fetch indexes.
    func indexStatements(_ table: SQLiteSchema.Table) -> [String] {
        var statements: [String] = []
        for column in table.columns {
            if case .foreignKey = column {
                statements.append(
                    "CREATE INDEX \(Self.quote("_fk_\(table.name)_\(column.name)")) ON \(qualified(table.name)) (\(Self.quote(column.name)))"
                )
            }
        }
        for entity in table.entities {
            guard let description = base.model.entity(named: entity) else { continue }
            let family = base.model.entityAndSubentities(of: entity).filter { base.entities.contains($0) }
            let partial =
                family.count == table.entities.count
                ? ""
                : " WHERE \"_entity\" IN (\(family.map { "'\($0.replacingOccurrences(of: "'", with: "''"))'" }.joined(separator: ", ")))"
            for (index, group) in description.uniqueness.enumerated() {
                statements.append(
                    "CREATE UNIQUE INDEX \(Self.quote("_unique_\(entity)_\(index)")) ON \(qualified(table.name)) (\(group.map { Self.quote(base.model.columnName(of: $0, in: entity)) }.joined(separator: ", ")))\(partial)"
                )
            }
            for index in description.indexes {
                let columns = index.properties.map {
                    Self.quote(base.model.columnName(of: $0, in: entity))
                        + (index.descending.contains($0) ? " DESC" : "")
                }
                statements.append(
                    "CREATE INDEX \(Self.quote("\(entity)_\(index.name)")) ON \(qualified(table.name)) (\(columns.joined(separator: ", ")))"
                )
            }
        }
        return statements
    }

    // MARK: - Values

    static func encode(_ value: AttributeValue) -> PGValue {
        switch value {
        case .null: .null
        case .string(let s), .uri(let s): .bytes(Data(s.utf8))
        case .integer(let i): .integer(i)
        case .double(let d): .double(d)
        case .decimal(let d): .text(d.description)
        case .boolean(let b): .integer(b ? 1 : 0)
        case .date(let date): .integer(AttributeValue.microseconds(of: date))
        case .binary(let data): .bytes(data)
        case .uuid(let uuid): .text(uuid.uuidString.lowercased())
        case .json(let json): .text(json.jsonText)
        }
    }

    static func decode(_ text: String?, as type: AttributeType) -> AttributeValue {
        guard let text else { return .null }
        switch type {
        case .string: return .string(String(decoding: PGConnection.bytes(text), as: UTF8.self))
        case .uri: return .uri(String(decoding: PGConnection.bytes(text), as: UTF8.self))
        case .integer16, .integer32, .integer64: return Int64(text).map { .integer($0) } ?? .null
        case .double, .float:
            switch text {
            case "Infinity": return .double(.infinity)
            case "-Infinity": return .double(-.infinity)
            case "NaN": return .double(.nan)
            default: return Double(text).map { .double($0) } ?? .null
            }
        case .decimal: return Decimal(string: text).map { .decimal($0) } ?? .null
        case .boolean: return .boolean(text != "0")
        case .date: return Int64(text).map { .date(AttributeValue.date(microseconds: $0)) } ?? .null
        case .binary: return .binary(PGConnection.bytes(text))
        case .uuid: return UUID(uuidString: text).map { .uuid($0) } ?? .null
        case .json: return (try? JSONValue.parse(Array(text.utf8))).map { .json($0) } ?? .null
        }
    }

    /// `SELECT "_pk", "_entity", "_version", columns…` of a hierarchy's table, aliased `alias`.
    func selectList(_ table: SQLiteSchema.Table, alias: String) -> String { Self.selectList(table, alias: alias) }

    static func selectList(_ table: SQLiteSchema.Table, alias: String) -> String {
        (["_pk", "_entity", "_version"] + table.columns.map(\.name)).map { "\(alias).\(quote($0))" }.joined(
            separator: ", ")
    }

    /// The query reading the keys a to-many relationship of one object holds, in order (`$1` the
    /// object's key), and the keys' entity; nil for a relationship kept on the other side's column.
    func relatedQuery(of name: String, in entity: String) -> (sql: String, destination: String)? {
        relatedQueries[entity]?[name]
    }

    /// ``relatedQuery(of:in:)`` with the object's key given by the SQL expression `key`; ordered by
    /// position, then by key (as ``SQLiteSchema/RelatedRead`` orders them).
    private static func relatedSQL(
        _ base: SQLiteSchema, _ namespace: String, _ name: String, _ entity: String, key: String
    ) -> (sql: String, destination: String)? {
        let model = base.model
        guard let relationship = model.relationship(name, of: entity), relationship.isToMany else { return nil }
        let destination = relationship.destination
        func qualified(_ table: String) -> String { quote(namespace) + "." + quote(table) }
        switch model.storage(of: name, in: entity) {
        case .inverseForeignKey(let inverse)?:
            guard let table = base.tables[model.rootEntity(of: destination)] else { return nil }
            return (
                "SELECT r.\"_pk\" FROM \(qualified(table.name)) AS r WHERE r.\(quote(inverse)) = \(key) ORDER BY r.\"_pk\"",
                destination
            )
        case .joinTable(let join, let isSource)?:
            return (
                isSource
                    ? "SELECT r.\"target\" FROM \(qualified(join.name)) AS r WHERE r.\"source\" = \(key) ORDER BY r.\"position\", r.\"target\""
                    : "SELECT r.\"source\" FROM \(qualified(join.name)) AS r WHERE r.\"target\" = \(key) ORDER BY "
                        + (join.isTargetOrdered ? "r.\"target_position\", r.\"source\"" : "r.\"source\""),
                destination
            )
        default: return nil
        }
    }

    /// The keys of a bigint array in PostgreSQL's text form (`{1,2,3}`).
    static func keys(_ text: String?) -> [Int64] {
        guard let text else { return [] }
        var keys: [Int64] = []
        var value: Int64 = 0
        var negative = false
        var digits = false
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = value &* 10 &+ Int64(byte - UInt8(ascii: "0"))
                digits = true
            case UInt8(ascii: "-"): negative = true
            default:
                if digits { keys.append(negative ? -value : value) }
                value = 0
                negative = false
                digits = false
            }
        }
        return keys
    }
}
