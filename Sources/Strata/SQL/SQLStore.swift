import Foundation

/// A store that keeps its objects in SQL tables laid out as `SQLiteSchema` says: what the
/// shared write path (`SQLStore/writeChanges(_:_:)`) needs of it.
///
/// The store brings its dialect, its connection type, and the three things its database does
/// its own way: reading (and locking) stored versions, inserting a run of new rows, and naming
/// the fields of a broken uniqueness constraint.
protocol SQLStore: AnyObject {
    /// How the store's database spells its statements.
    associatedtype Dialect: SQLDialect
    /// The connection a save runs on.
    associatedtype Connection: SQLExecutor where Connection.Value == Dialect.Value

    var model: ObjectModel { get }
    var metadata: StoreMetadata { get }
    var entityNames: Set<String> { get }
    var url: URL? { get }
    var options: StoreOptions { get }
    /// The store's tables.
    var layout: SQLiteSchema { get }
    var dialect: Dialect { get }

    /// The versions stored for `keys` of each table, tables in name order and keys ascending;
    /// a database that locks rows locks them, in that order, until the transaction ends.
    func storedVersions(_ keys: [(table: String, keys: [Int64])], _ c: Connection) throws
        -> [String: [Int64: Int64]]
    /// Inserts `rows[range]`, new objects of `entity` in this store, each with a key (see
    /// `SQLStore/insertValues(of:_:entity:plan:_:)`).
    func insert(
        _ rows: [StoreRow], _ range: Range<Int>, entity: String, plan: SQLiteSchema.RowPlan, _ c: Connection
    ) throws
    /// What a failed write of `entity` throws: `.uniqueViolation` naming the fields for a broken
    /// uniqueness constraint; for anything else, the store's own error.
    func writeFailure(_ error: Connection.Failure, entity: String) -> any Error
    /// The stored state of `id` as the open transaction on `c` sees it.
    func storedRow(_ id: ObjectID, _ c: Connection) throws -> StoreRow?
    /// Inserts the row of a new history transaction written at `date` by `authorship` inside the
    /// open transaction, and returns its number: one more than the last committed, so that
    /// numbers follow commit order without gaps (see `SQLHistory`).
    func beginHistory(at date: Date, _ authorship: HistoryAuthorship, _ c: Connection) throws -> Int64
}

extension SQLStore {
    /// The table of `id`'s entity.
    /// - Throws: `.invalidRequest` when `id` is not a permanent ID of an object of this store.
    func table(for id: ObjectID) throws(StoreError) -> SQLiteSchema.Table {
        guard id.storeIdentifier == metadata.identifier, id.primaryKey != nil, entityNames.contains(id.entityName),
            let table = layout.table(for: id.entityName)
        else {
            throw StoreError(
                .invalidRequest, "object \(id) does not belong to this store", storeURL: url, entity: id.entityName)
        }
        return table
    }

    /// The value of foreign key `name` pointing at `value`.
    /// - Throws: `.invalidRequest` when `value` is not a `destination` of this store.
    func foreignKey(_ value: ObjectID?, name: String, destination: String) throws(StoreError) -> Dialect.Value {
        guard let value else { return Dialect.null }
        guard value.storeIdentifier == metadata.identifier, let pk = value.primaryKey,
            value.entityName == destination || model.entity(value.entityName, isKindOf: destination)
        else {
            throw StoreError(
                .invalidRequest, "'\(name)' must refer to a \(destination) in the same store, not \(value)",
                storeURL: url, entity: destination, fields: [name])
        }
        return Dialect.integer(pk)
    }

    /// Calls `body` with each value of `row`'s INSERT in column order: key, entity, version 1,
    /// the attributes in layout order, then the foreign keys (`SQLiteSchema/RowPlan`). The row
    /// and plan are borrowed: copying either for each row costs a retain and a release of
    /// everything it holds.
    func insertValues(
        of row: borrowing StoreRow, _ pk: Int64, entity: String, plan: borrowing SQLiteSchema.RowPlan,
        _ body: (Dialect.Value) throws -> Void
    ) throws {
        try body(Dialect.integer(pk))
        try body(Dialect.text(entity))
        try body(Dialect.integer(1))
        let positional = row.attributes.follows(plan.layout)
        for (position, name) in plan.layout.names.enumerated() {
            let value = positional ? row.attributes[position: position] : row.attributes[name]
            try body(Dialect.encode(value ?? .null))
        }
        for (_, column) in plan.foreignKeys {
            try body(try foreignKey(row.toOne[column.name] ?? nil, name: column.name, destination: column.destination))
        }
    }

