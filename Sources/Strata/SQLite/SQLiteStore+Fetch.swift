import Foundation

extension SQLiteStore {
    /// The FROM and WHERE parts for a request, with their arguments; the entity table is aliased
    /// ``SQLPredicateBuilder/rootAlias``.
    func selection(_ request: FetchRequest) throws(StoreError) -> (
        table: SQLiteSchema.Table, sql: String, arguments: [SQLiteValue]
    ) {
        guard entityNames.contains(request.entityName), let table = schema.table(for: request.entityName) else {
            throw StoreError(
                .notFound, "the store does not hold entity '\(request.entityName)'", storeURL: url,
                entity: request.entityName)
        }
        let alias = SQLPredicateBuilder.rootAlias
        let family =
            request.includesSubentities
            ? model.entityAndSubentities(of: request.entityName).filter { entityNames.contains($0) }
            : [request.entityName]
        var conditions: [String] = []
        var arguments: [SQLiteValue] = []
        if family.count != table.entities.count {
            conditions.append("\(alias).\"_entity\" IN (\(family.map { _ in "?" }.joined(separator: ", ")))")
            arguments += family.map { .text($0) }
        }
        if let predicate = request.predicate {
            do {
                let bound = try predicate.bound(to: request.entityName, in: model)
                var builder = SQLPredicateBuilder(
                    model: model, schema: schema, entity: request.entityName, storeIdentifier: metadata.identifier)
                conditions.append("(\(try builder.build(bound)))")
                arguments += builder.arguments
            } catch {
                throw StoreError(.invalidRequest, error.message, storeURL: url, entity: request.entityName)
            }
        }
        let whereClause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return (table, "FROM \(SQLiteSchema.quote(table.name)) AS \(alias)\(whereClause)", arguments)
    }

    public func fetch(_ request: FetchRequest) throws(StoreError) -> [StoreRow] {
        let windowed = request.fetchLimit != nil || request.fetchOffset > 0
        // Only requests whose equal keys bind equal bytes are kept (see `FetchSQLKey.keeps`).
        let key = FetchSQLKey.keeps(request.predicate) ? FetchSQLKey(request, windowed: windowed) : nil
        let prepared: FetchSQL
        if let key, let known = fetchSQL.withLock({ $0[key] }) {
            prepared = known
        } else {
            prepared = try fetchSQL(request, windowed: windowed)
            if let key {
                fetchSQL.withLock { cache in
                    if cache.count >= Self.fetchSQLLimit { cache.removeAll(keepingCapacity: true) }
                    cache[key] = prepared
                }
            }
        }
        var allArguments = prepared.arguments
        if windowed {
            allArguments += [.integer(Int64(request.fetchLimit ?? -1)), .integer(Int64(request.fetchOffset))]
        }
        // Taken out once: read through `prepared` for each row, the plan was copied row by row,
        // and the home of the table's one entity was looked up by name for every row.
        let (sql, only) = (prepared.sql, prepared.only)
        let home = only.flatMap { homes[$0.entity] }
        return try read { db in
            try db.query(sql, allArguments) { statement in
                try self.decodeRow(statement, only: only, home: home, db: db)
            }
        }
    }

    /// The SQL and arguments of a fetch request, its window (`LIMIT ? OFFSET ?`) left to bind.
    private func fetchSQL(_ request: FetchRequest, windowed: Bool) throws(StoreError) -> FetchSQL {
        var (table, from, arguments) = try selection(request)
        let alias = SQLPredicateBuilder.rootAlias
        var order: [String] = []
        var rankArguments: [SQLiteValue] = []
        for descriptor in request.sortDescriptors {
            if descriptor.key == SortKey.objectKey {
                order.append("\(alias).\"_pk\" \(descriptor.ascending ? "ASC" : "DESC")")
                continue
            }
            if descriptor.key == SortKey.rank {
                if let term = try rankOrder(request, ascending: descriptor.ascending, arguments: &rankArguments) {
                    order.append(term)
                }
                continue
            }
            guard let attribute = model.attribute(descriptor.key, of: request.entityName) else {
                throw StoreError(
                    .invalidRequest, "cannot sort by '\(descriptor.key)': no such attribute", storeURL: url,
                    entity: request.entityName)
            }
            var column = "\(alias).\(SQLiteSchema.quote(attribute.columnName))"
            if attribute.type == .decimal { column = "strata_decimal(\(column))" }
            if descriptor.caseInsensitive && attribute.type == .string { column = "strata_fold(\(column), 1)" }
            order.append("\(column) \(descriptor.ascending ? "ASC" : "DESC")")
        }
        order.append("\(alias).\"_pk\" \(request.tiesAscending ? "ASC" : "DESC")")
        let columns = ["_pk", "_entity", "_version"] + table.columns.map(\.name)
        var sql = "SELECT " + columns.map { "\(alias).\(SQLiteSchema.quote($0))" }.joined(separator: ", ")
        sql += " \(from) ORDER BY \(order.joined(separator: ", "))"
        if windowed { sql += " LIMIT ? OFFSET ?" }
        arguments += rankArguments
        return FetchSQL(sql: sql, arguments: arguments, only: schema.onlyPlan(of: table))
    }

