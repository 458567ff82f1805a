import Foundation

/// A whole Core Data SQLite store laid out for a model version, by Core Data's rules (see
/// ``CoreDataNaming``): the table of each hierarchy with its columns in Core Data's order (by
/// type: integers, foreign keys with their entity columns, `Z_FOK_` positions, numbers and dates,
/// strings, blobs; a composite attribute as a column per leaf element, ranked by the element's
/// type), the join table of each many-to-many, and the indexes.
struct CoreDataLayout {
    /// A column and its SQL type.
    struct Column: Hashable {
        var name: String
        var type: String
    }

    /// Where a to-one relationship lives in its hierarchy's table.
    struct ToOne {
        /// The foreign key column (`ZPARENT`).
        var column: String
        /// `Z<n>_<NAME>`, when the destination has subentities.
        var entityColumn: String?
        /// `Z_FOK_<NAME>`, when the inverse is an ordered to-many.
        var orderColumn: String?
    }

    /// A composite attribute's leaf element and the column holding it.
    struct CompositeColumn {
        /// The element's key path below the composite (`["position", "latitude"]`).
        var path: [String]
        var element: AttributeDescription
        var column: String
    }

    /// One hierarchy's table.
    struct Hierarchy {
        var root: String
        var table: String
        /// The hierarchy's entities in Core Data's numbering order.
        var family: [String]
        /// Every column after `Z_PK`, `Z_ENT`, `Z_OPT`.
        var columns: [Column]
        /// Entity → attribute (inherited ones included, composites not) → column.
        var attributes: [String: [String: String]]
        /// Entity → composite attribute (inherited ones included) → its leaf elements' columns
        /// (see ``CoreDataNaming/columns(of:)``).
        var composites: [String: [String: [CompositeColumn]]]
        /// Entity → to-one relationship (inherited ones included) → its columns.
        var toOne: [String: [String: ToOne]]
    }

    /// A many-to-many's join table.
    struct Join {
        var table: String
        /// The entity declaring `relationship`.
        var entity: String
        var relationship: String
        var inverse: String?
        /// The column holding the objects whose lists these are (primary keys of `entity`'s family).
        var sourceColumn: String
        /// The column holding the members of the lists.
        var targetColumn: String
        /// The position of each member in its source's list, when `relationship` is ordered.
        var targetOrder: String?
        /// The position of each source in its member's `inverse` list, when that is ordered.
        var sourceOrder: String?
    }

    let model: ObjectModel
    /// `Z_ENT` of every entity.
    let numbers: [String: Int]
    private(set) var hierarchies: [Hierarchy] = []
    private(set) var joins: [Join] = []

    init(model: ObjectModel) {
        self.model = model
        numbers = CoreDataNaming.entityNumbers(model)
        let roots = model.entityNames.filter { model.entity(named: $0)?.parent == nil }.sorted {
            numbers[$0]! < numbers[$1]!
        }
        for root in roots { hierarchies.append(hierarchy(root)) }
        for entity in model.entityNames.sorted(by: { numbers[$0]! < numbers[$1]! }) {
            for relationship in model.entity(named: entity)?.relationships ?? [] where relationship.isToMany {
                if let join = join(entity, relationship) { joins.append(join) }
            }
        }
    }

    /// The hierarchy holding `entity`.
    func hierarchy(of entity: String) -> Hierarchy? {
        let root = model.rootEntity(of: entity)
        return hierarchies.first { $0.root == root }
    }

