import Foundation
import Strata
import StrataHTTP

/// Receipts of writes sent with an `Idempotency-Key` (see ``SaveReceipt``): each such write keeps,
/// in the transaction that saves it, what its answer was made of — the outcome of each operation,
/// and the objects with the IDs and versions the save gave them. When the server stops between
/// that commit and keeping the answer in the idempotency ledger, a retry of the request finds the
/// receipt and gets the answer rebuilt from it instead of a second write; a retry that finds none
/// knows the first attempt saved nothing, and runs.
///
/// A rebuilt answer has the first one's status, `ETag` and `Location`. Its body shows each object
/// as it is stored when its version is still the one the write gave it (as the first answer
/// showed it); an object changed since shows only `_id` and `_version`, the version the write gave.
extension RESTService {
    /// The receipt of a write holding `claim`'s key: `note` says how to answer, `objects` are the
    /// objects it names.
    static func receipt(_ claim: IdempotencyClaim?, note: JSONValue, objects: [ObjectID]) -> SaveReceipt? {
        guard let claim else { return nil }
        return SaveReceipt(
            scope: claim.scope, key: claim.key, note: note.jsonText, objects: objects,
            expires: Date(timeIntervalSinceNow: claim.ledger.lifetime))
    }

    /// `outcome` in a receipt's note, its objects appended to `objects` (the note names them by
    /// their place there); `minimal` for a request that asked for `return=minimal`.
    static func note(_ outcome: WriteOutcome, minimal: Bool, objects: inout [ObjectID]) -> JSONValue {
        var members: [String: JSONValue] = ["minimal": .bool(minimal)]
        switch outcome {
        case .object(let id, let status, let location):
            members["object"] = .integer(Int64(objects.count))
            members["status"] = .integer(Int64(status))
            members["location"] = .bool(location)
            objects.append(id)
        case .objects(let ids, let status):
            members["objects"] = .array(ids.indices.map { .integer(Int64(objects.count + $0)) })
            members["status"] = .integer(Int64(status))
            objects += ids
        case .empty(let status):
            members["status"] = .integer(Int64(status))
        }
        return .object(members)
    }

    /// Whether `request` asks for `return=minimal`.
    static func wantsMinimal(_ request: HTTPRequest) -> Bool {
        (request.header("prefer") ?? "").lowercased().contains("return=minimal")
    }

    /// The answer to `scope`'s write with `key` rebuilt from its receipt; nil when no store keeps
    /// one (the write was not saved).
    /// - Throws: the problem when the stores cannot be read.
    public func replay(scope: String, key: String) throws(Problem) -> HTTPResponse? {
        let kept: KeptReceipt?
        do {
            kept = try root.coordinator.receipt(scope: scope, key: key)
        } catch {
            throw Problem(error)
        }
        guard let kept, case .object(let note)? = try? JSONValue.parse(Array(kept.note.utf8)) else { return nil }
        var headers: [(name: String, value: String)] = []
        if let changeFeed { headers.append((Self.historyTokenHeader, changeFeed.knownToken.description)) }
        if let change = note["batchChange"]?.objectValue {
            var response = try batchChangeAnswer(change, kept.objects)
            response.headers += headers
            return response
        }
        if let results = note["results"]?.arrayValue {
            var rebuilt: [JSONValue] = []
            for result in results {
                guard let members = result.objectValue else { continue }
                if let immediate = members["immediate"] {
                    rebuilt.append(immediate)
                    continue
                }
                rebuilt.append(Self.result(try answer(members, kept.objects)))
            }
            return json(200, .object(["results": .array(rebuilt)]), headers: headers)
        }
        var response = try answer(note, kept.objects)
        response.headers += headers
        return response
    }

    /// The answer of an earlier attempt of `claim`'s request when `error` says the save failed
    /// because that attempt's receipt is kept (two attempts raced: one saved, the other must not);
    /// nil for any other error.
    func savedAlready(_ error: ContextError?, _ claim: IdempotencyClaim) -> HTTPResponse? {
        guard let store = error?.storeError, store.code == .uniqueViolation, store.message == KeptReceipt.savedAlready
        else { return nil }
        guard let replayed = try? replay(scope: claim.scope, key: claim.key) else { return nil }
        return HTTPResponse(
            status: replayed.status, headers: replayed.headers + [("Idempotent-Replayed", "true")], body: replayed.body)
    }

