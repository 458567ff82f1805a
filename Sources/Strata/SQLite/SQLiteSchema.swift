import Foundation

/// How a store's entities map to SQLite tables: one table per inheritance hierarchy (named after
/// its root entity) with `_pk`, `_entity` and `_version` columns, one column per attribute, one per
/// to-one relationship, and a join table per many-to-many or ordered to-many relationship.
struct SQLiteSchema: Sendable {
    /// A column of an entity table.
    enum Column: Sendable, Hashable {
        case attribute(AttributeDescription)
        case foreignKey(RelationshipDescription)

        var name: String {
            switch self {
            case .attribute(let attribute): attribute.columnName
            case .foreignKey(let relationship): relationship.name
            }
        }

        var sqlType: String {
            switch self {
            case .foreignKey: "INTEGER"
            case .attribute(let attribute):
                switch attribute.type {
                case .integer16, .integer32, .integer64, .boolean, .date: "INTEGER"
                case .double, .float: "REAL"
                case .binary: "BLOB"
                case .string, .decimal, .uuid, .uri, .json: "TEXT"
                }
            }
        }
    }

    /// What the per-row paths need of a column. A class, so that walking a row's columns copies
    /// one reference per column rather than a whole attribute description.
    final class ColumnInfo: Sendable {
        let name: String
        /// The attribute's type; nil for a foreign key.
        let type: AttributeType?
        /// For a foreign key: the related entity, and whether its table holds several entities
        /// (then the concrete one is looked up).
        let destination: String
        let destinationIsHierarchy: Bool

        init(_ column: Column, model: ObjectModel, tables: [String: Table]) {
            name = column.name
            switch column {
            case .attribute(let attribute):
                type = attribute.type
                destination = ""
                destinationIsHierarchy = false
            case .foreignKey(let relationship):
                type = nil
                destination = relationship.destination
                destinationIsHierarchy =
                    (tables[model.rootEntity(of: relationship.destination)]?.entities.count ?? 1) > 1
            }
        }
    }

    /// The table of one hierarchy.
    struct Table: Sendable {
        var name: String
        var columns: [Column]
        /// The concrete entities stored in it.
        var entities: [String]
        /// `columns` as ``ColumnInfo``s.
        var infos: [ColumnInfo] = []
    }

    let model: ObjectModel
    let entities: Set<String>
    let tables: [String: Table]
    let joinTables: [JoinTableDescription]
    /// The columns (in table order) that belong to each entity.
    let columnsByEntity: [String: [Column]]

    /// How to read or write one entity's row positionally.
    ///
    /// A class, as ``KeyedRead`` is: a read of a row takes one reference to it rather than a copy
    /// retaining each of its arrays.
    final class RowPlan: Sendable {
        /// The entity's attribute layout.
        let layout: AttributeLayout
        /// For each layout position: the attribute's column in its table (0-based) and its type.
        let attributes: [(column: Int32, type: AttributeType)]
        /// The entity's foreign-key columns, with their column in the table.
        let foreignKeys: [(column: Int32, info: ColumnInfo)]
        /// The to-one relationships of a row whose foreign keys are all NULL, built once: rows
        /// share it instead of each building the same dictionary.
        let emptyToOne: [String: ObjectID?]

        init(
            layout: AttributeLayout, attributes: [(column: Int32, type: AttributeType)],
            foreignKeys: [(column: Int32, info: ColumnInfo)]
        ) {
            self.layout = layout
            self.attributes = attributes
            self.foreignKeys = foreignKeys
            var empty: [String: ObjectID?] = [:]
            for (_, info) in foreignKeys { empty[info.name] = .some(nil) }
            emptyToOne = empty
        }
    }

    /// Each entity's ``RowPlan``.
    let rowPlans: [String: RowPlan]
    /// How each entity's to-many relationships are read (see ``RelatedRead``).
    let relatedReads: [String: [String: RelatedRead?]]
    /// ``relatedQuery(of:in:)``, worked out once.
    private let relatedQueries: [String: [String: (sql: SQLText, destination: String)?]]
    /// For each entity alone in its table whose to-many relationships all lead to entities alone in
    /// theirs: ``selectByKey`` with a ``RelatedRead/listing`` column per to-many relationship
    /// after the row's columns, and the relationships in that order (nil: nothing to read). One
    /// statement reads an object and its relationships in one snapshot, with no transaction around
    /// it.
    let selectWithToMany: [String: KeyedRead]

    /// A ``selectWithToMany`` statement, with what decoding its rows needs.
    final class KeyedRead: Sendable {
        let sql: SQLText
        /// The entity and its row plan.
        let only: (entity: String, plan: RowPlan)
        /// The column of the first relationship's keys (after the row's own).
        let firstList: Int32
        /// The to-many relationships, in the order of their columns.
        let lists: [(name: String, read: RelatedRead?)]

