import Foundation
import Synchronization

/// The identity of a managed object: the store that holds it, its entity, and a key.
///
/// IDs cross contexts freely. An object inserted into a context has a temporary ID until the first
/// root save, which gives it a permanent one: a store's UUID and a 64-bit primary key.
public struct ObjectID: Sendable, Hashable, CustomStringConvertible {
    /// The key part of an ID.
    public enum Key: Sendable, Hashable {
        /// A primary key in a store.
        case permanent(Int64)
        /// A placeholder before the first root save, unique within the process.
        case temporary(UInt64)
    }

    /// Where IDs live: one entity in one store (or no store while temporary). Interned, so an ID
    /// is a reference and an integer: IDs are dictionary keys on every hot path, and comparing and
    /// hashing them does not touch the entity's name or the store's 36-character UUID.
    final class Home: Sendable {
        let entityName: String
        let storeIdentifier: String?

        private init(entityName: String, storeIdentifier: String?) {
            self.entityName = entityName
            self.storeIdentifier = storeIdentifier
        }

        private struct Name: Hashable {
            var entity: String
            var store: String?
        }

        /// Every home ever made; never emptied (IDs hold their homes unowned).
        private static let interned = Locked<[Name: Home]>([:])

        /// The one home of `entity` in `store`.
        static func of(entity: String, store: String?) -> Home {
            interned.withLock { table in
                let name = Name(entity: entity, store: store)
                if let home = table[name] { return home }
                let home = Home(entityName: entity, storeIdentifier: store)
                table[name] = home
                return home
            }
        }
    }

    /// Never released: `Home.of` keeps every home in its table for the process's lifetime, so
    /// the ID holds it without counting. An ID is then two plain words, copied and dropped (as
    /// dictionary keys and in every row and list) without touching the home's reference count.
    unowned(unsafe) let home: Home
    /// The key.
    public let key: Key

    /// The object's entity (the concrete one, not a parent).
    public var entityName: String { home.entityName }
    /// The UUID of the store holding the object; nil while temporary.
    public var storeIdentifier: String? { home.storeIdentifier }

    /// A permanent ID.
    public init(store: String, entity: String, primaryKey: Int64) {
        self.init(home: Home.of(entity: entity, store: store), primaryKey: primaryKey)
    }

    /// A permanent ID in a home the caller looked up once.
    init(home: Home, primaryKey: Int64) {
        self.home = home
        key = .permanent(primaryKey)
    }

    /// The ID of the object with primary key `pk` of the same entity and store as this one
    /// (cheaper than ``init(store:entity:primaryKey:)`` on hot paths).
    public func withPrimaryKey(_ pk: Int64) -> ObjectID { ObjectID(home: home, primaryKey: pk) }

    private init(temporary home: Home, number: UInt64) {
        self.home = home
        key = .temporary(number)
    }

    private static let nextTemporary = Atomic<UInt64>(0)

    /// A new temporary ID for an object of `entity`.
    public static func temporary(entity: String) -> ObjectID {
        temporary(in: Home.of(entity: entity, store: nil))
    }

    /// A new temporary ID in `home` (a store-less home).
    static func temporary(in home: Home) -> ObjectID {
        ObjectID(temporary: home, number: nextTemporary.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool { lhs.key == rhs.key && lhs.home === rhs.home }

    /// Whether the ID is temporary.
    public var isTemporary: Bool { if case .temporary = key { true } else { false } }

    /// The primary key, for permanent IDs.
    public var primaryKey: Int64? { if case .permanent(let pk) = key { pk } else { nil } }

    /// The URI form: `strata://<store-uuid>/<Entity>/<pk>`, or `strata-temporary:///<Entity>/<n>`.
    public var uri: String {
        switch key {
        case .permanent(let pk): "strata://\(storeIdentifier ?? "")/\(entityName)/\(pk)"
        case .temporary(let n): "strata-temporary:///\(entityName)/\(n)"
        }
    }

    /// Parses the URI form of a permanent ID.
    public init?(uri: String) {
        guard uri.hasPrefix("strata://") else { return nil }
        let parts = uri.dropFirst("strata://".count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, let pk = Int64(parts[2]) else { return nil }
        self.init(store: String(parts[0]), entity: String(parts[1]), primaryKey: pk)
    }

    public var description: String { uri }

    /// The key and the home's identity in one word (equal IDs, equal words).
    private var hashBits: UInt64 {
        let key: UInt64
        switch self.key {
        case .permanent(let pk): key = UInt64(bitPattern: pk)
        case .temporary(let number): key = ~number
        }
        return key ^ (UInt64(UInt(bitPattern: ObjectIdentifier(home))) &* 0x9E37_79B9_7F4A_7C15)
    }

    /// Hashes the key and the home's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(hashBits) }

    /// The hash dictionaries and sets use (`Hashable`'s underscored requirement, which by default
    /// runs `hash(into:)` through a `Hasher`): IDs are keys on every hot path, and the `Hasher`'s
    /// calls were a sixth of inserting and saving objects.
    ///
    /// Keys go in runs of eight: all but the key's low three bits are mixed with the table's seed
    /// by SplitMix64's 64-bit finalizer, and those three bits are kept as they are, so keys 8n to
    /// 8n + 7 of one home get eight neighbouring buckets in a random place. Keys are issued in
    /// sequence and saves, fetches and tables walk them in runs, so a run of lookups touches one
    /// stretch of the table instead of a cache line per key: inserting and fetching 100,000
    /// objects took 4–8% and 11–12% less time (`strata-bench --only library`, alternating builds). The
    /// price is longer probes in a nearly full table of dense keys (about 13 buckets for a key
    /// present and 50 for one absent at three quarters full, against 2.5 and 8), each a compare
    /// in memory already read.
    public func _rawHashValue(seed: Int) -> Int {
        let bits = hashBits
        let x = splitMix64((bits >> 3) ^ UInt64(UInt(bitPattern: seed)))
        return Int(truncatingIfNeeded: (x & ~7) | (bits & 7))
    }
}

extension ObjectID {
    /// The order of objects that sort the same: saved objects by store, then primary key; then
    /// unsaved ones in the order they were inserted.
    static func precedes(_ lhs: ObjectID, _ rhs: ObjectID) -> Bool {
        switch (lhs.key, rhs.key) {
        case (.permanent(let a), .permanent(let b)):
            if lhs.storeIdentifier != rhs.storeIdentifier {
                return (lhs.storeIdentifier ?? "") < (rhs.storeIdentifier ?? "")
            }
            return a < b
        case (.permanent, .temporary): return true
        case (.temporary, .permanent): return false
        case (.temporary(let a), .temporary(let b)): return a < b
        }
    }
}
