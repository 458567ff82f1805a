/// Planning an entity's relationships from one model version to the next.
extension MigrationPlanner {
    /// Plans the relationships of entity `name` (`oldName` in `old`): which are kept, renamed,
    /// added or removed, and which change in a way a lightweight migration cannot map. Records
    /// each kept or added relationship's source in `mapping` (the old name, or nil when new).
    static func planRelationships(
        _ name: String, _ oldName: String, old: ObjectModel, new: ObjectModel, mapping: inout MigrationMapping,
        collector: inout Collector
    ) {
        let versions = RelationshipVersions(name: name, oldName: oldName, old: old, new: new)
        var sources: [String: String?] = [:]
        for relationship in new.relationships(of: name) {
            guard let previousName = versions.matched[relationship.name],
                let previous = old.relationship(previousName, of: oldName)
            else {
                if versions.planAdded(relationship, collector: &collector) { sources[relationship.name] = .some(nil) }
                continue
            }
            sources[relationship.name] = .some(previousName)
            versions.planKept(relationship, from: previous, mapping: mapping, collector: &collector)
        }
        versions.planRemoved(mapping: mapping, collector: &collector)
        mapping.relationships[name] = sources
    }

    /// One entity's relationships in two consecutive model versions, matched as `match` pairs them.
    private struct RelationshipVersions {
        /// The entity's name in the new model.
        let name: String
        /// Its name in the old model.
        let oldName: String
        let old: ObjectModel
        let new: ObjectModel
        let oldRelationships: [RelationshipDescription]
        /// New relationship name → old name, for the matched ones.
        let matched: [String: String]

        init(name: String, oldName: String, old: ObjectModel, new: ObjectModel) {
            self.name = name
            self.oldName = oldName
            self.old = old
            self.new = new
            oldRelationships = old.relationships(of: oldName)
            matched = MigrationPlanner.match(
                new: new.relationships(of: name).map { ($0.name, $0.renamedFrom) },
                old: oldRelationships.map { ($0.name, $0.renamedFrom) })
        }

        /// Where a relationship is reported: the entity that declares it (an inherited one is
        /// seen from every subentity, and reported once).
        func place(of relationship: String) -> String { new.declaringEntity(of: relationship, in: name) ?? name }

        /// A relationship with no match in the old version (a renaming identifier that names
        /// nothing there too, as Core Data's inferred mappings match renaming identifiers only):
        /// a required to-one has nothing to point to; anything else is new and empty.
        /// - Returns: whether it is added.
        func planAdded(_ relationship: RelationshipDescription, collector: inout Collector) -> Bool {
            let place = place(of: relationship.name)
            if !relationship.isToMany && !relationship.isOptional {
                collector.refuse(
                    MigrationRefusal(
                        .requiredRelationship, entity: place, property: relationship.name,
                        "is added as a required to-one relationship; existing objects have no object to point to"
                    ))
                return false
            }
            collector.change(
                MigrationChange(
                    .addRelationship, entity: place, property: relationship.name,
                    "a new \(relationship.isToMany ? "to-many" : "to-one") relationship to \(relationship.destination), empty for existing objects"
                ))
            return true
        }

        /// A relationship matched to `previous`: its renaming, the changes of shape that refuse
        /// the migration, and a change of optionality.
        func planKept(
            _ relationship: RelationshipDescription, from previous: RelationshipDescription,
            mapping: MigrationMapping, collector: inout Collector
        ) {
            let place = place(of: relationship.name)
            if previous.name != relationship.name {
                collector.change(
                    MigrationChange(
                        .renameRelationship, entity: place, property: relationship.name,
                        "renamed from '\(previous.name)'; its contents are kept"))
            }
            if linksCarryOver(relationship, from: previous) {
                collector.change(
                    MigrationChange(
                        .makeToMany, entity: place, property: relationship.name,
                        "becomes to-many; the links its inverse's join table holds are kept"))
            }
            if previous.isToMany && !relationship.isToMany {
                collector.change(
                    MigrationChange(
                        .makeToOne, entity: place, property: relationship.name,
                        "becomes to-one; each object's single member is kept (none: nil), and the migration is refused if an object has more than one"
                    ))
                collector.check(
                    .atMostOneMember(
                        entity: place, relationship: relationship.name,
                        oldEntity: old.declaringEntity(of: previous.name, in: oldName) ?? oldName,
                        oldRelationship: previous.name))
            }
            let problems = shapeChanges(relationship, from: previous, mapping: mapping)
            if !problems.isEmpty {
                collector.refuse(
                    MigrationRefusal(
                        .relationshipShape, entity: place, property: relationship.name,
                        problems.joined(separator: "; ") + "; a lightweight migration cannot map its contents"))
            }
            guard !relationship.isToMany else { return }
            if previous.isOptional && !relationship.isOptional {
                collector.refuse(
                    MigrationRefusal(
                        .requiredRelationship, entity: place, property: relationship.name,
                        "becomes a required to-one relationship; objects without one have nothing to point to"))
            } else if !previous.isOptional && relationship.isOptional {
                collector.change(
                    MigrationChange(
                        .makeRelationshipOptional, entity: place, property: relationship.name, "becomes optional"))
            }
        }