    private func hierarchy(_ root: String) -> Hierarchy {
        let table = CoreDataNaming.table(root)
        let family = model.entityAndSubentities(of: root).sorted { numbers[$0]! < numbers[$1]! }
        var uses: [String: Int] = [:]
        var ranked: [(rank: Int, entity: Int, kind: Int, column: Column)] = []
        var ownAttributes: [String: [String: String]] = [:]
        var ownToOne: [String: [String: ToOne]] = [:]
        func claim(_ property: String) -> String {
            let base = CoreDataNaming.column(property)
            let use = uses[base, default: 0]
            uses[base] = use + 1
            return CoreDataNaming.suffixed(base, use)
        }
        for (position, entity) in family.enumerated() {
            guard let description = model.entity(named: entity) else { continue }
            // A composite takes a column per leaf element, each ranked by the element's type.
            for part in description.attributes.flatMap(CoreDataNaming.columns(of:)) {
                let column = claim(part.name)
                let type = CoreDataNaming.sqlType(part.element)
                let rank = ["INTEGER": 0, "FLOAT": 2, "TIMESTAMP": 2, "DECIMAL": 3, "VARCHAR": 4][type] ?? 5
                ranked.append((rank, position, 0, Column(name: column, type: type)))
                ownAttributes[entity, default: [:]][part.key] = column
            }
            for relationship in description.relationships where !relationship.isToMany {
                let column = claim(relationship.name)
                var place = ToOne(column: column)
                ranked.append((0, position, 1, Column(name: column, type: "INTEGER")))
                if model.entityAndSubentities(of: relationship.destination).count > 1,
                    let number = numbers[relationship.destination]
                {
                    place.entityColumn = CoreDataNaming.entityColumn(destinationNumber: number, column: column)
                    ranked.append((0, position, 1, Column(name: place.entityColumn!, type: "INTEGER")))
                }
                if model.inverse(of: relationship.name, of: entity)?.isOrdered == true {
                    place.orderColumn = CoreDataNaming.orderColumn(foreignKey: column)
                    ranked.append((1, position, 0, Column(name: place.orderColumn!, type: "INTEGER")))
                }
                ownToOne[entity, default: [:]][relationship.name] = place
            }
        }
        var attributes: [String: [String: String]] = [:]
        var composites: [String: [String: [CompositeColumn]]] = [:]
        var toOne: [String: [String: ToOne]] = [:]
        for entity in family {
            for attribute in model.attributes(of: entity) {
                guard let declaring = model.declaringEntity(of: attribute.name, in: entity) else { continue }
                if attribute.isComposite {
                    composites[entity, default: [:]][attribute.name] = CoreDataNaming.columns(of: attribute).compactMap
                    {
                        part in
                        ownAttributes[declaring]?[part.key].map {
                            CompositeColumn(path: part.path, element: part.element, column: $0)
                        }
                    }
                } else if let column = ownAttributes[declaring]?[attribute.name] {
                    attributes[entity, default: [:]][attribute.name] = column
                }
            }
            for relationship in model.relationships(of: entity) where !relationship.isToMany {
                if let declaring = model.declaringEntity(of: relationship.name, in: entity),
                    let place = ownToOne[declaring]?[relationship.name]
                {
                    toOne[entity, default: [:]][relationship.name] = place
                }
            }
        }
        let columns = ranked.enumerated().sorted {
            ($0.element.rank, $0.element.entity, $0.element.kind, $0.offset)
                < ($1.element.rank, $1.element.entity, $1.element.kind, $1.offset)
        }.map(\.element.column)
        return Hierarchy(
            root: root, table: table, family: family, columns: columns, attributes: attributes,
            composites: composites, toOne: toOne)
    }

    /// The join table of `relationship` (a to-many of `entity`), when it is a many-to-many (or a
    /// to-many without an inverse) and `entity` is the side that names the table: the one with the
    /// lower number (of a pair within one entity, the relationship whose name sorts last).
    private func join(_ entity: String, _ relationship: RelationshipDescription) -> Join? {
        let inverse = model.inverse(of: relationship.name, of: entity)
        if let inverse, !inverse.isToMany { return nil }
        let number = numbers[entity]!
        let targetColumn = CoreDataNaming.joinColumn(
            number: numbers[relationship.destination] ?? 0, relationship: relationship.name)
        var sourceColumn: String
        if let inverse {
            let other = numbers[model.declaringEntity(of: inverse.name, in: relationship.destination) ?? ""] ?? 0
            if other < number || (other == number && ObjectModel.compare(relationship.name, inverse.name)) {
                return nil
            }
            sourceColumn = CoreDataNaming.joinColumn(
                number: numbers[inverse.destination] ?? 0, relationship: inverse.name)
        } else {
            sourceColumn = CoreDataNaming.joinColumn(number: number, relationship: entity)
        }
        if sourceColumn == targetColumn { sourceColumn += "1" }
        return Join(
            table: CoreDataNaming.joinTable(number: number, relationship: relationship.name), entity: entity,
            relationship: relationship.name, inverse: inverse?.name, sourceColumn: sourceColumn,
            targetColumn: targetColumn,
            targetOrder: relationship.isOrdered ? CoreDataNaming.joinOrderColumn(targetColumn) : nil,
            sourceOrder: inverse?.isOrdered == true ? CoreDataNaming.joinOrderColumn(sourceColumn) : nil)
    }

