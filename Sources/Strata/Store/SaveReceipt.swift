import Foundation
import Synchronization

/// A note that a save happened, written in the same transaction as the save's changes: what lets
/// a request sent again with the same idempotency key learn, after a crash lost the first
/// attempt's answer, whether that attempt was saved — and with which IDs and versions.
///
/// A context keeps the receipts given to ``ObjectContext/keepReceipt(_:)`` with its changes; the
/// coordinator writes them, with the permanent ID and the committed version of every object they
/// name, into the store that decides the save (the one durable store it writes, or the commit
/// point of a save across stores). A save that writes no durable store keeps none: its changes do
/// not outlive the process either. The receipt's scope and key are unique in a store: a second
/// save with a receipt that store keeps already fails with `.uniqueViolation`, so two attempts of
/// one request (which write the same stores, so the same store decides them) are never both
/// saved.
public struct SaveReceipt: Sendable, Hashable {
    /// Whose key it is (a token's name, say).
    public var scope: String
    /// The idempotency key.
    public var key: String
    /// What the saver needs to answer again (opaque to Strata).
    public var note: String
    /// The objects whose permanent IDs and committed versions the receipt keeps, in order
    /// (temporary IDs of inserted objects are replaced by their permanent ones).
    public var objects: [ObjectID]
    /// When the receipt may be forgotten.
    public var expires: Date

    /// Creates a receipt.
    public init(scope: String, key: String, note: String, objects: [ObjectID] = [], expires: Date) {
        self.scope = scope
        self.key = key
        self.note = note
        self.objects = objects
        self.expires = expires
    }
}

/// A receipt as a store keeps it: the objects with their permanent IDs and the versions the save
/// gave them (nil for an object it deleted).
public struct KeptReceipt: Sendable, Hashable {
    /// One object the receipt names.
    public struct Object: Sendable, Hashable {
        /// Its permanent ID (nil for an inserted object the save did not give one).
        public var id: ObjectID?
        /// Its version after the save; nil when the save deleted it.
        public var version: Int64?

        /// Creates an entry.
        public init(id: ObjectID?, version: Int64?) {
            self.id = id
            self.version = version
        }
    }

    /// Whose key it is.
    public var scope: String
    /// The idempotency key.
    public var key: String
    /// What the saver noted.
    public var note: String
    /// The objects, in the order the receipt named them.
    public var objects: [Object]
    /// When it may be forgotten.
    public var expires: Date

    /// Creates a kept receipt.
    public init(scope: String, key: String, note: String, objects: [Object], expires: Date) {
        self.scope = scope
        self.key = key
        self.note = note
        self.objects = objects
        self.expires = expires
    }

    /// The receipt's text as a store's `receipt` column keeps it:
    /// `{"note": …, "objects": [[uri or null, version or null], …]}`.
    var text: String {
        JSONValue.object([
            "note": .string(note),
            "objects": .array(
                objects.map {
                    .array([$0.id.map { .string($0.uri) } ?? .null, $0.version.map { .integer($0) } ?? .null])
                }
            ),
        ]).jsonText
    }

    /// Reads what ``text`` wrote; nil when it is not such a text.
    init?(scope: String, key: String, expires: Date, text: String) {
        guard case .object(let members)? = try? JSONValue.parse(Array(text.utf8)),
            let note = members["note"]?.stringValue, let list = members["objects"]?.arrayValue
        else { return nil }
        var objects: [Object] = []
        for item in list {
            guard case .array(let pair) = item, pair.count == 2 else { return nil }
            let id = pair[0].stringValue.flatMap(ObjectID.init(uri:))
            var version: Int64?
            if case .integer(let number) = pair[1] { version = number }
            objects.append(Object(id: id, version: version))
        }
        self.init(scope: scope, key: key, note: note, objects: objects, expires: expires)
    }

    /// The message of the `.uniqueViolation` a save fails with when a receipt of its scope and
    /// key is kept already (an earlier attempt of the same request was saved).
    public static let savedAlready = "a save with this idempotency key was saved already"

    /// The name of the table a SQL store keeps receipts in.
    static let table = "_strata_receipts"

    /// Receipts written by this process: every 256th write also forgets the expired ones.
    static let written = Atomic<Int>(0)
}

extension SQLStore {
    /// Writes `receipts` into `table` in the open transaction on `c`: a plain insert, so a key kept
    /// already fails the save (its changes were saved by an earlier attempt).
    func writeReceipts(_ receipts: [KeptReceipt], table: String, _ c: Connection) throws(Connection.Failure) {
        if KeptReceipt.written.add(receipts.count, ordering: .relaxed).newValue % 256 < receipts.count {
            var arguments = SQLArguments(dialect)
            let now = arguments.add(Dialect.integer(Int64(Date().timeIntervalSince1970)))
            try c.run("DELETE FROM \(dialect.table(table)) WHERE expires < \(now)", arguments.values)
        }
        for receipt in receipts {
            var arguments = SQLArguments(dialect)
            let values = [
                arguments.add(Dialect.text(receipt.scope)), arguments.add(Dialect.text(receipt.key)),
                arguments.add(Dialect.integer(Int64(receipt.expires.timeIntervalSince1970.rounded(.up)))),
                arguments.add(Dialect.text(receipt.text)),
            ]
            try c.run(
                "INSERT INTO \(dialect.table(table)) (scope, key, expires, receipt) VALUES (\(values.joined(separator: ", ")))",
                arguments.values)
        }
    }
}

extension SQLStore {
    /// The receipt kept for `scope` and `key` in `table`, read on `c`; nil when there is none or
    /// it expired.
    func keptReceipt(scope: String, key: String, table: String, _ c: Connection) throws(Connection.Failure)
        -> KeptReceipt?
    {
        var arguments = SQLArguments(dialect)
        let where_ = "scope = \(arguments.add(Dialect.text(scope))) AND key = \(arguments.add(Dialect.text(key)))"
        let rows = try c.texts(
            "SELECT expires, receipt FROM \(dialect.table(table)) WHERE \(where_)", arguments.values)
        guard let row = rows.first, let expires = row[0].flatMap({ Int64($0) }), let text = row[1],
            Double(expires) >= Date().timeIntervalSince1970
        else { return nil }
        return KeptReceipt(scope: scope, key: key, expires: Date(timeIntervalSince1970: Double(expires)), text: text)
    }
}
