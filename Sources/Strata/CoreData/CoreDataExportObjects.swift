import Foundation

/// The objects an export writes, read from a ``StoreCoordinator``, with their Core Data primary
/// keys: an object keeps its own primary key when no other object of its hierarchy (from another
/// store) has it, and gets the next free one otherwise.
struct CoreDataExportObjects {
    /// An object's place in the new store.
    struct Place {
        var primaryKey: Int64
        var entity: String
    }

    let model: ObjectModel
    let layout: CoreDataLayout
    let coordinator: StoreCoordinator
    /// Every object's row, by entity.
    private var rows: [String: [StoreRow]] = [:]
    private var places: [ObjectID: Place] = [:]
    /// The last primary key of each hierarchy, by root.
    private(set) var maxPrimaryKey: [String: Int64] = [:]
    /// The position (`Z_FOK_`) of an object in the ordered to-many that holds it, by its to-one.
    private var positions: [ObjectID: [String: Int64]] = [:]

    /// Objects written per entity.
    var counts: [String: Int] { rows.mapValues(\.count) }

    /// Core Data's sparse positions of an ordered relationship: 2048, 3072, ...
    static func position(_ index: Int) -> Int64 { Int64(index + 2) * 1024 }

    init(model: ObjectModel, layout: CoreDataLayout, coordinator: StoreCoordinator) throws(StoreError) {
        self.model = model
        self.layout = layout
        self.coordinator = coordinator
        for hierarchy in layout.hierarchies {
            var used: Set<Int64> = []
            var clashing: [(String, Int)] = []
            for entity in hierarchy.family where model.entity(named: entity)?.isAbstract != true {
                guard !coordinator.stores(for: entity).isEmpty else { continue }
                let fetched = try coordinator.fetch(FetchRequest(entityName: entity, includesSubentities: false))
                    .sorted { ($0.id.primaryKey ?? 0) < ($1.id.primaryKey ?? 0) }
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
        try readPositions()
    }

    /// The positions of objects in ordered to-many relationships kept by their inverse to-one.
    private mutating func readPositions() throws(StoreError) {
        for (entity, list) in rows {
            for relationship in model.relationships(of: entity) where relationship.isToMany && relationship.isOrdered {
                guard let inverse = model.inverse(of: relationship.name, of: entity), !inverse.isToMany else {
                    continue
                }
                for row in list {
                    let members = try coordinator.relatedIDs(of: row.id, relationship: relationship.name)
                    for (index, member) in members.enumerated() {
                        positions[member, default: [:]][inverse.name] = Self.position(index)
                    }
                }
            }
        }
    }

    /// The rows of one hierarchy's table.
    mutating func writeRows(of hierarchy: CoreDataLayout.Hierarchy, into db: SQLiteConnection) throws {
        let names = ["Z_PK", "Z_ENT", "Z_OPT"] + hierarchy.columns.map(\.name)
        let index = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($0.element, $0.offset) })
        let insert = try db.statement(
            "INSERT INTO \(hierarchy.table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
        )
        for entity in hierarchy.family {
            for row in rows[entity] ?? [] {
                var values = [SQLiteValue](repeating: .null, count: names.count)
                values[0] = .integer(places[row.id]!.primaryKey)
                values[1] = .integer(Int64(layout.numbers[entity]!))
                values[2] = .integer(max(row.version, 1))
                for (name, column) in hierarchy.attributes[entity] ?? [:] {
                    guard let attribute = model.attribute(name, of: entity), let value = row.attributes[name] else {
                        continue
                    }
                    values[index[column]!] = CoreDataValues.encode(value, attribute)
                }
                for (name, place) in hierarchy.toOne[entity] ?? [:] {
                    guard let target = row.toOne[name] ?? nil, let destination = places[target] else { continue }
                    values[index[place.column]!] = .integer(destination.primaryKey)
                    if let column = place.entityColumn {
                        values[index[column]!] = .integer(Int64(layout.numbers[destination.entity]!))
                    }
                    if let column = place.orderColumn, let position = positions[row.id]?[name] {
                        values[index[column]!] = .integer(position)
                    }
                }
                try insert.bind(values)
                defer { insert.reset() }
                while try insert.step() {}
            }
        }
    }

    /// The rows of one join table; how many.
    func writeJoin(_ join: CoreDataLayout.Join, into db: SQLiteConnection) throws -> Int {
        var names = [join.sourceColumn, join.targetColumn]
        if let order = join.sourceOrder { names.append(order) }
        if let order = join.targetOrder { names.append(order) }
        let insert = try db.statement(
            "INSERT OR IGNORE INTO \(join.table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
        )
        var inverseLists: [ObjectID: [ObjectID]] = [:]
        var count = 0
        for entity in model.entityAndSubentities(of: join.entity) {
            for row in rows[entity] ?? [] {
                let members = try coordinator.relatedIDs(of: row.id, relationship: join.relationship)
                for (position, member) in members.enumerated() {
                    guard let target = places[member] else { continue }
                    var values: [SQLiteValue] = [.integer(places[row.id]!.primaryKey), .integer(target.primaryKey)]
                    if join.sourceOrder != nil, let inverse = join.inverse {
                        if inverseLists[member] == nil {
                            inverseLists[member] = try coordinator.relatedIDs(of: member, relationship: inverse)
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
