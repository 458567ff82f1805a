/// A table that holds the pairs of a to-many relationship that cannot live in a foreign key
/// column: many-to-many relationships and ordered to-many relationships.
public struct JoinTableDescription: Sendable, Hashable {
    /// The table name: `_join_<Entity>_<relationship>` of the source side.
    public var name: String
    /// The entity that declares the source side.
    public var sourceEntity: String
    /// The source side (its lists are written; its order is kept in `position`).
    public var sourceRelationship: String
    /// The entity that declares the other side (for a relationship without an inverse: the
    /// destination).
    public var targetEntity: String
    /// The other side; nil for a relationship without an inverse.
    public var targetRelationship: String?
    /// Whether the source side keeps order.
    public var isOrdered: Bool
    /// Whether the other side keeps order too (a many-to-many ordered on both sides): its order is
    /// kept in `target_position`.
    public var isTargetOrdered: Bool = false
}

/// Where a relationship's contents are stored.
public enum RelationshipStorage: Sendable, Hashable {
    /// A to-one: a column on the entity's table holding the related primary key.
    case foreignKey
    /// An unordered to-many whose inverse is a to-one: read through the inverse's column.
    case inverseForeignKey(inverse: String)
    /// A join table; `isSource` tells which side this relationship is.
    case joinTable(JoinTableDescription, isSource: Bool)
}

extension ObjectModel {
    /// The column of property `name` of `entity` in its hierarchy's table: an attribute's
    /// ``AttributeDescription/columnName``, else the name itself.
    public func columnName(of name: String, in entity: String) -> String {
        attribute(name, of: entity)?.columnName ?? name
    }

    /// The entity in `entity`'s lineage that declares property `name`.
    public func declaringEntity(of name: String, in entity: String) -> String? {
        var current: String? = entity
        var declaring: String?
        while let found = current.flatMap({ self.entity(named: $0) }) {
            if found.attributes.contains(where: { $0.name == name })
                || found.relationships.contains(where: { $0.name == name })
                || found.fetchedProperties.contains(where: { $0.name == name })
            {
                declaring = found.name
            }
            current = found.parent
        }
        return declaring
    }

    /// How relationship `name` of `entity` is stored.
    public func storage(of name: String, in entity: String) -> RelationshipStorage? {
        storages[entity]?[name]
    }

    func computeStorage(of name: String, in entity: String) -> RelationshipStorage? {
        guard let relationship = relationship(name, of: entity) else { return nil }
        if !relationship.isToMany { return .foreignKey }
        guard let inverse = inverse(of: name, of: entity) else {
            // No inverse: a join table of this side alone.
            let here = declaringEntity(of: name, in: entity) ?? entity
            let table = JoinTableDescription(
                name: "_join_\(here)_\(name)", sourceEntity: here, sourceRelationship: name,
                targetEntity: relationship.destination, targetRelationship: nil, isOrdered: relationship.isOrdered)
            return .joinTable(table, isSource: true)
        }
        if !inverse.isToMany && !relationship.isOrdered { return .inverseForeignKey(inverse: inverse.name) }
        let here = declaringEntity(of: name, in: entity) ?? entity
        let there = declaringEntity(of: inverse.name, in: relationship.destination) ?? relationship.destination
        let isSource: Bool
        if !inverse.isToMany || relationship.isOrdered != inverse.isOrdered {
            isSource = !inverse.isToMany || relationship.isOrdered
        } else {
            isSource = "\(here).\(name)" < "\(there).\(inverse.name)"
        }
        let (sourceEntity, sourceName, targetEntity, targetName) =
            isSource ? (here, name, there, inverse.name) : (there, inverse.name, here, name)
        let sourceOrdered = isSource ? relationship.isOrdered : inverse.isOrdered
        let targetOrdered = isSource ? inverse.isOrdered : relationship.isOrdered
        let table = JoinTableDescription(
            name: "_join_\(sourceEntity)_\(sourceName)", sourceEntity: sourceEntity, sourceRelationship: sourceName,
            targetEntity: targetEntity, targetRelationship: targetName, isOrdered: sourceOrdered,
            isTargetOrdered: sourceOrdered && targetOrdered)
        return .joinTable(table, isSource: isSource)
    }

    /// The join tables needed for `entities`, each once.
    public func joinTables(for entities: some Sequence<String>) -> [JoinTableDescription] {
        var tables: [JoinTableDescription] = []
        for entity in entities {
            for relationship in relationships(of: entity) {
                if case .joinTable(let table, _) = storage(of: relationship.name, in: entity), !tables.contains(table) {
                    tables.append(table)
                }
            }
        }
        return tables
    }
}

extension ObjectModel {
    /// The relationships without an inverse whose destination is `entity` or one of its
    /// ancestors: what must let go of an object of `entity` that is deleted. With the entity that
    /// declares (or inherits) each.
    public func relationshipsWithoutInverse(into entity: String) -> [(
        owner: String, relationship: RelationshipDescription
    )] {
        incomingWithoutInverse[entity] ?? []
    }

    /// ``relationshipsWithoutInverse(into:)`` of every entity, worked out once.
    static func incomingWithoutInverse(_ model: ObjectModel) -> [String: [(
        owner: String, relationship: RelationshipDescription
    )]] {
        var result: [String: [(owner: String, relationship: RelationshipDescription)]] = [:]
        for owner in model.entities {
            for relationship in owner.relationships where model.inverse(of: relationship.name, of: owner.name) == nil {
                for entity in model.entityNames where model.entity(entity, isKindOf: relationship.destination) {
                    result[entity, default: []].append((owner.name, relationship))
                }
            }
        }
        return result
    }
}
