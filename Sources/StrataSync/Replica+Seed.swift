import Foundation
import Strata

extension Replica {
    /// The key of an object across the replica's bookkeeping: its root entity and server key.
    func objectKey(_ entity: String, _ key: Int64) -> String {
        configuration.model.rootEntity(of: entity) + ":" + String(key)
    }

    /// Sends a request, turning a transport failure into a transient ``SyncError``.
    func transport<T>(_ body: () throws(SyncTransportError) -> T) throws(SyncError) -> T {
        do {
            return try body()
        } catch {
            throw SyncError(error.description, transient: true)
        }
    }

    /// A failure answer as a ``SyncError`` (transient for 5xx, 429 and 409).
    func failure(_ response: SyncResponse, _ what: String) -> SyncError {
        let detail = response.json.objectValue?["detail"]?.stringValue ?? String(decoding: response.body, as: UTF8.self)
        let transient = response.status >= 500 || response.status == 429 || response.status == 409
        return SyncError("\(what): \(response.status) \(detail)", transient: transient)
    }

    /// Reads the server's whole set from its export (`GET /_export`, a Core Data store file read
    /// from one snapshot, whose `Strata-History-Token` names exactly what it holds) and makes the
    /// local objects equal to it, except the objects local changes wait to be pushed for; the
    /// feed then follows from the export's token. The first seed, and the answer to `410`.
    func seedLocked() throws {
        if configuration.seedSource == .lists {
            try seedFromLists()
            stats.withLock { $0.seeds += 1 }
            return
        }
        let folder = configuration.directory.appendingPathComponent(".strata-seed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("export.sqlite")
        let response = try transport { () throws(SyncTransportError) in try http.download("/_export", to: file) }
        guard response.status == 200 else { throw failure(response, "GET /_export") }
        guard let token = response.header("strata-history-token") else {
            throw SyncError("the server's export carries no Strata-History-Token: it records no history")
        }
        let target = folder.appendingPathComponent("default.sqlite")
        _ = try CoreDataImporter.importStore(
            at: file, model: configuration.model, targets: [ObjectModel.defaultConfiguration: target])
        let staging = StoreCoordinator(model: configuration.model)
        let staged = try staging.addStore(type: .sqlite, url: target, options: StoreOptions(readOnly: true))
        defer { staging.remove(staged) }
        var objects: [SeedObject] = []
        for entity in replicated.sorted() {
            var request = FetchRequest(entityName: entity, includesSubentities: false)
            request.predicate = predicates[entity]
            for row in try staged.fetch(request) {
                guard let key = row.id.primaryKey, row.id.entityName == entity else { continue }
                objects.append(
                    SeedObject(entity: entity, key: key, version: row.version) { [self] () throws in
                        try stagedValues(row, staged)
                    })
            }
        }
        try reconcile(objects, token: token)
        stats.withLock { $0.seeds += 1 }
    }

    /// One object of the server's copy: its values made when they are written.
    struct SeedObject {
        var entity: String
        var key: Int64
        var version: Int64
        var values: () throws -> ObjectValues
    }

    /// Copies the server's objects from the replicated entities' lists (see ``SeedSource/lists``):
    /// the most specific entities first, so that an object a parent's list shows again is kept
    /// as the subentity's.
    private func seedFromLists() throws {
        let model = configuration.model
        func depth(_ entity: String) -> Int {
            var depth = 0
            var current = model.entity(named: entity)?.parent
            while let parent = current {
                depth += 1
                current = model.entity(named: parent)?.parent
            }
            return depth
        }
        let ordered = replicated.filter { model.entity(named: $0)?.isAbstract != true }.sorted {
            (depth($0), $1) > (depth($1), $0)
        }
        var token: String?
        var objects: [SeedObject] = []
        var claimed = Set<String>()
        for entity in ordered {
            var path = "/" + model.resourcePath(of: entity) + "?order=_id&limit=1000"
            if let predicate = predicates[entity] { path += "&where=" + Self.escape(predicate.predicateFormat) }
            var next: String? = path
            while let current = next {
                path = current
                let response = try transport { () throws(SyncTransportError) in try http.send("GET", path) }
                guard response.status == 200, let page = response.json.objectValue,
                    let items = page["items"]?.arrayValue
                else { throw failure(response, "GET \(path)") }
                if token == nil {
                    guard let first = response.header("strata-history-token") else {
                        throw SyncError("the server's lists carry no Strata-History-Token: it records no history")
                    }
                    token = first
                }
                for item in items {
                    guard let object = item.objectValue, case .integer(let key)? = object["_id"],
                        case .integer(let version)? = object["_version"],
                        claimed.insert(objectKey(entity, key)).inserted
                    else { continue }
                    objects.append(
                        SeedObject(entity: entity, key: key, version: version) { [self] in
                            values(from: object, entity: entity)
                        })
                }
                // The next page's path (the same query with the cursor), or null after the last.
                next = page["next"]?.stringValue.flatMap { $0.hasPrefix("/") ? $0 : nil }
            }
        }
        guard let token else { throw SyncError("the server lists no replicated entity") }
        try reconcile(objects, token: token)
    }

    /// Makes the local objects `objects` (the server's at `token`), leaving alone the objects
    /// with local changes waiting to be pushed and the local inserts.
    private func reconcile(_ objects: [SeedObject], token: String) throws {
        let pending = try pendingKeys()
        var write = LocalWrite()
        var seen = Set<String>()
        for object in objects {
            let (entity, key) = (object.entity, object.key)
            let objectKey = objectKey(entity, key)
            seen.insert(objectKey)
            guard !pending.contains(objectKey) else { continue }
            let id = localID(entity, key)
            let exists = try store.row(for: id) != nil
            if exists, try record(entity, key)?.serverVersion == object.version { continue }
            write.put(id, try object.values(), exists: exists)
            try noteVersion(entity, key, object.version, in: &write)
        }
        for entity in replicated.sorted() {
            for row in try store.fetch(FetchRequest(entityName: entity, includesSubentities: false)) {
                guard let key = row.id.primaryKey, key < SyncSchema.localKeyBase else { continue }
                let objectKey = objectKey(entity, key)
                guard !seen.contains(objectKey), !pending.contains(objectKey) else { continue }
                write.delete(row.id)
                try forgetRecord(entity, key, in: &write)
            }
        }
        var state = try state()
        state.serverToken = token
        write.state = state
        try commit(write, "seed")
    }

    /// A staged row's values, its references turned into local IDs.
    private func stagedValues(_ row: StoreRow, _ staged: any PersistentStore) throws -> ObjectValues {
        let model = configuration.model
        let entity = row.id.entityName
        var values = ObjectValues()
        for attribute in model.attributes(of: entity) {
            values.attributes[attribute.name] = row[attribute: attribute.name]
        }
        for relationship in model.relationships(of: entity) {
            let target = relationship.destination
            let kept = replicated.contains(target)
            if !relationship.isToMany {
                let related = (row.toOne[relationship.name] ?? nil).flatMap(\.primaryKey)
                values.toOne[relationship.name] = kept ? related.map { localID(target, $0) } : nil
                if values.toOne[relationship.name] == nil { values.toOne[relationship.name] = .some(nil) }
            } else if isManyToMany(relationship, of: entity) {
                let related = try staged.relatedIDs(of: row.id, relationship: relationship.name)
                values.toMany[relationship.name] =
                    kept ? related.compactMap { id in id.primaryKey.map { localID(target, $0) } } : []
            }
        }
        return values
    }

    /// The objects local changes wait to be pushed for (see ``objectKey(_:_:)``); none for a
    /// replica that does not push, whose local changes the server's overwrite.
    func pendingKeys() throws -> Set<String> {
        var keys = Set<String>()
        guard configuration.pushes else { return keys }
        for transaction in try outbox() {
            for change in transaction.changes {
                guard let key = change.objectID.primaryKey else { continue }
                let entity = change.objectID.entityName
                // An update of only one-to-many relationships sends nothing (the other side's
                // to-one carries it), so it meets no conflict that would bring the server's state.
                if change.kind == .update, !(change.updatedProperties ?? []).contains(where: { isSent($0, of: entity) })
                {
                    continue
                }
                keys.insert(objectKey(entity, try serverKey(entity, key) ?? key))
            }
        }
        return keys
    }

    /// Whether a push sends property `name` of `entity`: an attribute, a to-one or a many-to-many
    /// relationship.
    func isSent(_ name: String, of entity: String) -> Bool {
        let model = configuration.model
        if let attribute = model.attribute(name, of: entity) { return attribute.derivation == nil }
        guard let relationship = model.relationship(name, of: entity) else { return false }
        return !relationship.isToMany || isManyToMany(relationship, of: entity)
    }

    /// The local transactions waiting to be pushed: the store's history after the last one the
    /// server acknowledged, less the replica's own, each holding only its replicated changes.
    func outbox(limit: Int? = nil) throws -> [HistoryTransaction] {
        let after = try state().pushedThrough
        var found: [HistoryTransaction] = []
        var from = after
        while true {
            let page = try store.history(HistoryRequest(after: from, entities: replicated, limit: 200))
            for var transaction in page where transaction.author != configuration.author {
                transaction.changes = transaction.changes.filter { replicated.contains($0.objectID.entityName) }
                if !transaction.changes.isEmpty { found.append(transaction) }
                if let limit, found.count >= limit { return found }
            }
            guard page.count == 200, let last = page.last else { return found }
            from = last.number
        }
    }
}
