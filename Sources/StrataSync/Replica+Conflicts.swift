import Foundation
import Strata

extension Replica {
    /// The server's object `key` of `entity` now; nil when it does not exist.
    func serverObject(_ entity: String, _ key: Int64) throws -> [String: JSONValue]? {
        let path = "/" + configuration.model.resourcePath(of: entity) + "/\(key)"
        let response = try transport { () throws(SyncTransportError) in try http.send("GET", path) }
        if response.status == 404 { return nil }
        guard response.status == 200, let object = response.json.objectValue else {
            throw failure(response, "GET \(path)")
        }
        return object
    }

    /// Settles the conflict `operation` met (`412`: the server's object changed since the
    /// replica's version; `404`: the server deleted it) by the entity's policy or the resolver's
    /// answer, applying the server's state locally when it wins; returns how the operation goes
    /// from now on.
    func settle(_ operation: PushOperation) throws -> PushOverride {
        let entity = operation.entity
        guard let serverKey = operation.serverKey else { return PushOverride(action: .drop) }
        let server = try serverObject(entity, serverKey)
        let local: SyncConflict.LocalChange = operation.method == "DELETE" ? .delete : .update
        let changed = operation.body.flatMap { try? JSONValue.parse($0) }?.objectValue?.keys.sorted() ?? []
        var policy = configuration.policy(of: entity)
        let conflict = SyncConflict(
            entity: entity, id: serverKey, localChange: local, changedProperties: changed, serverObject: server,
            baseVersion: operation.ifMatch ?? 0, policy: policy)
        policy = configuration.resolver?(conflict) ?? policy
        var write = LocalWrite()
        let id = localID(entity, operation.localKey)
        var serverVersion: Int64?
        if let server, case .integer(let version)? = server["_version"] { serverVersion = version }
        let override: PushOverride
        switch (local, server, policy) {
        case (.update, let server?, .serverWins), (.delete, let server?, .serverWins):
            write.put(id, values(from: server, entity: entity), exists: try store.row(for: id) != nil)
            try noteVersion(entity, serverKey, serverVersion ?? 0, in: &write)
            override = PushOverride(action: .drop)
        case (.update, _?, .localWins):
            override = PushOverride(action: .full, version: serverVersion)
        case (.update, _?, .mergeByProperty):
            override = PushOverride(action: .merge, version: serverVersion)
        case (.delete, _?, _):
            override = PushOverride(action: .delete, version: serverVersion)
        case (.update, nil, .serverWins):
            if try store.row(for: id) != nil { write.delete(id) }
            try forgetRecord(entity, serverKey, in: &write)
            override = PushOverride(action: .drop)
        case (.update, nil, _):
            try forgetRecord(entity, serverKey, in: &write)
            override = PushOverride(action: .recreate)
        case (.delete, nil, _):
            try forgetRecord(entity, serverKey, in: &write)
            override = PushOverride(action: .drop)
        }
        try commit(write, "conflict")
        let record = ConflictRecord(
            entity: entity, id: serverKey, localChange: local, serverDeleted: server == nil, policy: policy,
            localLost: override.action == .drop && server != nil, at: Date())
        conflictLog.withLock { $0.append(record) }
        stats.withLock { $0.conflicts[policy, default: 0] += 1 }
        return override
    }

    /// Drops `transaction`, which the server refused, giving its objects the server's state (a
    /// refused insert is removed locally).
    func reject(_ transaction: HistoryTransaction, _ plan: PushPlan, _ response: SyncResponse) throws {
        let detail = response.json.objectValue?["detail"]?.stringValue ?? ""
        var write = LocalWrite()
        for operation in plan.operations {
            let id = localID(operation.entity, operation.localKey)
            let exists = try store.row(for: id) != nil
            guard let serverKey = operation.serverKey, operation.method != "POST" else {
                if exists, operation.localKey >= SyncSchema.localKeyBase { write.delete(id) }
                continue
            }
            if let server = try serverObject(operation.entity, serverKey),
                case .integer(let version)? = server["_version"]
            {
                write.put(id, values(from: server, entity: operation.entity), exists: exists)
                try noteVersion(operation.entity, serverKey, version, in: &write)
            } else {
                if exists { write.delete(id) }
                try forgetRecord(operation.entity, serverKey, in: &write)
            }
        }
        var state = try state()
        state.pushedThrough = transaction.number
        state.inFlight = nil
        write.state = state
        try commit(write, "rejected")
        rejectedLog.withLock {
            $0.append(RejectedPush(transaction: transaction.number, status: response.status, detail: detail))
        }
    }

    /// The properties later local transactions (after `number`) set, by object, and the objects
    /// they insert or delete (whose whole state is the local one).
    func laterChanges(after number: Int64) throws -> (properties: [String: Set<String>], whole: Set<String>) {
        var properties: [String: Set<String>] = [:]
        var whole = Set<String>()
        for transaction in try outbox() where transaction.number > number {
            for change in transaction.changes {
                guard let key = change.objectID.primaryKey else { continue }
                let entity = change.objectID.entityName
                let objectKey = objectKey(entity, try serverKey(entity, key) ?? key)
                if change.kind == .update, let names = change.updatedProperties {
                    properties[objectKey, default: []].formUnion(names)
                } else {
                    whole.insert(objectKey)
                }
            }
        }
        return (properties, whole)
    }
}
