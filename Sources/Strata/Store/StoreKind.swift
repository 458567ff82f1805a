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

/// A migration of one stored store, planned and checked but not begun.
public protocol PendingMigration: AnyObject {
    /// What it does.
    var plan: MigrationPlan { get }
    /// Applies it in the store's own transaction, left open until committed or rolled back.
    /// - Throws: ``StoreError``; the store is then as it was.
    func prepare() throws(StoreError) -> any PreparedMigration
}

/// A migration applied in an open transaction, waiting to be committed or rolled back with the
/// other stores of its coordinator.
public protocol PreparedMigration: AnyObject {
    /// Makes the migration durable.
    func commit() throws(StoreError)
    /// Discards it; the store is as it was.
    func rollback()
}

extension StoreType {
    /// The kind that opens, migrates, inspects and splits stores of this type.
    public var kind: any StoreKind {
        switch self {
        case .sqlite: Self.sqliteKind
        case .inMemory: InMemoryStoreKind()
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
