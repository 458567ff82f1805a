extension StoreCoordinator {
    /// The objects matching `request` across every store that holds its entity, sorted and windowed
    /// as if they were in one store (ties broken by store, then primary key).
    /// - Throws: ``StoreError`` (`.noStoreForEntity` when no store holds the entity).
    public func fetch(_ request: FetchRequest) throws(StoreError) -> [StoreRow] {
        let holders = try holders(of: request)
        if holders.count == 1 { return try holders[0].fetch(request) }
        var perStore = request
        perStore.fetchOffset = 0
        // Saturating: an offset past every object (up to Int.max) is an empty page, not a trap.
        perStore.fetchLimit = request.fetchLimit.map {
            let (sum, overflow) = $0.addingReportingOverflow(request.fetchOffset)
            return overflow ? Int.max : sum
        }
        var rows: [StoreRow] = []
        for store in holders { rows += try store.fetch(perStore) }
        rows.sort(by: request.sortsBefore)
        return request.window(rows)
    }

    /// How many objects match `request` across every store that holds its entity.
    public func count(_ request: FetchRequest) throws(StoreError) -> Int {
        var total = 0
        for store in try holders(of: request) { total += try store.count(request) }
        return total
    }

    /// The stored state of one object; nil when its store is not attached or it does not exist.
    public func row(for id: ObjectID) throws(StoreError) -> StoreRow? {
        try store(for: id)?.row(for: id)
    }

    /// The stored state of one object with its to-many relationships in `toMany`, read together
    /// (see ``PersistentStore/rowWithToMany(for:model:)``); nil when it does not exist.
    public func rowWithToMany(for id: ObjectID) throws(StoreError) -> StoreRow? {
        try store(for: id)?.rowWithToMany(for: id, model: model)
    }

    /// The objects a to-many relationship of `id` holds, in order.
    public func relatedIDs(of id: ObjectID, relationship: String) throws(StoreError) -> [ObjectID] {
        guard let store = store(for: id) else {
            throw StoreError(.notFound, "no attached store holds \(id)", entity: id.entityName)
        }
        return try store.relatedIDs(of: id, relationship: relationship)
    }

    func holders(of request: FetchRequest) throws(StoreError) -> [any PersistentStore] {
        let entity = request.entityName
        guard model.entity(named: entity) != nil else {
            throw StoreError(.notFound, "the model has no entity '\(entity)'", entity: entity)
        }
        var holders = stores(for: entity)
        if let affected = request.affectedStores { holders.removeAll { !affected.contains($0.identifier) } }
        if holders.isEmpty {
            throw StoreError(.noStoreForEntity, "no attached store holds entity '\(entity)'", entity: entity)
        }
        return holders
    }
}
