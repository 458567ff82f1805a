/// A batch delete worked out over stored rows: the delete rules followed from the matched objects
/// through the stores (read a chunk of objects at a time, never one context object at a time),
/// into one save request of deletions, updates and related changes.
///
/// It does what a context's delete does to the objects a delete reaches (see
/// `ObjectContext.applyDeleteRules`): `cascade` deletes, `nullify` clears the inverse of the
/// objects that stay (a to-one inverse is written; a to-many one kept by a join table raises the
/// object's version; one kept by the deleted object's own column changes nothing of the other
/// object's row, and the history records it), `deny` refuses, and relationships without an
/// inverse let go of the deleted objects.
struct BatchDeletePlan {
    /// A stored object that stays but changes.
    struct Change {
        var row: StoreRow
        /// To-one relationships to clear.
        var cleared: Set<String> = []
        /// To-many relationships that lose objects.
        var lists: Set<String> = []
        /// Whether its row is written (a cleared column, or a join-table list): its version rises.
        var writes = false
    }

    let coordinator: StoreCoordinator
    var model: ObjectModel { coordinator.model }
    /// Objects deleted, in the order they were reached.
    var deleted: [ObjectID: StoreRow] = [:]
    var order: [ObjectID] = []
    /// Objects that stay but change.
    var updates: [ObjectID: Change] = [:]
    /// Deny relationships of deleted objects and what they hold, checked once everything is known.
    var denials: [(source: ObjectID, relationship: String, targets: [ObjectID])] = []

    /// How many objects one `IN` of a predicate names.
    static let chunk = 500

    init(coordinator: StoreCoordinator) {
        self.coordinator = coordinator
    }

    /// Follows the delete rules from `rows` until nothing more is reached.
    mutating func expand(from rows: [StoreRow]) throws(ContextError) {
        var queue: [StoreRow] = []
        for row in rows where deleted[row.id] == nil {
            deleted[row.id] = row
            order.append(row.id)
            queue.append(row)
        }
        while !queue.isEmpty {
            let batch = queue
            queue = []
            let byEntity = Dictionary(grouping: batch, by: \.id.entityName)
            for entity in byEntity.keys.sorted() {
                let sources = byEntity[entity]!
                for relationship in model.relationships(of: entity) {
                    queue += try follow(relationship, of: sources, entity: entity)
                }
                try letGo(of: sources.map(\.id), entity: entity)
            }
        }
        for id in order { updates[id] = nil }
    }

    /// Applies `relationship`'s delete rule to what it holds of `sources`; returns the rows the
    /// rule newly deletes.
    private mutating func follow(
        _ relationship: RelationshipDescription, of sources: [StoreRow], entity: String
    ) throws(ContextError) -> [StoreRow] {
        let rule = relationship.deleteRule
        let inverse = model.inverse(of: relationship.name, of: entity)
        guard rule == .cascade || rule == .deny || (rule == .nullify && inverse != nil) else { return [] }
        let pairs = try targets(of: sources, through: relationship, entity: entity, needsPairs: rule == .deny)
        var reached: [StoreRow] = []
        switch rule {
        case .cascade:
            for (_, target) in pairs where deleted[target.id] == nil {
                deleted[target.id] = target
                order.append(target.id)
                reached.append(target)
            }
        case .deny:
            var bySource: [ObjectID: [ObjectID]] = [:]
            for (source, target) in pairs { bySource[source!, default: []].append(target.id) }
            for (source, targets) in bySource { denials.append((source, relationship.name, targets)) }
        default:
            guard let inverse else { break }
            for (source, target) in pairs where deleted[target.id] == nil {
                unlink(target, inverse, from: source)
            }
        }
        return reached
    }

    /// Notes that `target` lets go of a deleted object through `relationship` (of `target`'s
    /// entity); `source` is the deleted object when known.
    private mutating func unlink(_ target: StoreRow, _ relationship: RelationshipDescription, from source: ObjectID?) {
        var change = updates[target.id] ?? Change(row: target)
        if relationship.isToMany {
            change.lists.insert(relationship.name)
            if case .joinTable? = model.storage(of: relationship.name, in: target.id.entityName) {
                change.writes = true
            }
        } else {
            guard source == nil || (target.toOne[relationship.name] ?? nil) == source else { return }
            change.cleared.insert(relationship.name)
            change.writes = true
        }
        updates[target.id] = change
    }

