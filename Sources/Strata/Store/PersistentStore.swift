import Foundation

/// The kinds of store Strata ships.
public enum StoreType: String, Sendable, Hashable, CaseIterable {
    /// One SQLite file.
    case sqlite
    /// Process memory, gone when the store closes.
    case inMemory = "memory"
    /// Tables in a PostgreSQL database, shared by every server that opens them.
    case postgresql
}

/// How a store is opened.
public struct StoreOptions: Sendable, Hashable {
    /// SQLite's `synchronous` setting.
    public enum Durability: String, Sendable, Hashable {
        /// `synchronous=FULL`: a commit survives power loss (the default).
        case full
        /// `synchronous=NORMAL`: a commit survives a crash of the process, not of the machine.
        case normal
    }

    /// Refuse every save.
    public var readOnly: Bool
    /// How durable each commit is (SQLite only).
    public var durability: Durability
    /// Whether a store written with an older model is migrated (lightweight, inferred) when it is
    /// opened; when false such a store is refused with `.incompatibleModel` (SQLite only).
    public var migrate: Bool
    /// Earlier versions of the model, oldest first (a `.xcdatamodeld`'s versions, say): they tell
    /// the version of a store that does not record its model, and place mapping models between
    /// the store's version and the model. A migration infers one step from the store's version to
    /// the model, as Core Data does, plus the steps of the mapping models that lie between.
    public var modelHistory: [ObjectModel]
    /// Mapping models (Core Data `.xcmappingmodel`s) that a migration runs, instead of inferring
    /// it, for the steps between the model versions each names (SQLite and PostgreSQL stores).
    public var mappingModels: [MappingModel]
    /// The migration policies that entity mappings naming a custom policy class run, by that
    /// class name (see ``EntityMigrationPolicy``).
    public var migrationPolicies: [String: any EntityMigrationPolicy]
    /// The longest one fetch may run, in seconds, enforced by the store itself (SQLite's progress
    /// handler, PostgreSQL's `statement_timeout`); past it the fetch fails with `.overBudget`.
    /// Nil: no limit.
    public var queryBudget: Double?
    /// How many bytes at the start of a SQLite file its read connections map into memory
    /// (SQLite's `mmap_size`), so that a read of a page the kernel holds is no system call and no
    /// copy; 0: none (every read a `pread`). The mapped pages are the kernel's page cache of the
    /// file, which `pread` uses as well, and count in the process's RSS as file-backed. On a
    /// mapped page a disk I/O error is a `SIGBUS` rather than an error SQLite returns (SQLite only).
    public var memoryMapBytes: Int
    /// Whether every commit also records a persistent history transaction, in the same store
    /// transaction as the data (Core Data's `NSPersistentHistoryTrackingKey`): who saved, when,
    /// and which objects were inserted, updated (with the properties set) or deleted (with their
    /// tombstones). Read with ``StoreCoordinator/history(after:entities:limit:)``.
    public var recordsHistory: Bool

    /// What ``memoryMapBytes`` is unless told: 256 MiB.
    public static let defaultMemoryMapBytes = 256 << 20

    /// Creates options.
    public init(
        readOnly: Bool = false, durability: Durability = .full, migrate: Bool = false,
        modelHistory: [ObjectModel] = [], queryBudget: Double? = nil,
        memoryMapBytes: Int = StoreOptions.defaultMemoryMapBytes, recordsHistory: Bool = false,
        mappingModels: [MappingModel] = [], migrationPolicies: [String: any EntityMigrationPolicy] = [:]
    ) {
        self.mappingModels = mappingModels
        self.migrationPolicies = migrationPolicies
        self.readOnly = readOnly
        self.durability = durability
        self.migrate = migrate
        self.modelHistory = modelHistory
        self.queryBudget = queryBudget
        self.memoryMapBytes = memoryMapBytes
        self.recordsHistory = recordsHistory
    }

    /// Options are equal when every setting is, the model history included (of the migration
    /// policies, their names).
    public static func == (lhs: StoreOptions, rhs: StoreOptions) -> Bool {
        lhs.readOnly == rhs.readOnly && lhs.durability == rhs.durability && lhs.migrate == rhs.migrate
            && lhs.modelHistory == rhs.modelHistory && lhs.queryBudget == rhs.queryBudget
            && lhs.memoryMapBytes == rhs.memoryMapBytes && lhs.recordsHistory == rhs.recordsHistory
            && lhs.mappingModels == rhs.mappingModels
            && Set(lhs.migrationPolicies.keys) == Set(rhs.migrationPolicies.keys)
    }

