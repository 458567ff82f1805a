import Foundation
import Strata

extension Replica {
    /// How many times conflicts may change one transaction's batch before it is given up.
    static let mostAttempts = 64

    /// Pushes the outbox one local transaction at a time, oldest first, each as one `_batch`.
    func pushLocked() throws -> Int {
        var count = 0
        try finishRekeying()
        while let transaction = try outbox(limit: 1).first {
            try push(transaction)
            try finishRekeying()
            count += 1
        }
        return count
    }

    /// Sends `transaction` until the server acknowledges it, settling conflicts on the way; a
    /// transaction the server refuses outright is dropped and its objects take the server's state.
    private func push(_ transaction: HistoryTransaction) throws {
        var state = try state()
        var plan: PushPlan
        if let text = state.inFlight, let saved = PushPlan.decode(text), saved.transaction == transaction.number {
            plan = saved
        } else {
            plan = try makePlan(transaction, attempt: 0, overrides: [:], replicaID: state.replicaID)
            state.inFlight = plan.encoded
            try commit(LocalWrite(state: state), "outbox")
        }
        for _ in 0..<32 {
            if plan.operations.isEmpty { return try acknowledge(transaction, plan, results: []) }
            let response = try transport { () throws(SyncTransportError) in
                try http.send("POST", "/_batch", json: plan.batchBody, headers: ["Idempotency-Key": plan.key])
            }
            stats.withLock {
                $0.pushRequests += 1
                if response.header("idempotent-replayed") == "true" { $0.replayedPushes += 1 }
            }
            let problem = response.json.objectValue ?? [:]
            switch response.status {
            case 200:
                try acknowledge(transaction, plan, results: problem["results"]?.arrayValue ?? [])
                stats.withLock { $0.pushedTransactions += 1 }
                return
            case 404, 412:
                if case .integer(let index)? = problem["operation"], plan.operations.indices.contains(Int(index)) {
                    let operation = plan.operations[Int(index)]
                    let key = objectKey(operation.entity, operation.historyKey)
                    if operation.method == "DELETE" && response.status == 404 {
                        // Gone already, or deleted earlier in the same batch by a cascade.
                        plan.overrides[key] = PushOverride(action: .drop)
                    } else {
                        plan.overrides[key] = try settle(operation)
                    }
                }
            case 409 where response.header("retry-after") != nil:
                throw failure(response, "POST /_batch")
            case 409 where (problem["detail"]?.stringValue ?? "").contains("interrupted"):
                // Whether the first send was saved is unknown: a new key; `If-Match` keeps updates
                // and deletes from applying twice.
                break
            case 400, 403, 405, 409, 413, 422:
                return try reject(transaction, plan, response)
            default:
                throw failure(response, "POST /_batch")
            }
            // A transaction that keeps meeting conflicts (the server's objects change faster than
            // it settles) is given up, its objects taking the server's state, so the outbox moves.
            if plan.attempt >= Self.mostAttempts { return try reject(transaction, plan, response) }
            plan = try makePlan(
                transaction, attempt: plan.attempt + 1, overrides: plan.overrides, replicaID: state.replicaID)
            state = try self.state()
            state.inFlight = plan.encoded
            try commit(LocalWrite(state: state), "outbox")
        }
        throw SyncError("local transaction \(transaction.number) met conflicts 32 times in a row", transient: true)
    }

    /// The `_batch` of `transaction`: an insert posts the object's current values, an update
    /// patches the properties it set (their current values) with `If-Match` of the server version
    /// the replica knew, a delete deletes with `If-Match`. Objects deleted locally since are left
    /// out (their delete follows), as are objects the server never had.
    func makePlan(
        _ transaction: HistoryTransaction, attempt: Int, overrides: [String: PushOverride], replicaID: String
    ) throws -> PushPlan {
        var operations: [PushOperation] = []
        var refs: [String: Int] = [:]
        var done = Set<String>()
        for change in try pushOrder(transaction) {
            guard let historyKey = change.objectID.primaryKey else { continue }
            let entity = change.objectID.entityName
            let key = objectKey(entity, historyKey)
            guard done.insert(key).inserted else { continue }
            let override = overrides[key]
            if override?.action == .drop { continue }
            let serverKey = try serverKey(entity, historyKey)
            let localKey = serverKey ?? historyKey
            let row = try store.row(for: localID(entity, localKey))
            let path = "/" + configuration.model.resourcePath(of: entity)
            var operation = PushOperation(
                method: "POST", path: path, entity: entity, historyKey: historyKey, localKey: localKey,
                serverKey: serverKey)
            if override?.action == .recreate || (change.kind == .insert && override == nil) {
                guard let row, change.kind != .insert || serverKey == nil else { continue }
                operation.body = try body(row, properties: nil, refs: refs).jsonText
                refs[objectKey(entity, localKey)] = operations.count
            } else if change.kind == .delete {
                guard let serverKey, let version = try override?.version ?? record(entity, serverKey)?.serverVersion
                else { continue }
                operation.method = "DELETE"
                operation.path += "/\(serverKey)"
                operation.ifMatch = version
            } else {
                guard let row, let serverKey,
                    let version = try override?.version ?? record(entity, serverKey)?.serverVersion
                else { continue }
                let properties = override?.action == .full ? nil : change.updatedProperties ?? []
                let body = try body(row, properties: properties, refs: refs)
                guard body.objectValue?.isEmpty == false else { continue }
                operation.method = "PATCH"
                operation.path += "/\(serverKey)"
                operation.ifMatch = version
                operation.body = body.jsonText
            }
            operations.append(operation)
        }
        return PushPlan(
            transaction: transaction.number, attempt: attempt, key: "\(replicaID)-\(transaction.number)-\(attempt)",
            operations: operations, overrides: overrides)
    }

