import Foundation

/// What one kind of store brings besides the stores themselves: opening one, checking and
/// preparing the migration of a stored one, inspecting a store without changing it, and splitting
/// a single-file store into one store per configuration.
///
/// The coordinator, the container and `Migration/` go through this protocol only, so each store
/// type keeps its specifics (files, SQL, metadata layout) in its own folder, and a new type plugs
/// in by conforming and naming itself in ``StoreType/kind`` (each type's folder declares its kind as
/// a member of ``StoreType``).
public protocol StoreKind: Sendable {
    /// The type this kind opens.
    var type: StoreType { get }

    /// Opens (or creates) a store for `configuration` of `model`.
    /// - Throws: ``StoreError``.
    func open(model: ObjectModel, configuration: String?, url: URL?, options: StoreOptions) throws(StoreError)
        -> any PersistentStore

    /// The migration the existing store of `description` needs before it opens with `model`,
    /// checked without changing anything; nil when it is new or already matches the model.
    /// - Throws: `.incompatibleModel` when it needs a migration that is not allowed or not
    ///   possible, `.configurationMismatch`, `.io`.
    func pendingMigration(model: ObjectModel, description: StoreDescription) throws(StoreError)
        -> (any PendingMigration)?

    /// Whether the store at `url` is one of this kind (read without changing it).
    func recognizes(_ url: URL) -> Bool

    /// What the stored store of `description` records about itself (UUID, configuration,
    /// hashes) and the migration across stores it took part in, if its record is still kept;
    /// nil for a store not created yet. Reads without changing anything.
    func storedState(of description: StoreDescription) throws(StoreError) -> StoredState?

    /// Forgets the ``MigrationRecord`` the stored store of `description` keeps, once every
    /// participant has its migration.
    func forgetMigrationRecord(of description: StoreDescription) throws(StoreError)

    /// What the store at `url` records about itself, and what a migration to `model` would do.
    /// - Throws: `.io` for a missing or unreadable store, `.incompatibleModel` for one of another
    ///   kind.
    func inspect(_ url: URL, model: ObjectModel?, history: [ObjectModel]) throws(StoreError) -> StoreInspection

    /// Splits the single-configuration store at `source` into one store of this kind per
    /// configuration of `model` (see ``StoreSplitter``).
    func split(
        model: ObjectModel, source: URL, targets: [String: URL], options: SplitOptions,
        progress: ((SplitProgress) -> Void)?
    ) throws(StoreError) -> SplitReport
}

/// What a stored store says about itself before it is opened.
public struct StoredState: Sendable, Hashable {
    /// UUID, configuration, model version and entity hashes.
    public var metadata: StoreMetadata
    /// The migration of several stores this store committed first, while its record is kept
    /// (see ``MigrationRecord``).
    public var migrationRecord: MigrationRecord?

    /// Creates a state.
    public init(metadata: StoreMetadata, migrationRecord: MigrationRecord?) {
        self.metadata = metadata
        self.migrationRecord = migrationRecord
    }
}

/// A migration of several stores, as the first store to commit keeps it until all have: so that
/// one interrupted between the stores' commits is finished on the next open (even with migration
/// turned off), or refused with a clear reason when opened with another model.
public struct MigrationRecord: Sendable, Hashable {
    /// Each participant's store UUID and the entity hashes its migration leads to.
    public var targets: [String: [String: String]]
    /// The version identifier of the model migrated to.
    public var modelVersion: String?

    /// Creates a record.
    public init(targets: [String: [String: String]], modelVersion: String?) {
        self.targets = targets
        self.modelVersion = modelVersion
    }

    /// The record as JSON text, as a store keeps it.
    public var text: String {
        JSONValue.object([
            "targets": .object(targets.mapValues { .object($0.mapValues { .string($0) }) }),
            "modelVersion": modelVersion.map { .string($0) } ?? .null,
        ]).jsonText
    }

    /// A record a store kept.
    public init?(text: String) {
        guard case .object(let members)? = try? JSONValue.parse(Array(text.utf8)),
            case .object(let targets)? = members["targets"]
        else { return nil }
        self.targets = targets.compactMapValues { $0.objectValue?.compactMapValues(\.stringValue) }
        modelVersion = members["modelVersion"]?.stringValue
    }
}

/// A migration of one stored store, planned and checked but not begun.
public protocol PendingMigration: AnyObject {
    /// The store's UUID.
    var storeIdentifier: String { get }
    /// The entity hashes the store has after it.
    var targetHashes: [String: String] { get }
    /// What it does.
    var plan: MigrationPlan { get }
    /// Applies it in the store's own transaction, left open until committed or rolled back.
    /// - Throws: ``StoreError``; the store is then as it was.
    func prepare() throws(StoreError) -> any PreparedMigration
}

/// A migration applied in an open transaction, waiting to be committed or rolled back with the
/// other stores of its coordinator.
public protocol PreparedMigration: AnyObject {
    /// Keeps `record` in the open transaction, for the first store of a migration of several.
    func keep(_ record: MigrationRecord) throws(StoreError)
    /// Makes the migration durable.
    func commit() throws(StoreError)
    /// Discards it; the store is as it was.
    func rollback()
    /// After every store of the migration committed: forgets the kept record.
    func forgetRecord()
}

extension StoreType {
    /// The kind that opens, migrates, inspects and splits stores of this type.
    public var kind: any StoreKind {
        switch self {
        case .sqlite: Self.sqliteKind
        case .inMemory: InMemoryStoreKind()
        case .postgresql: Self.postgresqlKind
        }
    }

    /// The kind whose stores the store at `url` is one of, if any.
    public static func kind(recognizing url: URL) -> (any StoreKind)? {
        allCases.lazy.map(\.kind).first { $0.recognizes(url) }
    }
}

/// Stores in process memory: nothing to migrate, inspect or split.
struct InMemoryStoreKind: StoreKind {
    var type: StoreType { .inMemory }

    func open(model: ObjectModel, configuration: String?, url: URL?, options: StoreOptions) throws(StoreError)
        -> any PersistentStore
    {
        try InMemoryStore(model: model, configuration: configuration, url: url, options: options)
    }

    func pendingMigration(model: ObjectModel, description: StoreDescription) throws(StoreError)
        -> (any PendingMigration)?
    { nil }

    func recognizes(_ url: URL) -> Bool { false }

    func storedState(of description: StoreDescription) throws(StoreError) -> StoredState? { nil }

    func forgetMigrationRecord(of description: StoreDescription) throws(StoreError) {}

    func inspect(_ url: URL, model: ObjectModel?, history: [ObjectModel]) throws(StoreError) -> StoreInspection {
        throw StoreError(.invalidRequest, "an in-memory store has no file to inspect", storeURL: url)
    }

    func split(
        model: ObjectModel, source: URL, targets: [String: URL], options: SplitOptions,
        progress: ((SplitProgress) -> Void)?
    ) throws(StoreError) -> SplitReport {
        throw StoreError(.invalidRequest, "an in-memory store cannot be split", storeURL: source)
    }
}
