import Foundation

/// A store in process memory with the same semantics as the SQLite store: the same IDs, versions,
/// uniqueness rules, relationship storage, predicate results and sort order. It passes the same
/// conformance suite. Its contents are gone when it is released.
public final class InMemoryStore: PersistentStore, @unchecked Sendable {
    // Safe to share: mutable state lives in `state` (a lock) and is replaced whole on commit;
    // `writerGate` serializes saves; everything else is immutable after init.
    public let type = StoreType.inMemory
    public let url: URL?
    public let configuration: String?
    public let options: StoreOptions
    public let metadata: StoreMetadata
    public let entityNames: Set<String>
    let model: ObjectModel

    struct State {
        /// Rows by hierarchy root, then primary key. `toMany` is always empty in stored rows.
        var rows: [String: [Int64: StoreRow]] = [:]
        /// Join tables: source key → ordered target keys.
        var joins: [String: [Int64: [Int64]]] = [:]
        /// For join tables ordered on both sides: target key → ordered source keys.
        var targetOrders: [String: [Int64: [Int64]]] = [:]
        var closed = false
        /// The history kept (see ``StoreOptions/recordsHistory``), oldest first, and the number
        /// of the last transaction written.
        var history: [HistoryTransaction] = []
        var lastHistoryNumber: Int64 = 0

        /// The sources paired with `target` in `join`: in the target side's order when it keeps
        /// one, else by key.
        func sources(of target: Int64, in join: JoinTableDescription) -> [Int64] {
            let table = joins[join.name] ?? [:]
            let paired = Set(table.filter { $0.value.contains(target) }.map(\.key))
            guard join.isTargetOrdered else { return paired.sorted() }
            let ordered = (targetOrders[join.name]?[target] ?? []).filter(paired.contains)
            return ordered + paired.subtracting(ordered).sorted()
        }
    }

    let state = Locked(State())
    /// The states pinned by threads in a read snapshot (see ``beginReadSnapshot()``).
    let snapshots = ReadSnapshotPins<State>()
    private let nextKeys = Locked<[String: Int64]>([:])
    let writerGate = DispatchSemaphore(value: 1)

    /// Creates an empty store for `configuration` of `model`; `url` only names it.
    /// - Throws: ``StoreError`` `.unknownConfiguration`.
    public init(model: ObjectModel, configuration: String?, url: URL? = nil, options: StoreOptions = StoreOptions())
        throws(StoreError)
    {
        guard let entities = model.entityNames(inConfiguration: configuration) else {
            throw StoreError(
                .unknownConfiguration, "the model has no configuration '\(configuration ?? "")'", storeURL: url)
        }
        self.model = model
        self.url = url
        self.configuration = configuration == ObjectModel.defaultConfiguration ? nil : configuration
        self.options = options
        entityNames = Set(entities)
        metadata = StoreMetadata(
            identifier: UUID().uuidString, configuration: self.configuration, modelVersion: model.version,
            entityHashes: model.entityVersionHashes.filter { entities.contains($0.key) })
    }

    /// The state reads see: the calling thread's snapshot, else the one committed last.
    private func committed() throws(StoreError) -> State {
        if let pinned = snapshots.current { return pinned }
        return try latest()
    }

    /// The state committed last.
    private func latest() throws(StoreError) -> State {
        let current = state.withLock { $0 }
        if current.closed { throw StoreError(.closed, "the store is closed", storeURL: url) }
        return current
    }

    private func family(_ request: FetchRequest) throws(StoreError) -> Set<String> {
        guard entityNames.contains(request.entityName) else {
            throw StoreError(
                .notFound, "the store does not hold entity '\(request.entityName)'", storeURL: url,
                entity: request.entityName)
        }
        return Set(
            request.includesSubentities ? model.entityAndSubentities(of: request.entityName) : [request.entityName])
    }

    private func matching(_ request: FetchRequest, in current: State) throws(StoreError) -> [StoreRow] {
        let family = try family(request)
        var predicate: FetchPredicate?
        do {
            predicate = try request.predicate?.bound(to: request.entityName, in: model)
        } catch {
            throw StoreError(.invalidRequest, error.message, storeURL: url, entity: request.entityName)
        }
        let candidates = (current.rows[model.rootEntity(of: request.entityName)] ?? [:]).values.filter {
            family.contains($0.id.entityName)
        }
        guard let predicate else { return candidates }
        let resolver = InMemoryPredicateResolver(model: model, state: current, storeIdentifier: metadata.identifier)
        var paths: [String: ModelKeyPath] = [:]
        do {
            return try candidates.filter { row in
                try predicate.evaluate(object: row.id, in: model, paths: &paths) { id, key in
                    resolver.property(key, of: id)
                }
            }
        } catch let error as PredicateError {
            throw StoreError(error, storeURL: url, entity: request.entityName)
        } catch {
            throw StoreError(.invalidRequest, "\(error)", storeURL: url, entity: request.entityName)
        }
    }

