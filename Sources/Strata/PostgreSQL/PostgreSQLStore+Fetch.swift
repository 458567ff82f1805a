import Foundation

extension PostgreSQLStore {
    /// The table and family condition of a request.
    func selection(_ request: FetchRequest) throws(StoreError) -> (
        table: SQLiteSchema.Table, sql: String, arguments: [PGValue]
    ) {
        guard entityNames.contains(request.entityName), let table = schema.base.table(for: request.entityName) else {
            throw StoreError(
                .notFound, "the store does not hold entity '\(request.entityName)'", storeURL: url,
                entity: request.entityName)
        }
        let family =
            request.includesSubentities
            ? model.entityAndSubentities(of: request.entityName).filter { entityNames.contains($0) }
            : [request.entityName]
        var sql = "FROM \(schema.qualified(table.name)) AS t"
        var arguments: [PGValue] = []
        if family.count != table.entities.count {
            sql += " WHERE t.\"_entity\" = ANY($1::text[])"
            arguments.append(.text(PostgreSQLSchema.arrayLiteral(family)))
        }
        return (table, sql, arguments)
    }

    /// The objects of the request's family that match its predicate, unsorted. PostgreSQL reads
    /// the rows that can match (``PostgreSQLPrefilter``); Strata's own evaluator decides over them
    /// (the same results as the other stores by construction), relationship key paths reading what
    /// they need through `c`.
    func matching(_ request: FetchRequest, _ c: PGConnection) throws -> [StoreRow] {
        var (table, from, arguments) = try selection(request)
        var predicate: FetchPredicate?
        do throws(PredicateError) {
            predicate = try request.predicate?.bound(to: request.entityName, in: model)
            if let predicate {
                var prefilter = PostgreSQLPrefilter(
                    model: model, entity: request.entityName, table: table, storeIdentifier: metadata.identifier,
                    firstIndex: arguments.count + 1, numericDecimals: numericDecimals)
                if let condition = try prefilter.condition(predicate).sql {
                    from += (arguments.isEmpty ? " WHERE " : " AND ") + "(\(condition))"
                    arguments += prefilter.arguments
                }
            }
        } catch {
            throw StoreError(.invalidRequest, error.message, storeURL: url, entity: request.entityName)
        }
        let rows = try c.execute("SELECT \(schema.selectList(table, alias: "t")) \(from)", arguments).rows
        let resolver = PostgreSQLResolver(store: self, connection: c)
        let decoded = try rows.map { try decodeRow($0, table: table, resolver: resolver) }
        guard let predicate else { return decoded }
        for row in decoded { resolver.rows[row.id] = .some(row) }
        var paths: [String: ModelKeyPath] = [:]
        // The budget covers Strata's own evaluation too, checked every 256 rows.
        let deadline = options.queryBudget.map { DispatchTime.now().uptimeNanoseconds + UInt64($0 * 1e9) }
        var evaluated = 0
        do {
            return try decoded.filter { row in
                evaluated += 1
                if let deadline, evaluated % 256 == 0, DispatchTime.now().uptimeNanoseconds > deadline {
                    throw StoreError(
                        .overBudget,
                        "the query ran past its time budget of \(String(format: "%g", options.queryBudget ?? 0)) s and was stopped",
                        storeURL: url, entity: request.entityName)
                }
                return try predicate.evaluate(object: row.id, in: model, paths: &paths) { id, key in
                    try resolver.property(key, of: id)
                }
            }
        } catch let error as StoreError {
            throw error
        } catch let error as PGError {
            throw error
        } catch let error as PredicateError {
            throw StoreError(error, storeURL: url, entity: request.entityName)
        } catch {
            throw StoreError(.invalidRequest, "\(error)", storeURL: url, entity: request.entityName)
        }
    }