    /// `transaction`'s changes, the first of each object, in an order a `_batch` takes: an object
    /// the transaction inserts comes before the changes whose bodies refer to it (a body names a
    /// new object as `{"$ref": n}` of an earlier operation, and a relationship without an inverse
    /// has no other side to set it from), the transaction's order otherwise. In a cycle of new
    /// objects, the object first in the transaction's order is sent before what it refers to.
    func pushOrder(_ transaction: HistoryTransaction) throws -> [HistoryChange] {
        var changes: [HistoryChange] = []
        var index: [String: Int] = [:]
        for change in transaction.changes {
            guard let key = change.objectID.primaryKey else { continue }
            let object = objectKey(change.objectID.entityName, key)
            guard index[object] == nil else { continue }
            index[object] = changes.count
            changes.append(change)
        }
        var inserted = Set<Int>()
        for (position, change) in changes.enumerated() where change.kind == .insert {
            let key = change.objectID.primaryKey!
            if key >= SyncSchema.localKeyBase, try serverKey(change.objectID.entityName, key) == nil {
                inserted.insert(position)
            }
        }
        guard !inserted.isEmpty, changes.count > 1 else { return changes }
        var dependencies = [[Int]](repeating: [], count: changes.count)
        for (position, change) in changes.enumerated() where change.kind != .delete {
            let entity = change.objectID.entityName
            let historyKey = change.objectID.primaryKey!
            guard let row = try store.row(for: localID(entity, try serverKey(entity, historyKey) ?? historyKey))
            else { continue }
            for target in try references(of: row) {
                guard let key = target.primaryKey, let other = index[objectKey(target.entityName, key)],
                    other != position, inserted.contains(other)
                else { continue }
                dependencies[position].append(other)
            }
        }
        // Depth first without recursion (a chain of new objects may be long): each change after
        // the inserts it refers to.
        var ordered: [HistoryChange] = []
        var visited = [Bool](repeating: false, count: changes.count)
        for start in changes.indices where !visited[start] {
            visited[start] = true
            var stack = [(node: start, next: 0)]
            while let (node, next) = stack.last {
                if next < dependencies[node].count {
                    stack[stack.count - 1].next += 1
                    let other = dependencies[node][next]
                    if !visited[other] {
                        visited[other] = true
                        stack.append((other, 0))
                    }
                } else {
                    stack.removeLast()
                    ordered.append(changes[node])
                }
            }
        }
        return ordered
    }

    /// The objects `row`'s push body refers to: its to-one and many-to-many relationships into
    /// replicated entities.
    private func references(of row: StoreRow) throws -> [ObjectID] {
        let entity = row.id.entityName
        var targets: [ObjectID] = []
        for relationship in configuration.model.relationships(of: entity)
        where replicated.contains(relationship.destination) {
            if !relationship.isToMany {
                if let target = row.toOne[relationship.name] ?? nil { targets.append(target) }
            } else if isManyToMany(relationship, of: entity) {
                targets += try store.relatedIDs(of: row.id, relationship: relationship.name)
            }
        }
        return targets
    }

    /// The JSON body of a local object: every attribute, to-one and many-to-many relationship
    /// (`properties` nil), or those named. References use server keys, `{"$ref": n}` for an
    /// object the same batch creates; a reference to an object the server does not have yet is
    /// left out (its own insert sets it, from its side).
    private func body(_ row: StoreRow, properties: [String]?, refs: [String: Int]) throws -> JSONValue {
        let model = configuration.model
        let entity = row.id.entityName
        let wanted = properties.map(Set.init)
        var members: [String: JSONValue] = [:]
        func reference(_ id: ObjectID) throws -> JSONValue? {
            guard let key = id.primaryKey else { return nil }
            if let index = refs[objectKey(id.entityName, key)] { return .object(["$ref": .integer(Int64(index))]) }
            return try serverKey(id.entityName, key).map { .integer($0) }
        }
        for attribute in model.attributes(of: entity) where wanted?.contains(attribute.name) ?? true {
            guard attribute.derivation == nil else { continue }
            members[attribute.name] = row[attribute: attribute.name].json
        }
        for relationship in model.relationships(of: entity) where wanted?.contains(relationship.name) ?? true {
            guard replicated.contains(relationship.destination) else { continue }
            if !relationship.isToMany {
                if let target = row.toOne[relationship.name] ?? nil {
                    if let json = try reference(target) { members[relationship.name] = json }
                } else {
                    members[relationship.name] = .null
                }
            } else if isManyToMany(relationship, of: entity) {
                let targets = try store.relatedIDs(of: row.id, relationship: relationship.name)
                members[relationship.name] = .array(try targets.compactMap { try reference($0) })
            }
        }
        return .object(members)
    }
}
