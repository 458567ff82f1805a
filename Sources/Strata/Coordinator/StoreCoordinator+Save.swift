import Foundation

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
    /// Who saves, for the history of stores that record it.
    public var authorship: HistoryAuthorship
    /// Objects whose to-many relationships kept by the other side's column changed, for the
    /// history (see ``StoreChanges/related``).
    public var related: [ObjectID: RelatedChange] = [:]
    /// Receipts to keep with the changes (see ``SaveReceipt``).
    public var receipts: [SaveReceipt] = []

    /// Creates a save request.
    public init(
        inserts: [StoreRow] = [], assignments: [ObjectID: String] = [:], updates: [StoreUpdate] = [],
        deletes: [StoreDeletion] = [], authorship: HistoryAuthorship = HistoryAuthorship()
    ) {
        self.inserts = inserts
        self.assignments = assignments
        self.updates = updates
        self.deletes = deletes
        self.authorship = authorship
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
    /// The history token of the save: per written store that records history, the number of
    /// the transaction this save committed there; nil when no such store was written.
    public var historyToken: HistoryToken?
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
    /// Saves `request`: routes inserts to their stores, gives them permanent IDs, rewrites
    /// references to those IDs, splits the changes by store, prepares every store's part (one
    /// transaction each) and commits them only when all are prepared. If any store fails before
    /// the commits, every store is left as it was.
    /// - Throws: ``StoreError``: `.noStoreForEntity`, `.conflict`,
    ///   `.uniqueViolation`, `.invalidRequest` (a reference across stores, say), `.io`.
    public func save(_ request: consuming SaveRequest) throws(StoreError) -> SaveResult {
        var save = SaveInProgress(coordinator: self, temporaryIDs: request.inserts.map(\.id))
        try save.route(assignments: request.assignments)
        try save.issuePermanentIDs()
        // The rows are rewritten in place: the request is ours, so its array is taken, not copied
        // (unless the caller still holds it).
        var inserted = request.inserts
        request.inserts = []
        var updates = request.updates
        try save.rewriteReferences(inserts: &inserted, updates: &updates)
        try save.split(inserts: inserted, updates: updates, deletes: request.deletes)
        save.route(request.related)
        save.planParticipation(authorship: request.authorship)
        save.receipts = request.receipts
        let prepared = try save.prepareStores()
        // Every store's part commits under the gate: a read snapshot sees all of the save or none.
        let versions = try commitGate.committing { () throws(StoreError) in try save.commit(prepared) }
        var token: [String: Int64] = [:]
        for (identifier, part) in prepared { if let number = part.historyNumber { token[identifier] = number } }
        return SaveResult(
            permanentIDs: save.permanent, versions: versions, changesByStore: save.summaries,
            historyToken: token.isEmpty ? nil : HistoryToken(token), temporaryIDs: save.temporaryIDs,
            issuedIDs: save.issuedIDs)
    }
}

/// One save on its way through the coordinator, phase by phase. Everything per row indexes arrays
/// rather than hashing UUIDs: inserts are grouped by store and entity once, keys issued per group.
struct SaveInProgress {
    /// Inserts of one entity going to one store.
    struct InsertGroup {
        var store: any PersistentStore
        var identifier: String
        var entity: String
        var members: [Int] = []
    }

    let coordinator: StoreCoordinator
    /// The inserts' temporary IDs, in request order.
    let temporaryIDs: [ObjectID]
    /// Route: the groups, and each insert's group.
    var groups: [InsertGroup] = []
    var groupOf: [Int] = []
    /// Every store the save touches, by UUID.
    var storesByID: [String: any PersistentStore] = [:]
    /// Issue: each insert's permanent ID, in request order, and the map from temporary IDs.
    var issuedIDs: [ObjectID] = []
    var permanent: [ObjectID: ObjectID] = [:]
    /// Split: each store's part of the save, and what it changed.
    var changes: [String: StoreChanges] = [:]
    var summaries: [String: StoreChangeSummary] = [:]
    /// Participation: for a save across durable stores, its ID, its commit point and the other
    /// participants (store UUIDs), in commit order.
    var crossStore: (saveID: String, commitPoint: String, others: [String])?
    /// The finished records each written store forgets in this save (given back if it fails).
    var forgotten: [String: (StoreHousekeeping, [String: [String]])] = [:]
    /// Receipts the store deciding the save keeps with it.
    var receipts: [SaveReceipt] = []

