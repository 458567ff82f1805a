import Foundation
import Strata

/// A local, offline-capable copy of a Strata server's objects: a SQLite store on the device that
/// follows the server's change feed and sends local saves back.
///
/// The app reads and writes the replica through ordinary contexts over ``coordinator``. The
/// replica's own writes are authored ``ReplicaConfiguration/author``; every other local
/// transaction in the store's persistent history after the last acknowledged one is the outbox.
/// ``synchronize()`` pushes the outbox, then pulls the server's changes; ``run()`` does it
/// continuously, retrying with back-off while the server is away.
public final class Replica: @unchecked Sendable {
    // Safe to share: every synchronization step runs under `work`, one at a time; the logs and
    // statistics are behind locks of their own; everything else is immutable.

    /// What the replica was created with.
    public let configuration: ReplicaConfiguration
    /// The server's model with the replica's bookkeeping entities (see ``localModelJSON``).
    public let localModel: ObjectModel
    /// The coordinator over the replica's store: contexts over it read and write the replica.
    public let coordinator: StoreCoordinator
    let store: any PersistentStore
    let storeID: String
    let http: SyncHTTPClient
    let work = NSLock()
    let stats = Locked(SyncStatistics())
    let conflictLog = Locked<[ConflictRecord]>([])
    let rejectedLog = Locked<[RejectedPush]>([])
    let stopping = Locked(false)
    /// Each root entity's number in the bookkeeping records' keys.
    let rootIndex: [String: Int64]
    /// Every replicated entity, subentities included.
    let replicated: Set<String>
    /// The predicate objects of each replicated entity must match.
    let predicates: [String: FetchPredicate]

    /// Opens (or creates) the replica in ``ReplicaConfiguration/directory``. A new replica holds
    /// nothing until its first ``seed()`` (which ``synchronize()`` does when needed).
    /// - Throws: ``SyncError``, or the store's error.
    public init(_ configuration: ReplicaConfiguration) throws {
        self.configuration = configuration
        let model = configuration.model
        localModel = try SyncSchema.localModel(model)
        let folder = configuration.directory
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data((localModel.canonicalJSON + "\n").utf8).write(to: ReplicaConfiguration.modelURL(in: folder))
        var roots = Set<String>()
        for entity in model.entityNames { roots.insert(model.rootEntity(of: entity)) }
        rootIndex = Dictionary(uniqueKeysWithValues: roots.sorted().enumerated().map { ($1, Int64($0 + 1)) })
        var names = Set<String>()
        var predicates: [String: FetchPredicate] = [:]
        if let chosen = configuration.entities {
            for (entity, format) in chosen {
                guard model.entity(named: entity) != nil else { throw SyncError("the model has no entity \(entity)") }
                for name in model.entityAndSubentities(of: entity) {
                    names.insert(name)
                    if let format { predicates[name] = try FetchPredicate(format: format) }
                }
            }
        } else {
            names = Set(model.entityNames.filter { model.access(of: $0) != .hidden })
        }
        replicated = names
        self.predicates = predicates
        http = SyncHTTPClient(base: configuration.server, headers: configuration.headers)
        coordinator = StoreCoordinator(model: localModel)
        let url = ReplicaConfiguration.storeURL(in: folder)
        var opened = try coordinator.addStore(type: .sqlite, url: url, options: StoreOptions(recordsHistory: true))
        if try opened.row(for: Self.stateID(opened.metadata.identifier)) == nil {
            try Self.initialize(opened, model: model, roots: roots, author: configuration.author)
            // Reopened, so that the store's key counters start at the floors just written.
            coordinator.remove(opened)
            opened = try coordinator.addStore(type: .sqlite, url: url, options: StoreOptions(recordsHistory: true))
        }
        store = opened
        storeID = opened.metadata.identifier
    }

    /// The state object's ID in the store `identifier`.
    static func stateID(_ identifier: String) -> ObjectID {
        ObjectID(store: identifier, entity: SyncSchema.stateEntity, primaryKey: 1)
    }

