import Foundation

extension ObjectContext {
    /// The key under which `s` holds `id`: the permanent ID once known, else the temporary one.
    func key(_ id: ObjectID, _ s: ContextStorage) -> ObjectID { located(id, s).key }

    /// The key `id` is held under (see `key`), and where its state is in `s.objects` when it has
    /// one there, found in the same lookups.
    func located(_ id: ObjectID, _ s: ContextStorage) -> (key: ObjectID, index: [ObjectID: ObjectState].Index?) {
        // `index(forKey:)` finds a key without copying the state out as `objects[key]` would.
        let canonical = registry.canonical(id)
        if let index = s.objects.index(forKey: canonical) { return (canonical, index) }
        if s.deleted.index(forKey: canonical) != nil { return (canonical, nil) }
        if let temporary = registry.temporary(for: canonical) {
            let index = s.objects.index(forKey: temporary)
            if index != nil || s.deleted.index(forKey: temporary) != nil { return (temporary, index) }
        }
        return (canonical, nil)
    }

    /// The state of `id` in this context, loaded from the parent or the stores when first needed.
    func loadState(_ id: ObjectID, _ s: inout ContextStorage) throws(ContextError) -> ObjectState? {
        let k = key(id, s)
        if let state = s.objects[k] { return state }
        if s.deleted[k] != nil { return nil }
        let loaded: ObjectState?
        if let parent {
            loaded = try parent.storage.withLock { (p: inout ContextStorage) throws(ContextError) in
                try parent.stateForChild(k, &p)
            }
        } else if k.isTemporary {
            loaded = nil
        } else {
            do {
                loaded = try coordinator.row(for: k).map(ObjectState.init(row:))
            } catch {
                throw ContextError(.store, "cannot read \(k): \(error)", storeError: error)
            }
        }
        if var state = loaded {
            state.id = k
            s.objects[k] = state
            return state
        }
        return nil
    }

    /// The state of `id` as a child of this context reads it: while a group commit writes to the
    /// stores, an object it changes reads as it was before (the commit may still fail, and until
    /// it succeeds its values are not the stored version's), otherwise as this context holds it.
    func stateForChild(_ id: ObjectID, _ s: inout ContextStorage) throws(ContextError) -> ObjectState? {
        if s.staging {
            let k = key(id, s)
            if let original = s.originals[k] { return original }
            if isInserted(k, s) { return nil }
        }
        return try loadState(id, &s)
    }

    /// The contents of a to-many relationship as a child of this context reads them (see
    /// ``stateForChild(_:_:)``).
    func listForChild(_ id: ObjectID, _ name: String, _ s: inout ContextStorage) throws(ContextError) -> [ObjectID] {
        if s.staging, let original = s.originals[key(id, s)] {
            if let list = original.toMany[name] { return list }
            do {
                return try coordinator.relatedIDs(of: original.id, relationship: name)
            } catch {
                throw ContextError(.store, "cannot read \(original.id).\(name): \(error)", storeError: error)
            }
        }
        return try toManyList(id, name, &s)
    }

    func requireState(_ id: ObjectID, _ s: inout ContextStorage) throws(ContextError) -> ObjectState {
        guard let state = try loadState(id, &s) else {
            throw ContextError(.notFound, "object \(registry.canonical(id)) does not exist")
        }
        return state
    }

    /// The materialized contents of a to-many relationship.
    func toManyList(_ id: ObjectID, _ name: String, _ s: inout ContextStorage) throws(ContextError) -> [ObjectID] {
        let state = try requireState(id, &s)
        if let list = state.toMany[name] { return list }
        let list: [ObjectID]
        if let parent {
            list = try parent.storage.withLock { (p: inout ContextStorage) throws(ContextError) in
                try parent.listForChild(state.id, name, &p)
            }
        } else if state.id.isTemporary {
            list = []
        } else {
            do {
                list = try coordinator.relatedIDs(of: state.id, relationship: name)
            } catch {
                throw ContextError(.store, "cannot read \(state.id).\(name): \(error)", storeError: error)
            }
        }
        s.objects[state.id]?.toMany[name] = list
        return list
    }

    /// Whether `k` is an unsaved insert of this context. A root holds temporary IDs only for its
    /// unsaved inserts (its saves give them permanent ones), so only a child keeps a set of them.
    func isInserted(_ k: ObjectID, _ s: ContextStorage) -> Bool {
        if parent == nil { return k.isTemporary && s.objects.index(forKey: k) != nil }
        return s.insertedSet.contains(k)
    }