    init(coordinator: StoreCoordinator, temporaryIDs: [ObjectID]) {
        self.coordinator = coordinator
        self.temporaryIDs = temporaryIDs
    }

    /// Phase 1: the store of every insert (its assignment, else the one writable store holding its
    /// entity), grouped by store and entity.
    mutating func route(assignments: [ObjectID: String]) throws(StoreError) {
        groupOf.reserveCapacity(temporaryIDs.count)
        var groupByEntity: [String: Int] = [:]  // unassigned inserts
        // Inserts come in runs of one entity: the last unassigned row's group, by identity.
        var lastHome: ObjectID.Home?
        var lastGroup = 0
        for id in temporaryIDs {
            guard id.isTemporary else {
                throw StoreError(
                    .invalidRequest, "inserted object \(id) already has a permanent ID", entity: id.entityName)
            }
            let entity = id.entityName
            let assigned = assignments.isEmpty ? nil : assignments[id]
            var group: Int
            if assigned == nil, id.home === lastHome {
                group = lastGroup
            } else if assigned == nil, let known = groupByEntity[entity] {
                group = known
                (lastHome, lastGroup) = (id.home, group)
            } else {
                let store = try coordinator.storeForInsert(of: entity, assigned: assigned)
                let identifier = store.identifier
                if let existing = groups.firstIndex(where: { $0.identifier == identifier && $0.entity == entity }) {
                    group = existing
                } else {
                    group = groups.count
                    groups.append(InsertGroup(store: store, identifier: identifier, entity: entity))
                    storesByID[identifier] = store
                }
                if assigned == nil {
                    groupByEntity[entity] = group
                    (lastHome, lastGroup) = (id.home, group)
                }
            }
            groups[group].members.append(groupOf.count)
            groupOf.append(group)
        }
    }

    /// Phase 2: permanent IDs from each group's store (keys are never reused, even when the save
    /// fails later).
    mutating func issuePermanentIDs() throws(StoreError) {
        var issued = [ObjectID?](repeating: nil, count: temporaryIDs.count)
        permanent.reserveCapacity(temporaryIDs.count)
        for group in groups {
            let keys = try group.store.newObjectIDs(entity: group.entity, count: group.members.count)
            for (index, new) in zip(group.members, keys) {
                issued[index] = new
                permanent[temporaryIDs[index]] = new
            }
        }
        issuedIDs = issued.map { $0! }
    }

    /// Phase 3: every reference of the written objects with permanent IDs, each checked to stay in
    /// its object's store.
    mutating func rewriteReferences(inserts: inout [StoreRow], updates: inout [StoreUpdate]) throws(StoreError) {
        for index in inserts.indices {
            inserts[index].id = issuedIDs[index]
            // Most new rows refer to nothing: not even a call (a call would copy this whole save).
            guard inserts[index].reading(\.refersToAnything) else { continue }
            if let rewritten = try references(
                inserts[index].toOne, inserts[index].toMany, owner: groups[groupOf[index]].identifier,
                entity: temporaryIDs[index].entityName)
            {
                (inserts[index].toOne, inserts[index].toMany) = rewritten
            }
        }
        for index in updates.indices {
            let owner = try place(updates[index].id)
            if let rewritten = try references(
                updates[index].toOne, updates[index].toMany, owner: owner, entity: updates[index].id.entityName)
            {
                (updates[index].toOne, updates[index].toMany) = rewritten
            }
        }
    }

    /// Phase 4: each store's part of the save, and a summary of what it changes.
    mutating func split(inserts: [StoreRow], updates: [StoreUpdate], deletes: [StoreDeletion]) throws(StoreError) {
        if groups.count == 1 {
            let owner = groups[0].identifier
            changes[owner] = StoreChanges(inserts: inserts)
            summaries[owner] = StoreChangeSummary(inserted: issuedIDs)
        } else {
            var insertsByGroup = [[StoreRow]](repeating: [], count: groups.count)
            for (index, row) in inserts.enumerated() { insertsByGroup[groupOf[index]].append(row) }
            for (group, rows) in insertsByGroup.enumerated() where !rows.isEmpty {
                let owner = groups[group].identifier
                changes[owner, default: StoreChanges()].inserts += rows
                summaries[owner, default: StoreChangeSummary()].inserted += rows.map(\.id)
            }
        }
        // Updates were placed (and their stores checked) when their references were rewritten.
        for update in updates {
            let owner = update.id.storeIdentifier!
            changes[owner, default: StoreChanges()].updates.append(update)
            summaries[owner, default: StoreChangeSummary()].updated.append(update.id)
        }
        for deletion in deletes {
            let owner = try place(deletion.id)
            changes[owner, default: StoreChanges()].deletes.append(deletion)
            summaries[owner, default: StoreChangeSummary()].deleted.append(deletion.id)
        }
    }

