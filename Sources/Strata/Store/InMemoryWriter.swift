import Foundation

/// Applies a change set to a draft of an ``InMemoryStore``'s state with the rules SQLite enforces:
/// version checks first, then inserts, updates, join tables and deletes, with uniqueness checked
/// the way SQLite's unique indexes check it (a nil value never collides).
struct InMemoryWriter {
    let store: InMemoryStore
    var model: ObjectModel { store.model }

    private func check(_ id: ObjectID) throws(StoreError) -> (root: String, pk: Int64) {
        guard id.storeIdentifier == store.metadata.identifier, let pk = id.primaryKey,
            store.entityNames.contains(id.entityName)
        else {
            throw StoreError(
                .invalidRequest, "object \(id) does not belong to this store", storeURL: store.url,
                entity: id.entityName)
        }
        return (model.rootEntity(of: id.entityName), pk)
    }

    private func checkReference(_ value: ObjectID?, _ relationship: RelationshipDescription) throws(StoreError) {
        guard let value else { return }
        guard value.storeIdentifier == store.metadata.identifier, value.primaryKey != nil,
            model.entity(value.entityName, isKindOf: relationship.destination)
        else {
            throw StoreError(
                .invalidRequest,
                "'\(relationship.name)' must refer to a \(relationship.destination) in the same store, not \(value)",
                storeURL: store.url, entity: relationship.destination, fields: [relationship.name])
        }
    }

    /// Rounds values to what SQLite keeps, so both stores return the same values.
    static func normalize(_ value: AttributeValue, _ type: AttributeType?) -> AttributeValue {
        switch value {
        case .date(let date): return .date(AttributeValue.date(microseconds: AttributeValue.microseconds(of: date)))
        case .decimal(let decimal): return Decimal(string: decimal.description).map { .decimal($0) } ?? value
        case .integer(let i) where type == .double || type == .float: return .double(Double(i))
        default: return value
        }
    }

    func apply(_ changes: StoreChanges, to draft: inout InMemoryStore.State) throws(StoreError) -> [ObjectID: Int64] {
        var versions: [ObjectID: Int64] = [:]
        var conflicts: [VersionConflict] = []
        let checks =
            changes.updates.map { ($0.id, $0.expectedVersion) } + changes.deletes.map { ($0.id, $0.expectedVersion) }
        for (id, expected) in checks {
            let (root, pk) = try check(id)
            let stored = draft.rows[root]?[pk]?.version
            if let expected, stored != expected {
                conflicts.append(VersionConflict(id: id, expectedVersion: expected, storedVersion: stored))
            } else if stored == nil {
                throw StoreError(
                    .notFound, "object \(id) does not exist in the store", storeURL: store.url, entity: id.entityName)
            }
        }
        if !conflicts.isEmpty {
            throw StoreError(
                .conflict,
                "objects changed since they were read: " + conflicts.map(\.description).joined(separator: "; "),
                storeURL: store.url, conflicts: conflicts)
        }
        for insert in changes.inserts {
            let (root, pk) = try check(insert.id)
            var row = StoreRow(id: insert.id, version: 1)
            for attribute in model.attributes(of: insert.id.entityName) {
                row.attributes[attribute.name] = Self.normalize(
                    insert.attributes[attribute.name] ?? .null, attribute.type)
            }
            for relationship in model.relationships(of: insert.id.entityName) where !relationship.isToMany {
                let value = insert.toOne[relationship.name] ?? nil
                try checkReference(value, relationship)
                row.toOne[relationship.name] = .some(value)
            }
            if draft.rows[root]?[pk] != nil {
                throw StoreError(
                    .uniqueViolation, "object \(insert.id) already exists", storeURL: store.url,
                    entity: insert.id.entityName)
            }
            try checkUnique(row, in: draft)
            draft.rows[root, default: [:]][pk] = row
            versions[insert.id] = 1
        }
        for update in changes.updates {
            let (root, pk) = try check(update.id)
            guard var row = draft.rows[root]?[pk] else { continue }
            for (name, value) in update.attributes {
                guard let attribute = model.attribute(name, of: update.id.entityName) else {
                    throw StoreError(
                        .invalidRequest, "'\(update.id.entityName)' has no attribute '\(name)'", storeURL: store.url,
                        entity: update.id.entityName, fields: [name])
                }
                row.attributes[name] = Self.normalize(value, attribute.type)
            }
            for (name, value) in update.toOne {
                guard let relationship = model.relationship(name, of: update.id.entityName), !relationship.isToMany
                else {
                    throw StoreError(
                        .invalidRequest, "'\(update.id.entityName)' has no to-one relationship '\(name)'",
                        storeURL: store.url, entity: update.id.entityName, fields: [name])
                }
                try checkReference(value, relationship)
                row.toOne[name] = .some(value)
            }
            row.version += 1
            // Only a change to a constrained field can break a uniqueness constraint (a scan of
            // every row per update otherwise: quadratic for a batch update).
            let fields = constrained(update.id.entityName)
            if update.attributes.keys.contains(where: fields.contains)
                || update.toOne.keys.contains(where: fields.contains)
            {
                try checkUnique(row, in: draft)
            }
            draft.rows[root]?[pk] = row
            versions[update.id] = row.version
        }
        try writeToMany(changes, &draft)
        for deletion in changes.deletes {
            let (root, pk) = try check(deletion.id)
            draft.rows[root]?[pk] = nil
            for join in model.joinTables(for: store.entityNames) {
                if model.entity(deletion.id.entityName, isKindOf: join.sourceEntity) {
                    draft.joins[join.name]?[pk] = nil
                }
                if model.entity(deletion.id.entityName, isKindOf: join.targetEntity), var table = draft.joins[join.name]
                {
                    for key in table.keys { table[key]?.removeAll { $0 == pk } }
                    draft.joins[join.name] = table
                    draft.targetOrders[join.name]?[pk] = nil
                }
            }
        }
        return versions
    }