    /// Hashes the settings (of the model history, only its length).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(readOnly)
        hasher.combine(durability)
        hasher.combine(migrate)
        hasher.combine(modelHistory.count)
        hasher.combine(recordsHistory)
    }
}

/// What one store records about itself.
public struct StoreMetadata: Sendable, Hashable {
    /// The store's UUID, part of every object ID it issues.
    public var identifier: String
    /// The configuration the store was created for (nil: every entity).
    public var configuration: String?
    /// The version identifier of the model it was written with.
    public var modelVersion: String?
    /// The version hash of each entity it holds, as of its last schema change.
    public var entityHashes: [String: String]

    /// Creates metadata.
    public init(identifier: String, configuration: String?, modelVersion: String?, entityHashes: [String: String]) {
        self.identifier = identifier
        self.configuration = configuration
        self.modelVersion = modelVersion
        self.entityHashes = entityHashes
    }
}

/// A change to an existing object: only the values being set.
public struct StoreUpdate: Sendable, Hashable {
    /// The object.
    public var id: ObjectID
    /// The version the change was made against; nil skips the check (an `overwrite` save).
    public var expectedVersion: Int64?
    /// Attribute values to set.
    public var attributes: [String: AttributeValue]
    /// To-one relationships to set.
    public var toOne: [String: ObjectID?]
    /// To-many relationships to set, in order.
    public var toMany: [String: [ObjectID]]

    /// Creates an update.
    public init(
        id: ObjectID, expectedVersion: Int64?, attributes: [String: AttributeValue] = [:],
        toOne: [String: ObjectID?] = [:], toMany: [String: [ObjectID]] = [:]
    ) {
        self.id = id
        self.expectedVersion = expectedVersion
        self.attributes = attributes
        self.toOne = toOne
        self.toMany = toMany
    }
}

/// A deletion of an existing object.
public struct StoreDeletion: Sendable, Hashable {
    /// The object.
    public var id: ObjectID
    /// The version the delete was decided against; nil skips the check.
    public var expectedVersion: Int64?

    /// Creates a deletion.
    public init(id: ObjectID, expectedVersion: Int64?) {
        self.id = id
        self.expectedVersion = expectedVersion
    }
}

/// A change of an object's to-many relationships that writes no row of its own (the other
/// side's column holds them), for the history.
public struct RelatedChange: Sendable, Hashable {
    /// The relationships that changed.
    public var names: [String]
    /// The object's version, which such a change leaves as it is.
    public var version: Int64

    /// Creates a related change.
    public init(names: [String], version: Int64) {
        self.names = names
        self.version = version
    }
}

/// One save's changes for one store. Inserted rows carry permanent IDs of this store.
public struct StoreChanges: Sendable, Hashable {
    /// New objects, every attribute and relationship given.
    public var inserts: [StoreRow]
    /// Changed objects.
    public var updates: [StoreUpdate]
    /// Deleted objects.
    public var deletes: [StoreDeletion]
    /// This store's part in a save across several durable stores, written in the same
    /// transaction (see ``SaveParticipation``); nil for a save of this store alone.
    public var participation: SaveParticipation?
    /// Finished records and marks the store may forget in the same transaction.
    public var housekeeping = StoreHousekeeping()
    /// Who saved, for the history transaction a store recording history writes with the changes.
    public var authorship = HistoryAuthorship()
    /// Objects of this store whose to-many relationships kept by the other side's column changed
    /// (a book added to an author's `books` writes only the book's row): no row of theirs is
    /// written, but their history records them as updated.
    public var related: [ObjectID: RelatedChange] = [:]

    /// Creates a change set.
    public init(inserts: [StoreRow] = [], updates: [StoreUpdate] = [], deletes: [StoreDeletion] = []) {
        self.inserts = inserts
        self.updates = updates
        self.deletes = deletes
    }

    /// Whether there is nothing to write (housekeeping alone is not worth a transaction).
    public var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }
}

