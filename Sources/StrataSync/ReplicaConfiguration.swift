import Foundation
import Strata

/// What a ``Replica`` replicates, from where, into where, and how it settles conflicts.
public struct ReplicaConfiguration: Sendable {
    /// The server's base URL (`http://host:port`).
    public var server: URL
    /// The server's model (the one `strata serve` was given).
    public var model: ObjectModel
    /// The folder the replica keeps its store in (`default.sqlite`) and the model a server over
    /// the replica serves it with (`replica-model.json`).
    public var directory: URL
    /// The entities replicated (each with its subentities), each with a predicate its objects
    /// must match to be kept locally (nil: every object); nil: every entity the server serves.
    public var entities: [String: String?]?
    /// The conflict policy of each entity (subentities take their own, else their ancestor's).
    public var policies: [String: ConflictPolicy] = [:]
    /// The policy of entities ``policies`` does not name.
    public var defaultPolicy: ConflictPolicy = .serverWins
    /// Asked for each conflict before it is settled: the policy to settle it with, or nil for
    /// the entity's own.
    public var resolver: (@Sendable (SyncConflict) -> ConflictPolicy?)?
    /// Called after each of the replica's own local transactions with the objects it wrote
    /// (server changes applied, objects moved to their server keys, conflicts settled), so that
    /// the app's contexts can forget them (``ObjectContext/mergeExternalChanges(_:)``); called on
    /// the replica's thread.
    public var onChange: (@Sendable (ExternalStoreChange) -> Void)?
    /// Headers sent with every request (`Authorization: Bearer …`).
    public var headers: [String: String] = [:]
    /// How long one read of the change feed waits for a change, in seconds (its `wait=`).
    public var pullWait: Double = 25
    /// The most server transactions one pull applies.
    public var pageSize = 1000
    /// Whether local saves are pushed to the server; a read-only replica's local saves stay local
    /// and are overwritten by the server's changes to the same objects.
    public var pushes = true
    /// The transaction author of the replica's own writes: local history by this author is never
    /// pushed.
    public var author = "strata-sync"
    /// How many of its newest local history transactions the replica keeps when it prunes the
    /// rest (for readers of a feed served over the replica); local writes not yet pushed are
    /// always kept.
    public var keptHistory = 10_000
    /// The shortest and longest wait between retries after a failure, in seconds (doubling).
    public var retryDelays: ClosedRange<Double> = 0.05...5
    /// Where the first copy of the server's objects (and the copy after `410`) comes from.
    public var seedSource: SeedSource = .export

    /// Creates a configuration.
    public init(server: URL, model: ObjectModel, directory: URL, entities: [String: String?]? = nil) {
        self.server = server
        self.model = model
        self.directory = directory
        self.entities = entities
    }

    /// The replica's store file in `directory`.
    public static func storeURL(in directory: URL) -> URL { directory.appendingPathComponent("default.sqlite") }
    /// The model file a server over the replica takes (`strata serve --model`).
    public static func modelURL(in directory: URL) -> URL { directory.appendingPathComponent("replica-model.json") }

    /// The policy of `entity`: its own, its nearest ancestor's, else the default.
    func policy(of entity: String) -> ConflictPolicy {
        var current: String? = entity
        while let name = current {
            if let policy = policies[name] { return policy }
            current = model.entity(named: name)?.parent
        }
        return defaultPolicy
    }
}

/// Where a replica copies the server's objects from when it starts (and when the history it
/// follows is no longer kept).
public enum SeedSource: String, Sendable, CaseIterable {
    /// `GET /_export`: one file read from one snapshot of every store, and the history token of
    /// exactly that snapshot.
    case export
    /// Each replicated entity's list, paged by `_id` (`order=_id&limit=1000`, then each page's
    /// `next`; the entity's predicate as `where=`): for servers whose export a client may not read, or
    /// replicas of a few objects of a large set. The feed then follows from the history token the
    /// first page carries, which no page is older than: what changed while the pages were read
    /// comes again through the feed, and is applied by version.
    case lists
}

/// Why a replica could not do what it was asked.
public struct SyncError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// Whether trying again later may succeed (the server or network is away, or busy).
    public var isTransient: Bool

    init(_ description: String, transient: Bool = false) {
        self.description = description
        isTransient = transient
    }
}