    /// Starts tracking changes of `k` (an existing object), remembering its state for rollback.
    func track(_ k: ObjectID, _ s: inout ContextStorage) {
        guard !isInserted(k, s), s.updated[k] == nil, let state = s.objects[k] else { return }
        s.updated[k] = PendingChange(baseVersion: state.version)
        if s.originals[k] == nil { s.originals[k] = state }
    }

    /// The managed object for `k`, made on first use.
    func managedObject(_ k: ObjectID, _ s: inout ContextStorage) -> ManagedObject {
        // One lookup: the entry is made in place when missing.
        func existing(_ object: inout ManagedObject) -> ManagedObject { object }
        return existing(&s.managed[k, default: ManagedObject(link: link, id: k)])
    }

    // MARK: - Public object API

    /// Inserts a new object of `entity` with its default values; it gets a temporary ID until the
    /// root save.
    /// - Throws: `.unknownProperty` for an unknown entity, `.abstractEntity`, `.invalidValue`.
    @discardableResult
    public func insert(_ entity: String, values: [String: AttributeValue] = [:]) throws(ContextError) -> ManagedObject {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        guard let resolved = model.resolvedEntity(entity) else {
            throw ContextError(.unknownProperty, "the model has no entity '\(entity)'")
        }
        if resolved.entity.isAbstract {
            throw ContextError(.abstractEntity, "'\(entity)' is abstract; insert one of its subentities")
        }
        let id = ObjectID.temporary(in: resolved.temporaryHome)
        var state = ObjectState(
            id: id, version: 0,
            attributes: values.isEmpty ? resolved.newAttributes : resolved.newAttributes.withOwnStorage(),
            toOne: resolved.newToOne, toMany: resolved.newToMany)
        // The new state follows the entity's layout: values go by position, checked by type.
        for (name, value) in values {
            guard let position = resolved.layout.positions[name] else {
                throw ContextError(.unknownProperty, "'\(entity)' has no attribute '\(name)'")
            }
            let checked = try Self.checked(value, type: resolved.attributeTypes[position], name: name, of: entity)
            state.attributes.set(checked, at: position)
        }
        if parent != nil { registry.hold(id) }
        // The tables grow by themselves: `reserveCapacity` is not specialized for our types, and
        // rehashing through it costs more than the doublings it saves.
        let object = ManagedObject(link: link, id: id)
        // Taken into the lock's closure rather than captured and copied there.
        var moving: ObjectState? = consume state
        storage.withLock { s in
            s.objects[id] = moving.take()
            s.inserted.append(id)
            if parent != nil {
                s.insertedSet.insert(id)
                s.heldTemporaries.append(id)
            }
            s.managed[id] = object  // a new ID has no managed object yet
        }
        return object
    }

    /// `value` converted to `attribute`'s type where that loses nothing (integers to double or
    /// decimal), or an `.invalidValue` error.
    static func checked(_ value: AttributeValue, for attribute: AttributeDescription, of entity: String)
        throws(ContextError) -> AttributeValue
    {
        let value = try checked(value, type: attribute.type, name: attribute.name, of: entity)
        // A composite that fits its elements is kept in the form the server writes (every element,
        // each as its type writes it); one that does not is kept as given for the save to report.
        if attribute.isComposite, case .json(let json) = value {
            do throws(CompositeValueError) {
                return .json(try attribute.checkedComposite(json))
            } catch {
                return value
            }
        }
        return value
    }

    /// `value` converted to `type` where that loses nothing, or an `.invalidValue` error naming
    /// attribute `name` of `entity`.
    static func checked(_ value: AttributeValue, type: AttributeType, name: String, of entity: String)
        throws(ContextError) -> AttributeValue
    {
        var value = value
        if case .integer(let i) = value, type == .double || type == .float {
            value = .double(Double(i))
        }
        if case .integer(let i) = value, type == .decimal { value = .decimal(Decimal(i)) }
        guard value.fits(type) else {
            throw ContextError(
                .invalidValue,
                "'\(entity).\(name)' is \(type.rawValue); \(value.kindName) \(value.json.jsonText) does not fit"
            )
        }
        return value
    }

