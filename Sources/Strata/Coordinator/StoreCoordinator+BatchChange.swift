import Foundation

/// What a batch request answers with (Core Data's `NSBatchUpdateRequestResultType` and
/// `NSBatchDeleteRequestResultType`, and the changed objects themselves).
public enum BatchResultType: Sendable, Hashable {
    /// Only whether it happened: ``BatchResult/count`` is still set.
    case statusOnly
    /// How many objects the request matched (``BatchResult/count``).
    case count
    /// The IDs of the objects it matched (``BatchResult/objectIDs``).
    case objectIDs
    /// The IDs and the states of the objects it matched (``BatchResult/objects``): an update's as
    /// it saved them, a delete's as they were.
    case objects
}

/// Changes every object of an entity that matches a predicate, in the stores, without loading the
/// objects into a context (Core Data's `NSBatchUpdateRequest`).
///
/// Stricter than Core Data, whose batch update writes the rows and nothing else:
/// - the values are checked against the attributes' validation rules: a value any matched object
///   would break a rule with refuses the whole request, and nothing changes;
/// - every matched object's version is raised, so optimistic locking sees the change;
/// - the change is one save: persistent history records every object (with the attributes set),
///   uniqueness constraints hold, and a save across several stores is all or nothing;
/// - through ``ObjectContext/execute(_:)-(BatchUpdateRequest)``, the context (and its root's
///   observers, which merge saves into other contexts) learns of it, where Core Data leaves
///   every context stale until it is merged by hand.
///
/// It sets attributes only (not relationships, which need their inverses kept), and not derived
/// attributes (computed on every save).
public struct BatchUpdateRequest: Sendable, Hashable {
    /// The entity whose objects change.
    public var entityName: String
    /// Which objects change; nil: every object of the entity.
    public var predicate: FetchPredicate?
    /// Whether objects of subentities change too (default true, as in Core Data).
    public var includesSubentities: Bool
    /// Attribute name → the value every matched object gets (JSON null: no value).
    public var propertiesToUpdate: [String: AttributeValue]
    /// What the result carries.
    public var resultType: BatchResultType
    /// The identifiers of the stores to change (Core Data's `affectedStores`); nil: every store
    /// holding the entity.
    public var affectedStores: Set<String>?
    /// The most objects the request may match: when more match, it fails with
    /// ``ContextError/Code/tooManyAffected`` and nothing changes. Nil: no limit.
    public var maxAffected: Int?
    /// A receipt to keep with the change (see ``SaveReceipt``), naming the matched objects
    /// (its own `objects` are replaced by them); nil: none.
    public var receipt: SaveReceipt?

    /// Creates a request.
    public init(
        entityName: String, predicate: FetchPredicate? = nil, propertiesToUpdate: [String: AttributeValue] = [:],
        resultType: BatchResultType = .count
    ) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
        self.resultType = resultType
        includesSubentities = true
    }

    /// The fetch request of the matched objects.
    var fetchRequest: FetchRequest {
        var request = FetchRequest(
            entityName: entityName, predicate: predicate, includesSubentities: includesSubentities)
        request.affectedStores = affectedStores
        return request
    }
}

/// Deletes every object a fetch request matches, in the stores, without loading the objects into a
/// context (Core Data's `NSBatchDeleteRequest`).
///
/// Stricter than Core Data, whose batch delete removes the rows and nothing else (leaving
/// dangling references):
/// - the delete rules of every deleted object's relationships apply: `cascade` deletes the related
///   objects too (and theirs, in turn), `nullify` clears the inverse of the related objects that
///   stay (raising their versions), `deny` refuses the whole request while a relationship of a
///   deleted object holds an object that is not deleted with it; a nullified inverse that is
///   required, or left with fewer objects than its minimum, refuses it too; nothing changes then;
/// - relationships without an inverse let go of the deleted objects, as a delete in a context does;
/// - the delete is one save: history records every deleted object (with its tombstone) and every
///   changed one, and a save across several stores is all or nothing;
/// - through ``ObjectContext/execute(_:)-(BatchDeleteRequest)``, contexts learn of it.
public struct BatchDeleteRequest: Sendable, Hashable {
    /// The objects to delete: the fetch request's entity, predicate, stores and window.
    public var fetchRequest: FetchRequest
    /// What the result carries.
    public var resultType: BatchResultType
    /// The most objects the request may match (those cascaded to are not counted): when more
    /// match, it fails with ``ContextError/Code/tooManyAffected`` and nothing changes. Nil: no limit.
    public var maxAffected: Int?
    /// A receipt to keep with the delete (see ``SaveReceipt``), naming the matched objects (not
    /// those the delete rules reach; its own `objects` are replaced by them); nil: none.
    public var receipt: SaveReceipt?