    /// Hands each store the related changes of its objects (those of stores the save writes
    /// nothing else in are left out: they make no transaction of their own).
    mutating func route(_ related: [ObjectID: RelatedChange]) {
        for (id, change) in related {
            guard let owner = id.storeIdentifier, changes[owner] != nil else { continue }
            changes[owner]!.related[id] = change
        }
    }

    /// Phase 5: for a save that writes several durable stores, each one's part in it (see
    /// ``SaveParticipation``): the first in commit order keeps the record of the others' changes.
    /// And for every written store, the finished records and marks it may forget meanwhile, and
    /// who saves (for its history).
    mutating func planParticipation(authorship: HistoryAuthorship = HistoryAuthorship()) {
        let written = changes.keys.filter { !changes[$0]!.isEmpty }.sorted()
        if authorship != HistoryAuthorship() {
            for identifier in written { changes[identifier]!.authorship = authorship }
        }
        let durable = written.filter { storesByID[$0]!.isDurable }
        if durable.count >= 2 {
            let saveID = UUID().uuidString
            let others = Array(durable.dropFirst())
            var parts: [String: JSONValue] = [:]
            for other in others {
                parts[other] = changes[other]!.encoded(in: coordinator.model)
                changes[other]!.participation = SaveParticipation(saveID: saveID, commitPoint: durable[0], record: nil)
            }
            changes[durable[0]]!.participation = SaveParticipation(
                saveID: saveID, commitPoint: durable[0], record: CrossStoreRecord(saveID: saveID, parts: parts))
            crossStore = (saveID, durable[0], others)
        }
        coordinator.crossStoreNotes.withLock { notes in
            for identifier in durable {
                let (housekeeping, records) = notes.take(for: identifier)
                guard !housekeeping.isEmpty else { continue }
                changes[identifier]!.housekeeping = housekeeping
                forgotten[identifier] = (housekeeping, records)
            }
        }
    }

    /// Phase 6: every store's part applied in its own open transaction, in a fixed order (so
    /// concurrent saves cannot deadlock). If one fails, those prepared are rolled back.
    func prepareStores() throws(StoreError) -> [(identifier: String, part: any PreparedSave)] {
        var prepared: [(identifier: String, part: any PreparedSave)] = []
        do {
            for identifier in changes.keys.sorted() where !changes[identifier]!.isEmpty {
                prepared.append((identifier, try storesByID[identifier]!.prepare(changes[identifier]!)))
            }
        } catch {
            for (_, part) in prepared { part.rollback() }
            giveBackHousekeeping(except: [])
            throw error
        }
        return prepared
    }

