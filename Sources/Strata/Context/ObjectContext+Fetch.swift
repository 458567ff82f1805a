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
        let local = hasChanges(inFamilyOf: request.entityName)
        var base = request
        if local {
            base.fetchLimit = nil
            base.fetchOffset = 0
        }
        var fetched: [ObjectState]
        if let parent {
            fetched = try parent.fetchStates(base)
        } else {
            do {
                fetched = try coordinator.fetch(base)
            } catch {
                throw Self.wrap(error)
            }
        }
        return try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            if s.staging && keepStates {
                // A child reads while a group commit writes: what is stored, with the objects
                // the group changes as they were before it (see `stateForChild`).
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
                if local, let limit = request.fetchLimit {
                    results = Array(results.dropFirst(request.fetchOffset).prefix(limit))
                } else if local, request.fetchOffset > 0 {
                    results = Array(results.dropFirst(request.fetchOffset))
                }
                return body(&s, results.map(\.id), results)
            }
            // Register what came back; objects with unsaved changes keep this context's values.
            var results: [ObjectState] = []
            var keys: [ObjectID] = []
            let keep = keepStates || local
            if keep { results.reserveCapacity(fetched.count) } else { keys.reserveCapacity(fetched.count) }
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
                        if !local {
                            if keep { results.append(s.objects[k] ?? state) } else { keys.append(k) }
                        }
                        continue
                    }
                }
                var state = fetched.removeLast()
                state.id = k
                if keep { results.append(state) } else { keys.append(k) }
                // Consumed: a state stored while still in scope is copied into the table, a retain
                // and a release of everything it holds.
                s.objects[k] = consume state
            }
            results.reverse()
            keys.reverse()
            guard local else { return body(&s, keep ? results.map(\.id) : keys, results) }
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
                results.append(state)
            }
            if let key = request.unknownSortKey(in: model) {
                throw ContextError(.invalidPredicate, "cannot sort by '\(key)': no such attribute")
            }
            results.sort(by: request.sortsBefore)
            let window = request.window(results)
            return body(&s, window.map(\.id), window)
        }
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
