import Foundation

/// A position in the persistent history of one or several stores (Core Data's
/// `NSPersistentHistoryToken`).
///
/// Each store numbers its history transactions 1, 2, 3, … in commit order, without gaps; a token
/// holds, per store UUID, the number of the last transaction it covers. A transaction of store S
/// numbered n comes after a token when n is greater than the token's number for S (every
/// transaction of a store the token does not name comes after it). A save across several stores
/// produces one token naming each store's transaction, so it orders against every store's history.
///
/// Clients treat the token as opaque: its ``description`` (and its `Codable` form, the same
/// string) is the form to keep and hand back; numbers stay valid across restarts.
public struct HistoryToken: Sendable, Hashable, Codable, CustomStringConvertible, LosslessStringConvertible {
    /// Per store UUID, the number of the last history transaction the token covers.
    public var components: [String: Int64]

    /// Creates a token from per-store numbers.
    public init(_ components: [String: Int64] = [:]) { self.components = components }

    /// The token's text: `store:number` pairs, stores in order, joined by commas.
    public var description: String {
        components.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
    }

    /// Reads a token's ``description``; nil when the text is not one.
    public init?(_ description: String) {
        var components: [String: Int64] = [:]
        for pair in description.split(separator: ",", omittingEmptySubsequences: false) where !description.isEmpty {
            let parts = pair.split(separator: ":")
            guard parts.count == 2, !parts[0].isEmpty, let number = Int64(parts[1]), number >= 0,
                components[String(parts[0])] == nil
            else { return nil }
            components[String(parts[0])] = number
        }
        self.components = components
    }

    /// Reads the token from its string form.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let token = HistoryToken(text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not a history token: \(text)"))
        }
        self = token
    }

    /// Writes the token as its string form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// The number of the last transaction of store `identifier` the token covers (0: none).
    public func number(for identifier: String) -> Int64 { components[identifier] ?? 0 }

    /// Whether `transaction` comes after this token.
    public func precedes(_ transaction: HistoryTransaction) -> Bool {
        transaction.number > number(for: transaction.storeIdentifier)
    }

    /// Whether this token covers everything `other` covers: at or after it in every store.
    public func covers(_ other: HistoryToken) -> Bool {
        other.components.allSatisfy { number(for: $0.key) >= $0.value }
    }

    /// The token covering what this one and `other` cover: the later number in each store.
    public func merging(_ other: HistoryToken) -> HistoryToken {
        HistoryToken(components.merging(other.components, uniquingKeysWith: max))
    }
}

/// One object's change in a history transaction (Core Data's `NSPersistentHistoryChange`).
public struct HistoryChange: Sendable, Hashable {
    /// What happened to the object.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The object was inserted.
        case insert
        /// Some of its properties changed.
        case update
        /// It was deleted.
        case delete
    }

    /// The object.
    public var objectID: ObjectID
    /// What happened to it.
    public var kind: Kind
    /// For an update, the names of the attributes and relationships it set, in name order.
    public var updatedProperties: [String]?
    /// For a delete, the values of the attributes the model marks
    /// ``CoreDataAttributeInfo/preservesValueInHistoryOnDeletion`` as they were when it was deleted.
    public var tombstone: [String: AttributeValue]?
    /// The object's version after the change; for a delete, the version that was deleted.
    public var version: Int64

    /// Creates a change.
    public init(
        objectID: ObjectID, kind: Kind, updatedProperties: [String]? = nil, tombstone: [String: AttributeValue]? = nil,
        version: Int64
    ) {
        self.objectID = objectID
        self.kind = kind
        self.updatedProperties = updatedProperties
        self.tombstone = tombstone
        self.version = version
    }
}

