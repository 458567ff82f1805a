extension ObjectContext {
    /// The objects matching `request`, as this context sees them: the stores' objects (through the
    /// parent chain) with this context's unsaved inserts, updates and deletes applied, as in Core Data.
    /// - Throws: `.invalidPredicate` for a predicate that does not fit the entity, `.store`.
    public func fetch(_ request: FetchRequest) throws(ContextError) -> [ManagedObject] {
        // Registers the states and makes their objects under one hold of the lock.
        try fetchStates(request, keepStates: false) { s, keys, _ in
            s.managed.reserveCapacity(s.managed.count + keys.count)
            return keys.map { managedObject($0, &s) }
        }
    }

    /// The IDs of the objects matching `request`.
    public func fetchIDs(_ request: FetchRequest) throws(ContextError) -> [ObjectID] {
        try fetchStates(request, keepStates: false) { _, keys, _ in keys.map(registry.canonical) }
    }

    /// How many objects match `request` (ignoring its limit and offset), unsaved changes included.
    public func count(_ request: FetchRequest) throws(ContextError) -> Int {
        var unwindowed = request
        unwindowed.fetchLimit = nil
        unwindowed.fetchOffset = 0
        if !hasChanges(inFamilyOf: request.entityName), parent == nil {
            do {
                return try coordinator.count(unwindowed)
            } catch {
                throw Self.wrap(error)
            }
        }
        return try fetchStates(unwindowed).count
    }

    static func wrap(_ error: StoreError) -> ContextError {
        ContextError(error.code == .invalidRequest ? .invalidPredicate : .store, error.message, storeError: error)
    }

    private func hasChanges(inFamilyOf entity: String) -> Bool {
        let family = Set(model.entityAndSubentities(of: entity))
        return storage.withLock { s in
            s.inserted.contains { family.contains($0.entityName) }
                || s.updated.keys.contains { family.contains($0.entityName) }
                || s.deleted.keys.contains { family.contains($0.entityName) }
        }
    }

    /// The states matching `request` at this level of the context chain.
    func fetchStates(_ request: FetchRequest) throws(ContextError) -> [ObjectState] {
        try fetchStates(request, keepStates: true) { _, _, states in states }
    }

    /// The keys (and, with `keepStates`, the states) matching `request`, handed to `body` with
    /// the context's lock still held.
    private func fetchStates<T>(
        _ request: FetchRequest, keepStates: Bool, _ body: (inout ContextStorage, [ObjectID], [ObjectState]) -> T
    ) throws(ContextError) -> T {
        guard model.entity(named: request.entityName) != nil else {
            throw ContextError(.unknownProperty, "the model has no entity '\(request.entityName)'")
        }
        // With unsaved changes in the entity's family, the window is applied here, after them.
        let local = hasChanges(inFamilyOf: request.entityName)
        var fetched = try fetchBelow(request, unwindowed: local)
        return try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            if s.staging && keepStates {
                let states = statesBeforeGroupCommit(fetched, request, windowed: local, &s)
                return body(&s, states.map(\.id), states)
            }
            let keep = keepStates || local
            var registered = register(&fetched, keepingStates: keep, skippingChanged: local, &s)
            guard local else {
                return body(&s, keep ? registered.states.map(\.id) : registered.keys, registered.states)
            }
            try addUnsavedChanges(request, to: &registered.states, &s)
            let window = request.window(registered.states)
            return body(&s, window.map(\.id), window)
        }
    }

    /// The states matching `request` one level down: in the parent context, or in the stores.
    /// - Parameter unwindowed: fetch without the request's limit and offset (this context
    ///   applies them after its own changes).
    private func fetchBelow(_ request: FetchRequest, unwindowed: Bool) throws(ContextError) -> [ObjectState] {
        var base = request
        if unwindowed {
            base.fetchLimit = nil
            base.fetchOffset = 0
        }
        if let parent { return try parent.fetchStates(base) }
        do {
            return try coordinator.fetch(base)
        } catch {
            throw Self.wrap(error)
        }
    }

    /// What a child reads while a group commit writes: what is stored, with the objects the group
    /// changes as they were before it (see `stateForChild`). States not yet held are registered.
    /// - Parameter windowed: apply the request's limit and offset (`fetched` was read without them).
    private func statesBeforeGroupCommit(
        _ fetched: [ObjectState], _ request: FetchRequest, windowed: Bool, _ s: inout ContextStorage
    ) -> [ObjectState] {
        var results: [ObjectState] = []
        results.reserveCapacity(fetched.count)
        for var state in fetched {
            let k = key(state.id, s)
            if let original = s.originals[k] {
                results.append(original)
                continue
            }
            state.id = k
            results.append(state)
            if s.objects.index(forKey: k) == nil { s.objects[k] = state }
        }
        if windowed, let limit = request.fetchLimit {
            return Array(results.dropFirst(request.fetchOffset).prefix(limit))
        } else if windowed, request.fetchOffset > 0 {
            return Array(results.dropFirst(request.fetchOffset))
        }
        return results
    }

    /// What `register` hands back, in the order fetched: the states, or only their keys.
    private struct Registered {
        var states: [ObjectState] = []
        var keys: [ObjectID] = []
    }

    /// Registers what came back from below, emptying `fetched`: objects this context deleted are
    /// left out, and objects with unsaved changes keep this context's values (or, with
    /// `skippingChanged`, are left out for `addUnsavedChanges` to add back).
    /// - Parameter keepingStates: collect the states; otherwise only their keys.
    private func register(
        _ fetched: inout [ObjectState], keepingStates keep: Bool, skippingChanged: Bool, _ s: inout ContextStorage
    ) -> Registered {
        var registered = Registered()
        if keep {
            registered.states.reserveCapacity(fetched.count)
        } else {
            registered.keys.reserveCapacity(fetched.count)
        }
        s.objects.reserveCapacity(s.objects.count + fetched.count)
        let pending = !s.deleted.isEmpty || !s.updated.isEmpty || !s.inserted.isEmpty
        // The fetched states are taken out of the array from its end rather than copied out in
        // order and released with the array afterwards (a retain and a release of every
        // reference a state holds: a fifth of a large fetch); the order is restored after.
        while !fetched.isEmpty {
            // By index: `last` would copy the whole state to read its ID.
            let k = key(fetched[fetched.count - 1].id, s)
            if pending {
                if s.deleted[k] != nil {
                    fetched.removeLast()
                    continue
                }
                if s.updated[k] != nil || isInserted(k, s) {
                    let state = fetched.removeLast()
                    if !skippingChanged {
                        if keep { registered.states.append(s.objects[k] ?? state) } else { registered.keys.append(k) }
                    }
                    continue
                }
            }
            var state = fetched.removeLast()
            state.id = k
            if keep { registered.states.append(state) } else { registered.keys.append(k) }
            // Consumed: a state stored while still in scope is copied into the table, a retain
            // and a release of everything it holds.
            s.objects[k] = consume state
        }
        registered.states.reverse()
        registered.keys.reverse()
        return registered
    }

    /// Adds this context's inserted and updated objects of the request's entities that match its
    /// predicate to `states`, then sorts them all in the request's order.
    /// - Throws: `.invalidPredicate` for a predicate or sort key that does not fit the entity.
    private func addUnsavedChanges(
        _ request: FetchRequest, to states: inout [ObjectState], _ s: inout ContextStorage
    ) throws(ContextError) {
        let family = Set(model.entityAndSubentities(of: request.entityName))
        let entities = request.includesSubentities ? family : [request.entityName]
        var predicate: FetchPredicate?
        do {
            predicate = try request.predicate?.bound(to: request.entityName, in: model)
        } catch {
            throw ContextError(.invalidPredicate, "\(error)")
        }
        let candidates = (s.inserted + Array(s.updated.keys)).filter { entities.contains($0.entityName) }
        for k in candidates {
            guard let state = s.objects[k] else { continue }
            if let predicate, try !matches(predicate, state, &s) { continue }
            states.append(state)
        }
        if let key = request.unknownSortKey(in: model) {
            throw ContextError(.invalidPredicate, "cannot sort by '\(key)': no such attribute")
        }
        states.sort(by: request.sortsBefore)
    }

    /// Evaluates a predicate against a state in this context, reading through relationships with
    /// the same path rules as the stores.
    func matches(_ predicate: FetchPredicate, _ state: ObjectState, _ s: inout ContextStorage) throws(ContextError)
        -> Bool
    {
        do {
            return try predicate.evaluate(object: state.id, in: model) { id, key in
                let current = id == state.id ? state : try self.loadState(id, &s)
                guard let current else { return .value(.null) }
                if let value = current.attributes[key] { return .value(value) }
                if let relationship = self.model.relationship(key, of: current.id.entityName) {
                    if relationship.isToMany {
                        return .list(
                            try self.toManyList(current.id, key, &s).map { .object(self.registry.canonical($0)) })
                    }
                    return .object((current.toOne[key] ?? nil).map(self.registry.canonical))
                }
                return .value(.null)
            }
        } catch let error as ContextError {
            throw error
        } catch {
            throw ContextError(.invalidPredicate, "\(error)")
        }
    }
}
