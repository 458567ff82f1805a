import Foundation

/// The objects an export writes, read from a ``StoreCoordinator`` (those its filters keep, of the
/// entities the target version has, see ``CoreDataExportMapping``), with their Core Data primary
/// keys: an object keeps its own primary key when no other object of its hierarchy (from another
/// store) has it, and gets the next free one otherwise.
///
/// A relationship to an object the export leaves out is cleared, as Core Data's nullify rule
/// clears it; a required to-one left dangling (or empty where the target version requires it)
/// refuses the export, naming the object.
struct CoreDataExportObjects {
    /// An object's place in the new store.
    struct Place {
        var primaryKey: Int64
        /// Its entity in the target version.
        var entity: String
    }

    let mapping: CoreDataExportMapping
    let layout: CoreDataLayout
    let coordinator: StoreCoordinator
    /// Source entity → the predicate its objects (and its subentities') must match.
    let filters: [String: FetchPredicate]
    /// Every object's row, by target entity.
    private var rows: [String: [StoreRow]] = [:]
    private var places: [ObjectID: Place] = [:]
    /// The last primary key of each hierarchy, by root.
    private(set) var maxPrimaryKey: [String: Int64] = [:]
    /// The position (`Z_FOK_`) of an object in the ordered to-many that holds it, by its to-one.
    private var positions: [ObjectID: [String: Int64]] = [:]

    /// The version written.
    var model: ObjectModel { mapping.target }

    /// Objects written per entity.
    var counts: [String: Int] { rows.mapValues(\.count) }

    /// Core Data's sparse positions of an ordered relationship: 2048, 3072, ...
    static func position(_ index: Int) -> Int64 { Int64(index + 2) * 1024 }

    init(
        mapping: CoreDataExportMapping, layout: CoreDataLayout, coordinator: StoreCoordinator,
        filters: [String: FetchPredicate]
    ) throws(StoreError) {
        self.mapping = mapping
        self.layout = layout
        self.coordinator = coordinator
        self.filters = filters
        for hierarchy in layout.hierarchies {
            var used: Set<Int64> = []
            var clashing: [(String, Int)] = []
            for entity in hierarchy.family where mapping.target.entity(named: entity)?.isAbstract != true {
                guard let source = mapping.entities[entity], !coordinator.stores(for: source).isEmpty else { continue }
                let fetched = try coordinator.fetch(
                    FetchRequest(entityName: source, predicate: predicate(for: source), includesSubentities: false)
                ).sorted { ($0.id.primaryKey ?? 0) < ($1.id.primaryKey ?? 0) }
                if !fetched.isEmpty, let problems = mapping.problems[entity] {
                    throw StoreError(
                        .invalidRequest,
                        "cannot export the \(fetched.count) objects of \(source) for version \(model.name): "
                            + problems.joined(separator: "; "))
                }
                rows[entity] = fetched
                for (index, row) in fetched.enumerated() {
                    if let key = row.id.primaryKey, key > 0, used.insert(key).inserted {
                        places[row.id] = Place(primaryKey: key, entity: entity)
                    } else {
                        clashing.append((entity, index))
                    }
                }
            }
            var next = (used.max() ?? 0) + 1
            for (entity, index) in clashing {
                places[rows[entity]![index].id] = Place(primaryKey: next, entity: entity)
                next += 1
            }
            maxPrimaryKey[hierarchy.root] = next - 1
        }
        try checkRequiredRelationships()
        try readPositions()
    }

    /// The filters of `entity` and of every entity it inherits from, all of which its objects match.
    private func predicate(for entity: String) -> FetchPredicate? {
        var predicates: [FetchPredicate] = []
        var current: String? = entity
        while let name = current {
            if let predicate = filters[name] { predicates.insert(predicate, at: 0) }
            current = mapping.source.entity(named: name)?.parent
        }
        return predicates.count > 1 ? .and(predicates) : predicates.first
    }

    /// The object `row`'s to-one `relationship` (of the target version) leads to, when the export
    /// holds it as an object of the relationship's destination.
    private func destination(of row: StoreRow, _ relationship: RelationshipDescription, entity: String) -> Place? {
        guard let name = mapping.sourceRelationship(relationship.name, of: entity), let id = row.toOne[name] ?? nil,
            let place = places[id], model.entity(place.entity, isKindOf: relationship.destination)
        else { return nil }
        return place
    }

    /// Refuses a kept object whose required to-one would be empty in the store.
    private func checkRequiredRelationships() throws(StoreError) {
        for (entity, list) in rows {
            for relationship in model.relationships(of: entity) where !relationship.isToMany && !relationship.isOptional
            {
                let name = mapping.sourceRelationship(relationship.name, of: entity)
                for row in list where destination(of: row, relationship, entity: entity) == nil {
                    let object = "\(row.id.entityName) \(row.id.primaryKey.map(String.init) ?? "?")"
                    guard let name, let target = row.toOne[name] ?? nil else {
                        throw StoreError(
                            .invalidRequest,
                            "cannot export \(object): its relationship \(relationship.name) is required in version \(model.name) and empty in the data"
                        )
                    }
                    throw StoreError(
                        .invalidRequest,
                        "cannot export \(object): its required relationship \(relationship.name) leads to \(target.entityName) \(target.primaryKey.map(String.init) ?? "?"), which the export leaves out"
                    )
                }
            }
        }
    }