    /// Runs `body` on a pooled connection, mapping what it throws to store errors.
    /// A connection that fails (or finds its server gone) is replaced and the read run once more.
    func reading<T>(_ body: (PGConnection) throws -> T) throws(StoreError) -> T {
        try checkOpen()
        if let pinned = snapshots.current {
            do {
                return try body(pinned)
            } catch let error as StoreError {
                throw error
            } catch let error as PGError {
                throw storeError(error, "PostgreSQL read failed")
            } catch {
                throw StoreError(.io, "read failed: \(error)", storeURL: url)
            }
        }
        var attempt = 0
        while true {
            attempt += 1
            let c: PGConnection
            do {
                c = try pool.checkout()
            } catch {
                throw storeError(error, "cannot connect to PostgreSQL")
            }
            do {
                let result = try body(c)
                pool.checkin(c)
                return result
            } catch let error as StoreError {
                pool.checkin(c)
                throw error
            } catch let error as PGError {
                pool.checkin(c, after: error)
                if error.mustReconnect && attempt < 2 { continue }
                throw storeError(error, "PostgreSQL read failed")
            } catch {
                pool.checkin(c)
                throw StoreError(.io, "read failed: \(error)", storeURL: url)
            }
        }
    }

    public func fetch(_ request: FetchRequest) throws(StoreError) -> [StoreRow] {
        if let key = request.unknownSortKey(in: model) {
            throw StoreError(
                .invalidRequest, "cannot sort by '\(key)': no such attribute", storeURL: url, entity: request.entityName
            )
        }
        var rows = try reading { c in try matching(request, c) }
        rows.sort(by: request.sortsBefore)
        return request.window(rows)
    }

    public func count(_ request: FetchRequest) throws(StoreError) -> Int {
        if request.predicate == nil {
            let (_, from, arguments) = try selection(request)
            return try reading { c in
                Int(try c.execute("SELECT count(*) \(from)", arguments).rows.first?[0] ?? "0") ?? 0
            }
        }
        return try reading { c in try matching(request, c).count }
    }

    /// The groups of `key`'s column (`GROUP BY`) when the prefilter is the whole predicate (exact);
    /// else counted over the evaluated rows, as a fetch decides them.
    public func valueCounts(_ request: FetchRequest, key: String) throws(StoreError) -> [ValueCount] {
        var (table, from, arguments) = try selection(request)
        let type: AttributeType?
        let column: String
        if let attribute = model.attribute(key, of: request.entityName), !attribute.isComposite {
            (type, column) = (attribute.type, "t." + PostgreSQLSchema.quote(attribute.columnName))
        } else if let relationship = model.relationship(key, of: request.entityName), !relationship.isToMany {
            (type, column) = (nil, "t." + PostgreSQLSchema.quote(relationship.name))
        } else {
            throw StoreError(
                .invalidRequest, "cannot count by '\(key)': not an attribute or to-one relationship", storeURL: url,
                entity: request.entityName)
        }
        if let predicate = request.predicate {
            let joiner = arguments.isEmpty ? " WHERE " : " AND "
            let condition: PostgreSQLPrefilter.Condition
            do throws(PredicateError) {
                var prefilter = PostgreSQLPrefilter(
                    model: model, entity: request.entityName, table: table, storeIdentifier: metadata.identifier,
                    firstIndex: arguments.count + 1, numericDecimals: numericDecimals)
                condition = try prefilter.condition(try predicate.bound(to: request.entityName, in: model))
                arguments += prefilter.arguments
            } catch {
                throw StoreError(.invalidRequest, error.message, storeURL: url, entity: request.entityName)
            }
            guard condition.exact else {
                return ValueCount.counting(try reading { c in try matching(request, c) }, key: key)
            }
            if let sql = condition.sql { from += joiner + "(\(sql))" }
        }
        let sql = "SELECT \(column), count(*) \(from) GROUP BY \(column)"
        return try reading { c in
            try c.execute(sql, arguments).rows.map { values in
                let value: AttributeValue =
                    if let type { PostgreSQLSchema.decode(values[0], as: type) } else {
                        values[0].flatMap { Int64($0) }.map { .integer($0) } ?? .null
                    }
                return ValueCount(value: value, count: Int(values[1] ?? "0") ?? 0)
            }
        }
    }

    public func row(for id: ObjectID) throws(StoreError) -> StoreRow? {
        guard id.storeIdentifier == metadata.identifier, let pk = id.primaryKey, entityNames.contains(id.entityName),
            let table = schema.base.table(for: id.entityName)
        else { return nil }
        return try reading { c in try row(pk, table: table, c) }
    }

