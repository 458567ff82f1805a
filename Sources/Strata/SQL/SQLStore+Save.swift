import Foundation

extension SQLStore {
    /// Writes every change inside the open transaction on `c` and returns the new versions and,
    /// when the store records history, the number of the history transaction written last:
    /// versions checked first, then inserts, updates, join-table edits and deletes.
    /// - Throws: ``StoreError`` (`.conflict`, `.notFound`, `.invalidRequest`,
    ///   `.uniqueViolation`), or what `writeFailure(_:entity:)` makes of a failed write.
    func writeChanges(_ changes: StoreChanges, _ c: Connection) throws -> (versions: [ObjectID: Int64], history: Int64?)
    {
        let current = try checkVersions(changes, c)
        var versions: [ObjectID: Int64] = [:]
        versions.reserveCapacity(changes.inserts.count + changes.updates.count)
        try insertRows(changes.inserts, &versions, c)
        var next = changes.updates.startIndex
        while next < changes.updates.endIndex {
            let run = Self.sameUpdates(changes.updates, from: next)
            try writeUpdates(changes.updates[run], c)
            for update in changes.updates[run] { versions[update.id] = (current[update.id] ?? 0) + 1 }
            next = run.upperBound
        }
        try writeToMany(changes, c)
        let recording = options.recordsHistory && !changes.isEmpty
        let tombstones = recording ? try tombstones(changes, c) : [:]
        for deletion in changes.deletes { try writeDeletion(deletion, c) }
        guard recording else { return (versions, nil) }
        let number = try writeHistory(changes, versions: versions, stored: current, tombstones: tombstones, c)
        return (versions, number)
    }

    /// Inserts `rows`, which come in runs of one entity (one home): each run is checked, then
    /// handed to `insert(_:_:entity:plan:_:)` whole. Rows are read in place, never copied.
    private func insertRows(_ rows: [StoreRow], _ versions: inout [ObjectID: Int64], _ c: Connection) throws {
        var next = 0
        while next < rows.count {
            let home = rows[next].id.home
            let entity = home.entityName
            // Throws for an ID of another store, or of an entity the store does not hold.
            _ = try table(for: rows[next].id)
            guard let plan = layout.rowPlans[entity] else {
                throw StoreError(.invalidRequest, "the store does not hold \(entity)", storeURL: url, entity: entity)
            }
            let start = next
            repeat {
                // Throws for a temporary ID.
                if rows[next].id.primaryKey == nil { _ = try table(for: rows[next].id) }
                versions[rows[next].id] = 1
                next += 1
            } while next < rows.count && rows[next].id.home === home
            try insert(rows, start..<next, entity: entity, plan: plan, c)
        }
    }

    /// The run of updates from `start` that set the same values on objects of one entity (a
    /// batch update's, or objects a save changed alike), at most 500: one statement writes them.
    private static func sameUpdates(_ updates: [StoreUpdate], from start: Int) -> Range<Int> {
        let first = updates[start]
        var end = start + 1
        while end < updates.count, end - start < 500 {
            let update = updates[end]
            guard update.id.home === first.id.home, update.attributes == first.attributes, update.toOne == first.toOne
            else { break }
            end += 1
        }
        return start..<end
    }

    /// Updates the attributes and to-one relationships of `updates`, which set the same values on
    /// objects of one entity, and raises their versions: one statement for all.
    private func writeUpdates(_ updates: ArraySlice<StoreUpdate>, _ c: Connection) throws {
        let update = updates[updates.startIndex]
        let entity = update.id.entityName
        let table = try table(for: update.id)
        var arguments = SQLArguments(dialect)
        var assignments: [String] = []
        for (name, value) in update.attributes.sorted(by: { $0.key < $1.key }) {
            guard let attribute = model.attribute(name, of: entity) else {
                throw StoreError(
                    .invalidRequest, "'\(entity)' has no attribute '\(name)'", storeURL: url, entity: entity,
                    fields: [name])
            }
            assignments.append("\(dialect.quote(attribute.columnName)) = \(arguments.add(Dialect.encode(value)))")
        }
        for (name, value) in update.toOne.sorted(by: { $0.key < $1.key }) {
            guard let relationship = model.relationship(name, of: entity), !relationship.isToMany else {
                throw StoreError(
                    .invalidRequest, "'\(entity)' has no to-one relationship '\(name)'", storeURL: url,
                    entity: entity, fields: [name])
            }
            let key = try foreignKey(value, name: name, destination: relationship.destination)
            assignments.append("\(dialect.quote(name)) = \(arguments.add(key))")
        }
        assignments.append("\"_version\" = \"_version\" + 1")
        let keys = updates.map { arguments.add(Dialect.integer($0.id.primaryKey!)) }
        let condition = keys.count == 1 ? "= \(keys[0])" : "IN (\(keys.joined(separator: ", ")))"
        try write(
            "UPDATE \(dialect.table(table.name)) SET \(assignments.joined(separator: ", ")) WHERE \"_pk\" \(condition)",
            arguments.values, entity: entity, c)
    }

