import Foundation

/// One change a save makes to a join table (a many-to-many or ordered relationship's pairs), as
/// every store type applies it: ``plan(_:model:storeURL:check:)`` turns a store's part of a save
/// into these, so the stores share what gets written and differ only in how.
enum JoinTableEdit {
    /// The source object's list becomes `targets`, in order: its pairs are replaced, each target
    /// at its position.
    case setTargets(JoinTableDescription, source: Int64, targets: [Int64])
    /// The objects whose lists hold `target` become `sources`: its other pairs are removed, and
    /// it is appended to the list of each source that does not hold it yet.
    case setSources(JoinTableDescription, target: Int64, sources: [Int64])

    /// The join-table edits of `changes`, in the order they apply: every non-source side first,
    /// then every source side, whose lists also fix the order. Each target is checked by `check`
    /// (same store, right entity) before anything is planned.
    /// - Throws: `.invalidRequest` for a relationship that is not a to-many of the object's entity,
    ///   and what `check` throws.
    static func plan(
        _ changes: StoreChanges, model: ObjectModel, storeURL: URL?,
        check: (ObjectID, RelationshipDescription) throws(StoreError) -> Void
    ) throws(StoreError) -> [JoinTableEdit] {
        // A new row has no pairs yet: only inserts with members need writing.
        var lists: [(ObjectID, [String: [ObjectID]])] = []
        for row in changes.inserts where row.toMany.values.contains(where: { !$0.isEmpty }) {
            lists.append((row.id, row.toMany))
        }
        for update in changes.updates where !update.toMany.isEmpty { lists.append((update.id, update.toMany)) }
        if lists.isEmpty { return [] }
        var edits: [JoinTableEdit] = []
        for pass in [false, true] {
            for (id, toMany) in lists {
                for (name, targets) in toMany.sorted(by: { $0.key < $1.key }) {
                    guard let relationship = model.relationship(name, of: id.entityName), relationship.isToMany else {
                        throw StoreError(
                            .invalidRequest, "'\(id.entityName)' has no to-many relationship '\(name)'",
                            storeURL: storeURL, entity: id.entityName, fields: [name])
                    }
                    guard case .joinTable(let join, let isSource)? = model.storage(of: name, in: id.entityName),
                        isSource == pass
                    else { continue }
                    for target in targets { try check(target, relationship) }
                    var seen: Set<Int64> = []
                    let keys = targets.compactMap(\.primaryKey).filter { seen.insert($0).inserted }
                    edits.append(
                        isSource
                            ? .setTargets(join, source: id.primaryKey!, targets: keys)
                            : .setSources(join, target: id.primaryKey!, sources: keys))
                }
            }
        }
        return edits
    }
}
