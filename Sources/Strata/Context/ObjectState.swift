import Synchronization

/// The values of one object as a context sees them: a store row (no copy when a fetch registers
/// what the store returned). `version` is the stored version it was read at (0 for a new object);
/// `toMany` holds the materialized to-many relationships (absent ones are read on demand).
typealias ObjectState = StoreRow

extension StoreRow {
    init(row: StoreRow) { self = row }

    /// `body` applied to the state in place. Mutating only so that a dictionary's or an array's
    /// element is reached through its modify accessor, instead of copied out whole with every
    /// reference it holds.
    mutating func reading<R>(_ body: (borrowing ObjectState) -> R) -> R { body(self) }

    /// Whether any relationship holds an object.
    var refersToAnything: Bool {
        toOne.values.contains { $0 != nil } || toMany.values.contains { !$0.isEmpty }
    }

    /// Rewrites every reference through `map` (temporary IDs becoming permanent).
    mutating func rewrite(_ map: [ObjectID: ObjectID]) {
        if let new = map[id] { id = new }
        for (name, value) in toOne { if let value, let new = map[value] { toOne[name] = .some(new) } }
        for (name, values) in toMany where values.contains(where: { map[$0] != nil }) {
            toMany[name] = values.map { map[$0] ?? $0 }
        }
    }
}

/// The additions and removals of one to-many relationship, pushed to a parent as a delta so that
/// sibling contexts adding to the same relationship do not overwrite each other.
struct ToManyDelta: Sendable, Hashable {
    var added: [ObjectID] = []
    var removed: Set<ObjectID> = []
    /// For ordered relationships: the full list, whose order wins.
    var orderedList: [ObjectID]?

    mutating func add(_ id: ObjectID) {
        if removed.remove(id) == nil, !added.contains(id) { added.append(id) }
    }

    mutating func remove(_ id: ObjectID) {
        if let index = added.firstIndex(of: id) { added.remove(at: index) } else { removed.insert(id) }
    }

    /// Applies the delta to a list.
    func apply(to list: [ObjectID]) -> [ObjectID] {
        if let orderedList { return orderedList }
        var result = list.filter { !removed.contains($0) }
        for id in added where !result.contains(id) { result.append(id) }
        return result
    }

    mutating func rewrite(_ map: [ObjectID: ObjectID]) {
        added = added.map { map[$0] ?? $0 }
        removed = Set(removed.map { map[$0] ?? $0 })
        orderedList = orderedList?.map { map[$0] ?? $0 }
    }
}

/// The unsaved changes to one existing object.
struct PendingChange: Sendable, Hashable {
    /// The stored version the change was made against; nil for an `overwrite`.
    var baseVersion: Int64?
    var attributes: Set<String> = []
    var toOne: Set<String> = []
    var toMany: [String: ToManyDelta] = [:]

    var isEmpty: Bool { attributes.isEmpty && toOne.isEmpty && toMany.isEmpty }

    mutating func rewrite(_ map: [ObjectID: ObjectID]) {
        for key in toMany.keys { toMany[key]!.rewrite(map) }
    }
}

/// Temporary → permanent IDs, shared by a root context and all its descendants, so every context
/// that holds an object sees its permanent ID after the root save.
///
/// A child context holds the temporary IDs it keeps objects under; when the last holder goes away
/// the mapping is forgotten, so a long-lived root (a server's) does not keep one entry per object
/// ever inserted. Objects inserted into the root itself keep their mapping for the root's lifetime.
final class ObjectIDRegistry: Sendable {
    private struct State {
        var permanent: [ObjectID: ObjectID] = [:]
        var temporary: [ObjectID: ObjectID] = [:]
        var holds: [ObjectID: Int] = [:]
    }

    private let state = Locked(State())
    /// How many permanent IDs map back to temporary ones, set under the lock: most lookups find
    /// none, and every object a fetch registers asks.
    private let temporaries = Atomic<Int>(0)

    /// Records a root save's new IDs (`permanent[i]` replacing `temporary[i]`). The way back (permanent → temporary) is kept only for IDs a
    /// child holds: the root re-keys its own objects, children look theirs up by either ID.
    func record(_ temporary: [ObjectID], _ permanent: [ObjectID]) {
        guard !temporary.isEmpty else { return }
        state.withLock { s in
            if s.permanent.isEmpty { s.permanent.reserveCapacity(temporary.count) }
            for (old, new) in zip(temporary, permanent) {
                s.permanent[old] = new
                if !s.holds.isEmpty, s.holds[old] != nil { s.temporary[new] = old }
            }
            temporaries.store(s.temporary.count, ordering: .releasing)
        }
    }

    /// The permanent ID for `id`, or `id`.
    func canonical(_ id: ObjectID) -> ObjectID {
        guard id.isTemporary else { return id }
        return state.withLock { $0.permanent[id] } ?? id
    }

    /// The temporary ID a permanent one replaced, if any.
    func temporary(for id: ObjectID) -> ObjectID? {
        guard !id.isTemporary, temporaries.load(ordering: .acquiring) > 0 else { return nil }
        return state.withLock { s in s.temporary.isEmpty ? nil : s.temporary[id] }
    }

    /// A child context keeps an object under temporary ID `id`.
    func hold(_ id: ObjectID) {
        state.withLock { $0.holds[id, default: 0] += 1 }
    }

    /// A child context let go of `ids`; mappings nobody holds any more are forgotten.
    func release(_ ids: [ObjectID]) {
        guard !ids.isEmpty else { return }
        state.withLock { s in
            for id in ids {
                guard let count = s.holds[id] else { continue }
                if count > 1 {
                    s.holds[id] = count - 1
                    continue
                }
                s.holds[id] = nil
                if let new = s.permanent.removeValue(forKey: id) { s.temporary[new] = nil }
            }
            temporaries.store(s.temporary.count, ordering: .releasing)
        }
    }
}
