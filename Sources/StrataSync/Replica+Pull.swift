import Foundation
import Strata

extension Replica {
    /// Reads one page of `/_changes` after the replica's token (`include=object`, so each change
    /// carries the object as it is now), waiting up to `wait` seconds for one, and applies it in
    /// one local transaction that also stores the page's `next` token. An object with local
    /// changes waiting to be pushed is left as it is: its push meets the server's change as a
    /// conflict and settles it by the entity's policy. A change whose object the replica already
    /// has at that server version or later (its own pushes coming back) changes nothing. `410`
    /// (the history after the token is no longer kept) seeds again.
    func pullLocked(wait: Double) throws -> Int {
        guard let token = try state().serverToken else {
            try seedLocked()
            return 0
        }
        var path = "/_changes?since=\(Self.escape(token))&include=object&limit=\(configuration.pageSize)"
        if wait > 0 { path += "&wait=\(wait)" }
        if let entities = configuration.entities?.keys.sorted() {
            path += "&entities=" + Self.escape(entities.joined(separator: ","))
        }
        let response = try transport { () throws(SyncTransportError) in
            try http.send("GET", path, timeout: wait + 30)
        }
        stats.withLock { $0.pulls += 1 }
        if response.status == 410 {
            try seedLocked()
            return 0
        }
        guard response.status == 200, let page = response.json.objectValue,
            let changes = page["changes"]?.arrayValue, let next = page["next"]?.stringValue
        else { throw failure(response, "GET /_changes") }
        guard next != token || !changes.isEmpty else { return 0 }
        // The last change of each object: it carries the object as it is now.
        var latest: [String: [String: JSONValue]] = [:]
        var order: [String] = []
        for change in changes {
            guard let members = change.objectValue, let entity = members["entity"]?.stringValue,
                case .integer(let key)? = members["_id"], replicated.contains(entity)
            else { continue }
            let objectKey = objectKey(entity, key)
            if latest[objectKey] == nil { order.append(objectKey) }
            latest[objectKey] = members
        }
        let pending = try pendingKeys()
        var write = LocalWrite()
        var applied = 0
        for objectKey in order where !pending.contains(objectKey) {
            if try apply(latest[objectKey]!, into: &write) { applied += 1 }
        }
        var state = try state()
        state.serverToken = next
        write.state = state
        try commit(write, "pull")
        stats.withLock { $0.pulledChanges += applied }
        return applied
    }

    /// Notes in `write` one change of the feed; whether it changes anything locally.
    private func apply(_ change: [String: JSONValue], into write: inout LocalWrite) throws -> Bool {
        guard let entity = change["entity"]?.stringValue, case .integer(let key)? = change["_id"] else { return false }
        let id = localID(entity, key)
        let exists = try store.row(for: id) != nil
        guard let object = change["object"]?.objectValue, case .integer(let version)? = object["_version"],
            try matches(object, entity)
        else {
            // Deleted since (or no longer matching the replica's predicate).
            let known = try record(entity, key)
            guard exists || known != nil else { return false }
            if exists { write.delete(id) }
            try forgetRecord(entity, key, in: &write)
            return true
        }
        if exists, let known = try record(entity, key)?.serverVersion, known >= version { return false }
        write.put(id, values(from: object, entity: entity), exists: exists)
        try noteVersion(entity, key, version, in: &write)
        return true
    }

    /// Whether the server's object matches the replica's predicate for `entity` (its own
    /// properties from the server's object, related objects' from the local store).
    private func matches(_ object: [String: JSONValue], _ entity: String) throws -> Bool {
        guard let predicate = predicates[entity] else { return true }
        let values = values(from: object, entity: entity)
        let this = localID(entity, -1)
        let model = configuration.model
        return try predicate.evaluate(object: this, in: model) { id, name in
            if id == this {
                if let value = values.attributes[name] { return .value(value) }
                if let target = values.toOne[name] { return .object(target) }
                if let targets = values.toMany[name] { return .list(targets.map { .object($0) }) }
                return .value(.null)
            }
            guard let row = try store.row(for: id) else { return .value(.null) }
            if model.attribute(name, of: id.entityName) != nil { return .value(row[attribute: name]) }
            if let relationship = model.relationship(name, of: id.entityName), relationship.isToMany {
                return .list(try store.relatedIDs(of: id, relationship: name).map { .object($0) })
            }
            return .object(row.toOne[name] ?? nil)
        }
    }

    /// `text` percent-encoded for a query string.
    static func escape(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~,")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
