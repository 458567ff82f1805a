/// One save's changes across stores, as the root context hands them to the coordinator.
public struct SaveRequest: Sendable, Hashable {
    /// New objects, with temporary IDs; references among them may use those temporary IDs.
    public var inserts: [StoreRow]
    /// For inserts whose entity several writable stores hold: temporary ID → store UUID.
    public var assignments: [ObjectID: String]
    /// Changed objects.
    public var updates: [StoreUpdate]
    /// Deleted objects.
    public var deletes: [StoreDeletion]

    /// Creates a save request.
    public init(
        inserts: [StoreRow] = [], assignments: [ObjectID: String] = [:], updates: [StoreUpdate] = [],
        deletes: [StoreDeletion] = []
    ) {
        self.inserts = inserts
        self.assignments = assignments
        self.updates = updates
        self.deletes = deletes
    }
}

/// What a save did, for contexts to update themselves and to publish.
public struct SaveResult: Sendable, Hashable {
    /// Temporary ID → permanent ID of every inserted object.
    public var permanentIDs: [ObjectID: ObjectID]
    /// The new version of every inserted and updated object (by permanent ID).
    public var versions: [ObjectID: Int64]
    /// Per store UUID: the inserted, updated and deleted IDs.
    public var changesByStore: [String: StoreChangeSummary]
    /// The inserts' temporary IDs, in the request's order, and the permanent IDs they were given:
    /// the context re-keys its objects walking these rather than hashing each through `permanentIDs`.
    var temporaryIDs: [ObjectID] = []
    var issuedIDs: [ObjectID] = []
}

/// The IDs one save changed in one store.
public struct StoreChangeSummary: Sendable, Hashable {
    /// Inserted objects.
    public var inserted: [ObjectID] = []
    /// Updated objects.
    public var updated: [ObjectID] = []
    /// Deleted objects.
    public var deleted: [ObjectID] = []
}

