import Foundation
import Strata

/// One operation of a push's `_batch`.
struct PushOperation: Codable, Sendable, Hashable {
    var method: String
    var path: String
    var ifMatch: Int64?
    /// The JSON body's text.
    var body: String?
    /// The object's entity (as its history change names it).
    var entity: String
    /// The object's key in the local transaction's history.
    var historyKey: Int64
    /// The object's local key now (a temporary key until its insert is acknowledged).
    var localKey: Int64
    /// Its server key, for updates and deletes.
    var serverKey: Int64?

    /// The operation as `_batch` takes it.
    var json: JSONValue {
        var members: [String: JSONValue] = ["method": .string(method), "path": .string(path)]
        if let ifMatch { members["headers"] = .object(["If-Match": .string("\"\(ifMatch)\"")]) }
        if let body, let parsed = try? JSONValue.parse(body) { members["body"] = parsed }
        return .object(members)
    }
}

/// How a conflict changed one object's operation.
struct PushOverride: Codable, Sendable, Hashable {
    enum Action: String, Codable, Sendable {
        /// Left out: the server's state won.
        case drop
        /// Every property sent, over the server's version.
        case full
        /// The changed properties sent, over the server's version.
        case merge
        /// Created again on the server (it deleted the object).
        case recreate
        /// Deleted over the server's version.
        case delete
    }

    var action: Action
    /// The server version the operation is based on now.
    var version: Int64?
}

/// A push on its way: the local transaction, the `_batch` made of it and its `Idempotency-Key`.
/// Stored in the replica's state before it is sent, so that a retry after a crash sends the very
/// same request under the same key, which the server answers from its idempotency ledger without
/// applying it twice.
struct PushPlan: Codable, Sendable, Hashable {
    /// The local history transaction's number.
    var transaction: Int64
    /// How many times conflicts changed the batch (part of the key: a changed batch is a new request).
    var attempt: Int
    var key: String
    var operations: [PushOperation]
    /// By object (``Replica/objectKey(_:_:)`` of the history key).
    var overrides: [String: PushOverride]

    /// The `_batch` body.
    var batchBody: JSONValue { .object(["operations": .array(operations.map(\.json))]) }

    var encoded: String { String(decoding: try! JSONEncoder().encode(self), as: UTF8.self) }

    static func decode(_ text: String) -> PushPlan? { try? JSONDecoder().decode(PushPlan.self, from: Data(text.utf8)) }
}

/// A local object whose key the server replaced, on its way to its new key.
struct Rekey: Codable, Sendable, Hashable {
    var entity: String
    var from: Int64
    var to: Int64
    /// The object's values and the objects pointing at it, captured when the old object was
    /// removed (the second step inserts the new one from them and points those objects at it).
    var captured: CapturedObject?
    /// The last local history transaction before the capture: saves after it may point at the
    /// old key.
    var capturedAfter: Int64?
}

/// An object's values in JSON form, with the references into it.
struct CapturedObject: Codable, Sendable, Hashable {
    var attributes: [String: String]
    var toOne: [String: Reference]
    var toMany: [String: [Reference]]
    /// Objects whose to-one relationship `relationship` pointed at the object.
    var referrers: [Referrer]
    /// Objects whose to-many relationship without an inverse listed the object (the capture
    /// removes those pairs with it); absent in a capture written without it.
    var lists: [ListEntry]?

    struct Reference: Codable, Sendable, Hashable {
        var entity: String
        var key: Int64?
    }

    struct Referrer: Codable, Sendable, Hashable {
        var entity: String
        var key: Int64
        var relationship: String
    }

    struct ListEntry: Codable, Sendable, Hashable {
        var entity: String
        var key: Int64
        var relationship: String
        /// The object's place in an ordered list.
        var position: Int?
    }
}