/// One store commit as its history keeps it (Core Data's `NSPersistentHistoryTransaction`).
public struct HistoryTransaction: Sendable, Hashable {
    /// The store that committed it.
    public var storeIdentifier: String
    /// Its number in the store's history: 1, 2, 3, … in commit order.
    public var number: Int64
    /// When it was written.
    public var timestamp: Date
    /// The saving context's ``ObjectContext/transactionAuthor``.
    public var author: String?
    /// The saving context's ``ObjectContext/name``.
    public var contextName: String?
    /// The objects it changed, inserts first, then updates, then deletes.
    public var changes: [HistoryChange]

    /// The token right after this transaction, in its store.
    public var token: HistoryToken { HistoryToken([storeIdentifier: number]) }

    /// Creates a transaction.
    public init(
        storeIdentifier: String, number: Int64, timestamp: Date, author: String?, contextName: String?,
        changes: [HistoryChange]
    ) {
        self.storeIdentifier = storeIdentifier
        self.number = number
        self.timestamp = timestamp
        self.author = author
        self.contextName = contextName
        self.changes = changes
    }
}

/// Who wrote a save, as its history transactions record it.
public struct HistoryAuthorship: Sendable, Hashable {
    /// The saving context's ``ObjectContext/transactionAuthor``.
    public var author: String?
    /// The saving context's ``ObjectContext/name``.
    public var contextName: String?

    /// Creates the authorship.
    public init(author: String? = nil, contextName: String? = nil) {
        self.author = author
        self.contextName = contextName
    }
}

/// Which history a store is asked for.
public struct HistoryRequest: Sendable, Hashable {
    /// Transactions numbered after this one (0: from the first kept).
    public var after: Int64
    /// Only changes of these entities (their subentities included); nil: every entity. A
    /// transaction none of whose changes is kept is left out.
    public var entities: Set<String>?
    /// At most this many transactions; nil: all.
    public var limit: Int?

    /// Creates a request.
    public init(after: Int64 = 0, entities: Set<String>? = nil, limit: Int? = nil) {
        self.after = after
        self.entities = entities
        self.limit = limit
    }
}

extension StoreChanges {
    /// The history changes of this save, given the versions it produced and the versions the
    /// deleted objects had (`stored`), with the tombstones `tombstones` holds.
    func historyChanges(
        versions: [ObjectID: Int64], stored: [ObjectID: Int64], tombstones: [ObjectID: [String: AttributeValue]]
    ) -> [HistoryChange] {
        var changes: [HistoryChange] = []
        changes.reserveCapacity(inserts.count + updates.count + deletes.count)
        for row in inserts { changes.append(HistoryChange(objectID: row.id, kind: .insert, version: 1)) }
        var written = Set(inserts.map(\.id))
        for update in updates {
            var names = Array(update.attributes.keys)
            names += update.toOne.keys
            names += update.toMany.keys
            names += related[update.id]?.names ?? []
            written.insert(update.id)
            changes.append(
                HistoryChange(
                    objectID: update.id, kind: .update, updatedProperties: Array(Set(names)).sorted(),
                    version: versions[update.id] ?? 0))
        }
        for deletion in deletes { written.insert(deletion.id) }
        for (id, change) in related.sorted(by: { ObjectID.precedes($0.key, $1.key) }) where !written.contains(id) {
            changes.append(
                HistoryChange(objectID: id, kind: .update, updatedProperties: change.names, version: change.version))
        }
        for deletion in deletes {
            changes.append(
                HistoryChange(
                    objectID: deletion.id, kind: .delete, tombstone: tombstones[deletion.id] ?? [:],
                    version: stored[deletion.id] ?? deletion.expectedVersion ?? 0))
        }
        return changes
    }
}

extension ObjectModel {
    /// The attributes of `entity` whose values a deletion's history keeps.
    func preservedAttributes(of entity: String) -> [String] {
        attributes(of: entity).filter { $0.coreData?.preservesValueInHistoryOnDeletion == true }.map(\.name)
    }

    /// Whether a change of `entity` passes an entity filter (subentities pass with their parents).
    func history(_ entity: String, passes filter: Set<String>?) -> Bool {
        guard let filter else { return true }
        return filter.contains(entity) || filter.contains { self.entity(entity, isKindOf: $0) }
    }
}
