import Foundation

/// How the objects of the model they are in (the source) map onto the model version an export
/// writes (the target), as a migration back to that version would map them where that is
/// well-defined: an entity, attribute or relationship of the target takes the values of the
/// source's element of the same name (or the one whose renaming identifier names it), of the same
/// type. Objects of source entities the target lacks are left out; target attributes the source
/// lacks are nil, or their default value; target to-one relationships the source lacks are nil.
/// What cannot be represented refuses the export (see ``problems``): a required attribute without
/// a default value, or a required to-one, that the source lacks; an element whose type or kind
/// differs between the two.
struct CoreDataExportMapping {
    let source: ObjectModel
    let target: ObjectModel
    /// Target entity → source entity.
    private(set) var entities: [String: String] = [:]
    /// Target entity → target attribute → source attribute.
    private(set) var attributes: [String: [String: String]] = [:]
    /// Target entity → target relationship → source relationship.
    private(set) var relationships: [String: [String: String]] = [:]
    /// Target entity → why its objects cannot be written, when it has any.
    private(set) var problems: [String: [String]] = [:]

    init(source: ObjectModel, target: ObjectModel) {
        self.source = source
        self.target = target
        for entity in target.entities {
            guard
                let match = Self.match(
                    entity.name, entity.renamedFrom, in: source.entities.map { ($0.name, $0.renamedFrom) })
            else { continue }
            entities[entity.name] = match
            mapAttributes(entity.name, match)
            mapRelationships(entity.name, match)
        }
    }

    /// The element of `candidates` (name, renaming identifier) that `name` is: the one of that
    /// name, else the one renamed from it, else the one sharing its renaming identifier.
    static func match(_ name: String, _ renamedFrom: String?, in candidates: [(String, String?)]) -> String? {
        if candidates.contains(where: { $0.0 == name }) { return name }
        if let renamed = candidates.first(where: { $0.1 == name }) { return renamed.0 }
        if let renamedFrom, let shared = candidates.first(where: { $0.1 == renamedFrom }) { return shared.0 }
        return nil
    }

    private mutating func mapAttributes(_ entity: String, _ sourceEntity: String) {
        let candidates = source.attributes(of: sourceEntity).map { ($0.name, $0.renamedFrom) }
        for attribute in target.attributes(of: entity) {
            let label = "\(entity).\(attribute.name)"
            guard let name = Self.match(attribute.name, attribute.renamedFrom, in: candidates),
                let found = source.attribute(name, of: sourceEntity)
            else {
                if !attribute.isOptional && attribute.defaultValue == nil {
                    problems[entity, default: []].append(
                        "\(label) is required in version \(target.name) and the data has no such attribute (nor a default value for it)"
                    )
                }
                continue
            }
            guard found.type == attribute.type else {
                problems[entity, default: []].append(
                    "\(label) is \(attribute.type.rawValue) in version \(target.name) and \(found.type.rawValue) in the data"
                )
                continue
            }
            attributes[entity, default: [:]][attribute.name] = name
        }
    }

    private mutating func mapRelationships(_ entity: String, _ sourceEntity: String) {
        let candidates = source.relationships(of: sourceEntity).map { ($0.name, $0.renamedFrom) }
        for relationship in target.relationships(of: entity) {
            let label = "\(entity).\(relationship.name)"
            guard let name = Self.match(relationship.name, relationship.renamedFrom, in: candidates),
                let found = source.relationship(name, of: sourceEntity)
            else {
                if !relationship.isToMany && !relationship.isOptional {
                    problems[entity, default: []].append(
                        "\(label) is a required relationship in version \(target.name) and the data has no such relationship"
                    )
                }
                continue
            }
            guard found.isToMany == relationship.isToMany else {
                problems[entity, default: []].append(
                    "\(label) is a \(relationship.isToMany ? "to-many" : "to-one") relationship in version \(target.name) and a \(found.isToMany ? "to-many" : "to-one") in the data"
                )
                continue
            }
            relationships[entity, default: [:]][relationship.name] = name
        }
    }

    /// The source attribute of `attribute` of target entity `entity`.
    func sourceAttribute(_ attribute: String, of entity: String) -> String? { attributes[entity]?[attribute] }

    /// The source relationship of `relationship` of target entity `entity`.
    func sourceRelationship(_ relationship: String, of entity: String) -> String? {
        relationships[entity]?[relationship]
    }

    /// The source entities whose objects the target has no entity for.
    var unmappedSourceEntities: [String] {
        let mapped = Set(entities.values)
        return source.entityNames.filter { !mapped.contains($0) && source.entity(named: $0)?.isAbstract != true }
    }
}
