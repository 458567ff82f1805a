import Foundation

/// Where each entity, attribute and relationship of a model version lives in a store that Core
/// Data wrote with it, worked out from the store's real tables and columns (`PRAGMA table_info`)
/// and Core Data's naming rules (see the README's "Bringing an existing Core Data store"):
///
/// - one table `Z<ROOT>` per inheritance hierarchy, rows told apart by `Z_ENT`;
/// - a column `Z<NAME>` per attribute and to-one relationship; when sibling entities declare the
///   same name, the later ones (by entity number) get `Z<NAME>1`, `Z<NAME>2`, ...;
/// - a composite attribute: a column per leaf element, named after the element alone
///   (`Z<ELEMENT>`, numbered the same way when the name is taken);
/// - an ordered to-many whose inverse is a to-one: the inverse's column and `Z_FOK_<INVERSE>`;
/// - a many-to-many: a table `Z_<n><RELATIONSHIP>` with a column `Z_<m><R>` (plus a suffix on a
///   clash) holding the destinations of each side's relationship `R` (m = the destination's
///   entity number) and `Z_FOK_<that column without Z_>` for an ordered side.
struct CoreDataMapping {
    /// One hierarchy's table.
    struct Table {
        /// The Core Data table (`ZAUTHOR`).
        var name: String
        /// The entities of the model stored in it, by `Z_ENT`.
        var entityByNumber: [Int: String]
        /// Every mapped column, in the order the row query selects them (after `Z_PK`, `Z_ENT`,
        /// `Z_OPT`).
        var columns: [String]
        /// For each entity: attribute name → index into `columns`.
        var attributes: [String: [String: Int]]
        /// For each entity: to-one relationship name → index into `columns`.
        var toOne: [String: [String: Int]]
        /// For each entity: composite attribute name → its leaf elements' columns (Core Data keeps a
        /// composite in one column per leaf element), each with its key path below the attribute.
        var composites: [String: [String: [CompositeColumn]]] = [:]
    }

    /// One leaf element of a composite attribute and the column holding it.
    struct CompositeColumn {
        var path: [String]
        var element: AttributeDescription
        /// Index into the table's `columns`.
        var index: Int
    }

    /// How to read the pairs of one Strata join table from the Core Data store.
    struct Join {
        /// The Strata join table.
        var join: JoinTableDescription
        /// `SELECT source, target, sourceOrder, targetOrder …`: four columns, orders may be NULL.
        var query: String
        var description: String
    }

    let file: CoreDataStoreFile
    let model: ObjectModel
    /// By Strata root entity.
    private(set) var tables: [String: Table] = [:]
    private(set) var joins: [Join] = []
    /// What cannot be read, each said once.
    private(set) var warnings: [String] = []

    init(file: CoreDataStoreFile, model: ObjectModel) throws(StoreError) {
        self.file = file
        self.model = model
        var numbers: [String: Int] = [:]
        for entity in model.entityNames {
            // After a migration that renamed an entity, Z_PRIMARYKEY may still carry the old name.
            guard
                let row = file.entity(named: entity)
                    ?? model.entity(named: entity)?.renamedFrom.flatMap({ file.entity(named: $0) })
            else {
                throw StoreError(
                    .incompatibleModel,
                    "the store has no entity '\(entity)' (Z_PRIMARYKEY lists: "
                        + file.entities.map(\.name).joined(separator: ", ") + ")", storeURL: file.url)
            }
            numbers[entity] = row.number
        }
        for root in model.entityNames where model.entity(named: root)?.parent == nil {
            tables[root] = table(root: root, numbers: numbers)
        }
        let schema = SQLiteSchema(model: model, entities: model.entityNames)
        for join in schema.joinTables {
            if let plan = self.join(join, numbers: numbers) { joins.append(plan) }
        }
    }