    /// Runs a write of `entity`, turning a failure into `writeFailure(_:entity:)`'s error.
    func write(_ sql: String, _ arguments: [Dialect.Value], entity: String, _ c: Connection) throws {
        do throws(Connection.Failure) {
            try c.run(sql, arguments)
        } catch {
            throw writeFailure(error, entity: entity)
        }
    }

    /// The error of a broken uniqueness constraint of `entity` over `fields`.
    func uniqueViolation(_ entity: String, _ fields: [String], _ underlying: (any Error & Sendable)?) -> StoreError {
        StoreError(
            .uniqueViolation, "another \(entity) already has the same \(fields.joined(separator: " and "))",
            storeURL: url, entity: entity, fields: fields, underlying: underlying)
    }

    /// Checks the expected version of every object `changes` update or delete (reading, and
    /// locking where the database does, the stored ones first) and returns the stored versions.
    /// - Throws: `.conflict` naming every object changed since it was read, `.notFound` for an
    ///   object that is not stored, `.invalidRequest` for an ID of another store.
    func checkVersions(_ changes: StoreChanges, _ c: Connection) throws -> [ObjectID: Int64] {
        guard !changes.updates.isEmpty || !changes.deletes.isEmpty else { return [:] }
        var checks: [(ObjectID, Int64?)] = changes.updates.map { ($0.id, $0.expectedVersion) }
        checks.append(contentsOf: changes.deletes.map { ($0.id, $0.expectedVersion) })
        var byTable: [String: [Int64]] = [:]
        for (id, _) in checks { byTable[try table(for: id).name, default: []].append(id.primaryKey!) }
        let stored = try storedVersions(
            byTable.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value.sorted()) }, c)
        var current: [ObjectID: Int64] = [:]
        var conflicts: [VersionConflict] = []
        for (id, expected) in checks {
            let version = stored[try table(for: id).name]?[id.primaryKey!]
            if let version { current[id] = version }
            if let expected, version != expected {
                conflicts.append(VersionConflict(id: id, expectedVersion: expected, storedVersion: version))
            } else if version == nil {
                throw StoreError(
                    .notFound, "object \(id) does not exist in the store", storeURL: url, entity: id.entityName)
            }
        }
        if !conflicts.isEmpty {
            throw StoreError(
                .conflict,
                "objects changed since they were read: " + conflicts.map(\.description).joined(separator: "; "),
                storeURL: url, conflicts: conflicts)
        }
        return current
    }

    /// Keeps a save's participation in the open transaction (see `SaveParticipation`): its
    /// record, where this store is the commit point, or else the mark that it applied its part.
    func writeParticipation(
        _ participation: SaveParticipation, records: String, applied: String, _ c: Connection
    ) throws(Connection.Failure) {
        var arguments = SQLArguments(dialect)
        let sql: String
        if let record = participation.record {
            let values = "\(arguments.add(Dialect.text(record.saveID))), \(arguments.add(Dialect.text(record.text)))"
            sql =
                "INSERT INTO \(dialect.table(records)) (id, record) VALUES (\(values)) "
                + "ON CONFLICT (id) DO UPDATE SET record = excluded.record"
        } else {
            let values =
                "\(arguments.add(Dialect.text(participation.saveID))), \(arguments.add(Dialect.text(participation.commitPoint)))"
            sql =
                "INSERT INTO \(dialect.table(applied)) (id, commit_point) VALUES (\(values)) "
                + "ON CONFLICT (id) DO UPDATE SET commit_point = excluded.commit_point"
        }
        try c.run(sql, arguments.values)
    }
}
