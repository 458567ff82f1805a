import Foundation

/// One entry of the routing table: a store that holds an entity.
public struct StoreRoute: Sendable, Hashable, CustomStringConvertible {
    /// The store's UUID.
    public var storeIdentifier: String
    /// The store's kind.
    public var type: StoreType
    /// The configuration it was added for (nil: every entity).
    public var configuration: String?
    /// Where it lives.
    public var url: URL?
    /// Whether it takes saves.
    public var isWritable: Bool

    public var description: String {
        let place = url?.path ?? "memory"
        return "\(configuration ?? ObjectModel.defaultConfiguration) (\(type.rawValue) \(place))"
    }
}

/// The registry of a model's stores and the router between them.
///
/// Each store is added for one configuration and holds that configuration's entities. Fetches span
/// every store holding an entity; a save is split by store and applied in one transaction per
/// store, every store prepared before any commits, so one store's failure leaves all as they were.
public final class StoreCoordinator: @unchecked Sendable {
    // Safe to share: `registry` is a lock; the model is immutable; stores are Sendable.
    /// The model every store follows.
    public let model: ObjectModel
    private let registry = Locked<[any PersistentStore]>([])
    /// The attached stores by UUID, for the per-object lookups of every read.
    private let byIdentifier = Locked<[String: any PersistentStore]>([:])
    /// Notes of saves across stores that every participant has: what each store may forget in its
    /// next write (see ``SaveParticipation``).
    let crossStoreNotes = Locked(CrossStoreNotes())
    /// Where a test makes a save or a recovery stop as if the process died (see ``CrashPoint``).
    let crashPoints = CrashPoints()
    /// Orders commits against the start of read snapshots (see ``withReadSnapshot(_:)``).
    let commitGate = CommitGate()
    /// What recoveries finished (see ``recoverInterruptedSaves()``).
    let lastRecoveryBox = Locked(RecoveryReport())

    /// Creates a coordinator with no stores.
    public init(model: ObjectModel) {
        self.model = model
    }

    /// The attached stores, in the order they were added.
    public var stores: [any PersistentStore] { registry.withLock { $0 } }

    /// Opens and attaches a store.
    ///
    /// Adding a URL that is already attached for the same configuration returns the store already
    /// attached; for another configuration it is a `.duplicateStore` error naming both. Saves
    /// across stores that a crash interrupted are finished once their stores are all attached
    /// (``recoverInterruptedSaves()``).
    /// - Parameters:
    ///   - type: the kind of store (SQLite, in-memory).
    ///   - configuration: the configuration to hold; nil or `"Default"` for every entity.
    ///   - url: where it lives (the file, for SQLite).
    ///   - options: durability and read-only.
    /// - Throws: ``StoreError``.
    @discardableResult
    public func addStore(
        type: StoreType, configuration: String? = nil, url: URL? = nil, options: StoreOptions = StoreOptions()
    ) throws(StoreError) -> any PersistentStore {
        let store = try attach(type: type, configuration: configuration, url: url, options: options)
        try recoverInterruptedSaves()
        return store
    }

    /// Opens and attaches a store (or returns the one attached at `url`), without recovering.
    func attach(type: StoreType, configuration: String?, url: URL?, options: StoreOptions) throws(StoreError)
        -> any PersistentStore
    {
        let configuration = configuration == ObjectModel.defaultConfiguration ? nil : configuration
        if let url, let existing = attached(at: url) {
            guard existing.configuration == configuration else {
                throw StoreError(
                    .duplicateStore,
                    "\(url.path) is already attached for configuration '\(existing.configuration ?? ObjectModel.defaultConfiguration)'; it cannot also hold '\(configuration ?? ObjectModel.defaultConfiguration)'",
                    storeURL: url)
            }
            return existing
        }
        let store = try type.kind.open(model: model, configuration: configuration, url: url, options: options)
        try add(store)
        return store
    }

    /// Attaches a store opened elsewhere (another store type, say).
    /// - Throws: `.duplicateStore` when its URL or UUID is already attached.
    public func add(_ store: any PersistentStore) throws(StoreError) {
        try registry.withLock { (stores: inout [any PersistentStore]) throws(StoreError) in
            if let url = store.url,
                let existing = stores.first(where: { $0.url.map(Self.canonical) == Self.canonical(url) })
            {
                throw StoreError(
                    .duplicateStore,
                    "\(url.path) is already attached for configuration '\(existing.configuration ?? ObjectModel.defaultConfiguration)'",
                    storeURL: url)
            }
            if stores.contains(where: { $0.identifier == store.identifier }) {
                throw StoreError(
                    .duplicateStore, "a store with UUID \(store.identifier) is already attached", storeURL: store.url)
            }
            stores.append(store)
            let identifier = store.identifier
            byIdentifier.withLock { $0[identifier] = store }
        }
    }

    /// Detaches a store and closes it.
    public func remove(_ store: any PersistentStore) {
        registry.withLock { stores in
            stores.removeAll { $0 === store }
            byIdentifier.withLock { table in table = table.filter { $0.value !== store } }
        }
        store.close()
    }

    static func canonical(_ url: URL) -> String { url.standardizedFileURL.resolvingSymlinksInPath().path }

    private func attached(at url: URL) -> (any PersistentStore)? {
        let path = Self.canonical(url)
        return stores.first { $0.url.map(Self.canonical) == path }
    }

    /// The store with UUID `identifier`.
    public func store(withIdentifier identifier: String) -> (any PersistentStore)? {
        byIdentifier.withLock { $0[identifier] }
    }

    /// The store that holds the object `id` (nil for temporary IDs and unknown stores).
    public func store(for id: ObjectID) -> (any PersistentStore)? {
        id.storeIdentifier.flatMap { store(withIdentifier: $0) }
    }

    /// Every store holding `entity`: a fetch of it reads all of them.
    public func stores(for entity: String) -> [any PersistentStore] {
        stores.filter { $0.entityNames.contains(entity) }
    }

    /// The routing table: for each entity of the model, the stores that hold it.
    public var routes: [String: [StoreRoute]] {
        let attached = stores
        var table: [String: [StoreRoute]] = [:]
        for entity in model.entityNames {
            table[entity] = attached.filter { $0.entityNames.contains(entity) }.map {
                StoreRoute(
                    storeIdentifier: $0.identifier, type: $0.type, configuration: $0.configuration, url: $0.url,
                    isWritable: !$0.options.readOnly)
            }
        }
        return table
    }

    /// The store an insert of `entity` goes to: the one named by `assigned`, else the first writable
    /// store added that holds the entity (as Core Data does when several stores' configurations
    /// hold it and the object is not assigned to one).
    /// - Throws: `.noStoreForEntity`.
    public func storeForInsert(of entity: String, assigned: String? = nil) throws(StoreError) -> any PersistentStore {
        let candidates = stores(for: entity).filter { !$0.options.readOnly }
        if let assigned {
            guard let store = candidates.first(where: { $0.identifier == assigned }) else {
                throw StoreError(
                    .noStoreForEntity,
                    "the assigned store \(assigned) is not attached, is read-only, or does not hold \(entity)",
                    entity: entity)
            }
            return store
        }
        guard let first = candidates.first else {
            throw StoreError(
                .noStoreForEntity,
                "no writable store holds entity '\(entity)'; add a store for one of its configurations", entity: entity)
        }
        return first
    }
}