    /// The objects `relationship` of `sources` holds, as (source, target) pairs; the source is
    /// known only when `needsPairs` or where the stores tell it cheaply (nil otherwise).
    private func targets(
        of sources: [StoreRow], through relationship: RelationshipDescription, entity: String, needsPairs: Bool
    ) throws(ContextError) -> [(ObjectID?, StoreRow)] {
        let destination = relationship.destination
        switch model.storage(of: relationship.name, in: entity) {
        case .foreignKey?:
            var pairs: [(ObjectID?, StoreRow)] = []
            let wanted = sources.compactMap { row in (row.toOne[relationship.name] ?? nil).map { (row.id, $0) } }
            let rows = try fetch(destination, Array(Set(wanted.map(\.1))), key: "SELF")
            let byID = Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            for (source, target) in wanted { if let row = byID[target] { pairs.append((source, row)) } }
            return pairs
        case .inverseForeignKey(let inverse)?:
            return try fetch(destination, sources.map(\.id), key: inverse).map { ($0.toOne[inverse] ?? nil, $0) }
        case .joinTable?:
            if !needsPairs, let inverse = model.inverse(of: relationship.name, of: entity) {
                return try fetch(destination, sources.map(\.id), key: inverse.name, any: true).map { (nil, $0) }
            }
            var pairs: [(ObjectID, ObjectID)] = []
            for source in sources {
                let related: [ObjectID]
                do {
                    related = try coordinator.relatedIDs(of: source.id, relationship: relationship.name)
                } catch {
                    throw ObjectContext.wrap(error)
                }
                for target in related { pairs.append((source.id, target)) }
            }
            let rows = try fetch(destination, Array(Set(pairs.map(\.1))), key: "SELF")
            let byID = Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            return pairs.compactMap { pair in byID[pair.1].map { (pair.0, $0) } }
        case nil:
            return []
        }
    }

    /// Removes deleted `ids` from the relationships without an inverse that hold them.
    private mutating func letGo(of ids: [ObjectID], entity: String) throws(ContextError) {
        for (owner, relationship) in model.relationshipsWithoutInverse(into: entity) {
            let holders = try fetch(owner, ids, key: relationship.name, any: relationship.isToMany)
            for holder in holders where deleted[holder.id] == nil {
                unlink(holder, relationship, from: relationship.isToMany ? nil : holder.toOne[relationship.name] ?? nil)
            }
        }
    }

    /// The stored objects of `entity` (and its subentities) whose `key` (`SELF`, a to-one, or with
    /// `any` a to-many relationship) is one of `ids`, read a chunk of IDs at a time.
    private func fetch(_ entity: String, _ ids: [ObjectID], key: String, any: Bool = false) throws(ContextError)
        -> [StoreRow]
    {
        var rows: [StoreRow] = []
        var start = 0
        let sorted = ids.sorted(by: ObjectID.precedes)
        while start < sorted.count {
            let part = sorted[start..<min(sorted.count, start + Self.chunk)]
            start += Self.chunk
            let predicate = FetchPredicate.comparison(
                Comparison(.keyPath(key), .in, .list(part.map { .object($0) }), modifier: any ? .any : .direct))
            do {
                rows += try coordinator.fetch(FetchRequest(entityName: entity, predicate: predicate))
            } catch {
                throw ObjectContext.wrap(error)
            }
        }
        return rows
    }

    /// The save that does it all.
    /// - Throws: `.validation` for a deny rule that holds an object which stays, or for a changed
    ///   object left without a required relationship or with too few related objects.
    func saveRequest() throws(ContextError) -> SaveRequest {
        var failures: [ValidationFailure] = []
        for (source, name, targets) in denials.sorted(by: { ObjectID.precedes($0.source, $1.source) }) {
            let staying = targets.filter { deleted[$0] == nil }
            guard !staying.isEmpty else { continue }
            failures.append(
                ValidationFailure(
                    entity: source.entityName, objectID: source, field: name, rule: .deny,
                    message:
                        "cannot be deleted while '\(name)' holds \(staying.count) object\(staying.count == 1 ? "" : "s")"
                ))
        }
        var request = SaveRequest()
        for (id, change) in updates.sorted(by: { ObjectID.precedes($0.key, $1.key) }) {
            failures += try brokenRules(change)
            if change.writes {
                var update = StoreUpdate(id: id, expectedVersion: change.row.version)
                for name in change.cleared { update.toOne[name] = .some(nil) }
                request.updates.append(update)
            }
            if !change.lists.isEmpty {
                request.related[id] = RelatedChange(names: change.lists.sorted(), version: change.row.version)
            }
        }
        if !failures.isEmpty {
            throw ContextError(.validation, "the delete would break the model's rules", failures: failures)
        }
        request.deletes = order.map { StoreDeletion(id: $0, expectedVersion: deleted[$0]!.version) }
        return request
    }

    /// The rules `change` breaks: a cleared required to-one, a list left with fewer objects than
    /// its minimum.
    private func brokenRules(_ change: Change) throws(ContextError) -> [ValidationFailure] {
        let id = change.row.id
        var failures: [ValidationFailure] = []
        for name in change.cleared.sorted() {
            if let relationship = model.relationship(name, of: id.entityName), !relationship.isOptional {
                failures.append(
                    ValidationFailure(
                        entity: id.entityName, objectID: id, field: name, rule: .required, message: "is required"))
            }
        }
        for name in change.lists.sorted() {
            guard let relationship = model.relationship(name, of: id.entityName), let minCount = relationship.minCount
            else { continue }
            let remaining: Int
            do {
                remaining = try coordinator.relatedIDs(of: id, relationship: name).filter { deleted[$0] == nil }.count
            } catch {
                throw ObjectContext.wrap(error)
            }
            if remaining < minCount, !(relationship.isOptional && remaining == 0) {
                failures.append(
                    ValidationFailure(
                        entity: id.entityName, objectID: id, field: name, rule: .minCount,
                        message: "needs at least \(minCount) objects, has \(remaining)"))
            }
        }
        return failures
    }
}
