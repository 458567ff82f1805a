import Foundation

/// How one store takes part in a save that writes several durable stores.
///
/// The coordinator commits such a save store by store. The first store it commits (the *commit
/// point*) keeps, in the same transaction as its own changes, a ``CrossStoreRecord`` holding every
/// other participant's changes; each other participant records, in its own transaction, that it
/// applied the save. So once the commit point has committed, the save has happened: if the process
/// dies before every other store committed, the next time the stores are attached together the
/// coordinator finds the record and writes the missing parts (IDs and versions are permanent, and a
/// store that did not commit is exactly as it was before the save, so the redo is the same save).
/// If it dies before the commit point committed, no store holds anything of it. A save that writes
/// one store pays nothing for this.
public struct SaveParticipation: Sendable, Hashable {
    /// The save's identifier (a UUID).
    public var saveID: String
    /// The commit point's store UUID.
    public var commitPoint: String
    /// In the commit point: the record of the other participants' changes; nil in the others,
    /// which only note that they applied the save (and where its record is).
    public var record: CrossStoreRecord?

    /// Creates a participation.
    public init(saveID: String, commitPoint: String, record: CrossStoreRecord?) {
        self.saveID = saveID
        self.commitPoint = commitPoint
        self.record = record
    }
}

/// A participant's note that it applied a save across stores.
public struct AppliedSave: Sendable, Hashable {
    /// The save's identifier.
    public var saveID: String
    /// The store UUID of its commit point, which keeps the record until every participant has it.
    public var commitPoint: String

    /// Creates a note.
    public init(saveID: String, commitPoint: String) {
        self.saveID = saveID
        self.commitPoint = commitPoint
    }
}

/// What a commit point keeps of a save across stores until every participant has it.
public struct CrossStoreRecord: Sendable, Hashable {
    /// The save's identifier.
    public var saveID: String
    /// When the save was made (microseconds since 1970, made unique within a process): a
    /// recovery finishes interrupted saves in this order.
    public var sequence: Int64
    /// Each other participant's store UUID and its changes (``StoreChanges/encoded(in:)``).
    public var parts: [String: JSONValue]

    /// Creates a record, stamped now.
    public init(saveID: String, parts: [String: JSONValue]) {
        self.init(saveID: saveID, sequence: Self.nextSequence(), parts: parts)
    }

    init(saveID: String, sequence: Int64, parts: [String: JSONValue]) {
        self.saveID = saveID
        self.sequence = sequence
        self.parts = parts
    }

    private static let lastSequence = Locked<Int64>(0)

    /// The current time in microseconds, or one more than the last stamp when the clock has not
    /// moved past it.
    private static func nextSequence() -> Int64 {
        let now = AttributeValue.microseconds(of: Date())
        return lastSequence.withLock { last in
            last = max(now, last + 1)
            return last
        }
    }

    /// The record as one JSON text, as a store keeps it.
    public var text: String {
        JSONValue.object(["save": .string(saveID), "sequence": .integer(sequence), "parts": .object(parts)]).jsonText
    }

    /// A record a store kept.
    public init?(text: String) {
        guard case .object(let members)? = try? JSONValue.parse(Array(text.utf8)),
            case .string(let saveID)? = members["save"], case .integer(let sequence)? = members["sequence"],
            case .object(let parts)? = members["parts"]
        else { return nil }
        self.init(saveID: saveID, sequence: sequence, parts: parts)
    }
}

/// Bookkeeping a save carries to a store besides its changes: finished records and marks the
/// store may now forget (in the same transaction, so it costs no extra write).
public struct StoreHousekeeping: Sendable, Hashable {
    /// Save identifiers of records this store keeps as a commit point whose saves every
    /// participant has applied.
    public var finishedRecords: [String] = []
    /// Save identifiers this store noted as applied whose records are gone from their commit
    /// points.
    public var releasedMarks: [String] = []

    /// Nothing to forget.
    public init() {}

    /// Whether there is nothing to forget.
    public var isEmpty: Bool { finishedRecords.isEmpty && releasedMarks.isEmpty }
}