    public func count(_ request: FetchRequest) throws(StoreError) -> Int {
        let (_, from, arguments) = try selection(request)
        return try read { db in Int(try db.query("SELECT count(*) \(from)", arguments) { $0.int64(0) }.first ?? 0) }
    }

    /// The groups of `key`'s column (`GROUP BY`), from the same FROM and WHERE as a fetch.
    public func valueCounts(_ request: FetchRequest, key: String) throws(StoreError) -> [ValueCount] {
        let (_, from, arguments) = try selection(request)
        let alias = SQLPredicateBuilder.rootAlias
        let type: AttributeType?
        let column: String
        if let attribute = model.attribute(key, of: request.entityName), !attribute.isComposite {
            (type, column) = (attribute.type, "\(alias).\(SQLiteSchema.quote(attribute.columnName))")
        } else if let relationship = model.relationship(key, of: request.entityName), !relationship.isToMany {
            (type, column) = (nil, "\(alias).\(SQLiteSchema.quote(relationship.name))")
        } else {
            throw StoreError(
                .invalidRequest, "cannot count by '\(key)': not an attribute or to-one relationship", storeURL: url,
                entity: request.entityName)
        }
        let sql = "SELECT \(column), count(*) \(from) GROUP BY \(column)"
        return try read { db in
            try db.query(sql, arguments) { statement in
                let value: AttributeValue =
                    if let type { SQLiteSchema.decode(statement, 0, as: type) } else {
                        statement.isNull(0) ? .null : .integer(statement.int64(0))
                    }
                return ValueCount(value: value, count: Int(statement.int64(1)))
            }
        }
    }

    public func row(for id: ObjectID) throws(StoreError) -> StoreRow? {
        guard let read = keyedRead(id) else { return nil }
        return try self.read { db in try read(db) }
    }

    /// How to read the row of `id` on a connection; nil when this store cannot hold it.
    func keyedRead(_ id: ObjectID) -> ((SQLiteConnection) throws -> StoreRow?)? {
        guard id.storeIdentifier == metadata.identifier, let pk = id.primaryKey, entityNames.contains(id.entityName),
            let table = schema.table(for: id.entityName)
        else { return nil }
        let sql = schema.selectByKey[table.name]!
        let only = schema.onlyPlan(of: table)
        return { db in try db.query(sql, [.integer(pk)]) { try self.decodeRow($0, only: only, db: db) }.first }
    }

    /// Decodes the current row of a `SELECT _pk, _entity, _version, columns…` (the table's columns
    /// in table order), positionally through the entity's ``SQLiteSchema/RowPlan``.
    /// - Parameters:
    ///   - only: the plan of the table's one entity, when it holds only one (then the `_entity`
    ///     column need not be read).
    ///   - home: that entity's home in this store, looked up once by the caller.
    func decodeRow(
        _ statement: SQLiteStatement, only: (entity: String, plan: SQLiteSchema.RowPlan)?,
        home: ObjectID.Home? = nil, db: SQLiteConnection
    )
        throws -> StoreRow
    {
        let entity: String
        let plan: SQLiteSchema.RowPlan
        if let only {
            (entity, plan) = only
        } else {
            entity = statement.text(1)
            guard let found = schema.rowPlans[entity] else {
                throw StoreError(
                    .io, "row \(statement.int64(0)) names entity '\(entity)', which the store does not hold",
                    storeURL: url)
            }
            plan = found
        }
        var slots: [AttributeValue?] = []
        slots.reserveCapacity(plan.attributes.count)
        for (column, type) in plan.attributes { slots.append(SQLiteSchema.decode(statement, column + 3, as: type)) }
        var toOne = plan.emptyToOne
        for (column, info) in plan.foreignKeys {
            let index = column + 3
            if !statement.isNull(index) {
                let pk = statement.int64(index)
                toOne[info.name] =
                    info.destinationIsHierarchy
                    ? try objectID(info.destination, pk, db: db)
                    : id(info.destination, pk)
            }
        }
        let pk = statement.int64(0)
        return StoreRow(
            id: home.map { ObjectID(home: $0, primaryKey: pk) } ?? id(entity, pk),
            version: statement.int64(2), attributes: AttributeValues(layout: plan.layout, slots: slots), toOne: toOne)
    }

    /// The ID of the object with primary key `pk` in `entity`'s table; looks up the concrete entity
    /// only when the hierarchy has several.
    func objectID(_ entity: String, _ pk: Int64, db: SQLiteConnection) throws -> ObjectID {
        var concrete = entity
        if let table = schema.table(for: entity), table.entities.count > 1 {
            let sql = "SELECT \"_entity\" FROM \(SQLiteSchema.quote(table.name)) WHERE \"_pk\" = ?"
            concrete = try db.query(sql, [.integer(pk)]) { $0.text(0) }.first ?? entity
        }
        return id(concrete, pk)
    }

