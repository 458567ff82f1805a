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
            let kept = versions.planKept(relationship, from: previous, mapping: &mapping, collector: &collector)
            sources[relationship.name] = .some(kept ? previousName : nil)
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

        /// A relationship matched to `previous`: its renaming, its changes of shape (to-one or
        /// to-many, ordering, destination), what of them refuses the migration, and a change of
        /// optionality.
        /// - Returns: whether its links are carried over (false: it starts empty, as a relationship
        ///   whose old destination's objects none become objects of its new destination).
        func planKept(
            _ relationship: RelationshipDescription, from previous: RelationshipDescription,
            mapping: inout MigrationMapping, collector: inout Collector
        ) -> Bool {
            let place = place(of: relationship.name)
            func change(_ kind: MigrationChange.Kind, _ message: String) {
                collector.change(MigrationChange(kind, entity: place, property: relationship.name, message))
            }
            if previous.name != relationship.name {
                change(.renameRelationship, "renamed from '\(previous.name)'; its contents are kept")
            }
            let kept = planDestination(relationship, from: previous, mapping: &mapping, collector: &collector)
            if !previous.isToMany && relationship.isToMany {
                change(.makeToMany, "becomes to-many; each object's destination becomes its single member")
            }
            if previous.isToMany && !relationship.isToMany {
                change(
                    .makeToOne,
                    "becomes to-one; each object's single member is kept (none: nil), and the migration is refused if an object has more than one"
                )
                collector.check(
                    .atMostOneMember(
                        entity: place, relationship: relationship.name,
                        oldEntity: old.declaringEntity(of: previous.name, in: oldName) ?? oldName,
                        oldRelationship: previous.name))
            } else if previous.isToMany && previous.isOrdered != relationship.isOrdered {
                change(
                    relationship.isOrdered ? .makeOrdered : .makeUnordered,
                    relationship.isOrdered
                        ? "becomes ordered; each object's members are ordered by their primary keys"
                        : "stops being ordered; its members are kept and their order is dropped")
            }
            if kept, let problem = linksAreLost(relationship, from: previous, mapping: mapping) {
                if let inverse = newInverseToFill(relationship, mapping: mapping) {
                    change(
                        .gainInverse,
                        "gains the to-one inverse '\(inverse.relationship)', whose column its links fill; the migration is refused if an object is a member of more than one"
                    )
                    mapping.inverseFills.insert(inverse)
                    collector.check(
                        .atMostOneOwner(
                            entity: inverse.entity, relationship: inverse.relationship,
                            oldEntity: old.declaringEntity(of: previous.name, in: oldName) ?? oldName,
                            oldRelationship: previous.name))
                } else {
                    collector.refuse(
                        MigrationRefusal(
                            .relationshipShape, entity: place, property: relationship.name,
                            problem + "; a lightweight migration cannot map its contents"))
                }
            }
            guard !relationship.isToMany else { return kept }
            if previous.isOptional && !relationship.isOptional {
                collector.refuse(
                    MigrationRefusal(
                        .requiredRelationship, entity: place, property: relationship.name,
                        "becomes a required to-one relationship; objects without one have nothing to point to"))
            } else if !previous.isOptional && relationship.isOptional {
                change(.makeRelationshipOptional, "becomes optional")
            }
            return kept
        }

        /// A destination that changes: Core Data's inferred mapping gives the relationship the
        /// objects its old members become, which it keeps where they are objects of the new
        /// destination (the old destination renamed, or an entity of its hierarchy that is kind
        /// of the new one) and drops otherwise.
        /// - Returns: whether any link can be kept.
        func planDestination(
            _ relationship: RelationshipDescription, from previous: RelationshipDescription,
            mapping: inout MigrationMapping, collector: inout Collector
        ) -> Bool {
            // The entities the old members become in this store (an entity removed takes its
            // objects, and the links to them, with it).
            let members = old.entityNames.filter { old.entity($0, isKindOf: previous.destination) }
            let becoming = members.compactMap { member in mapping.entities.first { $0.value == member }?.key }
            let fits = becoming.map { new.entity($0, isKindOf: relationship.destination) }
            guard fits.contains(false) else { return true }
            let place = place(of: relationship.name)
            let from = "its destination changes from \(previous.destination) to \(relationship.destination)"
            if !fits.contains(true) {
                collector.change(
                    MigrationChange(
                        .changeDestination, entity: place, property: relationship.name,
                        "\(from); no object of \(previous.destination) becomes an object of \(relationship.destination), so its links are dropped"
                    ))
                return false
            }
            collector.change(
                MigrationChange(
                    .changeDestination, entity: place, property: relationship.name,
                    "\(from); links to objects that become \(relationship.destination) objects are kept, the others dropped"
                ))
            mapping.destinationFilters.insert(MigrationMapping.Link(entity: place, relationship: relationship.name))
            return true
        }

        /// Why the links of `previous` do not reach where `relationship` keeps them, or nil when
        /// they do: a foreign key or a join table of its own is filled from them, and a to-many read
        /// through its inverse's column needs that inverse to be the old one's inverse.
        func linksAreLost(
            _ relationship: RelationshipDescription, from previous: RelationshipDescription, mapping: MigrationMapping
        ) -> String? {
            guard case .inverseForeignKey(let inverse)? = new.storage(of: relationship.name, in: name) else {
                return nil
            }
            let newDestination = relationship.destination
            guard let oldInverse = old.inverse(of: previous.name, of: oldName),
                let oldDestination = mapping.entities[newDestination]
            else {
                return "it gains the inverse '\(inverse)', whose column its old links are not in"
            }
            let matched = MigrationPlanner.match(
                new: new.relationships(of: newDestination).map { ($0.name, $0.renamedFrom) },
                old: old.relationships(of: oldDestination).map { ($0.name, $0.renamedFrom) })
            guard matched[inverse] == oldInverse.name else {
                return
                    "its inverse changes from '\(oldInverse.name)' to '\(inverse)', whose column its old links are not in"
            }
            return nil
        }

        /// The new to-one inverse of `relationship` (a to-many read through it) when that inverse
        /// is new, so its column can take the old links; nil otherwise.
        func newInverseToFill(_ relationship: RelationshipDescription, mapping: MigrationMapping)
            -> MigrationMapping.Link?
        {
            guard case .inverseForeignKey(let inverse)? = new.storage(of: relationship.name, in: name) else {
                return nil
            }
            let destination = relationship.destination
            if let oldDestination = mapping.entities[destination] {
                let matched = MigrationPlanner.match(
                    new: new.relationships(of: destination).map { ($0.name, $0.renamedFrom) },
                    old: old.relationships(of: oldDestination).map { ($0.name, $0.renamedFrom) })
                guard matched[inverse] == nil else { return nil }
            }
            return MigrationMapping.Link(
                entity: new.declaringEntity(of: inverse, in: destination) ?? destination, relationship: inverse)
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
}
