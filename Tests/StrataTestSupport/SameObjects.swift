import Foundation
import Strata
import Testing

/// Every object of `lhs` is in `rhs` with the same primary key, version, values and links.
public func expectSameObjects(
    _ model: ObjectModel, _ lhs: StoreCoordinator, _ rhs: StoreCoordinator, _ label: String
) throws {
    for entity in model.entityNames where model.entity(named: entity)?.isAbstract != true {
        let request = FetchRequest(entityName: entity, includesSubentities: false)
        let mine = try lhs.fetch(request)
        let theirs = Dictionary(uniqueKeysWithValues: try rhs.fetch(request).map { ($0.id.primaryKey!, $0) })
        #expect(mine.count == theirs.count, "\(label): \(entity) count")
        for row in mine {
            guard let other = theirs[row.id.primaryKey!] else {
                Issue.record("\(label): \(entity) \(row.id.primaryKey!) is missing")
                continue
            }
            let place = "\(label): \(entity) \(row.id.primaryKey!)"
            #expect(row.version == other.version, "\(place) version")
            for attribute in model.attributes(of: entity) {
                #expect(
                    row.attributes[attribute.name] ?? .null == other.attributes[attribute.name] ?? .null,
                    "\(place).\(attribute.name)")
            }
            for relationship in model.relationships(of: entity) where !relationship.isToMany {
                #expect(
                    (row.toOne[relationship.name] ?? nil).map { "\($0.entityName)/\($0.primaryKey!)" }
                        == (other.toOne[relationship.name] ?? nil).map { "\($0.entityName)/\($0.primaryKey!)" },
                    "\(place).\(relationship.name)")
            }
            for relationship in model.relationships(of: entity) where relationship.isToMany {
                let a = try lhs.relatedIDs(of: row.id, relationship: relationship.name).map {
                    "\($0.entityName)/\($0.primaryKey!)"
                }
                let b = try rhs.relatedIDs(of: other.id, relationship: relationship.name).map {
                    "\($0.entityName)/\($0.primaryKey!)"
                }
                #expect(relationship.isOrdered ? a == b : a.sorted() == b.sorted(), "\(place).\(relationship.name)")
            }
        }
    }
}