    public func fetch(_ request: FetchRequest) throws(StoreError) -> [StoreRow] {
        let current = try committed()
        var rows = try matching(request, in: current)
        if let key = request.unknownSortKey(in: model) {
            throw StoreError(
                .invalidRequest, "cannot sort by '\(key)': no such attribute", storeURL: url, entity: request.entityName
            )
        }
        rows.sort(by: request.sortsBefore)
        return request.window(rows)
    }

    public func count(_ request: FetchRequest) throws(StoreError) -> Int {
        try matching(request, in: try committed()).count
    }

    public func row(for id: ObjectID) throws(StoreError) -> StoreRow? {
        guard id.storeIdentifier == metadata.identifier, let pk = id.primaryKey else { return nil }
        return try committed().rows[model.rootEntity(of: id.entityName)]?[pk]
    }

    public func relatedIDs(of id: ObjectID, relationship name: String) throws(StoreError) -> [ObjectID] {
        let current = try committed()
        guard id.storeIdentifier == metadata.identifier, let pk = id.primaryKey,
            let relationship = model.relationship(name, of: id.entityName), relationship.isToMany,
            let storage = model.storage(of: name, in: id.entityName)
        else {
            throw StoreError(
                .invalidRequest, "'\(id.entityName)' has no to-many relationship '\(name)' in this store",
                storeURL: url, entity: id.entityName)
        }
        let destinationRows = current.rows[model.rootEntity(of: relationship.destination)] ?? [:]
        let keys: [Int64]
        switch storage {
        case .foreignKey: keys = []
        case .inverseForeignKey(let inverse):
            keys = destinationRows.values.filter { ($0.toOne[inverse] ?? nil) == id }.map { $0.id.primaryKey! }.sorted()
        case .joinTable(let join, let isSource):
            keys = isSource ? current.joins[join.name]?[pk] ?? [] : current.sources(of: pk, in: join)
        }
        return keys.compactMap { destinationRows[$0]?.id }
    }

    public func newObjectIDs(entity: String, count: Int) throws(StoreError) -> [ObjectID] {
        guard entityNames.contains(entity) else {
            throw StoreError(.notFound, "the store does not hold entity '\(entity)'", storeURL: url, entity: entity)
        }
        let root = model.rootEntity(of: entity)
        let first = nextKeys.withLock { keys -> Int64 in
            let first = keys[root, default: 1]
            keys[root] = first + Int64(count)
            return first
        }
        let prototype = ObjectID(store: metadata.identifier, entity: entity, primaryKey: 0)
        return (0..<Int64(count)).map { prototype.withPrimaryKey(first + $0) }
    }

    public func prepare(_ changes: StoreChanges) throws(StoreError) -> any PreparedSave {
        if options.readOnly { throw StoreError(.readOnly, "the store is read-only", storeURL: url) }
        writerGate.wait()
        do {
            var draft = try latest()
            let before = options.recordsHistory ? historyBefore(changes, in: draft) : nil
            let versions = try InMemoryWriter(store: self).apply(changes, to: &draft)
            if let before { recordHistory(changes, versions: versions, before: before, in: &draft) }
            return InMemoryPreparedSave(
                store: self, draft: draft, versions: versions,
                historyNumber: before == nil ? nil : draft.lastHistoryNumber)
        } catch {
            writerGate.signal()
            throw error
        }
    }

    func finish(_ draft: State?) {
        if let draft { state.withLock { $0 = draft } }
        writerGate.signal()
    }

    public func close() {
        writerGate.wait()
        state.withLock { $0 = State(closed: true) }
        writerGate.signal()
    }
}