    /// Creates a request.
    public init(fetchRequest: FetchRequest, resultType: BatchResultType = .count) {
        self.fetchRequest = fetchRequest
        self.resultType = resultType
    }
}

/// What a batch update or delete did.
public struct BatchResult: Sendable, Hashable {
    /// How many objects the request matched and changed (or deleted); objects changed or deleted
    /// by delete rules are not counted (they are in ``changes``).
    public var count: Int
    /// The matched objects' IDs (for ``BatchResultType/objectIDs`` and ``BatchResultType/objects``).
    public var objectIDs: [ObjectID] = []
    /// The matched objects' states (for ``BatchResultType/objects``): an update's as it saved
    /// them (with their new versions), a delete's as they were.
    public var objects: [StoreRow] = []
    /// Every object the request changed, the delete rules' included, as a root save publishes them:
    /// hand it to ``ObjectContext/mergeChanges(fromRemoteContextSave:into:)`` (or
    /// ``ObjectContext/mergeChanges(_:)``) to refresh other contexts.
    public var changes: ContextChanges
    /// The history token of the save (see ``SaveResult/historyToken``); nil when nothing was
    /// written or no written store records history.
    public var historyToken: HistoryToken? { changes.historyToken }
}

extension StoreCoordinator {
    /// How many times a batch change is planned again when objects it read changed before it
    /// could write them.
    static let batchAttempts = 10

    /// Runs a batch update in the stores (see ``BatchUpdateRequest``): the matched objects are
    /// read, the values checked, and one save writes them all, each update expecting the version
    /// read (so that a concurrent change is never overwritten unseen: the request is then planned
    /// again). Contexts are not told: ``ObjectContext/execute(_:)-(BatchUpdateRequest)`` does that.
    /// - Parameters:
    ///   - request: what to change, and what to answer.
    ///   - authorship: who saves, for the history.
    /// - Throws: ``ContextError``: `.unknownProperty` or `.invalidValue` for a property it cannot
    ///   set, `.validation` for a broken rule, `.tooManyAffected`, `.invalidPredicate`, `.store`
    ///   (a uniqueness violation, say), `.conflict` when concurrent saves kept changing the objects.
    public func execute(_ request: BatchUpdateRequest, authorship: HistoryAuthorship = HistoryAuthorship())
        throws(ContextError) -> BatchResult
    {
        let values = try checkedValues(request)
        if model.hasDerivedAttributes { return try executeInContext(request, values: values, authorship: authorship) }
        var attempt = 0
        while true {
            attempt += 1
            let rows = try batchRows(request.fetchRequest, limit: request.maxAffected)
            try validate(values, of: request.entityName, rows: rows)
            guard !rows.isEmpty else { return BatchResult(count: 0, changes: .none) }
            var save = SaveRequest(authorship: authorship)
            save.updates = rows.map { StoreUpdate(id: $0.id, expectedVersion: $0.version, attributes: values) }
            save.receipts = Self.receipts(request.receipt, rows)
            let result: SaveResult
            do {
                result = try self.save(save)
            } catch {
                if error.code == .conflict, attempt < Self.batchAttempts { continue }
                throw ObjectContext.contextError(error)
            }
            var changes = ContextChanges(
                inserted: [], updated: save.updates.map(\.id), deleted: [], byStore: result.changesByStore)
            changes.historyToken = result.historyToken
            var batch = BatchResult(count: rows.count, changes: changes)
            batch.keep(rows, as: request.resultType) { row in
                var saved = row
                for (name, value) in values { saved.attributes[name] = value }
                saved.version = result.versions[row.id] ?? row.version + 1
                return saved
            }
            return batch
        }
    }

