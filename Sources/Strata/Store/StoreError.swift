import Foundation

/// One object whose stored version differs from the version a save expected.
public struct VersionConflict: Sendable, Hashable, CustomStringConvertible {
    /// The object.
    public var id: ObjectID
    /// The version the saving context read.
    public var expectedVersion: Int64
    /// The version in the store now; nil when the object was deleted.
    public var storedVersion: Int64?

    /// Creates a conflict.
    public init(id: ObjectID, expectedVersion: Int64, storedVersion: Int64?) {
        self.id = id
        self.expectedVersion = expectedVersion
        self.storedVersion = storedVersion
    }

    public var description: String {
        "\(id): expected version \(expectedVersion), store has \(storedVersion.map(String.init) ?? "none (deleted)")"
    }
}

/// A failure of a store or the coordinator, with the context that explains it.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable for matching.
    public enum Code: String, Sendable, Hashable {
        /// The store file could not be opened, read or written.
        case io
        /// The store was made for another model; `message` names what differs.
        case incompatibleModel
        /// The store holds another configuration.
        case configurationMismatch
        /// The model has no such configuration.
        case unknownConfiguration
        /// The same URL is already attached for another configuration.
        case duplicateStore
        /// No attached store holds the entity.
        case noStoreForEntity
        /// The store is read-only.
        case readOnly
        /// Objects changed underneath the save (optimistic locking).
        case conflict
        /// A uniqueness constraint failed.
        case uniqueViolation
        /// An object or entity is not known to the store.
        case notFound
        /// A request or change set the store cannot apply.
        case invalidRequest
        /// The store was closed.
        case closed
        /// The disk, or the store's size limit, is full: nothing was written; writes work again
        /// once there is room.
        case full
        /// The store's files cannot be written (a read-only file or file system): nothing was
        /// written; writes work again once they can be.
        case notWritable
        /// The store owes the rest of a save across stores that it could not write yet; it takes
        /// no other save until it has (see `message` for why).
        case unsettled
        /// A fetch ran past its time budget (``StoreOptions/queryBudget``) and was stopped.
        case overBudget
        /// A predicate needs more work on one value than is allowed (see
        /// ``PredicateError/isTooExpensive``).
        case tooExpensive
        /// The store's database cannot be reached, or takes no writes now (a PostgreSQL primary
        /// failing over): nothing was written; try again shortly.
        case unavailable
        /// A save's commit was sent but its answer was lost, and whether it committed could not be
        /// found out in time: it may or may not have been written. Read before writing again.
        case outcomeUnknown
    }

    /// The error for a predicate a store could not apply: `.tooExpensive` or `.invalidRequest`.
    init(_ error: PredicateError, storeURL: URL?, entity: String?) {
        self.init(
            error.isTooExpensive ? .tooExpensive : .invalidRequest, error.message, storeURL: storeURL, entity: entity)
    }

    /// What went wrong.
    public var code: Code
    /// A sentence saying what and why.
    public var message: String
    /// The store's URL, if it has one.
    public var storeURL: URL?
    /// The entity concerned, if any.
    public var entity: String?
    /// The properties concerned (the fields of a failed uniqueness constraint, say).
    public var fields: [String]
    /// The objects whose versions conflicted.
    public var conflicts: [VersionConflict]
    /// The underlying error (the database's own, say).
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, storeURL: URL? = nil, entity: String? = nil, fields: [String] = [],
        conflicts: [VersionConflict] = [], underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.storeURL = storeURL
        self.entity = entity
        self.fields = fields
        self.conflicts = conflicts
        self.underlying = underlying
    }

    public var description: String {
        var text = message
        if let storeURL { text += " [store \(storeURL.path)]" }
        if let underlying { text += " (\(underlying))" }
        return text
    }
}