    /// The columns of one hierarchy.
    private mutating func table(root: String, numbers: [String: Int]) -> Table {
        var name = CoreDataNaming.table(root)
        if file.columns(of: name).isEmpty, let previous = model.entity(named: root)?.renamedFrom,
            !file.columns(of: CoreDataNaming.table(previous)).isEmpty
        {
            name = CoreDataNaming.table(previous)
        }
        let available = Set(file.columns(of: name))
        if available.isEmpty {
            warnings.append("the store has no table \(name) for \(root): its objects are not there")
        }
        // Entities in Core Data's numbering order (pre-order over the hierarchy): the later of two
        // siblings declaring one name gets the suffixed column.
        let family = model.entityAndSubentities(of: root).sorted { numbers[$0]! < numbers[$1]! }
        var uses: [String: Int] = [:]
        var claimed: Set<String> = []
        var columnOf: [String: [String: String]] = [:]  // declaring entity → property → column
        for entity in family {
            guard let description = model.entity(named: entity) else { continue }
            // A composite's leaf elements each take a column named after the element alone
            // (`ZCITY` for `address.city`), numbered like any other on a clash.
            let own =
                description.attributes.flatMap { attribute in
                    attribute.isComposite
                        ? attribute.compositeLeaves.map { leaf in
                            (([attribute.name] + leaf.path).joined(separator: "."), leaf.element.name, nil as String?)
                        }
                        : [(attribute.name, attribute.name, attribute.renamedFrom)]
                }
                + description.relationships.filter { !$0.isToMany }.map { ($0.name, $0.name, $0.renamedFrom) }
            for (property, columnName, previous) in own {
                var base = CoreDataNaming.column(columnName)
                // A renamed property's column may keep its old name.
                if !available.contains(base), let previous, available.contains(CoreDataNaming.column(previous)) {
                    base = CoreDataNaming.column(previous)
                }
                let use = uses[base, default: 0]
                uses[base] = use + 1
                var column = CoreDataNaming.suffixed(base, use)
                if !available.contains(column) || claimed.contains(column) {
                    let pattern = available.filter { candidate in
                        candidate.hasPrefix(base) && candidate.dropFirst(base.count).allSatisfy(\.isNumber)
                            && !claimed.contains(candidate)
                    }.sorted()
                    guard let found = pattern.first else {
                        if !available.isEmpty {
                            warnings.append(
                                "\(entity).\(property): the store's \(name) has no column \(column); it is left empty")
                        }
                        continue
                    }
                    column = found
                }
                claimed.insert(column)
                columnOf[entity, default: [:]][property] = column
            }
        }
        var columns: [String] = []
        var attributes: [String: [String: Int]] = [:]
        var toOne: [String: [String: Int]] = [:]
        func index(of column: String) -> Int {
            if let found = columns.firstIndex(of: column) { return found }
            columns.append(column)
            return columns.count - 1
        }
        var composites: [String: [String: [CompositeColumn]]] = [:]
        for entity in family {
            for attribute in model.attributes(of: entity) where attribute.isComposite {
                guard let declaring = model.declaringEntity(of: attribute.name, in: entity) else { continue }
                composites[entity, default: [:]][attribute.name] = attribute.compositeLeaves.compactMap { leaf in
                    let key = ([attribute.name] + leaf.path).joined(separator: ".")
                    return columnOf[declaring]?[key].map {
                        CompositeColumn(path: leaf.path, element: leaf.element, index: index(of: $0))
                    }
                }
            }
            for attribute in model.attributes(of: entity) where !attribute.isComposite {
                guard let declaring = model.declaringEntity(of: attribute.name, in: entity),
                    let column = columnOf[declaring]?[attribute.name]
                else { continue }
                attributes[entity, default: [:]][attribute.name] = index(of: column)
            }
            for relationship in model.relationships(of: entity) where !relationship.isToMany {
                guard let declaring = model.declaringEntity(of: relationship.name, in: entity),
                    let column = columnOf[declaring]?[relationship.name]
                else { continue }
                toOne[entity, default: [:]][relationship.name] = index(of: column)
            }
        }
        var entityByNumber: [Int: String] = [:]
        for entity in family { entityByNumber[numbers[entity]!] = entity }
        return Table(
            name: name, entityByNumber: entityByNumber, columns: columns, attributes: attributes, toOne: toOne,
            composites: composites)
    }

    /// A column of `columns` named `base` or `base` plus digits.
    private static func column(_ base: String, in columns: [String]) -> String? {
        if columns.contains(base) { return base }
        return columns.filter { $0.hasPrefix(base) && $0.dropFirst(base.count).allSatisfy(\.isNumber) }.sorted().first
    }

