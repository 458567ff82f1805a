import Foundation
import Strata

/// How a replica settles a local change the server refused because the object changed there
/// since the replica last saw it (`412` on `If-Match`), or was deleted there (`404`): Core Data's
/// merge policies, chosen per entity.
public enum ConflictPolicy: String, Sendable, Hashable, CaseIterable {
    /// The server wins (Core Data's `NSMergeByPropertyStoreTrumpMergePolicy` at object level,
    /// `storeTrump`): the local change is dropped and the server's object (or its deletion) is
    /// applied locally.
    case serverWins = "server-wins"
    /// The local object wins (`objectTrump`): every attribute and to-one relationship of the local
    /// object is written over the server's; a local delete deletes the server's edited object; a
    /// local edit of an object the server deleted creates it again (with a new id).
    case localWins = "local-wins"
    /// Property by property (`NSMergeByPropertyObjectTrumpMergePolicy`): the properties the local
    /// change set win, every other property keeps the server's value. A local delete against a
    /// server edit, and a local edit against a server delete, go as ``localWins``.
    case mergeByProperty = "merge-by-property"
}

/// A conflict the replica met while pushing, as the resolver callback sees it.
public struct SyncConflict: Sendable {
    /// What the local change was.
    public enum LocalChange: String, Sendable, Hashable {
        /// Attributes or relationships set.
        case update
        /// The object deleted.
        case delete
    }

    /// The entity.
    public var entity: String
    /// The object's id on the server.
    public var id: Int64
    /// What the local change did.
    public var localChange: LocalChange
    /// The properties the local change set (empty for a delete).
    public var changedProperties: [String]
    /// The server's object now, as JSON; nil when the server deleted it.
    public var serverObject: [String: JSONValue]?
    /// The version the local change was based on.
    public var baseVersion: Int64
    /// The entity's policy (what applies unless the resolver says otherwise).
    public var policy: ConflictPolicy
}

/// One conflict settled, for the replica's log.
public struct ConflictRecord: Sendable, Hashable {
    /// The entity.
    public var entity: String
    /// The object's id on the server.
    public var id: Int64
    /// The local change that met the conflict.
    public var localChange: SyncConflict.LocalChange
    /// Whether the server had deleted the object.
    public var serverDeleted: Bool
    /// The policy that settled it.
    public var policy: ConflictPolicy
    /// Whether the local change lost (dropped in favour of the server's state).
    public var localLost: Bool
    /// When it was settled.
    public var at: Date
}

/// A local transaction the server refused outright (a `400` or `422`: the change breaks the
/// model's rules there), dropped from the outbox and replaced locally by the server's state.
public struct RejectedPush: Sendable, Hashable {
    /// The local history transaction's number.
    public var transaction: Int64
    /// The server's status.
    public var status: Int
    /// The server's explanation.
    public var detail: String
}

/// What a replica has done so far (since it was opened).
public struct SyncStatistics: Sendable, Hashable {
    /// Server changes applied locally.
    public var pulledChanges = 0
    /// Pages of the change feed read (long-polls that timed out included).
    public var pulls = 0
    /// Local transactions acknowledged by the server.
    public var pushedTransactions = 0
    /// `_batch` requests sent (retries included).
    public var pushRequests = 0
    /// Answers that were replays of an earlier one (`Idempotent-Replayed`).
    public var replayedPushes = 0
    /// Conflicts settled, by policy.
    public var conflicts: [ConflictPolicy: Int] = [:]
    /// Times the replica read the whole set again (first seed and `410`s).
    public var seeds = 0
    /// The last error met (a transport failure, a server error), if any.
    public var lastError: String?

    /// Every conflict settled.
    public var conflictCount: Int { conflicts.values.reduce(0, +) }
}
