/// A child's unsaved changes, as pushed into its parent.
struct PushedChanges {
    var inserts: [ObjectState] = []
    var updates: [(id: ObjectID, change: PendingChange, state: ObjectState)] = []
    var deletes: [(id: ObjectID, base: Int64?)] = []
    var assignments: [ObjectID: String] = [:]
    var receipts: [SaveReceipt] = []
}

extension ObjectContext {
    /// Saves the unsaved changes: a child pushes them into its parent (no store is touched); the
    /// root validates them and writes them through the coordinator, each object to the store of
    /// its configuration, and publishes the saved IDs.
    ///
    /// Validation runs first and reports every failing object and field; a failed save leaves the
    /// changes in place to be fixed. A root save whose objects changed in the store meets the
    /// ``mergePolicy``.
    /// - Throws: ``ContextError``: `.validation`, `.conflict`, `.store`.
    public func save() throws(ContextError) {
        if let parent {
            try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
                let pushed = try pushedChanges(&s)
                try parent.receive(pushed)
                s.clearPending()
            }
            return
        }
        writeGate?.lock()
        defer { writeGate?.unlock() }
        var none: [ObjectID: StoreRow] = [:]
        let changes = try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            try saveToStores(&s, into: &none)
        }
        if let changes { notify(changes) }
    }

    /// Validates this (child) context's changes and packs them for its parent, leaving them in place.
    func pushedChanges(_ s: inout ContextStorage) throws(ContextError) -> PushedChanges {
        let failures = try validationFailures(&s)
        if !failures.isEmpty { throw ContextError(.validation, "validation failed", failures: failures) }
        var pushed = PushedChanges()
        pushed.inserts = s.inserted.compactMap { s.objects[$0] }
        for (id, change) in s.updated where !change.isEmpty {
            if let state = s.objects[id] { pushed.updates.append((id, change, state)) }
        }
        pushed.deletes = s.deleted.map { ($0.key, $0.value) }
        pushed.assignments = s.assignments
        pushed.receipts = s.receipts
        return pushed
    }

    /// Applies a child's pushed changes to this context.
    func receive(_ pushed: PushedChanges) throws(ContextError) {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in try receive(pushed, &s) }
    }

    /// Applies a child's pushed changes to this context's storage (lock held by the caller).
    ///
    /// A root checks first, changing nothing when they fail, that every object the changes update
    /// still exists and every reference they set names an object that exists (another save may have
    /// deleted it since the child read it); and it applies the delete rules of the deletions again
    /// against what it holds now, so a cascade also takes objects linked meanwhile and a deny
    /// sees links made meanwhile.
    /// - Throws: `.notFound` for an update of an object deleted meanwhile, `.missingReference` for
    ///   a reference to one.
    func receive(_ pushed: PushedChanges, _ s: inout ContextStorage) throws(ContextError) {
        if parent == nil { try checkTargets(pushed, &s) }
        for var receipt in pushed.receipts {
            receipt.objects = receipt.objects.map(registry.canonical)
            s.receipts.append(receipt)
        }
        for var state in pushed.inserts {
            state.id = registry.canonical(state.id)
            state.rewrite(registryMap(state))
            // A root holds a temporary ID only for an unsaved insert (see `isInserted`).
            let isNew =
                parent == nil
                ? !state.id.isTemporary || s.objects[state.id] == nil : s.insertedSet.insert(state.id).inserted
            let k = state.id
            s.objects[k] = consume state
            if isNew {
                s.inserted.append(k)
                if parent != nil, k.isTemporary {
                    registry.hold(k)
                    s.heldTemporaries.append(k)
                }
            }
        }
        for (id, change, state) in pushed.updates {
            guard let current = try loadState(id, &s) else { continue }
            let k = current.id
            var incoming = state
            incoming.rewrite(registryMap(state))
            track(k, &s)
            if !isInserted(k, s), s.updated[k] != nil, let base = change.baseVersion,
                let existing = s.updated[k]?.baseVersion, base < existing
            {
                s.updated[k]?.baseVersion = base
            }
            for name in change.attributes {
                s.objects[k]?.attributes[name] = incoming.attributes[name] ?? .null
                s.updated[k]?.attributes.insert(name)
            }
            for name in change.toOne {
                s.objects[k]?.toOne[name] = .some((incoming.toOne[name] ?? nil).map(registry.canonical))
                s.updated[k]?.toOne.insert(name)
            }
            for (name, delta) in change.toMany {
                var delta = delta
                delta.rewrite(canonicalMap(delta.added + Array(delta.removed) + (delta.orderedList ?? [])))
                let list = try toManyList(k, name, &s)
                s.objects[k]?.toMany[name] = delta.apply(to: list)
                if s.updated[k] != nil {
                    var merged = s.updated[k]?.toMany[name] ?? ToManyDelta()
                    for id in delta.added { merged.add(id) }
                    for id in delta.removed { merged.remove(id) }
                    if delta.orderedList != nil { merged.orderedList = s.objects[k]?.toMany[name] }
                    s.updated[k]?.toMany[name] = merged
                }
            }
            // A root whose policy lets the child's changed values win over what was saved since
            // the child read the object knows the current version: it takes it now rather than
            // meeting it as a conflict in the store.
            if parent == nil, s.mergePolicy == .objectTrump, let base = s.updated[k]?.baseVersion,
                let current = s.objects[k]?.version, base < current
            {
                s.updated[k]?.baseVersion = current
            }
        }
        for (id, base) in pushed.deletes {
            guard let state = try loadState(id, &s) else { continue }
            let k = state.id
            if isInserted(k, s) {
                s.insertedSet.remove(k)
                s.inserted.removeAll { $0 == k }
            } else {
                if s.originals[k] == nil { s.originals[k] = state }
                s.deleted[k] = .some(s.updated[k]?.baseVersion ?? base)
                s.deletedStates[k] = state
                s.updated[k] = nil
            }
            s.objects[k] = nil
            // The child applied the rules to what it saw; the root applies them to what is now.
            if parent == nil { try applyDeleteRules(k, state, &s) }
        }
        for (id, store) in pushed.assignments { s.assignments[registry.canonical(id)] = store }
    }

    /// Checks, without changing anything, that the objects `pushed` updates exist here and that
    /// every reference it sets names an object that exists here (or one it inserts).
    private func checkTargets(_ pushed: PushedChanges, _ s: inout ContextStorage) throws(ContextError) {
        var inserted = Set<ObjectID>()
        for state in pushed.inserts { inserted.insert(registry.canonical(state.id)) }
        func require(_ target: ObjectID?, from owner: ObjectID, _ field: String) throws(ContextError) {
            guard let target else { return }
            let k = registry.canonical(target)
            if inserted.contains(k) { return }
            if try loadState(k, &s) != nil { return }
            let owner = registry.canonical(owner)
            throw ContextError(
                .missingReference,
                "'\(owner.entityName).\(field)' refers to \(k.entityName) \(k.primaryKey.map(String.init) ?? "(new)"), which does not exist (it was deleted)",
                failures: [
                    ValidationFailure(
                        entity: owner.entityName, objectID: owner, field: field, rule: .reference,
                        message:
                            "refers to \(k.entityName) \(k.primaryKey.map(String.init) ?? "(new)"), which does not exist"
                    )
                ])
        }
        for state in pushed.inserts {
            for (name, target) in state.toOne { try require(target ?? nil, from: state.id, name) }
            for (name, targets) in state.toMany { for target in targets { try require(target, from: state.id, name) } }
        }
        for (id, change, state) in pushed.updates {
            if try loadState(id, &s) == nil {
                let k = registry.canonical(id)
                // A change only to an inverse list is a link made to an object deleted meanwhile.
                if change.attributes.isEmpty && change.toOne.isEmpty, let name = change.toMany.keys.sorted().first,
                    let inverse = model.inverse(of: name, of: k.entityName)
                {
                    let linked = change.toMany[name]!.added.first ?? k
                    throw ContextError(
                        .missingReference,
                        "'\(linked.entityName).\(inverse.name)' refers to \(k.entityName) \(k.primaryKey.map(String.init) ?? ""), which does not exist (it was deleted)",
                        failures: [
                            ValidationFailure(
                                entity: linked.entityName, objectID: registry.canonical(linked), field: inverse.name,
                                rule: .reference,
                                message:
                                    "refers to \(k.entityName) \(k.primaryKey.map(String.init) ?? ""), which does not exist"
                            )
                        ])
                }
                throw ContextError(.notFound, "\(k.entityName) \(k.primaryKey.map(String.init) ?? "") was deleted")
            }
            for name in change.toOne { try require(state.toOne[name] ?? nil, from: id, name) }
            for (name, delta) in change.toMany { for target in delta.added { try require(target, from: id, name) } }
        }
    }

    /// The references of `state` whose temporary IDs have permanent ones, mapped to those.
    private func registryMap(_ state: ObjectState) -> [ObjectID: ObjectID] {
        var ids: [ObjectID] = []
        for value in state.toOne.values { if let value { ids.append(value) } }
        for values in state.toMany.values { ids += values }
        return canonicalMap(ids)
    }

    /// The temporary IDs among `ids` that have permanent ones, mapped to those.
    private func canonicalMap(_ ids: [ObjectID]) -> [ObjectID: ObjectID] {
        var map: [ObjectID: ObjectID] = [:]
        for id in ids where id.isTemporary {
            let canonical = registry.canonical(id)
            if canonical != id { map[id] = canonical }
        }
        return map
    }

    /// Builds the coordinator request for the root's changes.
    func saveRequest(_ s: inout ContextStorage) throws(ContextError) -> SaveRequest {
        var request = SaveRequest(authorship: authorship)
        request.receipts = s.receipts
        func joinStored(_ entity: String, _ name: String) -> Bool {
            if case .joinTable? = model.storage(of: name, in: entity) { return true }
            return false
        }
        for k in s.inserted {
            // The state itself becomes the row (one copy, not a copy and then a row of its parts).
            guard var row = s.objects[k] else { continue }
            let lists = row.toMany
            row.id = k
            row.version = 0
            row.toMany = [:]
            // A new object's empty lists write nothing.
            for (name, list) in lists where !list.isEmpty && joinStored(k.entityName, name) {
                row.toMany[name] = list
            }
            request.inserts.append(row)
            if let store = s.assignments[k] { request.assignments[k] = store }
        }
        for (k, change) in s.updated.sorted(by: { ObjectID.precedes($0.key, $1.key) }) where !change.isEmpty {
            guard let state = s.objects[k] else { continue }
            var update = StoreUpdate(id: k, expectedVersion: change.baseVersion)
            for name in change.attributes { update.attributes[name] = state.attributes[name] ?? .null }
            for name in change.toOne { update.toOne[name] = .some(state.toOne[name] ?? nil) }
            for name in change.toMany.keys where joinStored(k.entityName, name) {
                update.toMany[name] = try toManyList(k, name, &s)
            }
            // A change to a to-many relationship kept by the other side's column writes nothing of
            // this object's; its history records it.
            let related = change.toMany.keys.filter { !joinStored(k.entityName, $0) }
            if !related.isEmpty { request.related[k] = RelatedChange(names: related.sorted(), version: state.version) }
            if update.attributes.isEmpty && update.toOne.isEmpty && update.toMany.isEmpty { continue }
            request.updates.append(update)
        }
        for (k, base) in s.deleted.sorted(by: { ObjectID.precedes($0.key, $1.key) }) {
            request.deletes.append(StoreDeletion(id: k, expectedVersion: base))
        }
        return request
    }

    /// Validates, writes through the coordinator (resolving conflicts by the merge policy), and
    /// updates this root context; returns the changes to publish.
    /// - Parameters:
    ///   - strict: objects whose expected version a commit named: a conflict on one of them fails
    ///     the save whatever the merge policy.
    ///   - keeping: objects whose saved states to collect into `snapshots`, exactly as this save
    ///     wrote them.
    func saveToStores(
        _ s: inout ContextStorage, strict: Set<ObjectID> = [], keeping: [ObjectID] = [],
        into snapshots: inout [ObjectID: StoreRow]
    ) throws(ContextError) -> ContextChanges? {
        try computeDerived(&s)
        let failures = try validationFailures(&s)
        if !failures.isEmpty { throw ContextError(.validation, "validation failed", failures: failures) }
        var attempts = 0
        while true {
            attempts += 1
            let request = try saveRequest(&s)
            let touched = s.inserted.count + s.updated.count + s.deleted.count
            if touched == 0 {
                s.receipts.removeAll()
                return nil
            }
            let result: SaveResult
            do {
                result = try coordinator.save(request)
            } catch {
                if error.code == .conflict, s.mergePolicy != .error, attempts < 10,
                    strict.isEmpty || !error.conflicts.contains(where: { strict.contains($0.id) })
                {
                    try resolve(error.conflicts, &s)
                    continue
                }
                throw Self.contextError(error)
            }
            return finish(result, &s, keeping: keeping, into: &snapshots)
        }
    }

    /// Re-keys inserted objects to their permanent IDs and takes the new versions.
    /// - Parameters:
    ///   - keeping: objects (by any of their IDs) whose states as saved go into `snapshots`, keyed
    ///     by the ID given (with the to-many lists this context holds of them).
    func finish(
        _ result: SaveResult, _ s: inout ContextStorage, keeping: [ObjectID] = [],
        into snapshots: inout [ObjectID: StoreRow]
    ) -> ContextChanges {
        let map = result.permanentIDs
        registry.record(result.temporaryIDs, result.issuedIDs)
        // Only objects changed in this save can refer to the new ones: re-key just those, and
        // rewrite only states that refer to something.
        var inserted: [ObjectID] = []
        inserted.reserveCapacity(result.issuedIDs.count)
        for (id, new) in zip(result.temporaryIDs, result.issuedIDs) {
            guard var state = s.objects.removeValue(forKey: id) else { continue }
            inserted.append(new)
            if state.refersToAnything { state.rewrite(map) }
            state.id = new
            state.version = 1  // every store inserts at version 1
            // Consumed: a state stored while still in scope is copied into the table, a retain and
            // a release of everything it holds.
            s.objects[new] = consume state
            if let object = s.managed.removeValue(forKey: id) {
                object.storedID = new
                s.managed[new] = object
            }
        }
        for id in s.updated.keys {
            guard var state = s.objects.removeValue(forKey: id) else { continue }
            if !map.isEmpty, state.refersToAnything { state.rewrite(map) }
            if let version = result.versions[state.id] { state.version = version }
            let k = state.id
            s.objects[k] = consume state
        }
        for id in s.deletedStates.keys { s.managed[id] = nil }
        var byStore: [String: StoreChangeSummary] = result.changesByStore
        let updated = s.updated.keys.filter { !(s.updated[$0]?.isEmpty ?? true) }
        for id in updated where !result.versions.keys.contains(id) {
            // Relationship-only changes kept by the other side: report them as updated too.
            if let store = id.storeIdentifier, !(byStore[store]?.updated.contains(id) ?? false) {
                byStore[store, default: StoreChangeSummary()].updated.append(id)
            }
        }
        let deleted = Array(s.deleted.keys)
        for id in keeping {
            if let state = s.objects[key(id, s)] { snapshots[id] = state }
        }
        s.clearPending()
        if let limit = s.cacheLimit, s.objects.count > limit { s.objects.removeAll(keepingCapacity: true) }
        var changes = ContextChanges(inserted: inserted, updated: updated, deleted: deleted, byStore: byStore)
        changes.historyToken = result.historyToken
        savedHistoryToken = result.historyToken
        return changes
    }

    /// Applies the merge policy to the conflicting objects so the save can be retried.
    func resolve(_ conflicts: [VersionConflict], _ s: inout ContextStorage) throws(ContextError) {
        for conflict in conflicts {
            let k = conflict.id
            let stored: StoreRow?
            do {
                stored = try coordinator.row(for: k)
            } catch {
                throw ContextError(.store, error.message, storeError: error)
            }
            if s.deleted[k] != nil {
                switch s.mergePolicy {
                case .storeTrump, .rollback:
                    s.deleted[k] = nil
                    s.deletedStates[k] = nil
                    if let stored { s.objects[k] = ObjectState(row: stored) }
                case .objectTrump, .overwrite, .error:
                    if stored == nil {
                        s.deleted[k] = nil
                    } else {
                        s.deleted[k] = .some(nil)
                    }
                }
                continue
            }
            guard let stored, var change = s.updated[k], let mine = s.objects[k] else {
                // Deleted underneath: the update has nothing left to change.
                s.updated[k] = nil
                s.objects[k] = nil
                continue
            }
            var merged = ObjectState(row: stored)
            merged.toMany = mine.toMany
            switch s.mergePolicy {
            case .objectTrump, .error:
                for name in change.attributes { merged.attributes[name] = mine.attributes[name] }
                for name in change.toOne { merged.toOne[name] = mine.toOne[name] }
                change.baseVersion = stored.version
            case .storeTrump:
                let original = s.originals[k]
                for name in change.attributes {
                    if stored.attributes[name] == original?.attributes[name] {
                        merged.attributes[name] = mine.attributes[name]
                    } else {
                        change.attributes.remove(name)
                    }
                }
                for name in change.toOne {
                    if stored.toOne[name] == original?.toOne[name] {
                        merged.toOne[name] = mine.toOne[name]
                    } else {
                        change.toOne.remove(name)
                    }
                }
                change.baseVersion = stored.version
            case .overwrite:
                merged = mine
                merged.version = stored.version
                change.baseVersion = nil
                change.attributes = Set(mine.attributes.keys)
                change.toOne = Set(mine.toOne.keys)
            case .rollback:
                merged.toMany = [:]
                s.objects[k] = merged
                s.updated[k] = nil
                s.originals[k] = nil
                continue
            }
            s.objects[k] = merged
            s.updated[k] = change
        }
    }

    /// Forgets what another process may have changed in the stores: `.objects` as if they were
    /// saved by another root (``mergeChanges(_:)``), `.everything` by dropping every object
    /// without unsaved changes, so that each is read from the stores again.
    public func mergeExternalChanges(_ change: ExternalStoreChange) {
        switch change {
        case .objects(let ids): mergeChanges(ContextChanges(externallyChanged: ids))
        case .everything:
            writeGate?.lock()
            defer { writeGate?.unlock() }
            storage.withLock { s in
                for k in Array(s.objects.keys) where s.updated[k] == nil && !isInserted(k, s) { s.objects[k] = nil }
            }
        }
    }

    /// Merges another root save's changes: objects without unsaved changes take the saved values,
    /// deleted ones leave the context.
    public func mergeChanges(_ changes: ContextChanges) {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        storage.withLock { s in
            for id in changes.updated + changes.inserted {
                let k = key(id, s)
                if s.updated[k] == nil, !isInserted(k, s) { s.objects[k] = nil }
            }
            for id in changes.deleted {
                let k = key(id, s)
                if s.updated[k] == nil { s.objects[k] = nil }
            }
        }
    }
}

extension ObjectContext {
    /// Keeps `receipt` with this context's next save, in the same transaction as its changes (see
    /// ``SaveReceipt``); a child hands it to its parent with its changes. A save that writes
    /// nothing keeps no receipt, and a rollback drops it with the changes.
    public func keepReceipt(_ receipt: SaveReceipt) {
        storage.withLock { $0.receipts.append(receipt) }
    }
}