    /// The row and its to-many relationships on one connection: in one statement, and so one
    /// snapshot, when the schema has one for the entity (`PostgreSQLSchema.keyedRead(of:)`).
    public func rowWithToMany(for id: ObjectID, model: ObjectModel) throws(StoreError) -> StoreRow? {
        guard id.storeIdentifier == metadata.identifier, let pk = id.primaryKey, entityNames.contains(id.entityName),
            let table = schema.base.table(for: id.entityName)
        else { return nil }
        return try reading { c in
            let resolver = PostgreSQLResolver(store: self, connection: c)
            if let keyed = schema.keyedRead(of: id.entityName) {
                guard let values = try c.execute(keyed.sql, [.integer(pk)]).rows.first else { return nil }
                return try decodeKeyed(values, keyed, table: table, resolver: resolver)
            }
            guard var row = try row(pk, table: table, c) else { return nil }
            for relationship in model.relationships(of: row.id.entityName) where relationship.isToMany {
                row.toMany[relationship.name] = try resolver.related(of: row.id, relationship.name)
            }
            return row
        }
    }

    /// ``rowWithToMany(for:model:)`` through the pipelined reader (`PGPipelineReader`) when one
    /// statement reads the object and decoding it needs no further read; otherwise, or when the
    /// pipelined read fails in any way, the blocking read runs through `blocking`, and reports
    /// the failure (or retries) as it always does.
    public func rowWithToMany(
        for id: ObjectID, model: ObjectModel, blocking: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (Result<StoreRow?, StoreError>) -> Void
    ) {
        let fallback: @Sendable () -> Void = { [self] in
            do throws(StoreError) {
                completion(.success(try rowWithToMany(for: id, model: model)))
            } catch {
                completion(.failure(error))
            }
        }
        guard id.storeIdentifier == metadata.identifier, let pk = id.primaryKey,
            entityNames.contains(id.entityName), let table = schema.base.table(for: id.entityName),
            let keyed = schema.keyedRead(of: id.entityName), !keyed.needsLookups
        else {
            blocking(fallback)
            return
        }
        reader.read(keyed.sql, [.integer(pk)]) { [self] result in
            guard case .success(let rows) = result else {
                blocking(fallback)
                return
            }
            guard let values = rows.rows.first else {
                completion(.success(nil))
                return
            }
            do {
                completion(.success(try decodeKeyed(values, keyed, table: table, resolver: nil)))
            } catch {
                blocking(fallback)
            }
        }
    }

    /// The row of a ``PostgreSQLSchema/KeyedRead``, with its to-many relationships.
    private func decodeKeyed(
        _ values: [String?], _ keyed: PostgreSQLSchema.KeyedRead, table: SQLiteSchema.Table,
        resolver: PostgreSQLResolver?
    ) throws -> StoreRow {
        var row = try decodeRow(values, table: table, resolver: resolver)
        var column = keyed.firstList
        for list in keyed.lists {
            guard let destination = list.destination else {
                row.toMany[list.name] = []
                continue
            }
            row.toMany[list.name] = PostgreSQLSchema.keys(values[column]).map { self.id(destination, $0) }
            column += 1
        }
        return row
    }

    func row(_ pk: Int64, table: SQLiteSchema.Table, _ c: PGConnection) throws -> StoreRow? {
        let sql =
            "SELECT \(schema.selectList(table, alias: "t")) FROM \(schema.qualified(table.name)) AS t WHERE t.\"_pk\" = $1"
        guard let values = try c.execute(sql, [.integer(pk)]).rows.first else { return nil }
        return try decodeRow(values, table: table, resolver: PostgreSQLResolver(store: self, connection: c))
    }

    /// Decodes one row of a ``PostgreSQLSchema/selectList(_:alias:)`` through its entity's plan.
    /// Without a resolver, a to-one relationship into a table of several entities cannot be
    /// decoded (its key's entity is looked up), and throws.
    func decodeRow(_ values: [String?], table: SQLiteSchema.Table, resolver: PostgreSQLResolver?) throws -> StoreRow {
        let entity = values[1] ?? ""
        guard let plan = schema.base.rowPlans[entity], let pk = values[0].flatMap({ Int64($0) }) else {
            throw StoreError(
                .io, "row \(values[0] ?? "?") names entity '\(entity)', which the store does not hold", storeURL: url)
        }
        var slots: [AttributeValue?] = []
        slots.reserveCapacity(plan.attributes.count)
        for (column, type) in plan.attributes {
            slots.append(PostgreSQLSchema.decode(values[Int(column) + 3], as: type))
        }
        var toOne: [String: ObjectID?] = [:]
        for (column, info) in plan.foreignKeys {
            guard let text = values[Int(column) + 3], let key = Int64(text) else {
                toOne[info.name] = .some(nil)
                continue
            }
            guard info.destinationIsHierarchy else {
                toOne[info.name] = id(info.destination, key)
                continue
            }
            guard let resolver else {
                throw StoreError(.io, "'\(info.name)' needs its destination's entity looked up", storeURL: url)
            }
            toOne[info.name] = try resolver.objectID(info.destination, key)
        }
        return StoreRow(
            id: id(entity, pk), version: values[2].flatMap { Int64($0) } ?? 0,
            attributes: AttributeValues(layout: plan.layout, slots: slots), toOne: toOne)
    }