    /// Runs a batch delete in the stores (see ``BatchDeleteRequest``): the matched objects are
    /// read, the delete rules followed from them through the stores, and one save deletes and
    /// changes every object concerned, each expecting the version read (a concurrent change makes
    /// the request be planned again). Contexts are not told:
    /// ``ObjectContext/execute(_:)-(BatchDeleteRequest)`` does that.
    /// - Parameters:
    ///   - request: what to change, and what to answer.
    ///   - authorship: who saves, for the history.
    /// - Throws: ``ContextError``: `.validation` for a deny rule (rule `.deny`) or a required or
    ///   counted inverse left broken, `.tooManyAffected`, `.invalidPredicate`, `.store`,
    ///   `.conflict` when concurrent saves kept changing the objects.
    public func execute(_ request: BatchDeleteRequest, authorship: HistoryAuthorship = HistoryAuthorship())
        throws(ContextError) -> BatchResult
    {
        guard model.entity(named: request.fetchRequest.entityName) != nil else {
            throw ContextError(.unknownProperty, "the model has no entity '\(request.fetchRequest.entityName)'")
        }
        if model.hasDerivedAttributes { return try executeInContext(request, authorship: authorship) }
        var attempt = 0
        while true {
            attempt += 1
            let rows = try batchRows(request.fetchRequest, limit: request.maxAffected)
            guard !rows.isEmpty else { return BatchResult(count: 0, changes: .none) }
            var plan = BatchDeletePlan(coordinator: self)
            try plan.expand(from: rows)
            var save = try plan.saveRequest()
            save.authorship = authorship
            save.receipts = Self.receipts(request.receipt, rows)
            let result: SaveResult
            do {
                result = try self.save(save)
            } catch {
                if error.code == .conflict, attempt < Self.batchAttempts { continue }
                throw ObjectContext.contextError(error)
            }
            // Objects whose lists lost deleted objects kept by the other side's column: updated too.
            var byStore = result.changesByStore
            var updated = save.updates.map(\.id)
            let written = Set(updated)
            for id in save.related.keys.sorted(by: ObjectID.precedes) where !written.contains(id) {
                updated.append(id)
                if let store = id.storeIdentifier { byStore[store, default: StoreChangeSummary()].updated.append(id) }
            }
            var changes = ContextChanges(
                inserted: [], updated: updated, deleted: save.deletes.map(\.id), byStore: byStore)
            changes.historyToken = result.historyToken
            var batch = BatchResult(count: rows.count, changes: changes)
            batch.keep(rows, as: request.resultType) { $0 }
            return batch
        }
    }

    /// The rows `request` matches, read from the stores.
    /// - Throws: `.tooManyAffected` when more than `limit` match.
    func batchRows(_ request: FetchRequest, limit: Int?) throws(ContextError) -> [StoreRow] {
        let rows: [StoreRow]
        do {
            rows = try fetch(request)
        } catch {
            throw ObjectContext.wrap(error)
        }
        if let limit, rows.count > limit {
            throw ContextError(
                .tooManyAffected,
                "the request matches \(rows.count) \(request.entityName) objects, more than the \(limit) allowed; nothing was changed"
            )
        }
        return rows
    }

    /// The values of `request` converted to their attributes' types.
    /// - Throws: `.unknownProperty` for a name that is no attribute (a relationship, say),
    ///   `.invalidValue` for a derived attribute or a value of another type.
    func checkedValues(_ request: BatchUpdateRequest) throws(ContextError) -> [String: AttributeValue] {
        let entity = request.entityName
        guard model.entity(named: entity) != nil else {
            throw ContextError(.unknownProperty, "the model has no entity '\(entity)'")
        }
        var values: [String: AttributeValue] = [:]
        for (name, value) in request.propertiesToUpdate.sorted(by: { $0.key < $1.key }) {
            guard let attribute = model.attribute(name, of: entity) else {
                let kind = model.relationship(name, of: entity) != nil ? "a relationship" : "no attribute"
                throw ContextError(
                    .unknownProperty,
                    "'\(entity).\(name)' is \(kind): a batch update sets attributes only (change relationships object by object)"
                )
            }
            if model.isDerived(name, of: entity) {
                throw ContextError(.invalidValue, "'\(entity).\(name)' is derived and cannot be set")
            }
            values[name] = value.isNull ? .null : try ObjectContext.checked(value, for: attribute, of: entity)
        }
        return values
    }

