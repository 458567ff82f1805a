import Foundation
import Strata

/// The replica's own bookkeeping, kept as two hidden entities of the local model beside the
/// server's entities, so that it is written in the same store transaction as the changes it
/// describes.
///
/// - `StrataSyncState` (one object, primary key 1): the server's history token the local objects
///   reflect (`serverToken`), the number of the last local history transaction the server
///   acknowledged (`pushedThrough`), the `_batch` being sent (`inFlight`, with its
///   `Idempotency-Key`), the objects whose local key is being replaced by the server's
///   (`rekeying`), and the replica's identity (`replicaID`, part of every idempotency key).
/// - `StrataSyncRecord`: per object the server knows, the server version the local object was
///   last known at (`serverVersion`, the `If-Match` of the next local change), and for a local
///   key that the server replaced, the server key (`alias`).
enum SyncSchema {
    static let stateEntity = "StrataSyncState"
    static let recordEntity = "StrataSyncRecord"
    /// Local inserts get primary keys from here up; server keys stay below it.
    static let localKeyBase: Int64 = 1 << 40

    /// `server` with the bookkeeping entities added (hidden, so a server over the replica does
    /// not serve them) and its configurations dropped: the replica keeps every entity in one
    /// store, so that one transaction covers any change.
    static func localModel(_ server: ObjectModel) throws(ModelError) -> ObjectModel {
        var state = EntityDescription(
            name: stateEntity,
            attributes: [
                AttributeDescription(name: "serverToken", type: .string),
                AttributeDescription(name: "pushedThrough", type: .integer64),
                AttributeDescription(name: "inFlight", type: .string),
                AttributeDescription(name: "rekeying", type: .string),
                AttributeDescription(name: "replicaID", type: .string),
            ])
        state.access = .hidden
        var record = EntityDescription(
            name: recordEntity,
            attributes: [
                AttributeDescription(name: "entity", type: .string),
                AttributeDescription(name: "key", type: .integer64),
                AttributeDescription(name: "serverVersion", type: .integer64),
                AttributeDescription(name: "alias", type: .integer64),
            ])
        record.access = .hidden
        return try ObjectModel(
            name: server.name, version: server.version, entities: server.entities + [state, record],
            fetchRequestTemplates: server.fetchRequestTemplates)
    }
}

/// The state object's values.
struct SyncState: Sendable {
    var serverToken: String?
    var pushedThrough: Int64 = 0
    var inFlight: String?
    var rekeying: String?
    var replicaID = ""

    init() {}

    init(row: StoreRow) {
        serverToken = row[attribute: "serverToken"].text
        if case .integer(let number) = row[attribute: "pushedThrough"] { pushedThrough = number }
        inFlight = row[attribute: "inFlight"].text
        rekeying = row[attribute: "rekeying"].text
        replicaID = row[attribute: "replicaID"].text ?? ""
    }

    var attributes: [String: AttributeValue] {
        [
            "serverToken": serverToken.map { .string($0) } ?? .null, "pushedThrough": .integer(pushedThrough),
            "inFlight": inFlight.map { .string($0) } ?? .null, "rekeying": rekeying.map { .string($0) } ?? .null,
            "replicaID": .string(replicaID),
        ]
    }
}

/// One record: what the replica knows of an object's server side.
struct SyncRecord: Sendable, Hashable {
    var serverVersion: Int64?
    var alias: Int64?
}

extension AttributeValue {
    /// The string, for a string value.
    var text: String? { if case .string(let text) = self { text } else { nil } }
    /// The integer, for an integer value.
    var integerValue: Int64? { if case .integer(let number) = self { number } else { nil } }
}
