import Foundation

/// What one attached store is, for listings and metrics: no handle to the store itself.
public struct StoreSummary: Sendable, Hashable {
    /// The store's UUID.
    public var identifier: String
    /// Its kind.
    public var type: StoreType
    /// The configuration it holds (nil: every entity).
    public var configuration: String?
    /// Where it lives, if anywhere.
    public var url: URL?
    /// The entities it holds.
    public var entityNames: [String]
    /// Whether it takes saves.
    public var isWritable: Bool
    /// The bytes it takes where it lives (see ``PersistentStore/storageBytes``).
    public var storageBytes: Int64?
    /// The database server's version, for a store in one (`PostgreSQL 15.8`).
    public var serverVersion: String?

    /// Where it lives, fit to show: a file's path, or a connection URI without its password.
    public var location: String? { url.map(StoreSummary.location(of:)) }

    /// A file URL's path, or any other URL without the password it may hold.
    public static func location(of url: URL) -> String {
        url.isFileURL ? url.path : PGConnection.redacted(url.absoluteString)
    }
}

/// Committed state, read without a context: the one narrow seam through which a layer that writes
/// only through contexts (the REST service) reads the stores.
///
/// A read of committed state by primary key or by request needs no context: a fresh context would
/// show the same rows, and building one (registering objects, reading them back) cost more than the
/// read itself. What it cannot do is change anything: no store is added, removed, split or saved
/// through it. ``StoreCoordinator`` implements it.
public protocol CommittedReads: Sendable {
    /// The model the stores follow.
    var model: ObjectModel { get }
    /// The stored objects matching `request`, across every store holding its entity.
    func fetch(_ request: FetchRequest) throws(StoreError) -> [StoreRow]
    /// How many stored objects match `request`, ignoring its limit and offset.
    func count(_ request: FetchRequest) throws(StoreError) -> Int
    /// How many stored objects matching `request` (its window ignored) have each value of `key`
    /// (see ``PersistentStore/valueCounts(_:key:)``); groups in no order.
    func valueCounts(_ request: FetchRequest, key: String) throws(StoreError) -> [ValueCount]
    /// The rows of an aggregate fetch over every store holding the entity (see ``AggregateRequest``).
    func aggregate(_ request: AggregateRequest) throws(StoreError) -> [AggregateRow]
    /// The stored state of one object; nil when it does not exist.
    func row(for id: ObjectID) throws(StoreError) -> StoreRow?
    /// The stored state of one object with its to-many relationships in `toMany`, read from one
    /// snapshot where the store allows; nil when it does not exist.
    func rowWithToMany(for id: ObjectID) throws(StoreError) -> StoreRow?
    /// ``rowWithToMany(for:)`` without blocking the calling thread: `completion` gets the result,
    /// exactly once, from a thread of the store's (a PostgreSQL store pipelines such reads) or
    /// through `blocking`, which runs a job on a thread that may block.
    func rowWithToMany(
        for id: ObjectID, blocking: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (Result<StoreRow?, StoreError>) -> Void)
    /// The objects a stored to-many relationship of `id` holds, in order.
    func relatedIDs(of id: ObjectID, relationship: String) throws(StoreError) -> [ObjectID]
    /// The ID of the object with `primaryKey` of `entity`, in the store that holds the entity (of
    /// several, the first added: where inserts go); nil when no store holds it.
    func objectID(of entity: String, primaryKey: Int64) -> ObjectID?
    /// For each entity, the stores that hold it.
    var routes: [String: [StoreRoute]] { get }
    /// Every attached store, in the order they were added.
    var storeSummaries: [StoreSummary] { get }
    /// Why stores that should take writes cannot now (a PostgreSQL store whose primary is gone
    /// or demoted), one sentence per store; empty when every store can.
    func writabilityProblems() -> [String]
    /// Calls `handler` whenever another process writes into a store shared with it (a
    /// PostgreSQL store other servers also open), on a thread of the store's.
    func observeExternalChanges(_ handler: @escaping @Sendable (ExternalStoreChange) -> Void)
    /// A new root context over the same stores, for reads that need one (relationships, fetched
    /// properties); it never waits for another context's commit.
    func newReadContext() -> ObjectContext
}

extension StoreCoordinator: CommittedReads {
    public func rowWithToMany(
        for id: ObjectID, blocking: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (Result<StoreRow?, StoreError>) -> Void
    ) {
        guard let store = store(for: id) else {
            completion(.success(nil))
            return
        }
        store.rowWithToMany(for: id, model: model, blocking: blocking, completion: completion)
    }

    public func objectID(of entity: String, primaryKey: Int64) -> ObjectID? {
        // Of several, the first added: the one an insert goes to unless it is assigned.
        guard let first = stores(for: entity).first else { return nil }
        return ObjectID(store: first.identifier, entity: entity, primaryKey: primaryKey)
    }

    public func observeExternalChanges(_ handler: @escaping @Sendable (ExternalStoreChange) -> Void) {
        for case let store as PostgreSQLStore in stores { store.onExternalChange(handler) }
    }

    public var storeSummaries: [StoreSummary] {
        stores.map {
            StoreSummary(
                identifier: $0.identifier, type: $0.type, configuration: $0.configuration, url: $0.url,
                entityNames: $0.entityNames.sorted(), isWritable: !$0.options.readOnly, storageBytes: $0.storageBytes,
                serverVersion: ($0 as? PostgreSQLStore)?.serverVersionText)
        }
    }

    public func newReadContext() -> ObjectContext { ObjectContext(coordinator: self) }

    public func writabilityProblems() -> [String] {
        var problems: [String] = []
        for case let store as PostgreSQLStore in stores where !store.options.readOnly {
            do {
                try store.checkWritable()
            } catch {
                problems.append(
                    "configuration \(store.configuration ?? ObjectModel.defaultConfiguration): \(error.message)")
            }
        }
        return problems
    }
}