    /// Writes a new replica's state object and raises the key floor of every root entity's table
    /// to ``SyncSchema/localKeyBase``, so that local inserts never take a key the server may give
    /// (a deletion of the key below the base raises the floor: the store never reuses a deleted
    /// object's key).
    private static func initialize(_ store: any PersistentStore, model: ObjectModel, roots: Set<String>, author: String)
        throws
    {
        var state = SyncState()
        state.replicaID = UUID().uuidString.lowercased()
        let identifier = store.metadata.identifier
        let floors = roots.sorted().filter { !(model.entity(named: $0)?.isAbstract ?? true) }.map {
            ObjectID(store: identifier, entity: $0, primaryKey: SyncSchema.localKeyBase - 1)
        }
        var placeholders = StoreChanges(
            inserts: floors.map { StoreRow(id: $0, attributes: placeholder(model, $0.entityName)) })
        placeholders.authorship = HistoryAuthorship(author: author, contextName: "initialize")
        try store.prepare(placeholders).commit()
        var changes = StoreChanges(
            inserts: [StoreRow(id: stateID(identifier), attributes: state.attributes)],
            deletes: floors.map { StoreDeletion(id: $0, expectedVersion: nil) })
        changes.authorship = HistoryAuthorship(author: author, contextName: "initialize")
        try store.prepare(changes).commit()
        // The floors' own transactions are not local changes to push.
        state.pushedThrough = try store.lastHistoryNumber()
        var update = StoreChanges(updates: [
            StoreUpdate(id: stateID(identifier), expectedVersion: nil, attributes: state.attributes)
        ])
        update.authorship = HistoryAuthorship(author: author, contextName: "initialize")
        try store.prepare(update).commit()
    }

    /// Values an object of `entity` can be stored with for a moment: each attribute's default, or
    /// a zero value of its type when it is required and has none.
    private static func placeholder(_ model: ObjectModel, _ entity: String) -> [String: AttributeValue] {
        var values: [String: AttributeValue] = [:]
        for attribute in model.attributes(of: entity) {
            if let value = attribute.defaultValue {
                values[attribute.name] = value
                continue
            }
            guard !attribute.isOptional else {
                values[attribute.name] = .null
                continue
            }
            values[attribute.name] =
                switch attribute.type {
                case .string: .string("placeholder")
                case .uri: .uri("placeholder:")
                case .integer16, .integer32, .integer64: .integer(0)
                case .double, .float: .double(0)
                case .decimal: .decimal(0)
                case .boolean: .boolean(false)
                case .date: .date(Date(timeIntervalSince1970: 0))
                case .binary: .binary(Data())
                case .uuid: .uuid(UUID())
                case .json: .json(.null)
                }
        }
        return values
    }

    /// The local model as JSON: what `strata serve --model` takes to serve the replica's store.
    public var localModelJSON: String { localModel.canonicalJSON }

    /// What the replica did so far.
    public var statistics: SyncStatistics { stats.withLock { $0 } }
    /// Every conflict settled so far, oldest first.
    public var conflicts: [ConflictRecord] { conflictLog.withLock { $0 } }
    /// Every local transaction the server refused outright.
    public var rejectedPushes: [RejectedPush] { rejectedLog.withLock { $0 } }

    /// The server history token the local objects reflect; nil before the first seed.
    public var serverToken: String? { (try? state())?.serverToken }

    /// How many local transactions wait to be pushed.
    public func pendingTransactionCount() throws -> Int { try outbox().count }

    /// The replica's state object.
    func state() throws(StoreError) -> SyncState {
        guard let row = try store.row(for: Self.stateID(storeID)) else { return SyncState() }
        return SyncState(row: row)
    }

    /// The ID of the local object `key` of `entity`.
    func localID(_ entity: String, _ key: Int64) -> ObjectID {
        ObjectID(store: storeID, entity: entity, primaryKey: key)
    }