        /// What changes in how a matched relationship's contents are held, in words: its
        /// destination, to-one or to-many, ordering, or (when those hold) its storage.
        func shapeChanges(
            _ relationship: RelationshipDescription, from previous: RelationshipDescription, mapping: MigrationMapping
        ) -> [String] {
            let destinationMatches =
                mapping.entities[relationship.destination] == previous.destination
                || (mapping.entities[relationship.destination] == nil
                    && (relationship.destination == previous.destination
                        || new.entity(named: relationship.destination)?.renamedFrom == previous.destination))
            var problems: [String] = []
            if !destinationMatches {
                problems.append("its destination changes from \(previous.destination) to \(relationship.destination)")
            }
            if !previous.isToMany && relationship.isToMany && !linksCarryOver(relationship, from: previous) {
                problems.append("it changes from to-one to to-many")
            }
            let becomesToOne = previous.isToMany && !relationship.isToMany
            if previous.isOrdered != relationship.isOrdered && !becomesToOne {
                problems.append(relationship.isOrdered ? "it becomes ordered" : "it stops being ordered")
            }
            guard problems.isEmpty else { return problems }
            if linksCarryOver(relationship, from: previous) || becomesToOne
                || inverseBecomesToOne(relationship, previous)
            {
                return []
            }
            let oldStorage = old.storage(of: previous.name, in: oldName)
            let newStorage = new.storage(of: relationship.name, in: name)
            if MigrationPlanner.storageKind(oldStorage) != MigrationPlanner.storageKind(newStorage) {
                return ["its inverse changes how it is stored (to-one or to-many on the other side)"]
            }
            if case .joinTable(let oldTable, let wasSource) = oldStorage,
                case .joinTable(let newTable, let isSource) = newStorage, wasSource != isSource, oldTable.isOrdered,
                newTable.isOrdered
            {
                return ["renaming it changes which side of the ordered many-to-many relationship keeps its order"]
            }
            return []
        }

        /// Whether `relationship`, to-one as `previous`, becomes to-many stored in the very join
        /// table that held its inverse's links (the inverse an ordered to-many, kept as the same
        /// side of the table): every link is there already, as Core Data's inferred migration keeps
        /// them.
        func linksCarryOver(_ relationship: RelationshipDescription, from previous: RelationshipDescription) -> Bool {
            guard !previous.isToMany, relationship.isToMany,
                let oldInverse = old.inverse(of: previous.name, of: oldName),
                let newInverse = new.inverse(of: relationship.name, of: name),
                (newInverse.renamedFrom ?? newInverse.name) == oldInverse.name || newInverse.name == oldInverse.name,
                case .joinTable(let oldTable, let oldInverseIsSource)? = old.storage(
                    of: oldInverse.name, in: previous.destination),
                case .joinTable(let newTable, let isSource)? = new.storage(of: relationship.name, in: name)
            else { return false }
            return oldTable.name == newTable.name && oldInverseIsSource && !isSource
                && oldTable.isOrdered == newTable.isOrdered
        }

        /// Whether the inverse of `relationship` (`previous` in the old version) becomes to-one from
        /// to-many while `relationship` reads its contents through that inverse's new column:
        /// the column is made from the pairs the old storage held.
        func inverseBecomesToOne(_ relationship: RelationshipDescription, _ previous: RelationshipDescription) -> Bool {
            guard case .inverseForeignKey? = new.storage(of: relationship.name, in: name),
                let newInverse = new.inverse(of: relationship.name, of: name),
                let oldInverse = old.inverse(of: previous.name, of: oldName)
            else { return false }
            return oldInverse.isToMany && !newInverse.isToMany
        }

        /// The old relationships nothing matched: removed, reported at the entity that declared them.
        func planRemoved(mapping: MigrationMapping, collector: inout Collector) {
            let kept = Set(matched.values)
            for relationship in oldRelationships where !kept.contains(relationship.name) {
                let declaring = old.declaringEntity(of: relationship.name, in: oldName) ?? oldName
                let place = mapping.entities.first(where: { $0.value == declaring })?.key ?? name
                collector.change(
                    MigrationChange(
                        .removeRelationship, entity: place, property: relationship.name,
                        "removed; its contents are dropped"))
            }
        }
    }

    /// The kind of storage, ignoring table names and sides.
    private static func storageKind(_ storage: RelationshipStorage?) -> String {
        switch storage {
        case .foreignKey: "foreignKey"
        case .inverseForeignKey: "inverseForeignKey"
        case .joinTable: "joinTable"
        case nil: "none"
        }
    }
}