    /// The positions of objects in ordered to-many relationships kept by their inverse to-one.
    private mutating func readPositions() throws(StoreError) {
        for (entity, list) in rows {
            for relationship in model.relationships(of: entity) where relationship.isToMany && relationship.isOrdered {
                guard let inverse = model.inverse(of: relationship.name, of: entity), !inverse.isToMany,
                    let name = mapping.sourceRelationship(relationship.name, of: entity)
                else { continue }
                for row in list {
                    let members = try coordinator.relatedIDs(of: row.id, relationship: name)
                    for (index, member) in members.filter({ places[$0] != nil }).enumerated() {
                        positions[member, default: [:]][inverse.name] = Self.position(index)
                    }
                }
            }
        }
    }

    /// The rows of one hierarchy's table.
    mutating func writeRows(
        of hierarchy: CoreDataLayout.Hierarchy, into db: SQLiteConnection, values: inout CoreDataExportValues
    ) throws {
        let names = ["Z_PK", "Z_ENT", "Z_OPT"] + hierarchy.columns.map(\.name)
        let index = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($0.element, $0.offset) })
        let insert = try db.statement(
            "INSERT INTO \(hierarchy.table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
        )
        for entity in hierarchy.family {
            for row in rows[entity] ?? [] {
                var columns = [SQLiteValue](repeating: .null, count: names.count)
                columns[0] = .integer(places[row.id]!.primaryKey)
                columns[1] = .integer(Int64(layout.numbers[entity]!))
                columns[2] = .integer(max(row.version, 1))
                for (name, column) in hierarchy.attributes[entity] ?? [:] {
                    guard let attribute = model.attribute(name, of: entity),
                        let value = value(of: attribute, in: row, entity: entity)
                    else { continue }
                    columns[index[column]!] = try values.encode(value, attribute, entity: entity)
                }
                for (name, leaves) in hierarchy.composites[entity] ?? [:] {
                    guard let attribute = model.attribute(name, of: entity),
                        let value = value(of: attribute, in: row, entity: entity)
                    else { continue }
                    for (column, encoded) in try values.encode(composite: value, attribute, leaves, entity: entity) {
                        columns[index[column]!] = encoded
                    }
                }
                for relationship in model.relationships(of: entity) where !relationship.isToMany {
                    guard let place = hierarchy.toOne[entity]?[relationship.name],
                        let destination = destination(of: row, relationship, entity: entity)
                    else { continue }
                    columns[index[place.column]!] = .integer(destination.primaryKey)
                    if let column = place.entityColumn {
                        columns[index[column]!] = .integer(Int64(layout.numbers[destination.entity]!))
                    }
                    if let column = place.orderColumn, let position = positions[row.id]?[relationship.name] {
                        columns[index[column]!] = .integer(position)
                    }
                }
                try insert.bind(columns)
                defer { insert.reset() }
                while try insert.step() {}
            }
        }
    }

    /// The value of `attribute` (of the target version) that `row` of `entity` is written with: the
    /// source attribute's, or the default of an attribute the data does not have.
    private func value(of attribute: AttributeDescription, in row: StoreRow, entity: String) -> AttributeValue? {
        guard let source = mapping.sourceAttribute(attribute.name, of: entity) else { return attribute.defaultValue }
        return row.attributes[source]
    }

    /// The rows of one join table; how many.
    func writeJoin(_ join: CoreDataLayout.Join, into db: SQLiteConnection) throws -> Int {
        var names = [join.sourceColumn, join.targetColumn]
        if let order = join.sourceOrder { names.append(order) }
        if let order = join.targetOrder { names.append(order) }
        let insert = try db.statement(
            "INSERT OR IGNORE INTO \(join.table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
        )
        guard let destination = model.relationship(join.relationship, of: join.entity)?.destination else { return 0 }
        var inverseLists: [ObjectID: [ObjectID]] = [:]
        var count = 0
        for entity in model.entityAndSubentities(of: join.entity) {
            guard let name = mapping.sourceRelationship(join.relationship, of: entity) else { continue }
            for row in rows[entity] ?? [] {
                let members = try coordinator.relatedIDs(of: row.id, relationship: name).filter {
                    places[$0].map { model.entity($0.entity, isKindOf: destination) } ?? false
                }
                for (position, member) in members.enumerated() {
                    let target = places[member]!
                    var values: [SQLiteValue] = [.integer(places[row.id]!.primaryKey), .integer(target.primaryKey)]
                    if join.sourceOrder != nil, let inverse = join.inverse {
                        if inverseLists[member] == nil {
                            let inverseName = mapping.sourceRelationship(inverse, of: target.entity)
                            inverseLists[member] =
                                try inverseName.map {
                                    try coordinator.relatedIDs(of: member, relationship: $0).filter {
                                        places[$0] != nil
                                    }
                                } ?? []
                        }
                        let index = inverseLists[member]!.firstIndex(of: row.id) ?? 0
                        values.append(.integer(Self.position(index)))
                    }
                    if join.targetOrder != nil { values.append(.integer(Self.position(position))) }
                    try insert.bind(values)
                    defer { insert.reset() }
                    while try insert.step() {}
                    count += 1
                }
            }
        }
        return count
    }
}