    /// How the pairs of Strata join table `join` are read.
    private mutating func join(_ join: JoinTableDescription, numbers: [String: Int]) -> Join? {
        let q = SQLiteSchema.quote
        let owner = join.sourceEntity
        guard let relationship = model.relationship(join.sourceRelationship, of: owner) else { return nil }
        let label = "\(owner).\(relationship.name)"
        let inverse = model.inverse(of: relationship.name, of: owner)
        if let inverse, !inverse.isToMany {
            // An ordered one-to-many: the inverse's column and its Z_FOK_ position, in the
            // destination's table.
            let destination = relationship.destination
            let root = model.rootEntity(of: destination)
            let table = CoreDataNaming.table(root)
            let columns = file.columns(of: table)
            guard let declaring = model.declaringEntity(of: inverse.name, in: destination),
                let mapped = tables[root], let index = mapped.toOne[declaring]?[inverse.name]
            else {
                warnings.append("\(label): its inverse's column is not in the store; the relationship is left empty")
                return nil
            }
            let foreignKey = mapped.columns[index]
            let order = Self.column(
                CoreDataNaming.orderColumn(foreignKey: CoreDataNaming.column(inverse.name)), in: columns)
            let family = model.entityAndSubentities(of: destination).compactMap { numbers[$0] }
            return Join(
                join: join,
                query:
                    "SELECT \(q(foreignKey)), Z_PK, \(order.map(q) ?? "NULL"), NULL FROM \(q(table)) WHERE \(q(foreignKey)) IS NOT NULL AND Z_ENT IN (\(family.map(String.init).joined(separator: ", ")))",
                description: "\(label) from \(table).\(foreignKey)" + (order.map { " ordered by \($0)" } ?? ""))
        }
        // A join table: find the columns holding each side's destinations.
        let targetColumnBase = CoreDataNaming.joinColumn(
            number: numbers[relationship.destination] ?? -1, relationship: relationship.name)
        let sourceColumnBase: String? = inverse.map {
            CoreDataNaming.joinColumn(number: numbers[$0.destination] ?? -1, relationship: $0.name)
        }
        var predicted: [String] = []
        if let inverse {
            let ownerNumber = numbers[model.declaringEntity(of: relationship.name, in: owner) ?? owner] ?? -1
            let otherNumber =
                numbers[
                    model.declaringEntity(of: inverse.name, in: relationship.destination) ?? relationship.destination]
                ?? -1
            if ownerNumber <= otherNumber {
                predicted.append(CoreDataNaming.joinTable(number: ownerNumber, relationship: relationship.name))
            }
            if otherNumber <= ownerNumber {
                predicted.append(CoreDataNaming.joinTable(number: otherNumber, relationship: inverse.name))
            }
        } else {
            predicted.append(CoreDataNaming.joinTable(number: numbers[owner] ?? -1, relationship: relationship.name))
        }
        let candidates =
            predicted.filter { !file.columns(of: $0).isEmpty }
            + file.tables.filter { table in
                table.hasPrefix("Z_") && table.dropFirst(2).first?.isNumber == true && !predicted.contains(table)
            }
        for table in candidates {
            let columns = file.columns(of: table)
            guard let target = Self.column(targetColumnBase, in: columns) else { continue }
            let source: String?
            if let sourceColumnBase {
                source = Self.column(sourceColumnBase, in: columns.filter { $0 != target })
            } else {
                // Without an inverse: the table's other key column.
                source = columns.first { $0 != target && $0.hasPrefix("Z_") && !$0.hasPrefix("Z_FOK_") }
            }
            guard let source else { continue }
            let targetOrder = Self.column(CoreDataNaming.joinOrderColumn(target), in: columns)
            let sourceOrder = Self.column(CoreDataNaming.joinOrderColumn(source), in: columns)
            return Join(
                join: join,
                query:
                    "SELECT \(q(source)), \(q(target)), \(targetOrder.map(q) ?? "NULL"), \(sourceOrder.map(q) ?? "NULL") FROM \(q(table)) WHERE \(q(source)) IS NOT NULL AND \(q(target)) IS NOT NULL",
                description: "\(label) from \(table)(\(source), \(target))")
        }
        warnings.append(
            "\(label): no join table of the store holds it (looked for \(predicted.joined(separator: " or ")) with a column \(targetColumnBase)); the relationship is left empty"
        )
        return nil
    }
}

extension CoreDataMapping.Table {
    /// The Strata value of attribute `name` of an `entity` row (`Z_PK`, `Z_ENT`, `Z_OPT`, then
    /// `columns`), nil when the store has no column for it. A composite is put together from its
    /// elements' columns: nil when none of them holds a value.
    func value(
        of name: String, _ attribute: AttributeDescription, entity: String, row: [SQLiteValue],
        values: inout CoreDataValues
    ) -> AttributeValue? {
        guard attribute.isComposite else {
            return attributes[entity]?[name].map { values.decode(row[$0 + 3], attribute, entity: entity) }
        }
        guard let leaves = composites[entity]?[name], !leaves.isEmpty else { return nil }
        var object = JSONValue.null
        var any = false
        for leaf in leaves {
            let value = values.decode(row[leaf.index + 3], leaf.element, entity: "\(entity).\(name)")
            any = any || !value.isNull
            object = Self.setting(value.json, at: leaf.path[...], in: object)
        }
        return any ? .json(object) : .null
    }

    private static func setting(_ value: JSONValue, at path: ArraySlice<String>, in object: JSONValue) -> JSONValue {
        guard let key = path.first else { return value }
        var members = object.objectValue ?? [:]
        members[key] = setting(value, at: path.dropFirst(), in: members[key] ?? .null)
        return .object(members)
    }
}
