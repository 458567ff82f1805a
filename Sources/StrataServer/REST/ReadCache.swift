import Strata

/// The rendered JSON of objects read by primary key (`GET /books/42`), with their versions, so
/// that a repeated read costs a table lookup instead of SQLite queries and rendering.
///
/// Every write of the service goes through its root context, whose save notices arrive after the
/// stores commit and before any writer gets its response; ``invalidate(_:)`` then drops the
/// changed objects and every cached object of an entity related to a changed one (whose
/// relationship lists may have changed through inverses). A read that started before such a
/// notice cannot put what it read into the cache afterwards: each entity's shelf has a
/// generation, taken before the read and checked when storing.
///
/// An object read from the store is kept only when it was read before lately (a doorkeeper, as in
/// TinyLFU): a read seen once in a while, such as one of a scan or of uniformly random ids over far
/// more objects than the cache holds, is not worth evicting another object for, nor the cost of
/// keeping it. Measured at 1,000,000 books read at random, where 99% of reads miss whatever the
/// cache keeps: keeping none of them took 1.3–4.0 µs of server CPU off each read in three rounds
/// of four (the fourth equal).
///
/// Writes made to the stores without the service's root context are not seen: a process that
/// shares its coordinator with the service must write through ``RESTService/root``. Other servers'
/// writes into a shared (PostgreSQL) store arrive as external changes and are forgotten likewise.
final class ReadCache: Sendable {
    /// One cached object: its version and its JSON body.
    struct Entry: Sendable {
        let version: Int64
        let body: [UInt8]
        /// The `ETag` of `version`, made once rather than per answer.
        let etag: String

        init(version: Int64, body: [UInt8]) {
            self.version = version
            self.body = body
            etag = ObjectCodec.etag(version)
        }
    }

    /// A primary key as a table key, hashed by one SplitMix64 step rather than a `Hasher` (SipHash)
    /// per lookup: a read from the cache is a handful of hash lookups in all.
    struct Key: Hashable {
        let value: Int64

        init(_ value: Int64) { self.value = value }

        func hash(into hasher: inout Hasher) { hasher.combine(value) }

        func _rawHashValue(seed: Int) -> Int {
            Int(truncatingIfNeeded: splitMix64(UInt64(bitPattern: value) ^ UInt64(UInt(bitPattern: seed))))
        }
    }

    /// One entity's cached objects, evicted first in, first out beyond the limit.
    struct Shelf {
        var generation: UInt64 = 0
        var entries: [Key: Entry] = [:]
        var order: [Key] = []
        var next = 0
        /// The doorkeeper: a bit per hashed key offered lately (allocated at the first offer),
        /// all cleared once `limit` keys have been marked, so that "lately" is about the last
        /// `limit` new keys and a bit stands for one of at most that many.
        var seen: [UInt64] = []
        var marks = 0

        /// The doorkeeper's words for `limit` keys: eight bits a key (fewer past 8 Mi keys), a
        /// power of two of them, so that one key in about eight or more keys offered once passes.
        static func words(for limit: Int) -> Int {
            var bits = 64
            while bits < limit * 8 && bits < 1 << 26 { bits <<= 1 }
            return bits / 64
        }

        /// Whether `key` was offered since the doorkeeper last cleared; marks it if not.
        mutating func admits(_ key: Key, limit: Int) -> Bool {
            if seen.isEmpty { seen = Array(repeating: 0, count: Self.words(for: limit)) }
            let bit = Int(truncatingIfNeeded: splitMix64(UInt64(bitPattern: key.value))) & (seen.count * 64 - 1)
            let mask: UInt64 = 1 << UInt64(bit & 63)
            if seen[bit >> 6] & mask != 0 { return true }
            seen[bit >> 6] |= mask
            marks += 1
            if marks >= limit {
                for index in seen.indices { seen[index] = 0 }
                marks = 0
            }
            return false
        }

        /// Keeps `entry` as `key`, evicting the oldest beyond `limit`.
        mutating func insert(_ key: Key, _ entry: Entry, limit: Int) {
            if entries.updateValue(entry, forKey: key) != nil { return }
            if order.count < limit {
                order.append(key)
            } else {
                entries[order[next]] = nil
                order[next] = key
                next = (next + 1) % limit
            }
        }

        mutating func clear() {
            generation &+= 1
            entries.removeAll(keepingCapacity: true)
            order.removeAll(keepingCapacity: true)
            next = 0
        }
    }