        init(
            sql: SQLText, only: (entity: String, plan: RowPlan), firstList: Int32,
            lists: [(name: String, read: RelatedRead?)]
        ) {
            self.sql = sql
            self.only = only
            self.firstList = firstList
            self.lists = lists
        }
    }
    /// `SELECT _pk, _entity, _version, columns… FROM table WHERE _pk = ?`, per table.
    let selectByKey: [String: SQLText]
    /// `INSERT INTO table (_pk, _entity, _version, the entity's columns…) VALUES (?, …)`, per entity.
    let insertByEntity: [String: SQLText]

    init(model: ObjectModel, entities: [String]) {
        self.model = model
        self.entities = Set(entities)
        var tables: [String: Table] = [:]
        var columnsByEntity: [String: [Column]] = [:]
        for entity in entities {
            let root = model.rootEntity(of: entity)
            var table = tables[root] ?? Table(name: root, columns: [], entities: [])
            table.entities.append(entity)
            var own: [Column] = model.attributes(of: entity).map { .attribute($0) }
            own += model.relationships(of: entity).filter { !$0.isToMany }.map { .foreignKey($0) }
            for column in own where !table.columns.contains(where: { $0.name == column.name }) {
                table.columns.append(column)
            }
            columnsByEntity[entity] = own
            tables[root] = table
        }
        for (name, table) in tables {
            tables[name]!.infos = table.columns.map { ColumnInfo($0, model: model, tables: tables) }
        }
        self.tables = tables
        self.columnsByEntity = columnsByEntity
        var plans: [String: RowPlan] = [:]
        for entity in entities {
            guard let layout = model.attributeLayout(of: entity), let table = tables[model.rootEntity(of: entity)]
            else { continue }
            let position = { (name: String) in Int32(table.columns.firstIndex { $0.name == name } ?? 0) }
            let attributes = Dictionary(
                model.attributes(of: entity).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            plans[entity] = RowPlan(
                layout: layout,
                attributes: layout.names.map { (position(attributes[$0]!.columnName), attributes[$0]!.type) },
                foreignKeys: table.infos.enumerated().filter { offset, info in
                    info.type == nil && (columnsByEntity[entity] ?? []).contains { $0.name == info.name }
                }.map { (Int32($0.offset), $0.element) })
        }
        rowPlans = plans
        let reads = Self.relatedReads(model: model, entities: entities, tables: tables)
        relatedReads = reads
        relatedQueries = reads.mapValues { $0.mapValues { $0.map { (SQLText($0.orderedSQL), $0.destination) } } }
        joinTables = model.joinTables(for: entities).filter { entities.contains($0.sourceEntity) }
        // Statements built once: the per-row paths only look them up.
        selectByKey = tables.mapValues { table in
            SQLText(
                "SELECT "
                    + (["\"_pk\"", "\"_entity\"", "\"_version\""] + table.columns.map { Self.quote($0.name) }).joined(
                        separator: ", ") + " FROM \(Self.quote(table.name)) WHERE \"_pk\" = ?")
        }
        var withToMany: [String: KeyedRead] = [:]
        for (name, table) in tables where table.entities.count == 1 {
            let entity = table.entities[0]
            guard let plan = plans[entity] else { continue }
            let lists = model.relationships(of: entity).filter(\.isToMany).map {
                ($0.name, reads[entity]?[$0.name] ?? nil)
            }
            // A key of a destination sharing its table with other entities needs its own lookup.
            guard lists.allSatisfy({ _, read in read?.destinationIsAlone ?? true }) else { continue }
            let columns = ["\"_pk\"", "\"_entity\"", "\"_version\""] + table.columns.map { Self.quote($0.name) }
            let listings = lists.compactMap { $0.1?.listing }
            withToMany[entity] = KeyedRead(
                sql: SQLText(
                    "SELECT \((columns + listings).joined(separator: ", ")) FROM \(Self.quote(name)) WHERE \"_pk\" = ?1"
                ),
                only: (entity, plan), firstList: Int32(columns.count), lists: lists)
        }
        selectWithToMany = withToMany
        var inserts: [String: SQLText] = [:]
        // Columns in the order the save binds them: attributes by layout, then foreign keys.
        for (entity, plan) in plans {
            let names =
                ["\"_pk\"", "\"_entity\"", "\"_version\""]
                + plan.layout.names.map { Self.quote(model.columnName(of: $0, in: entity)) }
                + plan.foreignKeys.map { Self.quote($0.info.name) }
            let table = Self.quote(model.rootEntity(of: entity))
            inserts[entity] = SQLText(
                "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
            )
        }
        insertByEntity = inserts
    }

    func table(for entity: String) -> Table? { tables[model.rootEntity(of: entity)] }

    /// The entity and plan of a table that holds one entity only.
    func onlyPlan(of table: Table) -> (entity: String, plan: RowPlan)? {
        guard table.entities.count == 1, let plan = rowPlans[table.entities[0]] else { return nil }
        return (table.entities[0], plan)
    }

    static func quote(_ identifier: String) -> String {
        guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
        return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The query reading the keys a to-many relationship of one object holds, in order, and the
    /// entity of the keys; nil for a relationship kept in a foreign key of this side.
    func relatedQuery(of name: String, in entity: String) -> (sql: SQLText, destination: String)? {
        relatedQueries[entity]?[name] ?? nil
    }

    /// How the keys one object's to-many relationship holds are read: from `table`, the `key`
    /// column of the rows whose `match` column holds the object's key, ordered by `position` and
    /// then the key (by the key alone when `position` is nil).
    ///
    /// SQLite reads them unordered (`unordered`, or the `listing` column of a keyed read) and
    /// ``sorted(_:)`` orders them: sorting one object's few keys costs less than the temporary
    /// B-tree SQLite builds for an `ORDER BY` on a position no index holds.
    struct RelatedRead: Sendable {
        let destination: String
        let table: String
        let key: String
        let match: String
        let position: String?
        /// Whether `destination` is alone in its table, so that a key names an object of
        /// `destination` itself (else each key's concrete entity is looked up).
        let destinationIsAlone: Bool
        /// `SELECT key[, position] FROM table WHERE match = ?`, built once.
        let unordered: SQLText

        init(
            destination: String, destinationIsAlone: Bool, table: String, key: String, match: String,
            position: String?
        ) {
            self.destination = destination
            self.destinationIsAlone = destinationIsAlone
            self.table = table
            self.key = key
            self.match = match
            self.position = position
            unordered = SQLText(
                "SELECT \(SQLiteSchema.quote(key))\(position.map { ", \(SQLiteSchema.quote($0))" } ?? "") FROM "
                    + "\(SQLiteSchema.quote(table)) WHERE \(SQLiteSchema.quote(match)) = ?")
        }

        /// `SELECT key FROM table WHERE match = ? ORDER BY …`.
        var orderedSQL: String {
            "SELECT \(SQLiteSchema.quote(key)) FROM \(SQLiteSchema.quote(table)) WHERE \(SQLiteSchema.quote(match)) = ? ORDER BY "
                + (position.map { "\(SQLiteSchema.quote($0)), \(SQLiteSchema.quote(key))" } ?? SQLiteSchema.quote(key))
        }

        /// A scalar subquery listing the keys of the object whose key is bound as `?1`, as
        /// `key,position,key,position…` (or `key,key…`), in no particular order; NULL when there
        /// are none.
        var listing: String {
            let item =
                position.map { "\(SQLiteSchema.quote(key)) || ',' || \(SQLiteSchema.quote($0))" }
                ?? SQLiteSchema.quote(key)
            return
                "(SELECT group_concat(\(item)) FROM \(SQLiteSchema.quote(table)) WHERE \(SQLiteSchema.quote(match)) = ?1)"
        }

        /// The keys of `values` (keys, or key and position pairs, as ``listing`` and ``unordered``
        /// give them) in the relationship's order.
        func sorted(_ values: [Int64]) -> [Int64] {
            guard position != nil else { return values.sorted() }
            var pairs: [(key: Int64, position: Int64)] = []
            pairs.reserveCapacity(values.count / 2)
            var index = 0
            while index + 1 < values.count {
                pairs.append((values[index], values[index + 1]))
                index += 2
            }
            pairs.sort { ($0.position, $0.key) < ($1.position, $1.key) }
            return pairs.map(\.key)
        }
    }

    /// For each entity, how each of its to-many relationships is read (nil for one kept in a
    /// foreign key of this side, which holds nothing to read here).
    static func relatedReads(model: ObjectModel, entities: [String], tables: [String: Table]) -> [String: [String:
        RelatedRead?]]
    {
        var reads: [String: [String: RelatedRead?]] = [:]
        for entity in entities {
            for relationship in model.relationships(of: entity) where relationship.isToMany {
                let destination = relationship.destination
                // A destination in another store has no table here; its keys name it.
                let alone = (tables[model.rootEntity(of: destination)]?.entities.count ?? 1) == 1
                var read: RelatedRead?
                switch model.storage(of: relationship.name, in: entity) {
                case .inverseForeignKey(let inverse)?:
                    if let table = tables[model.rootEntity(of: destination)] {
                        read = RelatedRead(
                            destination: destination, destinationIsAlone: alone, table: table.name, key: "_pk",
                            match: inverse, position: nil)
                    }
                case .joinTable(let join, let isSource)?:
                    read =
                        isSource
                        ? RelatedRead(
                            destination: destination, destinationIsAlone: alone, table: join.name, key: "target",
                            match: "source",
                            position: "position")
                        : RelatedRead(
                            destination: destination, destinationIsAlone: alone, table: join.name, key: "source",
                            match: "target",
                            position: join.isTargetOrdered ? "target_position" : nil)
                default: read = nil
                }
                reads[entity, default: [:]][relationship.name] = .some(read)
            }
        }
        return reads
    }

    /// The statements that create every table and index, and the full-text indexes
    /// (``SQLiteFullText``) last.
    var createStatements: [String] {
        var statements: [String] = []
        for table in tables.values.sorted(by: { $0.name < $1.name }) {
            let columns =
                ["\"_pk\" INTEGER PRIMARY KEY", "\"_entity\" TEXT NOT NULL", "\"_version\" INTEGER NOT NULL"]
                + table.columns.map { "\(Self.quote($0.name)) \($0.sqlType)" }
            statements.append("CREATE TABLE \(Self.quote(table.name)) (\(columns.joined(separator: ", ")))")
            for column in table.columns {
                if case .foreignKey = column {
                    statements.append(
                        "CREATE INDEX \(Self.quote("_fk_\(table.name)_\(column.name)")) ON \(Self.quote(table.name)) (\(Self.quote(column.name)))"
                    )
                }
            }
            for entity in table.entities {
                guard let description = model.entity(named: entity) else { continue }
                let family = model.entityAndSubentities(of: entity).filter { self.entities.contains($0) }
                let partial =
                    family.count == table.entities.count
                    ? "" : " WHERE \"_entity\" IN (\(family.map { "'\($0)'" }.joined(separator: ", ")))"
                for (index, group) in description.uniqueness.enumerated() {
                    let columns = group.map { Self.quote(model.columnName(of: $0, in: entity)) }.joined(
                        separator: ", ")
                    statements.append(
                        "CREATE UNIQUE INDEX \(Self.quote("_unique_\(entity)_\(index)")) ON \(Self.quote(table.name)) (\(columns))\(partial)"
                    )
                }
                // Index names are the database's, fetch index names only the entity's (Core Data
                // models reuse them across entities): the entity's name goes first.
                for index in description.indexes {
                    let columns = index.properties.map {
                        Self.quote(model.columnName(of: $0, in: entity))
                            + (index.descending.contains($0) ? " DESC" : "")
                    }.joined(separator: ", ")
                    statements.append(
                        "CREATE INDEX \(Self.quote("\(entity)_\(index.name)")) ON \(Self.quote(table.name)) (\(columns))"
                    )
                }
            }
        }
        for join in joinTables {
            let targetPosition = join.isTargetOrdered ? ", \"target_position\" INTEGER NOT NULL DEFAULT 0" : ""
            statements.append(
                "CREATE TABLE \(Self.quote(join.name)) (\"source\" INTEGER NOT NULL, \"target\" INTEGER NOT NULL, \"position\" INTEGER NOT NULL\(targetPosition), PRIMARY KEY (\"source\", \"target\")) WITHOUT ROWID"
            )
            statements.append(
                "CREATE INDEX \(Self.quote("\(join.name)_target")) ON \(Self.quote(join.name)) (\"target\")")
        }
        return statements + SQLiteFullText.createStatements(self)
    }

    /// The SQLite form of an attribute value.
    static func encode(_ value: AttributeValue) -> SQLiteValue {
        switch value {
        case .null: .null
        case .string(let s), .uri(let s): .text(s)
        case .integer(let i): .integer(i)
        case .double(let d): .real(d)
        case .decimal(let d): .text(d.description)
        case .boolean(let b): .integer(b ? 1 : 0)
        case .date(let date): .integer(AttributeValue.microseconds(of: date))
        case .binary(let data): .blob(data)
        case .uuid(let uuid): .text(uuid.uuidString.lowercased())
        case .json(let json): .text(json.jsonText)
        }
    }

    /// Reads column `index` of the current row as a value of `type`.
    static func decode(_ statement: SQLiteStatement, _ index: Int32, as type: AttributeType) -> AttributeValue {
        if statement.isNull(index) { return .null }
        switch type {
        case .string: return .string(statement.text(index))
        case .uri: return .uri(statement.text(index))
        case .integer16, .integer32, .integer64: return .integer(statement.int64(index))
        case .double, .float: return .double(statement.double(index))
        case .decimal: return Decimal(string: statement.text(index)).map { .decimal($0) } ?? .null
        case .boolean: return .boolean(statement.int64(index) != 0)
        case .date: return .date(AttributeValue.date(microseconds: statement.int64(index)))
        case .binary: return .binary(statement.blob(index))
        case .uuid: return UUID(uuidString: statement.text(index)).map { .uuid($0) } ?? .null
        case .json: return (try? JSONValue.parse(statement.text(index))).map { .json($0) } ?? .null
        }
    }
}
