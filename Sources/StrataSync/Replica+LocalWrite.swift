import Foundation
import Strata

/// Changes the replica writes into its store in one transaction, with its bookkeeping.
struct LocalWrite {
    var inserts: [ObjectID: StoreRow] = [:]
    var updates: [ObjectID: StoreUpdate] = [:]
    var deletes: [ObjectID: StoreDeletion] = [:]
    /// The state object's new values, when they change.
    var state: SyncState?

    var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty && state == nil }

    /// Sets the object `id` (which exists locally when `exists`) to `values`.
    mutating func put(_ id: ObjectID, _ values: ObjectValues, exists: Bool) {
        deletes[id] = nil
        if exists && inserts[id] == nil {
            updates[id] = StoreUpdate(
                id: id, expectedVersion: nil, attributes: values.attributes, toOne: values.toOne,
                toMany: values.toMany)
        } else {
            inserts[id] = StoreRow(
                id: id, attributes: values.attributes, toOne: values.toOne, toMany: values.toMany)
        }
    }

    /// Deletes the local object `id`.
    mutating func delete(_ id: ObjectID) {
        inserts[id] = nil
        updates[id] = nil
        deletes[id] = StoreDeletion(id: id, expectedVersion: nil)
    }
}

/// An object's values as the store writes them.
struct ObjectValues: Sendable {
    var attributes: [String: AttributeValue] = [:]
    var toOne: [String: ObjectID?] = [:]
    var toMany: [String: [ObjectID]] = [:]
}

extension Replica {
    /// Writes `write` in one store transaction authored by the replica.
    func commit(_ write: LocalWrite, _ label: String) throws(StoreError) {
        guard !write.isEmpty else { return }
        var write = write
        if let state = write.state {
            write.updates[Self.stateID(storeID)] = StoreUpdate(
                id: Self.stateID(storeID), expectedVersion: nil, attributes: state.attributes)
        }
        // Inserts go in runs of one entity, as the store takes them.
        let inserts = write.inserts.values.sorted {
            ($0.id.entityName, $0.id.primaryKey ?? 0) < ($1.id.entityName, $1.id.primaryKey ?? 0)
        }
        var changes = StoreChanges(
            inserts: inserts, updates: Array(write.updates.values), deletes: Array(write.deletes.values))
        changes.authorship = HistoryAuthorship(author: configuration.author, contextName: label)
        let prepared = try store.prepare(changes)
        try prepared.commit()
        guard let onChange = configuration.onChange else { return }
        let bookkeeping: Set<String> = [SyncSchema.stateEntity, SyncSchema.recordEntity]
        let changed = (Array(write.inserts.keys) + Array(write.updates.keys) + Array(write.deletes.keys)).filter {
            !bookkeeping.contains($0.entityName)
        }
        if !changed.isEmpty { onChange(.objects(changed)) }
    }

    // MARK: - Records

    /// The ID of the bookkeeping record of `key` in `entity`'s hierarchy.
    func recordID(_ entity: String, _ key: Int64) -> ObjectID {
        let root = configuration.model.rootEntity(of: entity)
        return localID(SyncSchema.recordEntity, key << 8 | (rootIndex[root] ?? 0))
    }

    /// What the replica knows of the server side of `key` of `entity`.
    func record(_ entity: String, _ key: Int64) throws(StoreError) -> SyncRecord? {
        guard let row = try store.row(for: recordID(entity, key)) else { return nil }
        return SyncRecord(
            serverVersion: row[attribute: "serverVersion"].integerValue, alias: row[attribute: "alias"].integerValue)
    }

    /// Notes in `write` that `key` of `entity` is at `version` on the server.
    func noteVersion(_ entity: String, _ key: Int64, _ version: Int64, in write: inout LocalWrite) throws(StoreError) {
        let id = recordID(entity, key)
        let values = ObjectValues(attributes: [
            "entity": .string(configuration.model.rootEntity(of: entity)), "key": .integer(key),
            "serverVersion": .integer(version),
        ])
        write.put(id, values, exists: try store.row(for: id) != nil || write.updates[id] != nil)
    }

    /// Notes in `write` that the local key `key` of `entity` is `serverKey` on the server.
    func noteAlias(_ entity: String, _ key: Int64, _ serverKey: Int64, in write: inout LocalWrite) throws(StoreError) {
        let id = recordID(entity, key)
        let values = ObjectValues(attributes: [
            "entity": .string(configuration.model.rootEntity(of: entity)), "key": .integer(key),
            "alias": .integer(serverKey),
        ])
        write.put(id, values, exists: try store.row(for: id) != nil)
    }

    /// Notes in `write` that the server no longer has `key` of `entity`.
    func forgetRecord(_ entity: String, _ key: Int64, in write: inout LocalWrite) throws(StoreError) {
        let id = recordID(entity, key)
        if try store.row(for: id) != nil { write.delete(id) } else { write.inserts[id] = nil }
    }

    /// The server key of the local key `key`: itself below the local base, else its alias once
    /// the server acknowledged its insert (nil before).
    func serverKey(_ entity: String, _ key: Int64) throws(StoreError) -> Int64? {
        guard key >= SyncSchema.localKeyBase else { return key }
        return try record(entity, key)?.alias
    }

    // MARK: - Objects as the server's JSON

    /// The local values of the server's JSON form of an object of `entity`: its attributes, its
    /// to-one relationships and its many-to-many ones (a one-to-many is kept by its other side's
    /// to-one). Relationships into entities not replicated are left empty.
    func values(from object: [String: JSONValue], entity: String) -> ObjectValues {
        let model = configuration.model
        var values = ObjectValues()
        for attribute in model.attributes(of: entity) {
            let json = object[attribute.name] ?? .null
            values.attributes[attribute.name] = AttributeValue(json: json, as: attribute.type) ?? .null
        }
        for relationship in model.relationships(of: entity) {
            let replicatedTarget = replicated.contains(relationship.destination)
            if !relationship.isToMany {
                if replicatedTarget, case .integer(let key)? = object[relationship.name] {
                    values.toOne[relationship.name] = localID(relationship.destination, key)
                } else {
                    values.toOne[relationship.name] = .some(nil)
                }
            } else if isManyToMany(relationship, of: entity) {
                let keys = (object[relationship.name]?.arrayValue ?? []).compactMap { json -> Int64? in
                    if case .integer(let key) = json { key } else { nil }
                }
                values.toMany[relationship.name] =
                    replicatedTarget ? keys.map { localID(relationship.destination, $0) } : []
            }
        }
        return values
    }

    /// Whether `relationship` of `entity` is to-many with a to-many inverse (kept in a join table).
    func isManyToMany(_ relationship: RelationshipDescription, of entity: String) -> Bool {
        guard relationship.isToMany else { return false }
        guard let inverse = configuration.model.inverse(of: relationship.name, of: entity) else { return true }
        return inverse.isToMany
    }

    /// The local object's values (to-many ones read from the store).
    func localValues(of row: StoreRow) throws(StoreError) -> ObjectValues {
        let entity = row.id.entityName
        var values = ObjectValues()
        for attribute in configuration.model.attributes(of: entity) {
            values.attributes[attribute.name] = row[attribute: attribute.name]
        }
        for relationship in configuration.model.relationships(of: entity) {
            if !relationship.isToMany {
                values.toOne[relationship.name] = row.toOne[relationship.name] ?? nil
            } else if isManyToMany(relationship, of: entity) {
                values.toMany[relationship.name] = try store.relatedIDs(of: row.id, relationship: relationship.name)
            }
        }
        return values
    }
}