    /// `CREATE TABLE` and `CREATE INDEX` statements of the whole store, Core Data's own tables first.
    var statements: [String] {
        var sql = [
            "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)",
            "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)",
        ]
        for hierarchy in hierarchies {
            let columns =
                ["Z_PK INTEGER PRIMARY KEY", "Z_ENT INTEGER", "Z_OPT INTEGER"]
                + hierarchy.columns.map { "\($0.name) \($0.type)" }
            sql.append("CREATE TABLE \(hierarchy.table) ( \(columns.joined(separator: ", ")) )")
            sql += indexes(of: hierarchy)
        }
        for join in joins {
            let orders = [join.sourceOrder, join.targetOrder].compactMap { $0 }.map { "\($0) INTEGER" }
            let columns = ["\(join.sourceColumn) INTEGER", "\(join.targetColumn) INTEGER"] + orders
            sql.append(
                "CREATE TABLE \(join.table) ( \(columns.joined(separator: ", ")), PRIMARY KEY (\(join.sourceColumn), \(join.targetColumn)) )"
            )
            sql.append(
                "CREATE INDEX \(join.table)_\(join.targetColumn)_INDEX ON \(join.table) (\(join.targetColumn), \(join.sourceColumn))"
            )
        }
        return sql
    }

    /// A hierarchy's indexes: `Z_ENT` (with subentities), each foreign key, each uniqueness
    /// constraint and fetch index.
    private func indexes(of hierarchy: Hierarchy) -> [String] {
        let table = hierarchy.table
        var sql: [String] = []
        if hierarchy.family.count > 1 { sql.append("CREATE INDEX \(table)_Z_ENT_INDEX ON \(table) (Z_ENT)") }
        for entity in hierarchy.family {
            for relationship in model.entity(named: entity)?.relationships ?? [] where !relationship.isToMany {
                if let column = hierarchy.toOne[entity]?[relationship.name]?.column {
                    sql.append("CREATE INDEX \(table)_\(column)_INDEX ON \(table) (\(column))")
                }
            }
        }
        for entity in hierarchy.family {
            guard let description = model.entity(named: entity) else { continue }
            func columns(_ properties: [String], descending: Set<String> = []) -> String? {
                let names = properties.compactMap { property in
                    (hierarchy.attributes[entity]?[property] ?? hierarchy.toOne[entity]?[property]?.column).map {
                        "\($0) COLLATE BINARY \(descending.contains(property) ? "DESC" : "ASC")"
                    }
                }
                guard names.count == properties.count, !names.isEmpty else { return nil }
                return names.joined(separator: ", ")
            }
            // A named fetch index on one property, ascending, is joined by an index named after
            // the property (one, however many such fetch indexes there are); a descending one is
            // not, as Core Data writes them.
            var propertyIndexes: Set<String> = []
            for constraint in description.uniqueness {
                if let columns = columns(constraint) {
                    let name = "Z_\(entity)_UNIQUE_" + constraint.joined(separator: "_")
                    sql.append("CREATE UNIQUE INDEX \(name) ON \(table) (\(columns))")
                }
            }
            for index in description.indexes {
                guard let list = columns(index.properties, descending: index.descending) else { continue }
                // An index without a name of its own (`indexed="YES"`, compound indexes) is named
                // after its properties, which is how the model reader names it already.
                if index.name == ([entity] + index.properties).joined(separator: "_") {
                    sql.append("CREATE INDEX Z_\(index.name) ON \(table) (\(list))")
                    continue
                }
                sql.append("CREATE INDEX Z_\(entity)_\(index.name) ON \(table) (\(list))")
                if index.properties.count == 1, index.properties[0] != index.name, index.descending.isEmpty,
                    propertyIndexes.insert(index.properties[0]).inserted
                {
                    sql.append("CREATE INDEX Z_\(entity)_\(index.properties[0]) ON \(table) (\(list))")
                }
            }
        }
        return sql
    }
}