    /// The object with `id`, registered in this context.
    /// - Throws: `.notFound` when it does not exist (or is deleted here).
    public func object(with id: ObjectID) throws(ContextError) -> ManagedObject {
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            let state = try requireState(id, &s)
            return managedObject(state.id, &s)
        }
    }

    /// Marks an object deleted, applying its relationships' delete rules now (cascade, nullify;
    /// deny is checked when saving).
    public func delete(_ object: ManagedObject) throws(ContextError) {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in try delete(object.storedID, &s) }
    }

    func delete(_ id: ObjectID, _ s: inout ContextStorage) throws(ContextError) {
        guard let state = try loadState(id, &s) else { return }
        let k = state.id
        // Mark first, so cascades that come back to this object stop.
        if isInserted(k, s) {
            s.insertedSet.remove(k)
            s.inserted.removeAll { $0 == k }
            s.deletedStates[k] = state
        } else {
            let base = s.updated[k]?.baseVersion ?? state.version
            if s.originals[k] == nil { s.originals[k] = state }
            s.updated[k] = nil
            s.deleted[k] = .some(base)
            s.deletedStates[k] = state
        }
        s.objects[k] = nil
        try applyDeleteRules(k, state, &s)
    }

    /// Applies the nullify and cascade rules of deleted object `k` (whose last state was `state`)
    /// to the objects its relationships hold in this context; deny is checked when saving.
    func applyDeleteRules(_ k: ObjectID, _ state: ObjectState, _ s: inout ContextStorage) throws(ContextError) {
        try unlinkIncoming(k, &s)
        for relationship in model.relationships(of: k.entityName) {
            guard relationship.deleteRule == .nullify || relationship.deleteRule == .cascade else { continue }
            let inverse = model.inverse(of: relationship.name, of: k.entityName)
            // Without an inverse the targets hold nothing of `k`: only a cascade reaches them.
            guard inverse != nil || relationship.deleteRule == .cascade else { continue }
            var related: [ObjectID] = []
            if relationship.isToMany {
                s.objects[k] = state
                related = try toManyList(k, relationship.name, &s)
                s.deletedStates[k]?.toMany[relationship.name] = related
                s.objects[k] = nil
            } else if let target = state.toOne[relationship.name] ?? nil {
                related = [target]
            }
            for target in related {
                guard let targetState = try loadState(target, &s) else { continue }
                if let inverse { try unlink(targetState.id, inverse, from: k, &s) }
                if relationship.deleteRule == .cascade { try delete(targetState.id, &s) }
            }
        }
    }

    /// Removes deleted object `k` from the relationships without an inverse that hold it (what an
    /// inverse's nullify rule would do): they name no inverse to follow, so the holders are
    /// fetched by the reference.
    func unlinkIncoming(_ k: ObjectID, _ s: inout ContextStorage) throws(ContextError) {
        let incoming = model.relationshipsWithoutInverse(into: k.entityName)
        guard !incoming.isEmpty else { return }
        for (owner, relationship) in incoming {
            let predicate = FetchPredicate.comparison(
                Comparison(
                    .keyPath(relationship.name), .equal, .object(k), modifier: relationship.isToMany ? .any : .direct))
            // The holders as the parent (or the stores) see them, and this context's own changed
            // objects that hold it.
            let request = FetchRequest(entityName: owner, predicate: predicate)
            var holders: [ObjectID] = []
            if let parent {
                holders = try parent.fetchStates(request).map(\.id)
            } else {
                do {
                    holders = try coordinator.fetch(request).map(\.id)
                } catch {
                    throw Self.wrap(error)
                }
            }
            let family = Set(model.entityAndSubentities(of: owner))
            for changed in s.inserted + Array(s.updated.keys) where family.contains(changed.entityName) {
                guard let state = s.objects[changed] else { continue }
                let holds =
                    relationship.isToMany
                    ? (state.toMany[relationship.name] ?? []).contains(k)
                    : (state.toOne[relationship.name] ?? nil) == k
                if holds { holders.append(changed) }
            }
            for holder in holders {
                guard try loadState(holder, &s) != nil else { continue }
                let h = key(holder, s)
                if relationship.isToMany {
                    try primitiveRemove(h, relationship.name, k, &s)
                } else if (s.objects[h]?.toOne[relationship.name] ?? nil) == k {
                    primitiveSetToOne(h, relationship.name, nil, &s)
                }
            }
        }
    }

    /// Removes `owner` from relationship `relationship` of `target` (inverse maintenance).
    func unlink(
        _ target: ObjectID, _ relationship: RelationshipDescription, from owner: ObjectID, _ s: inout ContextStorage
    ) throws(ContextError) {
        guard s.objects[target] != nil else { return }
        if relationship.isToMany {
            try primitiveRemove(target, relationship.name, owner, &s)
        } else if (s.objects[target]?.toOne[relationship.name] ?? nil) == owner {
            primitiveSetToOne(target, relationship.name, nil, &s)
        }
    }

    // MARK: - Attributes

    func setAttribute(_ id: ObjectID, _ name: String, _ value: AttributeValue) throws(ContextError) {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            let state = try requireState(id, &s)
            guard let attribute = model.attribute(name, of: state.id.entityName) else {
                throw ContextError(.unknownProperty, "'\(state.id.entityName)' has no attribute '\(name)'")
            }
            let value = try Self.checked(value, for: attribute, of: state.id.entityName)
            if state.attributes[name] == value { return }
            track(state.id, &s)
            s.objects[state.id]?.attributes[name] = value
            s.updated[state.id]?.attributes.insert(name)
        }
    }

    // MARK: - Relationship primitives (no inverse maintenance)

    func primitiveSetToOne(_ k: ObjectID, _ name: String, _ target: ObjectID?, _ s: inout ContextStorage) {
        track(k, &s)
        s.objects[k]?.toOne[name] = .some(target)
        s.updated[k]?.toOne.insert(name)
    }

    func primitiveAdd(_ k: ObjectID, _ name: String, _ target: ObjectID, _ s: inout ContextStorage) throws(ContextError)
    {
        var list = try toManyList(k, name, &s)
        guard !list.contains(target) else { return }
        list.append(target)
        track(k, &s)
        s.objects[k]?.toMany[name] = list
        s.updated[k]?.toMany[name, default: ToManyDelta()].add(target)
        if model.relationship(name, of: k.entityName)?.isOrdered == true {
            s.updated[k]?.toMany[name]?.orderedList = list
        }
    }

    func primitiveRemove(_ k: ObjectID, _ name: String, _ target: ObjectID, _ s: inout ContextStorage)
        throws(ContextError)
    {
        var list = try toManyList(k, name, &s)
        guard let index = list.firstIndex(of: target) else { return }
        list.remove(at: index)
        track(k, &s)
        s.objects[k]?.toMany[name] = list
        s.updated[k]?.toMany[name, default: ToManyDelta()].remove(target)
        if model.relationship(name, of: k.entityName)?.isOrdered == true {
            s.updated[k]?.toMany[name]?.orderedList = list
        }
    }

    // MARK: - Relationships with inverse maintenance

    /// A relationship and its inverse (nil when it has none).
    private func relationshipPair(_ entity: String, _ name: String) throws(ContextError) -> (
        RelationshipDescription, RelationshipDescription?
    ) {
        guard let relationship = model.relationship(name, of: entity) else {
            throw ContextError(.unknownProperty, "'\(entity)' has no relationship '\(name)'")
        }
        return (relationship, model.inverse(of: name, of: entity))
    }

    private func checkTarget(_ target: ObjectID, _ relationship: RelationshipDescription, _ s: inout ContextStorage)
        throws(ContextError) -> ObjectID
    {
        let state = try requireState(target, &s)
        guard model.entity(state.id.entityName, isKindOf: relationship.destination) else {
            throw ContextError(
                .invalidValue,
                "'\(relationship.name)' holds \(relationship.destination) objects, not \(state.id.entityName)")
        }
        return state.id
    }

    func setToOne(_ id: ObjectID, _ name: String, _ target: ObjectID?) throws(ContextError) {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            let state = try requireState(id, &s)
            let k = state.id
            let (relationship, inverse) = try relationshipPair(k.entityName, name)
            guard !relationship.isToMany else {
                throw ContextError(.invalidValue, "'\(name)' is a to-many relationship")
            }
            let new = try target.map { (t: ObjectID) throws(ContextError) in try checkTarget(t, relationship, &s) }
            let old = state.toOne[name] ?? nil
            if old == new { return }
            if let old, let inverse, try loadState(old, &s) != nil { try unlink(key(old, s), inverse, from: k, &s) }
            if let new, let inverse {
                if inverse.isToMany {
                    try primitiveAdd(new, inverse.name, k, &s)
                } else {
                    if let previous = s.objects[new]?.toOne[inverse.name] ?? nil, previous != k,
                        try loadState(previous, &s) != nil
                    {
                        primitiveSetToOne(key(previous, s), name, nil, &s)
                    }
                    primitiveSetToOne(new, inverse.name, k, &s)
                }
            }
            primitiveSetToOne(k, name, new, &s)
        }
    }

    func setToMany(_ id: ObjectID, _ name: String, _ targets: [ObjectID]) throws(ContextError) {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            let state = try requireState(id, &s)
            let k = state.id
            let (relationship, inverse) = try relationshipPair(k.entityName, name)
            guard relationship.isToMany else { throw ContextError(.invalidValue, "'\(name)' is a to-one relationship") }
            var list: [ObjectID] = []
            for target in targets {
                let checked = try checkTarget(target, relationship, &s)
                if !list.contains(checked) { list.append(checked) }
            }
            let current = try toManyList(k, name, &s)
            let removed = current.filter { !list.contains($0) }
            let added = list.filter { !current.contains($0) }
            for target in removed where inverse != nil {
                if try loadState(target, &s) != nil { try unlink(key(target, s), inverse!, from: k, &s) }
            }
            for target in added {
                guard let inverse else { continue }
                if inverse.isToMany {
                    try primitiveAdd(target, inverse.name, k, &s)
                } else {
                    if let previous = s.objects[target]?.toOne[inverse.name] ?? nil, previous != k,
                        try loadState(previous, &s) != nil
                    {
                        try primitiveRemove(key(previous, s), name, target, &s)
                    }
                    primitiveSetToOne(target, inverse.name, k, &s)
                }
            }
            if removed.isEmpty && added.isEmpty && current == list { return }
            track(k, &s)
            s.objects[k]?.toMany[name] = list
            for target in removed { s.updated[k]?.toMany[name, default: ToManyDelta()].remove(target) }
            for target in added { s.updated[k]?.toMany[name, default: ToManyDelta()].add(target) }
            if relationship.isOrdered {
                s.updated[k]?.toMany[name, default: ToManyDelta()].orderedList = list
            }
        }
    }

    // MARK: - Reading

    /// The values of an object as this context sees them, as a store row: the object's and its
    /// references' IDs as known now (permanent after a root save), every to-many relationship's
    /// contents, and the version it was read at (0 for an object this context inserted).
    /// - Throws: `.notFound` when it does not exist (or is deleted here).
    public func snapshot(of id: ObjectID) throws(ContextError) -> StoreRow {
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            var state = try requireState(id, &s)
            for relationship in model.relationships(of: state.id.entityName) where relationship.isToMany {
                state.toMany[relationship.name] = try toManyList(state.id, relationship.name, &s).map(
                    registry.canonical)
            }
            for (name, target) in state.toOne { state.toOne[name] = .some(target.map(registry.canonical)) }
            state.id = registry.canonical(state.id)
            return state
        }
    }

    func currentState(_ id: ObjectID) throws(ContextError) -> ObjectState {
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in try requireState(id, &s) }
    }

    /// The current value of attribute `name` of object `id` (nil when the entity has no such
    /// attribute), read in place rather than through a copy of the whole state.
    func currentAttribute(_ id: ObjectID, _ name: String) throws(ContextError) -> AttributeValue? {
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            // Read in place rather than from a copy of the whole state.
            if let index = located(id, s).index { return s.objects.values[index].reading { $0.attributes[name] } }
            return try requireState(id, &s).attributes[name]
        }
    }

    func currentToMany(_ id: ObjectID, _ name: String) throws(ContextError) -> [ObjectID] {
        try storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            guard model.relationship(name, of: id.entityName)?.isToMany == true else {
                throw ContextError(.unknownProperty, "'\(id.entityName)' has no to-many relationship '\(name)'")
            }
            return try toManyList(id, name, &s).map(registry.canonical)
        }
    }

    func managedObjects(_ ids: [ObjectID]) -> [ManagedObject] {
        storage.withLock { s in ids.map { managedObject(key($0, s), &s) } }
    }

    func status(_ id: ObjectID) -> (inserted: Bool, updated: Bool, deleted: Bool) {
        storage.withLock { s in
            let k = key(id, s)
            return (
                isInserted(k, s), !(s.updated[k]?.isEmpty ?? true),
                s.deleted[k] != nil || s.deletedStates[k] != nil
            )
        }
    }
}