    /// A batch change's answer from its note and the matched objects: their count, and with
    /// `return=representation` each updated object as ``shown(_:version:)`` shows it, each
    /// deleted one as its `_id` (its values went with it).
    private func batchChangeAnswer(_ note: [String: JSONValue], _ objects: [KeptReceipt.Object]) throws(Problem)
        -> HTTPResponse
    {
        var headers: [(name: String, value: String)] = []
        if let applied = note["applied"]?.stringValue, !applied.isEmpty {
            headers.append(("Preference-Applied", applied))
        }
        if note["minimal"] == .bool(true) { return HTTPResponse(status: 204, headers: headers) }
        var body = Array(#"{"count":"#.utf8)
        JSONValue.writeInteger(Int64(objects.count), to: &body)
        if note["representation"] == .bool(true) {
            body += Array(#","items":["#.utf8)
            for (index, object) in objects.enumerated() {
                guard let id = object.id else { continue }
                if index > 0 { body.append(UInt8(ascii: ",")) }
                if note["delete"] == .bool(true) {
                    body += JSONValue.object([ObjectCodec.idKey: id.primaryKey.map { .integer($0) } ?? .null]).jsonBytes
                } else {
                    body += try shown(id, version: object.version).body
                }
            }
            body.append(UInt8(ascii: "]"))
        }
        body.append(UInt8(ascii: "}"))
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")] + headers, body: body)
    }

    /// One write's answer from its note and the receipt's objects.
    private func answer(_ note: [String: JSONValue], _ objects: [KeptReceipt.Object]) throws(Problem)
        -> HTTPResponse
    {
        let status = note["status"].flatMap { if case .integer(let n) = $0 { Int(n) } else { nil } } ?? 200
        let minimal = note["minimal"] == .bool(true)
        func entry(_ value: JSONValue?) -> KeptReceipt.Object? {
            guard case .integer(let index)? = value, objects.indices.contains(Int(index)) else { return nil }
            return objects[Int(index)]
        }
        if let object = entry(note["object"]), let id = object.id {
            let (version, body) = try shown(id, version: object.version)
            var headers: [(name: String, value: String)] = [("ETag", ObjectCodec.etag(version))]
            if note["location"] == .bool(true), let pk = id.primaryKey {
                headers.append(("Location", "/\(pathByEntity[id.entityName] ?? id.entityName)/\(pk)"))
            }
            if minimal {
                return HTTPResponse(status: status, headers: headers + [("Preference-Applied", "return=minimal")])
            }
            return HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
        }
        if let list = note["objects"]?.arrayValue {
            if minimal { return HTTPResponse(status: status, headers: [("Preference-Applied", "return=minimal")]) }
            var body: [UInt8] = [UInt8(ascii: "[")]
            for (index, item) in list.enumerated() {
                guard let id = entry(item)?.id else { continue }
                if index > 0 { body.append(UInt8(ascii: ",")) }
                body += try shown(id, version: entry(item)?.version).body
            }
            body.append(UInt8(ascii: "]"))
            return HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: body)
        }
        return HTTPResponse(status: status)
    }

    /// Object `id` as a rebuilt answer shows it: as stored when its version is still `version`
    /// (or when the write gave it none: it did not change it), else its ID and `version` alone.
    private func shown(_ id: ObjectID, version: Int64?) throws(Problem) -> (version: Int64, body: [UInt8]) {
        let row: StoreRow?
        do {
            row = try reads.row(for: id)
        } catch {
            throw Problem(error)
        }
        if let row, version == nil || row.version == version { return (row.version, try render(row)) }
        let shown = version ?? 0
        let members: [String: JSONValue] = [
            ObjectCodec.idKey: id.primaryKey.map { .integer($0) } ?? .null, ObjectCodec.versionKey: .integer(shown),
        ]
        return (shown, JSONValue.object(members).jsonBytes)
    }
}