    // MARK: - Running

    /// Pushes every local transaction waiting, then applies the server's changes (one page, waiting
    /// up to `wait` seconds for one), seeding first when the replica holds nothing yet.
    /// - Returns: how many server changes were applied.
    @discardableResult
    public func synchronize(wait: Double = 0) throws -> Int {
        work.lock()
        defer { work.unlock() }
        if try state().serverToken == nil { try seedLocked() }
        if configuration.pushes { _ = try pushLocked() }
        let applied = try pullLocked(wait: wait)
        try pruneHistory()
        return applied
    }

    /// Forgets the local history no push needs: everything up to the last transaction committed
    /// before the outbox was found empty, or up to the last pushed one, less the newest
    /// ``ReplicaConfiguration/keptHistory``, once twice that many are kept.
    func pruneHistory() throws {
        let last = try store.lastHistoryNumber()
        guard let first = try store.firstHistoryNumber(), last - first > 2 * Int64(configuration.keptHistory) else {
            return
        }
        let through = try outbox(limit: 1).isEmpty ? last : try state().pushedThrough
        let bound = min(through, last - Int64(configuration.keptHistory))
        if bound > first { try store.deleteHistory(.through(bound)) }
    }

    /// Makes a replica that holds nothing yet follow the feed from `token` without reading the
    /// server's objects first: for a store that already holds the server's state at `token` (a
    /// copy of another replica, say), or to keep only the changes from `token` on.
    /// - Throws: ``SyncError`` when the replica already follows a token, or `token` is not one.
    public func follow(from token: String) throws {
        work.lock()
        defer { work.unlock() }
        guard HistoryToken(token) != nil else { throw SyncError("\(token) is not a history token") }
        var state = try state()
        guard state.serverToken == nil else {
            throw SyncError("the replica already follows the server from \(state.serverToken!)")
        }
        state.serverToken = token
        try commit(LocalWrite(state: state), "follow")
    }

    /// Reads the server's whole set into the replica (``synchronize()`` does it when needed).
    public func seed() throws {
        work.lock()
        defer { work.unlock() }
        try seedLocked()
    }

    /// Pushes every local transaction waiting.
    /// - Returns: how many were acknowledged.
    @discardableResult
    public func push() throws -> Int {
        work.lock()
        defer { work.unlock() }
        return try pushLocked()
    }

    /// Applies one page of the server's changes, waiting up to `wait` seconds for one.
    /// - Returns: how many changes were applied.
    @discardableResult
    public func pull(wait: Double = 0) throws -> Int {
        work.lock()
        defer { work.unlock() }
        return try pullLocked(wait: wait)
    }

    /// Synchronizes until ``stop()``: long-polls the feed, pushes local saves as they come (each
    /// pass pushes first), and after a failure waits (doubling from the shortest retry delay up
    /// to the longest) and tries again. `onPass` is called after every pass.
    public func run(onPass: (@Sendable (Result<Int, any Error>) -> Void)? = nil) {
        stopping.withLock { $0 = false }
        var delay = configuration.retryDelays.lowerBound
        while !stopping.withLock({ $0 }) {
            do {
                // A replica that pushes long-polls at most a second, so that local saves go out soon.
                let wait = configuration.pushes ? min(configuration.pullWait, 1) : configuration.pullWait
                let applied = try synchronize(wait: wait)
                delay = configuration.retryDelays.lowerBound
                onPass?(.success(applied))
            } catch {
                stats.withLock { $0.lastError = "\(error)" }
                onPass?(.failure(error))
                Thread.sleep(forTimeInterval: delay)
                delay = min(configuration.retryDelays.upperBound, delay * 2)
            }
        }
    }

    /// Ends ``run(onPass:)`` after its current pass.
    public func stop() { stopping.withLock { $0 = true } }

    /// Closes the store; the replica cannot be used afterwards.
    public func close() {
        work.lock()
        defer { work.unlock() }
        coordinator.remove(store)
    }
}