    private let shelves: [String: Locked<Shelf>]
    /// For each entity, the shelves holding its objects (its own and its ancestors').
    private let holders: [String: [Locked<Shelf>]]
    /// For each entity, the shelves of every entity its relationships lead to (and their kin).
    private let related: [String: [Locked<Shelf>]]
    private let limit: Int

    /// A cache for `model`'s entities holding up to `limit` objects per entity (0 turns it off).
    /// - Parameter uncached: entities never cached: those in stores other processes also write
    ///   (PostgreSQL), so that a read sees another server's acknowledged write at once.
    init(model: ObjectModel, limit: Int, uncached: Set<String> = []) {
        self.limit = max(0, limit)
        var shelves: [String: Locked<Shelf>] = [:]
        for entity in model.entityNames where !uncached.contains(entity) { shelves[entity] = Locked(Shelf()) }
        self.shelves = shelves
        /// Every shelf that can hold an object of the family of `entity`'s root.
        func family(_ entity: String) -> [String] { model.entityAndSubentities(of: model.rootEntity(of: entity)) }
        var holders: [String: [Locked<Shelf>]] = [:]
        var related: [String: [Locked<Shelf>]] = [:]
        for entity in model.entityNames {
            holders[entity] = family(entity).compactMap { shelves[$0] }
            var names = Set<String>()
            for relationship in model.relationships(of: entity) { names.formUnion(family(relationship.destination)) }
            related[entity] = names.sorted().compactMap { shelves[$0] }
        }
        self.holders = holders
        self.related = related
    }

    /// The cached object `key` read as `entity`, and the generation to pass to ``store(_:_:_:generation:)``
    /// after reading it from the store when it is not cached.
    func lookup(_ entity: String, _ key: Int64) -> (entry: Entry?, generation: UInt64) {
        guard limit > 0, let shelf = shelves[entity] else { return (nil, 0) }
        return shelf.withLock { ($0.entries[Key(key)], $0.generation) }
    }

    /// The generation of `entity`'s cached objects, to pass to ``store(_:_:_:generation:)`` for
    /// rows read after it (a list's page).
    func generation(of entity: String) -> UInt64 {
        guard limit > 0, let shelf = shelves[entity] else { return 0 }
        return shelf.withLock { $0.generation }
    }

    /// Caches object `key` read as `entity`, unless its entity changed since `generation`.
    func store(_ entity: String, _ key: Int64, _ entry: Entry, generation: UInt64) {
        keep(entity, key, entry, generation: generation, throughDoorkeeper: false)
    }

    /// Offers object `key`, just read from the store as `entity`, to the cache: kept as
    /// ``store(_:_:_:generation:)`` keeps it when the doorkeeper saw the key lately, else only
    /// marked as seen.
    func offer(_ entity: String, _ key: Int64, _ entry: Entry, generation: UInt64) {
        keep(entity, key, entry, generation: generation, throughDoorkeeper: true)
    }

    private func keep(_ entity: String, _ key: Int64, _ entry: Entry, generation: UInt64, throughDoorkeeper: Bool) {
        guard limit > 0, let shelf = shelves[entity] else { return }
        shelf.withLock { shelf in
            guard shelf.generation == generation, !throughDoorkeeper || shelf.admits(Key(key), limit: limit)
            else { return }
            shelf.insert(Key(key), entry, limit: limit)
        }
    }

    /// Forgets everything (another process changed objects it could not name).
    func clearAll() {
        for shelf in shelves.values { shelf.withLock { $0.clear() } }
    }

    /// Forgets what a root save changed: the saved objects, and every object of an entity related
    /// to one of them.
    func invalidate(_ changes: ContextChanges) {
        guard limit > 0 else { return }
        var cleared = Set<ObjectIdentifier>()
        var evicted: [ObjectIdentifier: (Locked<Shelf>, [Int64])] = [:]
        for id in changes.inserted + changes.updated + changes.deleted {
            for shelf in related[id.entityName] ?? [] where cleared.insert(ObjectIdentifier(shelf)).inserted {
                shelf.withLock { $0.clear() }
            }
            guard let key = id.primaryKey else { continue }
            for shelf in holders[id.entityName] ?? [] {
                evicted[ObjectIdentifier(shelf), default: (shelf, [])].1.append(key)
            }
        }
        for (identity, (shelf, keys)) in evicted where !cleared.contains(identity) {
            shelf.withLock { shelf in
                shelf.generation &+= 1
                for key in keys { shelf.entries[Key(key)] = nil }
            }
        }
    }
}
