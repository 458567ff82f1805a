import Foundation

/// A scratch pad of managed objects: a root context saves through a ``StoreCoordinator``; a child
/// context saves into its parent, to any depth.
///
/// Contexts are `Sendable`: every method takes the context's own lock, so they may be called from
/// any thread, and ``perform(_:)`` / ``performAndWait(_:)`` run blocks one at a time on the
/// context's serial queue for units of work. Managed objects belong to the context that made them;
/// pass ``ObjectID``s between contexts.
public final class ObjectContext: @unchecked Sendable {
    // Safe to share: all mutable state is in `storage` (a lock) or `observers` (a lock); the rest
    // is immutable after init. Locks are always taken child first, then parent.
    /// The coordinator the root context saves through.
    public let coordinator: StoreCoordinator
    /// The parent context; nil for a root context.
    public let parent: ObjectContext?
    /// The model.
    public var model: ObjectModel { coordinator.model }

    let registry: ObjectIDRegistry
    let storage = Locked(ContextStorage())
    /// What this context's managed objects reach it through (its one weak reference to itself).
    let link = ContextLink()
    /// The serial queue of `perform`, made on first use: most contexts (one per request) never need one.
    private let queueBox = Locked<DispatchQueue?>(nil)
    private let queueKey = DispatchSpecificKey<Bool>()
    private let observers = Locked<[UUID: @Sendable (ContextChanges) -> Void]>([:])
    let commitQueue = Locked(CommitQueue())
    /// A root's write gate: every change to a root (inserts, edits, deletes, a child's save into
    /// it, rollback, its own save) and each group commit, from building its store request to
    /// re-keying the saved objects, hold it. A group commit releases the storage lock while the
    /// stores write, so that reads go on; without the gate a write made meanwhile would be cleared
    /// with the committed changes, or written twice. Children need none: a child's save pushes
    /// and clears its changes under one hold of its storage lock, and goes through the root's gate.
    let writeGate: RecursiveLock?
    /// The merge policy, also kept outside `storage` so children can read it while a commit holds
    /// the storage lock.
    private let policyBox = Locked(MergePolicy.error)
    /// The context's name and transaction author, kept outside `storage` for the same reason.
    private let authorshipBox = Locked(HistoryAuthorship())
    private let savedTokenBox = Locked<HistoryToken?>(nil)

    /// Creates a root context that saves through `coordinator`.
    public init(coordinator: StoreCoordinator, mergePolicy: MergePolicy = .error) {
        self.coordinator = coordinator
        parent = nil
        registry = ObjectIDRegistry()
        writeGate = RecursiveLock()
        storage.withLock { $0.mergePolicy = mergePolicy }
        policyBox.withLock { $0 = mergePolicy }
        link.context = self
    }

    deinit {
        // A child lets go of the temporary IDs it kept objects under.
        if parent != nil { registry.release(storage.withLock { $0.heldTemporaries }) }
    }

    private init(parent: ObjectContext) {
        coordinator = parent.coordinator
        self.parent = parent
        registry = parent.registry
        writeGate = nil
        let policy = parent.mergePolicy
        storage.withLock { $0.mergePolicy = policy }
        policyBox.withLock { $0 = policy }
        link.context = self
    }

    /// After a root save, when the context holds more objects than this, it forgets the cached
    /// states of unchanged objects (they are read again from the stores when next used). Nil keeps
    /// everything, as Core Data does.
    public var cacheLimit: Int? {
        get { storage.withLock { $0.cacheLimit } }
        set { storage.withLock { $0.cacheLimit = newValue } }
    }

    /// The permanent ID of an object inserted through this context or its children, once a root
    /// save gave it one (else `id` itself).
    public func permanentID(for id: ObjectID) -> ObjectID { registry.canonical(id) }

    /// A new child context whose saves go into this one.
    public func newChildContext() -> ObjectContext { ObjectContext(parent: self) }

    /// The context's name (Core Data's `name`): recorded as the context name of the history
    /// transactions its saves write.
    public var name: String? {
        get { authorshipBox.withLock { $0.contextName } }
        set { authorshipBox.withLock { $0.contextName = newValue } }
    }

    /// Who the context's saves are by (Core Data's `transactionAuthor`): recorded as the author
    /// of the history transactions they write.
    public var transactionAuthor: String? {
        get { authorshipBox.withLock { $0.author } }
        set { authorshipBox.withLock { $0.author = newValue } }
    }

    /// The history token of the transaction that last saved this context's changes into the
    /// stores (a root's ``save()``, or a child's ``commit(_:expecting:keeping:)`` through its
    /// root); nil when none has, or when the stores it wrote record no history. A snapshot of the
    /// objects that save wrote is current as of this token: following the history after it
    /// misses no later change.
    public var savedHistoryToken: HistoryToken? {
        get { savedTokenBox.withLock { $0 } }
        set { savedTokenBox.withLock { $0 = newValue } }
    }

    /// The name and author a save records.
    var authorship: HistoryAuthorship { authorshipBox.withLock { $0 } }

    /// What a root save does on a version conflict (default `.error`).
    public var mergePolicy: MergePolicy {
        get { policyBox.withLock { $0 } }
        set {
            storage.withLock { $0.mergePolicy = newValue }
            policyBox.withLock { $0 = newValue }
        }
    }