extension StoreCoordinator {
    /// Saves `request`: routes inserts to their stores, gives them permanent IDs, splits the changes
    /// by store, prepares every store's part (one transaction each) and commits them only when all
    /// are prepared. If any store fails, every store is left as it was.
    /// - Throws: ``StoreError``: `.noStoreForEntity`, `.ambiguousStore`, `.conflict`,
    ///   `.uniqueViolation`, `.invalidRequest` (a reference across stores, say), `.io`.
    public func save(_ request: consuming SaveRequest) throws(StoreError) -> SaveResult {
        // 1. Route each insert and give it a permanent ID. Inserts are grouped by store and entity
        // (keys issued per group); everything per row indexes arrays rather than hashing UUIDs.
        struct Group {
            var store: any PersistentStore
            var identifier: String
            var entity: String
            var members: [Int] = []
        }
        var groups: [Group] = []
        let temporaryIDs = request.inserts.map(\.id)
        var groupOf: [Int] = []
        groupOf.reserveCapacity(temporaryIDs.count)
        var groupByEntity: [String: Int] = [:]  // unassigned inserts
        // Inserts come in runs of one entity: the last unassigned row's group, by identity.
        var lastHome: ObjectID.Home?
        var lastGroup = 0
        var storesByID: [String: any PersistentStore] = [:]
        for (index, id) in temporaryIDs.enumerated() {
            guard id.isTemporary else {
                throw StoreError(
                    .invalidRequest, "inserted object \(id) already has a permanent ID", entity: id.entityName)
            }
            let entity = id.entityName
            let assigned = request.assignments.isEmpty ? nil : request.assignments[id]
            var group: Int
            if assigned == nil, id.home === lastHome {
                group = lastGroup
            } else if assigned == nil, let known = groupByEntity[entity] {
                group = known
                (lastHome, lastGroup) = (id.home, group)
            } else {
                let store = try storeForInsert(of: entity, assigned: assigned)
                let identifier = store.identifier
                if let existing = groups.firstIndex(where: { $0.identifier == identifier && $0.entity == entity }) {
                    group = existing
                } else {
                    group = groups.count
                    groups.append(Group(store: store, identifier: identifier, entity: entity))
                    storesByID[identifier] = store
                }
                if assigned == nil {
                    groupByEntity[entity] = group
                    (lastHome, lastGroup) = (id.home, group)
                }
            }
            groups[group].members.append(index)
            groupOf.append(group)
        }
        var issuedIDs = [ObjectID?](repeating: nil, count: temporaryIDs.count)
        var permanent: [ObjectID: ObjectID] = [:]
        permanent.reserveCapacity(temporaryIDs.count)
        for group in groups {
            let issued = try group.store.newObjectIDs(entity: group.entity, count: group.members.count)
            for (index, new) in zip(group.members, issued) {
                issuedIDs[index] = new
                permanent[temporaryIDs[index]] = new
            }
        }
        func resolve(_ id: ObjectID?) throws(StoreError) -> ObjectID? {
            guard let id else { return nil }
            guard id.isTemporary else { return id }
            guard let mapped = permanent[id] else {
                throw StoreError(
                    .invalidRequest, "a reference to \(id) names an object that is not being inserted",
                    entity: id.entityName)
            }
            return mapped
        }
        // 2. Split by store, rewriting references to permanent IDs.
        var changes: [String: StoreChanges] = [:]
        var summaries: [String: StoreChangeSummary] = [:]
        func place(_ id: ObjectID) throws(StoreError) -> String {
            guard let identifier = id.storeIdentifier, let store = store(withIdentifier: identifier) else {
                throw StoreError(.notFound, "no attached store holds \(id)", entity: id.entityName)
            }
            storesByID[identifier] = store
            return identifier
        }
        func sameStore(_ reference: ObjectID?, _ owner: String, _ field: String, _ entity: String) throws(StoreError) {
            if let reference, reference.storeIdentifier != owner {
                throw StoreError(
                    .invalidRequest,
                    "'\(entity).\(field)' refers to \(reference), which lives in another store; relationships cannot cross stores (use a fetched property)",
                    entity: entity, fields: [field])
            }
        }
        /// References of one written object, with permanent IDs, checked to stay in its store; nil
        /// when it refers to nothing.
        func references(
            _ toOne: [String: ObjectID?], _ toMany: [String: [ObjectID]], owner: String, entity: String
        ) throws(StoreError) -> ([String: ObjectID?], [String: [ObjectID]])? {
            // Most rows refer to nothing (or only to saved objects of their store): no rewrite.
            if toOne.values.allSatisfy({ $0 == nil }) && toMany.values.allSatisfy(\.isEmpty) { return nil }
            var one: [String: ObjectID?] = [:]
            var many: [String: [ObjectID]] = [:]
            for (name, value) in toOne {
                let target = try resolve(value)
                try sameStore(target, owner, name, entity)
                one[name] = .some(target)
            }
            for (name, values) in toMany {
                var targets: [ObjectID] = []
                for value in values {
                    let target = try resolve(value)!
                    try sameStore(target, owner, name, entity)
                    targets.append(target)
                }
                many[name] = targets
            }
            return (one, many)
        }
        // The rows are rewritten in place: the request is ours, so its array is taken, not copied
        // (unless the caller still holds it).
        var insertedRows = request.inserts
        request.inserts = []
        let permanentIDs = issuedIDs.map { $0! }
        for index in insertedRows.indices {
            insertedRows[index].id = permanentIDs[index]
            if let rewritten = try references(
                insertedRows[index].toOne, insertedRows[index].toMany, owner: groups[groupOf[index]].identifier,
                entity: temporaryIDs[index].entityName)
            {
                (insertedRows[index].toOne, insertedRows[index].toMany) = rewritten
            }
        }
        if groups.count == 1 {
            let owner = groups[0].identifier
            changes[owner] = StoreChanges(inserts: insertedRows)
            summaries[owner] = StoreChangeSummary(inserted: permanentIDs)
        } else {
            var insertsByGroup = [[StoreRow]](repeating: [], count: groups.count)
            for (index, row) in insertedRows.enumerated() { insertsByGroup[groupOf[index]].append(row) }
            for (group, rows) in insertsByGroup.enumerated() where !rows.isEmpty {
                let owner = groups[group].identifier
                changes[owner, default: StoreChanges()].inserts += rows
                summaries[owner, default: StoreChangeSummary()].inserted += rows.map(\.id)
            }
        }
        for update in request.updates {
            let owner = try place(update.id)
            var written = update
            if let rewritten = try references(
                update.toOne, update.toMany, owner: owner, entity: update.id.entityName)
            {
                (written.toOne, written.toMany) = rewritten
            }
            changes[owner, default: StoreChanges()].updates.append(written)
            summaries[owner, default: StoreChangeSummary()].updated.append(update.id)
        }
        for deletion in request.deletes {
            let owner = try place(deletion.id)
            changes[owner, default: StoreChanges()].deletes.append(deletion)
            summaries[owner, default: StoreChangeSummary()].deleted.append(deletion.id)
        }
        // 3. Prepare every store (in a fixed order, so concurrent saves cannot deadlock), then commit.
        var prepared: [any PreparedSave] = []
        do {
            for identifier in changes.keys.sorted() where !changes[identifier]!.isEmpty {
                prepared.append(try storesByID[identifier]!.prepare(changes[identifier]!))
            }
        } catch {
            for part in prepared { part.rollback() }
            throw error
        }
        var versions: [ObjectID: Int64] = [:]
        for part in prepared {
            try part.commit()
            if versions.isEmpty {
                versions = part.versions
            } else {
                versions.merge(part.versions) { _, new in new }
            }
        }
        return SaveResult(
            permanentIDs: permanent, versions: versions, changesByStore: summaries,
            temporaryIDs: temporaryIDs, issuedIDs: permanentIDs)
    }
}