    public func relatedIDs(of id: ObjectID, relationship name: String) throws(StoreError) -> [ObjectID] {
        guard id.storeIdentifier == metadata.identifier, id.primaryKey != nil,
            model.relationship(name, of: id.entityName)?.isToMany == true
        else {
            throw StoreError(
                .invalidRequest, "'\(id.entityName)' has no to-many relationship '\(name)' in this store",
                storeURL: url, entity: id.entityName)
        }
        return try reading { c in try PostgreSQLResolver(store: self, connection: c).related(of: id, name) }
    }
}

/// Reads objects and relationships for one fetch's predicate, remembering what it read.
final class PostgreSQLResolver {
    let store: PostgreSQLStore
    let connection: PGConnection
    /// Rows read (nil: the object does not exist).
    var rows: [ObjectID: StoreRow?] = [:]
    private var related: [ObjectID: [String: [ObjectID]]] = [:]
    private var concrete: [String: String] = [:]

    init(store: PostgreSQLStore, connection: PGConnection) {
        self.store = store
        self.connection = connection
    }

    /// The ID of the object with key `pk` in `entity`'s hierarchy, its concrete entity looked up.
    func objectID(_ entity: String, _ pk: Int64) throws -> ObjectID {
        guard let table = store.schema.base.table(for: entity), table.entities.count > 1 else {
            return store.id(entity, pk)
        }
        let cacheKey = table.name + "\u{0}" + String(pk)
        if let known = concrete[cacheKey] { return store.id(known, pk) }
        let found =
            try connection.execute(
                "SELECT \"_entity\" FROM \(store.schema.qualified(table.name)) WHERE \"_pk\" = $1", [.integer(pk)]
            ).rows.first?[0] ?? nil
        concrete[cacheKey] = found ?? entity
        return store.id(found ?? entity, pk)
    }

    /// An attribute as `.value`, a to-one relationship as `.object`, a to-many one as a `.list`.
    func property(_ key: String, of id: ObjectID) throws -> PredicateOperand {
        guard let row = try row(id) else { return .value(.null) }
        if let value = row.attributes[key] { return .value(value) }
        if let object = row.toOne[key] { return .object(object) }
        guard let relationship = store.model.relationship(key, of: id.entityName) else { return .value(.null) }
        guard relationship.isToMany else { return .object(nil) }
        return .list(try self.related(of: id, key).map { .object($0) })
    }

    private func row(_ id: ObjectID) throws -> StoreRow? {
        if let known = rows[id] { return known }
        var found: StoreRow?
        if id.storeIdentifier == store.metadata.identifier, let pk = id.primaryKey,
            let table = store.schema.base.table(for: id.entityName)
        {
            found = try store.row(pk, table: table, connection)
        }
        rows[id] = .some(found)
        return found
    }

    /// The objects a to-many relationship of `id` holds, in order.
    func related(of id: ObjectID, _ name: String) throws -> [ObjectID] {
        if let known = related[id]?[name] { return known }
        guard let pk = id.primaryKey, let (sql, destination) = store.schema.relatedQuery(of: name, in: id.entityName)
        else { return [] }
        let keys = try connection.execute(sql, [.integer(pk)]).rows.compactMap { $0[0].flatMap { Int64($0) } }
        // Objects of other entities sharing the destination's table are not the relationship's.
        let ids = try keys.map { try objectID(destination, $0) }.filter {
            $0.entityName == destination || store.model.entity($0.entityName, isKindOf: destination)
        }
        related[id, default: [:]][name] = ids
        return ids
    }
}
