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

    /// The object's entity (the concrete one, not a parent).
    public let entityName: String
    /// The UUID of the store holding the object; nil while temporary.
    public let storeIdentifier: String?
    /// The key.
    public let key: Key

    /// A permanent ID.
    public init(store: String, entity: String, primaryKey: Int64) {
        storeIdentifier = store
        entityName = entity
        key = .permanent(primaryKey)
    }

    private init(temporary entity: String, number: UInt64) {
        storeIdentifier = nil
        entityName = entity
        key = .temporary(number)
    }

    private static let nextTemporary = Atomic<UInt64>(0)

    /// A new temporary ID for an object of `entity`.
    public static func temporary(entity: String) -> ObjectID {
        ObjectID(temporary: entity, number: nextTemporary.wrappingAdd(1, ordering: .relaxed).newValue)
    }

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

    /// Hashes the key and the entity name's length only: IDs are dictionary keys on every hot path,
    /// and hashing the store's 36-character UUID and the entity's name each time cost more than
    /// the rare collision it avoids (equality still compares every part).
    public func hash(into hasher: inout Hasher) {
        switch key {
        case .permanent(let pk): hasher.combine(pk)
        case .temporary(let number): hasher.combine(~number)
        }
        hasher.combine(entityName.utf8.count)
    }
}