    private var queue: DispatchQueue {
        queueBox.withLock { box in
            if let queue = box { return queue }
            let queue = DispatchQueue(label: "strata.context")
            queue.setSpecific(key: queueKey, value: true)
            box = queue
            return queue
        }
    }

    /// Runs `body` on the context's serial queue and returns its result.
    public func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on the context's serial queue and waits for it (inline when already on it).
    public func performAndWait<T>(_ body: () throws -> T) rethrows -> T {
        if DispatchQueue.getSpecific(key: queueKey) == true { return try body() }
        return try queue.sync { try body() }
    }

    /// Whether the context has unsaved inserts, updates or deletes.
    public var hasChanges: Bool {
        storage.withLock { !$0.inserted.isEmpty || $0.updated.contains { !$0.value.isEmpty } || !$0.deleted.isEmpty }
    }

    /// The IDs of the unsaved inserted, updated and deleted objects.
    public var pendingChanges: (inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID]) {
        storage.withLock { s in
            (
                s.inserted.map(registry.canonical), s.updated.keys.map(registry.canonical),
                s.deleted.keys.map(registry.canonical)
            )
        }
    }

    /// Registers `handler` to receive every root save's changes; keep the token to stop.
    /// The handler runs on the saving thread after the save, with no context lock held.
    @discardableResult
    public func observeSaves(_ handler: @escaping @Sendable (ContextChanges) -> Void) -> UUID {
        let token = UUID()
        observers.withLock { $0[token] = handler }
        return token
    }

    /// Stops an observer.
    public func removeObserver(_ token: UUID) { _ = observers.withLock { $0.removeValue(forKey: token) } }

    func notify(_ changes: ContextChanges) {
        for handler in observers.withLock({ Array($0.values) }) { handler(changes) }
    }

    /// Discards every unsaved change; objects show their saved values again.
    public func rollback() {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        storage.withLock { s in rollback(&s) }
    }

    func rollback(_ s: inout ContextStorage) {
        for id in s.inserted { s.objects[id] = nil }
        for (id, original) in s.originals { s.objects[id] = original }
        for id in s.deleted.keys where s.originals[id] == nil { s.objects[id] = s.deletedStates[id] }
        s.clearPending()
    }

    /// Forgets every object and change, as if the context were new.
    public func reset() {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        let held = storage.withLock { s in
            let (policy, held) = (s.mergePolicy, s.heldTemporaries)
            s = ContextStorage()
            s.mergePolicy = policy
            return held
        }
        if parent != nil { registry.release(held) }
    }

    /// Assigns an inserted object to one store, for an entity that several writable stores hold.
    public func assign(_ object: ManagedObject, to store: any PersistentStore) {
        writeGate?.lock()
        defer { writeGate?.unlock() }
        storage.withLock { $0.assignments[object.storedID] = store.identifier }
    }
}

/// A root save's changes, as published to observers and merged by other contexts.
public struct ContextChanges: Sendable, Hashable {
    /// Inserted objects (permanent IDs).
    public var inserted: [ObjectID]
    /// Updated objects.
    public var updated: [ObjectID]
    /// Deleted objects.
    public var deleted: [ObjectID]
    /// The same, per store UUID.
    public var byStore: [String: StoreChangeSummary]
    /// The history token the save produced (see ``SaveResult/historyToken``); nil when it wrote
    /// no store that records history, or for changes another process made.
    public var historyToken: HistoryToken?

    /// Objects another process wrote, all as updated (which of insert, update or delete is not
    /// known; a merge reads each again).
    public init(externallyChanged ids: [ObjectID]) {
        inserted = []
        updated = ids
        deleted = []
        byStore = [:]
    }

    init(inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID], byStore: [String: StoreChangeSummary]) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.byStore = byStore
    }
}

/// Everything a context tracks; guarded by the context's lock.
struct ContextStorage {
    var objects: [ObjectID: ObjectState] = [:]
    var inserted: [ObjectID] = []
    /// A child's inserted objects, for lookups; a root needs no set (see `isInserted`).
    var insertedSet: Set<ObjectID> = []
    var updated: [ObjectID: PendingChange] = [:]
    /// Deleted objects and the version the delete was decided against.
    var deleted: [ObjectID: Int64?] = [:]
    var deletedStates: [ObjectID: ObjectState] = [:]
    /// The state of each changed object before its first change, for rollback and merging.
    var originals: [ObjectID: ObjectState] = [:]
    var managed: [ObjectID: ManagedObject] = [:]
    var assignments: [ObjectID: String] = [:]
    var mergePolicy: MergePolicy = .error
    var cacheLimit: Int?
    /// The temporary IDs a child context holds in the registry.
    var heldTemporaries: [ObjectID] = []
    /// A root's group commit is writing its pending changes to the stores (with the lock released):
    /// children read the changed objects as they were before (see `stateForChild`).
    var staging = false
    /// Receipts to keep with the pending changes (see ``SaveReceipt``).
    var receipts: [SaveReceipt] = []

    /// Forgets the pending-change bookkeeping after a save (objects stay registered).
    mutating func clearPending() {
        receipts.removeAll()
        inserted.removeAll()
        insertedSet.removeAll()
        updated.removeAll()
        deleted.removeAll()
        deletedStates.removeAll()
        originals.removeAll()
        assignments.removeAll()
    }
}

extension ObjectContext {
    /// How many objects the context holds in memory (registered, inserted or changed).
    public var registeredObjectCount: Int { storage.withLock { $0.objects.count } }
}
