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
        var lists: [ListKey: [ListEdit]] = [:]
        for rekey in rekeys {
            guard let captured = rekey.captured else { continue }
            let id = localID(rekey.entity, rekey.to)
            var values = try restore(captured, entity: rekey.entity)
            values.toOne = try values.toOne.mapValues { try $0.map(follow) }
            values.toMany = try values.toMany.mapValues { try $0.map(follow) }
            write.put(id, values, exists: try store.row(for: id) != nil)
            let old = localID(rekey.entity, rekey.from)
            // What still points at the old key: through an inverse, or through a relationship
            // without one (set by a local save since the capture).
            let late = try referrers(of: old)
            let pointing = try pointers(to: old, lists: false)
            for referrer in Set(captured.referrers).union(late).union(pointing.referrers) {
                let source = try follow(localID(referrer.entity, referrer.key))
                try repoint(source, referrer.relationship, from: old, to: id, in: &write)
            }
            let lateLists = try rekey.capturedAfter.map { try self.lists(pointingAt: old, changedAfter: $0) } ?? []
            for entry in Set(captured.lists ?? []).union(lateLists) {
                let list = ListKey(
                    source: try follow(localID(entry.entity, entry.key)), relationship: entry.relationship)
                lists[list, default: []].append(ListEdit(position: entry.position, from: old, to: id))
            }
        }
        for (list, edits) in lists { try repoint(list, edits, in: &write) }
        state.rekeying = nil
        write.state = state
        try commit(write, "rekeyed")
    }

    /// Points the to-one relationship `name` of `source` at `id`, the new key of `old`, unless a
    /// local save since pointed it at another object.
    private func repoint(
        _ source: ObjectID, _ name: String, from old: ObjectID, to id: ObjectID, in write: inout LocalWrite
    ) throws {
        if var row = write.inserts[source] {
            row.toOne[name] = id
            write.inserts[source] = row
            return
        }
        guard let current = try store.row(for: source) else { return }
        if let target = current.toOne[name] ?? nil, !isSameObject(target, old) { return }
        if var existing = write.updates[source] {
            existing.toOne[name] = id
            write.updates[source] = existing
        } else {
            var values = ObjectValues()
            values.toOne[name] = id
            write.put(source, values, exists: true)
        }
    }

    /// Points a to-many relationship without an inverse at the new keys of `edits`: an old key
    /// still in the list is replaced where it stands; a new key missing (the capture removed the
    /// old object's pairs) goes back where the old one was, last in an unordered list.
    private func repoint(_ list: ListKey, _ edits: [ListEdit], in write: inout LocalWrite) throws {
        let source = list.source
        let name = list.relationship
        var targets: [ObjectID]
        if let row = write.inserts[source] {
            targets = row.toMany[name] ?? []
        } else if let planned = write.updates[source]?.toMany[name] {
            targets = planned
        } else {
            guard try store.row(for: source) != nil else { return }
            targets = try store.relatedIDs(of: source, relationship: name)
        }
        let before = targets
        // In the order of the old places, so that each goes back where it was.
        for edit in edits.sorted(by: { ($0.position ?? Int.max) < ($1.position ?? Int.max) }) {
            let places = targets.indices.filter { isSameObject(targets[$0], edit.from) }
            if !places.isEmpty {
                for place in places { targets[place] = edit.to }
            } else if !targets.contains(where: { isSameObject($0, edit.to) }) {
                targets.insert(edit.to, at: min(edit.position ?? targets.count, targets.count))
            }
        }
        var seen = Set<String>()
        targets = targets.filter { seen.insert(objectKey($0.entityName, $0.primaryKey ?? 0)).inserted }
        guard targets != before else { return }
        if var row = write.inserts[source] {
            row.toMany[name] = targets
            write.inserts[source] = row
        } else if var existing = write.updates[source] {
            existing.toMany[name] = targets
            write.updates[source] = existing
        } else {
            var values = ObjectValues()
            values.toMany[name] = targets
            write.put(source, values, exists: true)
        }
    }

    /// Whether `a` and `b` name the same object (one may name it by a subentity, the other by
    /// an ancestor).
    private func isSameObject(_ a: ObjectID, _ b: ObjectID) -> Bool {
        guard let left = a.primaryKey, let right = b.primaryKey else { return a == b }
        return objectKey(a.entityName, left) == objectKey(b.entityName, right)
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
        let last = try store.lastHistoryNumber()
        for index in rekeys.indices where rekeys[index].captured == nil {
            let id = localID(rekeys[index].entity, rekeys[index].from)
            guard let row = try store.row(for: id) else { continue }
            rekeys[index].captured = try capture(row)
            rekeys[index].capturedAfter = last
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

    /// The objects whose to-many relationships without an inverse a save after history
    /// transaction `number` pointed at `old`, removed by the first step of a rekeying (a fetch
    /// does not see a pair whose object is gone, so the objects those saves changed are read).
    private func lists(pointingAt old: ObjectID, changedAfter number: Int64) throws -> [CapturedObject.ListEntry] {
        let model = configuration.model
        var relationships: [String: [RelationshipDescription]] = [:]
        for entity in model.entityNames {
            for relationship in model.relationships(of: entity)
            where relationship.isToMany && model.entity(old.entityName, isKindOf: relationship.destination)
                && model.inverse(of: relationship.name, of: entity) == nil
            {
                relationships[entity, default: []].append(relationship)
            }
        }
        guard !relationships.isEmpty else { return [] }
        var found: [CapturedObject.ListEntry] = []
        var seen = Set<ObjectID>()
        var from = number
        while true {
            let page = try store.history(HistoryRequest(after: from, entities: Set(relationships.keys), limit: 200))
            for change in page.flatMap(\.changes) where change.kind != .delete {
                let id = change.objectID
                guard let key = id.primaryKey, let names = relationships[id.entityName], seen.insert(id).inserted
                else { continue }
                for relationship in names {
                    let targets = try store.relatedIDs(of: id, relationship: relationship.name)
                    guard let position = targets.firstIndex(where: { isSameObject($0, old) }) else { continue }
                    found.append(
                        .init(
                            entity: id.entityName, key: key, relationship: relationship.name,
                            position: relationship.isOrdered ? position : nil))
                }
            }
            guard page.count == 200, let last = page.last else { return found }
            from = last.number
        }
    }

    /// `row`'s values and the references into it, in JSON form.
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
        // The capture removes the object's pairs in the join tables of relationships without an
        // inverse: where it stood in them is kept here.
        let pointing = try pointers(to: row.id, lists: true)
        return CapturedObject(
            attributes: values.attributes.mapValues(\.json.jsonText),
            toOne: values.toOne.mapValues { reference($0) },
            toMany: values.toMany.mapValues { $0.map { reference($0) } }, referrers: referrers + pointing.referrers,
            lists: pointing.lists)
    }

    /// The objects pointing at `id` through relationships without an inverse (the object's own
    /// relationships cannot reach them): to-one ones as referrers, to-many ones with the
    /// object's place in the list (nil in an unordered one) when `lists`.
    private func pointers(to id: ObjectID, lists wanted: Bool) throws -> (
        referrers: [CapturedObject.Referrer], lists: [CapturedObject.ListEntry]
    ) {
        let model = configuration.model
        var referrers: [CapturedObject.Referrer] = []
        var lists: [CapturedObject.ListEntry] = []
        for entity in model.entityNames {
            // An inherited relationship is searched from the entity that declares it (a fetch
            // includes subentities).
            let parent = model.entity(named: entity)?.parent
            for relationship in model.relationships(of: entity)
            where (wanted || !relationship.isToMany)
                && model.entity(id.entityName, isKindOf: relationship.destination)
                && model.inverse(of: relationship.name, of: entity) == nil
                && parent.flatMap({ model.relationship(relationship.name, of: $0) }) == nil
            {
                let name = relationship.name
                let comparison = Comparison(
                    .keyPath(name), .equal, .object(id), modifier: relationship.isToMany ? .any : .direct)
                for row in try store.fetch(FetchRequest(entityName: entity, predicate: .comparison(comparison))) {
                    guard let key = row.id.primaryKey else { continue }
                    guard relationship.isToMany else {
                        referrers.append(.init(entity: row.id.entityName, key: key, relationship: name))
                        continue
                    }
                    let position =
                        relationship.isOrdered
                        ? try store.relatedIDs(of: row.id, relationship: name).firstIndex { isSameObject($0, id) }
                        : nil
                    lists.append(.init(entity: row.id.entityName, key: key, relationship: name, position: position))
                }
            }
        }
        return (referrers, lists)
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

/// A to-many relationship of one object, being pointed at new keys.
private struct ListKey: Hashable {
    var source: ObjectID
    var relationship: String
}

/// An object of a list moving from `from` to `to`; `position` is where it stood (nil in an
/// unordered list).
private struct ListEdit {
    var position: Int?
    var from: ObjectID
    var to: ObjectID
}