    /// Deletes one object and its pairs in every join table its entity takes part in.
    private func writeDeletion(_ deletion: StoreDeletion, _ c: Connection) throws {
        let entity = deletion.id.entityName
        let table = try table(for: deletion.id)
        let pk = Dialect.integer(deletion.id.primaryKey!)
        let key = dialect.placeholder(1, for: nil)
        try write("DELETE FROM \(dialect.table(table.name)) WHERE \"_pk\" = \(key)", [pk], entity: entity, c)
        for join in layout.joinTables {
            for (column, end) in [("source", join.sourceEntity), ("target", join.targetEntity)]
            where model.entity(entity, isKindOf: end) {
                try write(
                    "DELETE FROM \(dialect.table(join.name)) WHERE \"\(column)\" = \(key)", [pk], entity: entity, c)
            }
        }
    }

    /// Writes join-table relationships (see `JoinTableEdit`).
    private func writeToMany(_ changes: StoreChanges, _ c: Connection) throws {
        let edits = try JoinTableEdit.plan(changes, model: model, storeURL: url) {
            (target: ObjectID, relationship: RelationshipDescription) throws(StoreError) in
            _ = try foreignKey(target, name: relationship.name, destination: relationship.destination)
        }
        for edit in edits {
            switch edit {
            case .setTargets(let join, let source, let targets):
                // Pairs that stay keep their place in the other side's order.
                try removePairs(join, "source", source, keeping: "target", targets, entity: join.sourceEntity, c)
                for (position, target) in targets.enumerated() { try place(target, at: position, of: source, join, c) }
            case .setSources(let join, let target, let sources):
                // Pairs that stay keep their place in the source side's order; new ones go last.
                try removePairs(join, "target", target, keeping: "source", sources, entity: join.targetEntity, c)
                for (position, source) in sources.enumerated() { try add(target, to: source, at: position, join, c) }
            }
        }
    }

    /// Removes the pairs of `key` in `column` whose other end is not among `others`.
    private func removePairs(
        _ join: JoinTableDescription, _ column: String, _ key: Int64, keeping otherColumn: String,
        _ others: [Int64], entity: String, _ c: Connection
    ) throws {
        var arguments = SQLArguments(dialect)
        var sql = "DELETE FROM \(dialect.table(join.name)) WHERE \"\(column)\" = \(arguments.add(Dialect.integer(key)))"
        if !others.isEmpty { sql += " AND " + dialect.excludes("\"\(otherColumn)\"", others, &arguments) }
        try write(sql, arguments.values, entity: entity, c)
    }

    /// Puts `target` at `position` in `source`'s list (and, when the other side is ordered too,
    /// last in `target`'s list if the pair is new).
    private func place(
        _ target: Int64, at position: Int, of source: Int64, _ join: JoinTableDescription, _ c: Connection
    )
        throws
    {
        let table = dialect.table(join.name)
        var arguments = SQLArguments(dialect)
        var columns = "\"source\", \"target\", "
        var values = "\(arguments.add(Dialect.integer(source))), \(arguments.add(Dialect.integer(target))), "
        if join.isTargetOrdered {
            columns += "\"target_position\", "
            values += nextPosition("target_position", in: table, of: "target", target, &arguments) + ", "
        }
        values += arguments.add(Dialect.integer(Int64(position)))
        try write(
            "INSERT INTO \(table) (\(columns)\"position\") VALUES (\(values)) "
                + "ON CONFLICT (\"source\", \"target\") DO UPDATE SET \"position\" = excluded.\"position\"",
            arguments.values, entity: join.sourceEntity, c)
    }

    /// Adds `target` last to `source`'s list unless it holds it already, and puts `source` at
    /// `position` in `target`'s list when that side is ordered.
    private func add(_ target: Int64, to source: Int64, at position: Int, _ join: JoinTableDescription, _ c: Connection)
        throws
    {
        let table = dialect.table(join.name)
        var arguments = SQLArguments(dialect)
        let pair = "\(arguments.add(Dialect.integer(source))), \(arguments.add(Dialect.integer(target)))"
        let last = nextPosition("position", in: table, of: "source", source, &arguments)
        try write(
            "INSERT INTO \(table) (\"source\", \"target\", \"position\") VALUES (\(pair), \(last)) ON CONFLICT DO NOTHING",
            arguments.values, entity: join.targetEntity, c)
        guard join.isTargetOrdered else { return }
        var update = SQLArguments(dialect)
        let sql =
            "UPDATE \(table) SET \"target_position\" = \(update.add(Dialect.integer(Int64(position)))) "
            + "WHERE \"source\" = \(update.add(Dialect.integer(source))) AND \"target\" = \(update.add(Dialect.integer(target)))"
        try write(sql, update.values, entity: join.targetEntity, c)
    }

    /// The place after the last in `key`'s list: one more than the largest `position` of the
    /// pairs whose `column` is `key` (0 for the first).
    private func nextPosition(
        _ position: String, in table: String, of column: String, _ key: Int64, _ arguments: inout SQLArguments<Dialect>
    ) -> String {
        "(SELECT coalesce(max(\"\(position)\"), -1) + 1 FROM \(table) WHERE \"\(column)\" = \(arguments.add(Dialect.integer(key))))"
    }
}
