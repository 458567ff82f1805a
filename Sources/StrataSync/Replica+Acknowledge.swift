import Foundation
import Strata

extension Replica {
    /// Records the server's answer to `plan` in one local transaction: the server versions of the
    /// objects written, the server's values of properties no later local change sets, the server
    /// keys of created objects (their local objects move to those keys next, see
    /// ``finishRekeying()``), and `transaction` as pushed.
    func acknowledge(_ transaction: HistoryTransaction, _ plan: PushPlan, results: [JSONValue]) throws {
        let later = try laterChanges(after: transaction.number)
        var write = LocalWrite()
        var rekeys: [Rekey] = []
        for (index, operation) in plan.operations.enumerated() {
            let result = index < results.count ? results[index].objectValue ?? [:] : [:]
            let entity = operation.entity
            let body = result["body"]?.objectValue
            var version: Int64?
            if let body, case .integer(let number)? = body["_version"] { version = number }
            switch operation.method {
            case "POST":
                guard let body, case .integer(let serverKey)? = body["_id"] else { continue }
                rekeys.append(Rekey(entity: entity, from: operation.localKey, to: serverKey))
                try noteVersion(entity, serverKey, version ?? 1, in: &write)
                if operation.historyKey >= SyncSchema.localKeyBase {
                    try noteAlias(entity, operation.historyKey, serverKey, in: &write)
                }
            case "PATCH":
                guard let serverKey = operation.serverKey, let body, let version else { continue }
                try noteVersion(entity, serverKey, version, in: &write)
                let objectKey = objectKey(entity, serverKey)
                guard !later.whole.contains(objectKey) else { continue }
                // The server's values (a merge's other properties), less what later local
                // changes set.
                var values = values(from: body, entity: entity)
                for name in later.properties[objectKey] ?? [] {
                    values.attributes[name] = nil
                    values.toOne[name] = nil
                    values.toMany[name] = nil
                }
                let id = localID(entity, serverKey)
                if try store.row(for: id) != nil { write.put(id, values, exists: true) }
            default:
                if let serverKey = operation.serverKey { try forgetRecord(entity, serverKey, in: &write) }
            }
        }
        var state = try state()
        state.pushedThrough = transaction.number
        state.inFlight = nil
        if !rekeys.isEmpty { state.rekeying = String(decoding: try JSONEncoder().encode(rekeys), as: UTF8.self) }
        write.state = state
        try commit(write, "acknowledged")
    }

    /// Moves the objects the server gave new keys to those keys, in two local transactions (the
    /// store writes a transaction's inserts before its deletes, and the new object may share a
    /// unique value with the old): the first removes each old object, keeping its values and the
    /// objects pointing at it in the state; the second inserts it at its server key and points
    /// those objects at it. Each step is recorded in the state, so a crash between them resumes.
    func finishRekeying() throws {
        try captureRekeyed()
        var state = try state()
        guard let text = state.rekeying,
            let rekeys = try? JSONDecoder().decode([Rekey].self, from: Data(text.utf8))
        else { return }
        // References among the moved objects follow them too, as do references to local keys
        // moved earlier (a local save between an earlier capture and its delete may have
        // pointed at the old key).
        var moved: [String: Int64] = [:]
        for rekey in rekeys { moved[objectKey(rekey.entity, rekey.from)] = rekey.to }
        func follow(_ id: ObjectID) throws -> ObjectID {
            guard let key = id.primaryKey else { return id }
            if let to = moved[objectKey(id.entityName, key)] { return id.withPrimaryKey(to) }
            guard key >= SyncSchema.localKeyBase, try store.row(for: id) == nil,
                let alias = try record(id.entityName, key)?.alias
            else { return id }
            return id.withPrimaryKey(alias)
        }
        var write = LocalWrite()
        for rekey in rekeys {
            guard let captured = rekey.captured else { continue }
            let id = localID(rekey.entity, rekey.to)
            var values = try restore(captured, entity: rekey.entity)
            values.toOne = try values.toOne.mapValues { try $0.map(follow) }
            values.toMany = try values.toMany.mapValues { try $0.map(follow) }
            write.put(id, values, exists: try store.row(for: id) != nil)
            let late = try referrers(of: localID(rekey.entity, rekey.from))
            for referrer in Set(captured.referrers).union(late) {
                let source = try follow(localID(referrer.entity, referrer.key))
                if let inserted = write.inserts[source] {
                    var row = inserted
                    row.toOne[referrer.relationship] = id
                    write.inserts[source] = row
                    continue
                }
                guard try store.row(for: source) != nil else { continue }
                if var existing = write.updates[source] {
                    existing.toOne[referrer.relationship] = id
                    write.updates[source] = existing
                } else {
                    var values = ObjectValues()
                    values.toOne[referrer.relationship] = id
                    write.put(source, values, exists: true)
                }
            }
        }
        state.rekeying = nil
        write.state = state
        try commit(write, "rekeyed")
    }