/// Reads one property of one object of an in-memory state, for predicate evaluation: attributes and
/// to-one relationships from the rows, to-many relationships by the same storage rules as
/// ``InMemoryStore/relatedIDs(of:relationship:)`` (and as the SQLite store's subqueries).
///
/// Lives for one fetch; it indexes inverse foreign keys and join tables on first use.
private final class InMemoryPredicateResolver {
    let model: ObjectModel
    let state: InMemoryStore.State
    let storeIdentifier: String
    /// Destination root and inverse name → primary key of the object referred to → referring IDs.
    private var inverseIndexes: [String: [Int64: [ObjectID]]] = [:]
    /// Join table name → target key → source keys.
    private var reversedJoins: [String: [Int64: [Int64]]] = [:]

    init(model: ObjectModel, state: InMemoryStore.State, storeIdentifier: String) {
        self.model = model
        self.state = state
        self.storeIdentifier = storeIdentifier
    }

    private func row(_ id: ObjectID) -> StoreRow? {
        guard id.storeIdentifier == storeIdentifier, let pk = id.primaryKey else { return nil }
        return state.rows[model.rootEntity(of: id.entityName)]?[pk]
    }

    /// An attribute as `.value`, a to-one relationship as `.object`, a to-many one as a `.list`.
    func property(_ key: String, of id: ObjectID) -> PredicateOperand {
        guard let row = row(id) else { return .value(.null) }
        if let value = row.attributes[key] { return .value(value) }
        if let object = row.toOne[key] { return .object(object) }
        guard let relationship = model.relationship(key, of: id.entityName) else { return .value(.null) }
        guard relationship.isToMany else { return .object(nil) }
        return .list(related(row, relationship).map { .object($0) })
    }

    private func related(_ row: StoreRow, _ relationship: RelationshipDescription) -> [ObjectID] {
        guard let pk = row.id.primaryKey else { return [] }
        let destination = relationship.destination
        let destinationRoot = model.rootEntity(of: destination)
        let destinationRows = state.rows[destinationRoot] ?? [:]
        let sourceRoot = model.rootEntity(of: row.id.entityName)
        switch model.storage(of: relationship.name, in: row.id.entityName) {
        case .inverseForeignKey(let inverse)?:
            let indexKey = destinationRoot + "\u{0}" + inverse
            if inverseIndexes[indexKey] == nil {
                var index: [Int64: [ObjectID]] = [:]
                for candidate in destinationRows.values {
                    guard model.entity(candidate.id.entityName, isKindOf: destination) else { continue }
                    if let target = candidate.toOne[inverse] ?? nil, let targetKey = target.primaryKey,
                        model.rootEntity(of: target.entityName) == sourceRoot
                    {
                        index[targetKey, default: []].append(candidate.id)
                    }
                }
                inverseIndexes[indexKey] = index
            }
            return inverseIndexes[indexKey]?[pk] ?? []
        case .joinTable(let join, let isSource)?:
            let table = state.joins[join.name] ?? [:]
            let keys: [Int64]
            if isSource {
                keys = table[pk] ?? []
            } else {
                if reversedJoins[join.name] == nil {
                    var reversed: [Int64: [Int64]] = [:]
                    for (source, targets) in table {
                        for target in targets { reversed[target, default: []].append(source) }
                    }
                    reversedJoins[join.name] = reversed
                }
                keys = reversedJoins[join.name]?[pk] ?? []
            }
            let rows = keys.compactMap { destinationRows[$0] }
            return rows.filter { model.entity($0.id.entityName, isKindOf: destination) }.map(\.id)
        case .foreignKey?, nil: return []
        }
    }
}

/// A save applied to a copy of the store's state, swapped in on commit.
final class InMemoryPreparedSave: PreparedSave, @unchecked Sendable {
    // Safe to share: `draft` is only taken once, under `pending`'s lock.
    let store: InMemoryStore
    let versions: [ObjectID: Int64]
    let historyNumber: Int64?
    private let pending: Locked<InMemoryStore.State?>

    init(store: InMemoryStore, draft: InMemoryStore.State, versions: [ObjectID: Int64], historyNumber: Int64?) {
        self.store = store
        self.versions = versions
        self.historyNumber = historyNumber
        pending = Locked(draft)
    }

    private func take() -> (Bool, InMemoryStore.State?) {
        pending.withLock { draft in
            defer { draft = nil }
            return (draft != nil, draft)
        }
    }

    func commit() throws(StoreError) {
        let (open, draft) = take()
        if open { store.finish(draft) }
    }

    func rollback() {
        if take().0 { store.finish(nil) }
    }

    deinit { if take().0 { store.finish(nil) } }
}