/// A store's part of a save, applied but not yet committed.
///
/// The coordinator prepares every store's part before committing any, so that a failure in one
/// store leaves every store as it was. Exactly one of ``commit()`` and ``rollback()`` must be called.
public protocol PreparedSave: AnyObject, Sendable {
    /// The version each written object has after the commit.
    var versions: [ObjectID: Int64] { get }
    /// The number of the history transaction written with the changes (see
    /// ``StoreOptions/recordsHistory``); nil when the store records none.
    var historyNumber: Int64? { get }
    /// Makes the changes durable.
    func commit() throws(StoreError)
    /// Makes the changes durable, or, when that fails, keeps them to be written before anything
    /// else the store is asked to save (whose `prepare` then fails while they still cannot be
    /// written): for the participants of a save across stores after its commit point committed,
    /// whose part must happen. Stores that cannot fail to commit just commit.
    /// - Throws: the commit's error, after keeping the changes.
    func commitOrKeep() throws(StoreError)
    /// Discards the changes.
    func rollback()
    /// Writes `receipts` in the open transaction, before ``commit()`` (see ``SaveReceipt``):
    /// the coordinator asks the store that decides the save. Stores that keep nothing past the
    /// process keep none.
    /// - Throws: `.uniqueViolation` when a receipt of the same scope and key is kept already.
    func keep(_ receipts: [KeptReceipt]) throws(StoreError)
}

extension PreparedSave {
    public func commitOrKeep() throws(StoreError) { try commit() }
    public var historyNumber: Int64? { nil }
    public func keep(_ receipts: [KeptReceipt]) throws(StoreError) {}
}

/// Which history a store forgets.
public enum HistoryPruning: Sendable, Hashable {
    /// Every transaction numbered up to this one, this one included (what a token covers).
    case through(Int64)
    /// Every transaction written before this moment.
    case before(Date)
}

/// A place where objects live: SQLite files, memory, and later other back ends.
///
/// Every implementation runs the store conformance suite. Stores are shared between threads.
public protocol PersistentStore: AnyObject, Sendable {
    /// The store's kind.
    var type: StoreType { get }
    /// Where it lives, if anywhere.
    var url: URL? { get }
    /// The configuration it was added for (nil: every entity).
    var configuration: String? { get }
    /// How it was opened.
    var options: StoreOptions { get }
    /// Its metadata (UUID, configuration, hashes).
    var metadata: StoreMetadata { get }
    /// The entities it holds.
    var entityNames: Set<String> { get }

    /// The objects matching `request` (the entity's subentities included unless the request says not).
    func fetch(_ request: FetchRequest) throws(StoreError) -> [StoreRow]
    /// How many objects match `request`, ignoring its limit and offset.
    func count(_ request: FetchRequest) throws(StoreError) -> Int
    /// How many objects matching `request` (its window ignored) have each value of `key`, an
    /// attribute or a to-one relationship counted by related primary key; groups in no order.
    func valueCounts(_ request: FetchRequest, key: String) throws(StoreError) -> [ValueCount]
    /// The rows of an aggregate fetch over this store's objects, names read in `model` (see
    /// ``AggregateRequest``).
    func aggregate(_ request: AggregateRequest, model: ObjectModel) throws(StoreError) -> [AggregateRow]
    /// The stored state of one object, nil when it does not exist.
    func row(for id: ObjectID) throws(StoreError) -> StoreRow?
    /// The objects a to-many relationship of `id` holds, in order.
    func relatedIDs(of id: ObjectID, relationship: String) throws(StoreError) -> [ObjectID]
    /// The stored state of one object with every to-many relationship its entity has in `model`
    /// read into `toMany`, nil when it does not exist. A store that can reads them all from one
    /// snapshot, so that the row and its relationships agree.
    func rowWithToMany(for id: ObjectID, model: ObjectModel) throws(StoreError) -> StoreRow?
    /// ``rowWithToMany(for:model:)`` without blocking the calling thread: `completion` gets the
    /// result, exactly once, on a thread of the store's or through `blocking`, which runs a job on a
    /// thread that may block (where a store that cannot read otherwise reads).
    func rowWithToMany(
        for id: ObjectID, model: ObjectModel, blocking: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (Result<StoreRow?, StoreError>) -> Void)
    /// Reserves `count` new primary keys for `entity`; keys are never reused, even after a rollback.
    func newObjectIDs(entity: String, count: Int) throws(StoreError) -> [ObjectID]
    /// Applies `changes` in one transaction, left open until the result is committed or rolled back.
    /// - Throws: ``StoreError`` with code `.conflict` listing every stale object, `.uniqueViolation`,
    ///   `.readOnly` or `.io`; the store is then unchanged.
    func prepare(_ changes: StoreChanges) throws(StoreError) -> any PreparedSave
    /// Closes the store; later calls fail with `.closed`.
    func close()
    /// The bytes the store takes where it lives (its files, say); nil when it does not measure them.
    var storageBytes: Int64? { get }