extension StoreChanges {
    /// The changes as JSON, for a ``CrossStoreRecord``: rows by entity and primary key, values in
    /// their JSON form (exact: dates to the microsecond, decimals as text).
    public func encoded(in model: ObjectModel) -> JSONValue {
        func reference(_ id: ObjectID?) -> JSONValue {
            guard let id, let pk = id.primaryKey else { return .null }
            return .array([.string(id.entityName), .integer(pk)])
        }
        func row(
            _ id: ObjectID, version: Int64?, attributes: [(String, AttributeValue)], toOne: [String: ObjectID?],
            toMany: [String: [ObjectID]]
        ) -> JSONValue {
            var members: [String: JSONValue] = ["id": reference(id)]
            if let version { members["version"] = .integer(version) }
            members["attributes"] = .object(
                Dictionary(attributes.map { ($0.0, $0.1.json) }, uniquingKeysWith: { a, _ in a }))
            members["toOne"] = .object(toOne.mapValues { reference($0 ?? nil) })
            members["toMany"] = .object(toMany.mapValues { .array($0.map { reference($0) }) })
            return .object(members)
        }
        return .object([
            "inserts": .array(
                inserts.map {
                    row($0.id, version: nil, attributes: Array($0.attributes), toOne: $0.toOne, toMany: $0.toMany)
                }),
            "updates": .array(
                updates.map {
                    row(
                        $0.id, version: $0.expectedVersion, attributes: $0.attributes.map { ($0.key, $0.value) },
                        toOne: $0.toOne, toMany: $0.toMany)
                }),
            "deletes": .array(
                deletes.map { deletion in
                    var members: [String: JSONValue] = ["id": reference(deletion.id)]
                    if let version = deletion.expectedVersion { members["version"] = .integer(version) }
                    return .object(members)
                }),
        ])
    }

    /// Changes for store `store` read back from ``encoded(in:)``.
    /// - Throws: `.invalidRequest` when the JSON does not describe changes of `model`.
    public init(decoding json: JSONValue, in model: ObjectModel, store: String) throws(StoreError) {
        func fail(_ what: String) -> StoreError {
            StoreError(.invalidRequest, "a recorded save across stores cannot be read: \(what)")
        }
        func reference(_ value: JSONValue?) throws(StoreError) -> ObjectID? {
            guard let value, !value.isNull else { return nil }
            guard case .array(let parts) = value, parts.count == 2, case .string(let entity) = parts[0],
                case .integer(let pk) = parts[1], model.entity(named: entity) != nil
            else { throw fail("\(value.jsonText) is not an object reference") }
            return ObjectID(store: store, entity: entity, primaryKey: pk)
        }
        func members(_ value: JSONValue) throws(StoreError) -> [String: JSONValue] {
            guard case .object(let members) = value else { throw fail("\(value.jsonText) is not an object") }
            return members
        }
        func values(_ json: JSONValue?, of entity: String) throws(StoreError) -> [String: AttributeValue] {
            var result: [String: AttributeValue] = [:]
            for (name, value) in try members(json ?? .object([:])) {
                guard let attribute = model.attribute(name, of: entity),
                    let converted = AttributeValue(json: value, as: attribute.type)
                else { throw fail("'\(entity).\(name)' holds \(value.jsonText)") }
                result[name] = converted
            }
            return result
        }
        func relationships(_ row: [String: JSONValue]) throws(StoreError) -> ([String: ObjectID?], [String: [ObjectID]])
        {
            var toOne: [String: ObjectID?] = [:]
            for (name, value) in try members(row["toOne"] ?? .object([:])) { toOne[name] = .some(try reference(value)) }
            var toMany: [String: [ObjectID]] = [:]
            for (name, value) in try members(row["toMany"] ?? .object([:])) {
                guard case .array(let items) = value else { throw fail("'\(name)' is not a list") }
                var ids: [ObjectID] = []
                for item in items {
                    guard let id = try reference(item) else { throw fail("'\(name)' holds null") }
                    ids.append(id)
                }
                toMany[name] = ids
            }
            return (toOne, toMany)
        }
        let top = try members(json)
        self.init()
        for item in top["inserts"]?.arrayValue ?? [] {
            let row = try members(item)
            guard let id = try reference(row["id"]) else { throw fail("an insert has no id") }
            let (toOne, toMany) = try relationships(row)
            inserts.append(
                StoreRow(
                    id: id, attributes: try values(row["attributes"], of: id.entityName), toOne: toOne, toMany: toMany))
        }
        for item in top["updates"]?.arrayValue ?? [] {
            let row = try members(item)
            guard let id = try reference(row["id"]) else { throw fail("an update has no id") }
            let (toOne, toMany) = try relationships(row)
            var version: Int64?
            if case .integer(let value)? = row["version"] { version = value }
            updates.append(
                StoreUpdate(
                    id: id, expectedVersion: version, attributes: try values(row["attributes"], of: id.entityName),
                    toOne: toOne, toMany: toMany))
        }
        for item in top["deletes"]?.arrayValue ?? [] {
            let row = try members(item)
            guard let id = try reference(row["id"]) else { throw fail("a delete has no id") }
            var version: Int64?
            if case .integer(let value)? = row["version"] { version = value }
            deletes.append(StoreDeletion(id: id, expectedVersion: version))
        }
    }
}