    /// The first step of ``finishRekeying()``: removes each object moving to a server key that
    /// is not captured yet, recording its values and the objects pointing at it in the state.
    func captureRekeyed() throws {
        var state = try state()
        guard let text = state.rekeying,
            var rekeys = try? JSONDecoder().decode([Rekey].self, from: Data(text.utf8)),
            rekeys.contains(where: { $0.captured == nil })
        else { return }
        var write = LocalWrite()
        for index in rekeys.indices where rekeys[index].captured == nil {
            let id = localID(rekeys[index].entity, rekeys[index].from)
            guard let row = try store.row(for: id) else { continue }
            rekeys[index].captured = try capture(row)
            write.delete(id)
        }
        state.rekeying = String(decoding: try JSONEncoder().encode(rekeys), as: UTF8.self)
        write.state = state
        try commit(write, "rekeying")
    }

    /// The objects whose to-one relationships still point at `id` (removed by the first step of
    /// a rekeying): a local save may have pointed one at it after its referrers were captured.
    private func referrers(of id: ObjectID) throws -> [CapturedObject.Referrer] {
        var found: [CapturedObject.Referrer] = []
        for relationship in configuration.model.relationships(of: id.entityName) where relationship.isToMany {
            guard let inverse = configuration.model.inverse(of: relationship.name, of: id.entityName),
                !inverse.isToMany
            else { continue }
            for source in try store.relatedIDs(of: id, relationship: relationship.name) {
                guard let key = source.primaryKey else { continue }
                found.append(.init(entity: source.entityName, key: key, relationship: inverse.name))
            }
        }
        return found
    }

    /// `row`'s values and the to-one references into it, in JSON form.
    private func capture(_ row: StoreRow) throws -> CapturedObject {
        let model = configuration.model
        let entity = row.id.entityName
        let values = try localValues(of: row)
        func reference(_ id: ObjectID?) -> CapturedObject.Reference {
            CapturedObject.Reference(entity: id?.entityName ?? "", key: id?.primaryKey)
        }
        var referrers: [CapturedObject.Referrer] = []
        for relationship in model.relationships(of: entity) {
            guard let inverse = model.inverse(of: relationship.name, of: entity), !inverse.isToMany else { continue }
            let sources: [ObjectID]
            if relationship.isToMany {
                sources = try store.relatedIDs(of: row.id, relationship: relationship.name)
            } else {
                sources = (row.toOne[relationship.name] ?? nil).map { [$0] } ?? []
            }
            for source in sources {
                guard let key = source.primaryKey else { continue }
                referrers.append(.init(entity: source.entityName, key: key, relationship: inverse.name))
            }
        }
        return CapturedObject(
            attributes: values.attributes.mapValues(\.json.jsonText),
            toOne: values.toOne.mapValues { reference($0) },
            toMany: values.toMany.mapValues { $0.map { reference($0) } }, referrers: referrers)
    }

    /// The values `captured` holds.
    private func restore(_ captured: CapturedObject, entity: String) throws -> ObjectValues {
        let model = configuration.model
        var values = ObjectValues()
        for attribute in model.attributes(of: entity) {
            guard let text = captured.attributes[attribute.name], let json = try? JSONValue.parse(text) else {
                continue
            }
            values.attributes[attribute.name] = AttributeValue(json: json, as: attribute.type) ?? .null
        }
        func id(_ reference: CapturedObject.Reference) -> ObjectID? {
            reference.key.map { localID(reference.entity, $0) }
        }
        for (name, reference) in captured.toOne { values.toOne[name] = .some(id(reference)) }
        for (name, references) in captured.toMany { values.toMany[name] = references.compactMap(id) }
        return values
    }
}