    /// Whether the store's commits survive the process (a file or a server, not memory): only such
    /// stores take part in the crash recovery of saves across stores.
    var isDurable: Bool { get }
    /// The records this store keeps as the commit point of saves across stores that may not be
    /// finished everywhere (see ``SaveParticipation``).
    func crossStoreRecords() throws(StoreError) -> [CrossStoreRecord]
    /// Whether this store applied the save across stores `saveID`.
    func hasApplied(saveID: String) throws(StoreError) -> Bool
    /// The receipt this store keeps for `scope` and `key` (see ``SaveReceipt``); nil when it
    /// keeps none or it expired.
    func receipt(scope: String, key: String) throws(StoreError) -> KeptReceipt?
    /// Every save across stores this store noted as applied (and not forgotten yet).
    func appliedSaves() throws(StoreError) -> [AppliedSave]
    /// Forgets finished records and released marks now, in a transaction of its own.
    func forget(_ housekeeping: StoreHousekeeping) throws(StoreError)

    /// The history transactions `request` asks for, in commit order (none when the store records
    /// no history).
    func history(_ request: HistoryRequest) throws(StoreError) -> [HistoryTransaction]
    /// The number of the last history transaction committed (0: none yet).
    func lastHistoryNumber() throws(StoreError) -> Int64
    /// The number of the oldest history transaction kept; nil when none is kept.
    func firstHistoryNumber() throws(StoreError) -> Int64?
    /// The number of the last history transaction `retention` lets go (0: none): it and every
    /// transaction before it are written before ``HistoryRetention/writtenBefore``, or it is at or
    /// before the transaction of a change that is not among the ``HistoryRetention/maxChanges``
    /// newest.
    func expiredHistoryNumber(_ retention: HistoryRetention) throws(StoreError) -> Int64
    /// Forgets history as `pruning` says, in a transaction of its own; returns how many
    /// transactions were forgotten.
    @discardableResult
    func deleteHistory(_ pruning: HistoryPruning) throws(StoreError) -> Int

    /// Begins a read snapshot for the calling thread: until ``endReadSnapshot()``, every read the
    /// thread makes through the store comes from the state committed now (see
    /// ``StoreCoordinator/withReadSnapshot(_:)``, which begins one in every store at once).
    /// - Throws: `.invalidRequest` when the thread has one already or the store cannot give one.
    func beginReadSnapshot() throws(StoreError)
    /// Ends the calling thread's read snapshot, if it has one.
    func endReadSnapshot()
}

extension PersistentStore {
    public var storageBytes: Int64? { nil }
    public var isDurable: Bool { false }
    public func crossStoreRecords() throws(StoreError) -> [CrossStoreRecord] { [] }
    public func hasApplied(saveID: String) throws(StoreError) -> Bool { false }
    public func receipt(scope: String, key: String) throws(StoreError) -> KeptReceipt? { nil }
    public func appliedSaves() throws(StoreError) -> [AppliedSave] { [] }
    public func forget(_ housekeeping: StoreHousekeeping) throws(StoreError) {}
    public func history(_ request: HistoryRequest) throws(StoreError) -> [HistoryTransaction] { [] }
    public func lastHistoryNumber() throws(StoreError) -> Int64 { 0 }
    public func firstHistoryNumber() throws(StoreError) -> Int64? { nil }
    public func expiredHistoryNumber(_ retention: HistoryRetention) throws(StoreError) -> Int64 { 0 }
    @discardableResult
    public func deleteHistory(_ pruning: HistoryPruning) throws(StoreError) -> Int { 0 }
    public func beginReadSnapshot() throws(StoreError) {
        throw StoreError(.invalidRequest, "a \(type.rawValue) store cannot give a read snapshot", storeURL: url)
    }
    public func endReadSnapshot() {}

    public func rowWithToMany(for id: ObjectID, model: ObjectModel) throws(StoreError) -> StoreRow? {
        guard var row = try row(for: id) else { return nil }
        for relationship in model.relationships(of: row.id.entityName) where relationship.isToMany {
            row.toMany[relationship.name] = try relatedIDs(of: row.id, relationship: relationship.name)
        }
        return row
    }

    public func rowWithToMany(
        for id: ObjectID, model: ObjectModel, blocking: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (Result<StoreRow?, StoreError>) -> Void
    ) {
        blocking { [self] in
            do throws(StoreError) {
                completion(.success(try rowWithToMany(for: id, model: model)))
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// The store's UUID.
    public var identifier: String { metadata.identifier }

    /// Applies and commits `changes` in one transaction.
    @discardableResult
    public func save(_ changes: StoreChanges) throws(StoreError) -> [ObjectID: Int64] {
        let prepared = try prepare(changes)
        try prepared.commit()
        return prepared.versions
    }
}