    /// Phase 7: the prepared parts committed, durable stores first (a store in memory cannot fail
    /// to commit), and the new versions of every written object.
    ///
    /// For a save across durable stores the commit point commits first: if that fails, nothing is
    /// written anywhere. After it, the save has happened: a participant whose commit fails keeps
    /// its part and writes it before its next save (``PreparedSave/commitOrKeep()``), and a crash
    /// is finished by the next recovery.
    func commit(_ prepared: [(identifier: String, part: any PreparedSave)]) throws(StoreError) -> [ObjectID: Int64] {
        let durable = prepared.filter { storesByID[$0.identifier]!.isDurable }
        let others = prepared.filter { !storesByID[$0.identifier]!.isDurable }
        var versions: [ObjectID: Int64] = [:]
        func take(_ part: any PreparedSave) {
            if versions.isEmpty { versions = part.versions } else { versions.merge(part.versions) { _, new in new } }
        }
        var committed: Set<String> = []
        do {
            if !receipts.isEmpty, let decider = crossStore?.commitPoint ?? durable.first?.identifier {
                try durable.first { $0.identifier == decider }!.part.keep(keptReceipts(prepared))
            }
            if let crossStore {
                let point = durable.first { $0.identifier == crossStore.commitPoint }!
                try point.part.commit()
                committed.insert(point.identifier)
                take(point.part)
                try coordinator.crashPoints.reach(.afterCommitPoint)
                let rest = durable.filter { $0.identifier != crossStore.commitPoint }
                for (index, participant) in rest.enumerated() {
                    // The save has happened: a part that cannot be written now is kept for later.
                    if (try? participant.part.commitOrKeep()) != nil { committed.insert(participant.identifier) }
                    take(participant.part)
                    if index < rest.count - 1 { try coordinator.crashPoints.reach(.betweenCommits) }
                }
            } else {
                for (identifier, part) in durable {
                    try part.commit()
                    committed.insert(identifier)
                    take(part)
                }
            }
            for (_, part) in others {
                try part.commit()
                take(part)
            }
        } catch {
            for (identifier, part) in prepared where !committed.contains(identifier) { part.rollback() }
            giveBackHousekeeping(except: committed)
            coordinator.crossStoreNotes.withLock { notes in
                for (identifier, (_, records)) in forgotten where committed.contains(identifier) {
                    notes.forgot(records)
                }
            }
            throw error
        }
        coordinator.crossStoreNotes.withLock { notes in
            for (identifier, (_, records)) in forgotten where committed.contains(identifier) { notes.forgot(records) }
            if let crossStore, crossStore.others.allSatisfy(committed.contains) {
                notes.finished[crossStore.commitPoint, default: [:]][crossStore.saveID] = crossStore.others
            }
        }
        return versions
    }

    /// The receipts with the permanent IDs and the versions this save gives their objects.
    func keptReceipts(_ prepared: [(identifier: String, part: any PreparedSave)]) -> [KeptReceipt] {
        var versions: [ObjectID: Int64] = [:]
        for (_, part) in prepared { versions.merge(part.versions) { _, new in new } }
        return receipts.map { receipt in
            KeptReceipt(
                scope: receipt.scope, key: receipt.key, note: receipt.note,
                objects: receipt.objects.map { id in
                    let permanent = id.isTemporary ? permanent[id] : id
                    return KeptReceipt.Object(id: permanent, version: permanent.flatMap { versions[$0] })
                }, expires: receipt.expires)
        }
    }

    /// Gives the housekeeping of stores whose writes did not commit back for their next save.
    func giveBackHousekeeping(except committed: Set<String>) {
        guard !forgotten.isEmpty else { return }
        coordinator.crossStoreNotes.withLock { notes in
            for (identifier, (housekeeping, records)) in forgotten where !committed.contains(identifier) {
                notes.giveBack(housekeeping, records: records, for: identifier)
            }
        }
    }

    // MARK: - Pieces

    /// The UUID of the store holding existing object `id`, which must be attached.
    private mutating func place(_ id: ObjectID) throws(StoreError) -> String {
        guard let identifier = id.storeIdentifier, let store = coordinator.store(withIdentifier: identifier) else {
            throw StoreError(.notFound, "no attached store holds \(id)", entity: id.entityName)
        }
        storesByID[identifier] = store
        return identifier
    }

    /// `id` with its permanent ID when it is being inserted.
    private func resolve(_ id: ObjectID?) throws(StoreError) -> ObjectID? {
        guard let id else { return nil }
        guard id.isTemporary else { return id }
        guard let mapped = permanent[id] else {
            throw StoreError(
                .invalidRequest, "a reference to \(id) names an object that is not being inserted",
                entity: id.entityName)
        }
        return mapped
    }

    private func sameStore(_ reference: ObjectID?, _ owner: String, _ field: String, _ entity: String)
        throws(StoreError)
    {
        if let reference, reference.storeIdentifier != owner {
            throw StoreError(
                .invalidRequest,
                "'\(entity).\(field)' refers to \(reference), which lives in another store; relationships cannot cross stores (use a fetched property)",
                entity: entity, fields: [field])
        }
    }

    /// References of one written object, with permanent IDs, checked to stay in its store; nil when
    /// it refers to nothing.
    private func references(
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
}

extension StoreCoordinator {
    /// The receipt a save kept for `scope` and `key` in any attached store (see ``SaveReceipt``):
    /// its presence says the save was committed; nil when no store keeps one (no save with it
    /// committed, or it expired).
    public func receipt(scope: String, key: String) throws(StoreError) -> KeptReceipt? {
        for store in stores where store.isDurable {
            if let found = try store.receipt(scope: scope, key: key) { return found }
        }
        return nil
    }
}