    private func writeToMany(_ changes: StoreChanges, _ draft: inout InMemoryStore.State) throws(StoreError) {
        let edits = try JoinTableEdit.plan(changes, model: model, storeURL: store.url) {
            (target: ObjectID, relationship: RelationshipDescription) throws(StoreError) in
            try checkReference(target, relationship)
        }
        for edit in edits {
            switch edit {
            case .setTargets(let join, let source, let targets):
                let before = draft.joins[join.name]?[source] ?? []
                draft.joins[join.name, default: [:]][source] = targets.isEmpty ? nil : targets
                if join.isTargetOrdered {
                    // New pairs go last in their target's order; removed ones leave it.
                    for target in before where !targets.contains(target) {
                        draft.targetOrders[join.name]?[target]?.removeAll { $0 == source }
                    }
                    for target in targets where !before.contains(target) {
                        draft.targetOrders[join.name, default: [:]][target, default: []].append(source)
                    }
                }
            case .setSources(let join, let target, let sources):
                var table = draft.joins[join.name] ?? [:]
                for key in table.keys where !sources.contains(key) { table[key]?.removeAll { $0 == target } }
                for source in sources where !(table[source] ?? []).contains(target) {
                    table[source, default: []].append(target)
                }
                draft.joins[join.name] = table.filter { !$0.value.isEmpty }
                if join.isTargetOrdered { draft.targetOrders[join.name, default: [:]][target] = sources }
            }
        }
    }

    /// The fields of every uniqueness constraint of `entity` and its ancestors.
    private func constrained(_ entity: String) -> Set<String> {
        var fields: Set<String> = []
        var current: String? = entity
        while let name = current, let description = model.entity(named: name) {
            for group in description.uniqueness { fields.formUnion(group) }
            current = description.parent
        }
        return fields
    }

    /// Fails when another row of the same constrained entities has the same non-nil values.
    private func checkUnique(_ row: StoreRow, in draft: InMemoryStore.State) throws(StoreError) {
        var current: String? = row.id.entityName
        while let name = current, let entity = model.entity(named: name) {
            let family = Set(model.entityAndSubentities(of: name))
            for group in entity.uniqueness {
                func key(_ candidate: StoreRow) -> [String]? {
                    var parts: [String] = []
                    for field in group {
                        if let value = candidate.attributes[field] {
                            if value.isNull { return nil }
                            parts.append(value.uniquenessKey)
                        } else if let object = candidate.toOne[field] {
                            guard let object, let pk = object.primaryKey else { return nil }
                            parts.append("i:\(pk)")
                        } else {
                            return nil
                        }
                    }
                    return parts
                }
                guard let mine = key(row) else { continue }
                let others = draft.rows[model.rootEntity(of: name)]?.values ?? [:].values
                if others.contains(where: { $0.id != row.id && family.contains($0.id.entityName) && key($0) == mine }) {
                    throw StoreError(
                        .uniqueViolation, "another \(name) already has the same \(group.joined(separator: " and "))",
                        storeURL: store.url, entity: name, fields: group)
                }
            }
            current = entity.parent
        }
    }
}

extension AttributeValue {
    /// A text key that is equal exactly when two stored values are equal in a unique index, as the
    /// SQLite store compares them: numbers by value (an integral double equals the integer),
    /// text byte-wise ("é" precomposed and decomposed differ), decimals, UUIDs and JSON by the text
    /// they are stored as, dates by microsecond.
    var uniquenessKey: String {
        func number(_ d: Double) -> String { d == d.rounded() && abs(d) < 9e15 ? "n:\(Int64(d))" : "n:\(d)" }
        func text(_ s: String) -> String { "t:" + Data(s.utf8).base64EncodedString() }
        switch self {
        case .null: return "null"
        case .integer(let i): return "n:\(i)"
        case .double(let d): return number(d)
        case .boolean(let b): return b ? "n:1" : "n:0"
        case .date(let date): return "n:\(AttributeValue.microseconds(of: date))"
        case .string(let s), .uri(let s): return text(s)
        case .decimal(let d): return text(d.description)
        case .uuid(let uuid): return text(uuid.uuidString.lowercased())
        case .json(let json): return text(json.jsonText)
        case .binary(let data): return "b:\(data.base64EncodedString())"
        }
    }
}