    /// Checks `values` against the rules of their attributes in the request's entity and in every
    /// entity among `rows` (a rule depends on the value alone, so one check per entity stands for
    /// every object of it).
    /// - Throws: `.validation` naming, per entity, the first matched object and every broken rule.
    func validate(_ values: [String: AttributeValue], of entity: String, rows: [StoreRow]) throws(ContextError) {
        var firstByEntity: [String: ObjectID] = [:]
        for row in rows where firstByEntity[row.id.entityName] == nil { firstByEntity[row.id.entityName] = row.id }
        var entities = [entity]
        entities += firstByEntity.keys.sorted().filter { $0 != entity }
        let checker = ObjectContext(coordinator: self)
        var failures: [ValidationFailure] = []
        for name in entities {
            guard let resolved = model.resolvedEntity(name) else { continue }
            let id = firstByEntity[name] ?? ObjectID(store: "", entity: name, primaryKey: 0)
            var state = StoreRow(id: id)
            for (key, value) in values { state.attributes[key] = value }
            failures += checker.validateAttributes(state, resolved).filter { values[$0.field] != nil }
        }
        if !failures.isEmpty {
            throw ContextError(.validation, "the values break the model's rules", failures: failures)
        }
    }
}

extension StoreCoordinator {
    /// `receipt` naming the matched objects `rows`.
    static func receipts(_ receipt: SaveReceipt?, _ rows: [StoreRow]) -> [SaveReceipt] {
        guard var receipt else { return [] }
        receipt.objects = rows.map(\.id)
        return [receipt]
    }

    /// A batch update made in a private context, object by object: for models with derived
    /// attributes, which every save computes from the objects it writes and the ones they reach.
    func executeInContext(
        _ request: BatchUpdateRequest, values: [String: AttributeValue], authorship: HistoryAuthorship
    ) throws(ContextError) -> BatchResult {
        try inPrivateContext(request.fetchRequest, limit: request.maxAffected, authorship: authorship) {
            (context, objects) throws(ContextError) in
            try validate(values, of: request.entityName, rows: objects.map { StoreRow(id: $0.objectID) })
            for object in objects {
                for (name, value) in values { try object.setValue(value, forKey: name) }
            }
            for receipt in Self.receipts(request.receipt, objects.map { StoreRow(id: $0.objectID) }) {
                context.keepReceipt(receipt)
            }
            try context.save()
            return objects.map { object in
                (try? context.snapshot(of: object.objectID)) ?? StoreRow(id: object.objectID)
            }
        } keep: {
            request.resultType
        }
    }

    /// A batch delete made in a private context (see the update's).
    func executeInContext(_ request: BatchDeleteRequest, authorship: HistoryAuthorship) throws(ContextError)
        -> BatchResult
    {
        try inPrivateContext(request.fetchRequest, limit: request.maxAffected, authorship: authorship) {
            (context, objects) throws(ContextError) in
            var rows: [StoreRow] = []
            for object in objects {
                rows.append((try? context.snapshot(of: object.objectID)) ?? StoreRow(id: object.objectID))
            }
            for object in objects { try context.delete(object) }
            for receipt in Self.receipts(request.receipt, rows) { context.keepReceipt(receipt) }
            try context.save()
            return rows
        } keep: {
            request.resultType
        }
    }

    /// Runs `body` over the objects `request` matches in a new root context saving as
    /// `authorship`, and makes the result of the rows it returns.
    private func inPrivateContext(
        _ request: FetchRequest, limit: Int?, authorship: HistoryAuthorship,
        _ body: (ObjectContext, [ManagedObject]) throws(ContextError) -> [StoreRow],
        keep type: () -> BatchResultType
    ) throws(ContextError) -> BatchResult {
        let context = ObjectContext(coordinator: self)
        context.name = authorship.contextName
        context.transactionAuthor = authorship.author
        let saved = Locked(ContextChanges.none)
        context.observeSaves { changes in saved.withLock { $0 = changes } }
        let objects = try context.fetch(request)
        if let limit, objects.count > limit {
            throw ContextError(
                .tooManyAffected,
                "the request matches \(objects.count) \(request.entityName) objects, more than the \(limit) allowed; nothing was changed"
            )
        }
        let rows = try body(context, objects)
        var result = BatchResult(count: objects.count, changes: saved.withLock { $0 })
        result.keep(rows, as: type()) { $0 }
        return result
    }
}

extension BatchResult {
    /// Keeps the IDs and, for `.objects`, the rows (as `state` makes each) the result type asks for.
    mutating func keep(_ rows: [StoreRow], as type: BatchResultType, state: (StoreRow) -> StoreRow) {
        switch type {
        case .statusOnly, .count: break
        case .objectIDs: objectIDs = rows.map(\.id)
        case .objects:
            objectIDs = rows.map(\.id)
            objects = rows.map(state)
        }
    }
}

extension ContextChanges {
    /// No change.
    static let none = ContextChanges(inserted: [], updated: [], deleted: [], byStore: [:])
}