    public func relatedIDs(of id: ObjectID, relationship name: String) throws(StoreError) -> [ObjectID] {
        guard id.storeIdentifier == metadata.identifier, let pk = id.primaryKey,
            model.relationship(name, of: id.entityName)?.isToMany == true
        else {
            throw StoreError(
                .invalidRequest, "'\(id.entityName)' has no to-many relationship '\(name)' in this store",
                storeURL: url, entity: id.entityName)
        }
        return try read { db in try self.relatedIDs(of: id.entityName, pk, relationship: name, db: db) }
    }

    /// The objects the to-many relationship `name` of the `entity` object with key `pk` holds, read
    /// on `db`.
    private func relatedIDs(of entity: String, _ pk: Int64, relationship name: String, db: SQLiteConnection) throws
        -> [ObjectID]
    {
        // A to-many kept in a foreign key on this side holds nothing to read here.
        guard let read = schema.relatedReads[entity]?[name] ?? nil else { return [] }
        let width = read.position == nil ? 1 : 2
        var values: [Int64] = []
        let statement = try db.statement(read.unordered)
        defer { statement.reset() }
        try statement.bind(.integer(pk), at: 1)
        while try statement.step() {
            for column in 0..<Int32(width) { values.append(statement.int64(column)) }
        }
        return try ids(read.sorted(values), of: read, db: db)
    }

    /// The IDs of `keys` of `read`'s destination table.
    private func ids(_ keys: [Int64], of read: SQLiteSchema.RelatedRead, db: SQLiteConnection) throws -> [ObjectID] {
        if read.destinationIsAlone { return keys.map { self.id(read.destination, $0) } }
        return try keys.map { try self.objectID(read.destination, $0, db: db) }
    }

    /// The row and its to-many relationships in one snapshot (every read is in one transaction):
    /// in one statement when the schema has one for the entity (`SQLiteSchema.selectWithToMany`).
    public func rowWithToMany(for id: ObjectID, model: ObjectModel) throws(StoreError) -> StoreRow? {
        guard id.storeIdentifier == metadata.identifier, let pk = id.primaryKey else { return nil }
        if let keyed = schema.selectWithToMany[id.entityName], entityNames.contains(id.entityName) {
            let found: StoreRow?? = try read { db in
                let statement = try db.statement(keyed.sql)
                defer { statement.reset() }
                try statement.bind(.integer(pk), at: 1)
                guard try statement.step() else { return .some(nil) }
                var row = try decodeRow(statement, only: keyed.only, db: db)
                var column = keyed.firstList
                for (name, read) in keyed.lists {
                    guard let read else {
                        row.toMany[name] = []
                        continue
                    }
                    // Anything but a list of integers: read the relationship the usual way.
                    guard let values = statement.integerList(column) else { return nil }
                    row.toMany[name] = try ids(read.sorted(values), of: read, db: db)
                    column += 1
                }
                return .some(row)
            }
            if let found { return found }
        }
        guard let readRow = keyedRead(id) else { return nil }
        return try read { db in
            guard var row = try readRow(db) else { return nil }
            for relationship in model.relationships(of: row.id.entityName) where relationship.isToMany {
                row.toMany[relationship.name] = try relatedIDs(
                    of: row.id.entityName, pk, relationship: relationship.name, db: db)
            }
            return row
        }
    }
}

/// What a fetch request's SQL depends on: the request without its window's numbers.
struct FetchSQLKey: Hashable, Sendable {
    var entityName: String
    var predicate: FetchPredicate?
    var sortDescriptors: [SortKey]
    var includesSubentities: Bool
    var windowed: Bool

    /// Whether a request with `predicate` may be kept: its constants must be ones whose equality
    /// is that of the bytes bound. Swift's `String` equality is canonical (`"é"` precomposed equals
    /// `e` and a combining accent) and `Decimal`'s numeric, while SQLite compares what is bound, so
    /// text with anything but ASCII, and decimals, are read afresh each time.
    static func keeps(_ predicate: FetchPredicate?) -> Bool {
        func exact(_ term: PredicateTerm) -> Bool {
            switch term {
            case .constant(.string(let text)), .constant(.uri(let text)): text.utf8.allSatisfy { $0 < 0x80 }
            case .constant(.decimal): false
            case .constant: true
            case .list(let terms): terms.allSatisfy(exact)
            case .keyPath, .object, .variable: true
            }
        }
        func keeps(_ predicate: FetchPredicate) -> Bool {
            switch predicate {
            case .always, .never, .textSearch: true
            case .comparison(let comparison): exact(comparison.lhs) && exact(comparison.rhs)
            case .and(let parts), .or(let parts): parts.allSatisfy(keeps)
            case .not(let inner): keeps(inner)
            }
        }
        return predicate.map(keeps) ?? true
    }

    init(_ request: FetchRequest, windowed: Bool) {
        entityName = request.entityName
        predicate = request.predicate
        sortDescriptors = request.sortDescriptors
        includesSubentities = request.includesSubentities
        self.windowed = windowed
    }
}

/// A fetch request's SQL, its arguments (before the window's) and how to decode its rows.
struct FetchSQL: Sendable {
    var sql: String
    var arguments: [SQLiteValue]
    var only: (entity: String, plan: SQLiteSchema.RowPlan)?
}
