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
        try reconcile(with: staged, token: token)
        stats.withLock { $0.seeds += 1 }
    }

    /// Makes the local objects those of `staged` (a snapshot of the server at `token`), leaving
    /// alone the objects with local changes waiting to be pushed and the local inserts.
    private func reconcile(with staged: any PersistentStore, token: String) throws {
        let pending = try pendingKeys()
        var write = LocalWrite()
        var seen = Set<String>()
        for entity in replicated.sorted() {
            var request = FetchRequest(entityName: entity, includesSubentities: false)
            request.predicate = predicates[entity]
            for row in try staged.fetch(request) {
                guard let key = row.id.primaryKey, row.id.entityName == entity else { continue }
                let objectKey = objectKey(entity, key)
                seen.insert(objectKey)
                guard !pending.contains(objectKey) else { continue }
                let id = localID(entity, key)
                let exists = try store.row(for: id) != nil
                if exists, try record(entity, key)?.serverVersion == row.version { continue }
                write.put(id, try stagedValues(row, staged), exists: exists)
                try noteVersion(entity, key, row.version, in: &write)
            }
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
