import Foundation

/// The objects an export writes, read from a ``StoreCoordinator`` page by page in primary-key
/// order (never all at once), with their Core Data primary keys: an object keeps its own primary
/// key when no other object of its hierarchy (from another store) has it, and gets the next free
/// one otherwise.
///
/// A hierarchy held by one store (the usual case) keeps every key, and nothing is remembered per
/// object; only a hierarchy spread over several stores keeps its keys and the new keys of the
/// objects renumbered. The positions of objects in ordered to-many relationships kept by their
/// inverse to-one are remembered per member.
struct CoreDataExportObjects {
    /// An object's place in the new store.
    struct Place {
        var primaryKey: Int64
        var entity: String
    }

    let model: ObjectModel
    let layout: CoreDataLayout
    let coordinator: StoreCoordinator
    /// Entities whose objects are not written (see ``CoreDataExportOptions/leavingOut``).
    let leavingOut: Set<String>
    /// Called after each page written with the objects written so far and the total.
    var progress: ((Int, Int) -> Void)?
    /// The objects of hierarchies spread over several stores that got a new primary key.
    private var renumbered: [ObjectID: Place] = [:]
    /// The last primary key of each hierarchy, by root.
    private(set) var maxPrimaryKey: [String: Int64] = [:]
    /// The position (`Z_FOK_`) of an object in the ordered to-many that holds it, by its to-one.
    private var positions: [ObjectID: [String: Int64]] = [:]
    /// Objects written per entity.
    private(set) var counts: [String: Int] = [:]
    /// How many objects the export holds, and how many rows are written so far.
    private(set) var total = 0
    private var written = 0

    /// How many objects one read takes.
    static let pageSize = 2_000

    /// Core Data's sparse positions of an ordered relationship: 2048, 3072, ...
    static func position(_ index: Int) -> Int64 { Int64(index + 2) * 1024 }

    init(model: ObjectModel, layout: CoreDataLayout, coordinator: StoreCoordinator, leavingOut: Set<String> = [])
        throws(StoreError)
    {
        self.leavingOut = leavingOut
        self.model = model
        self.layout = layout
        self.coordinator = coordinator
        do {
            for hierarchy in layout.hierarchies { try number(hierarchy) }
            try readPositions()
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.io, "cannot read the objects to export: \(error)")
        }
    }

    /// The concrete entities of `hierarchy` some store holds and the export does not leave out, in
    /// Core Data's order.
    private func exported(_ hierarchy: CoreDataLayout.Hierarchy) -> [String] {
        hierarchy.family.filter { isExported($0) }
    }

    /// Whether objects of exactly `entity` are written.
    private func isExported(_ entity: String) -> Bool {
        model.entity(named: entity)?.isAbstract != true && !leavingOut.contains(entity)
            && !coordinator.stores(for: entity).isEmpty
    }

    /// Counts the objects of `hierarchy` and finds its last key; renumbers clashing keys when its
    /// objects live in several stores.
    private mutating func number(_ hierarchy: CoreDataLayout.Hierarchy) throws {
        let entities = exported(hierarchy)
        let holders = Set(entities.flatMap { coordinator.stores(for: $0).map(\.identifier) })
        for entity in entities {
            total += try coordinator.count(FetchRequest(entityName: entity, includesSubentities: false))
        }
        guard holders.count > 1 else {
            var last: Int64 = 0
            for entity in entities {
                for store in coordinator.stores(for: entity) {
                    let request = FetchRequest(
                        entityName: entity, sortDescriptors: [SortKey(SortKey.objectKey, ascending: false)],
                        fetchLimit: 1)
                    var top = request
                    top.includesSubentities = false
                    last = max(last, try store.fetch(top).first?.id.primaryKey ?? 0)
                }
            }
            maxPrimaryKey[hierarchy.root] = last
            return
        }
        var used: Set<Int64> = []
        var clashing: [ObjectID] = []
        for entity in entities {
            try Self.forEachPage(of: entity, in: coordinator) { page in
                for row in page {
                    if let key = row.id.primaryKey, key > 0, used.insert(key).inserted { continue }
                    clashing.append(row.id)
                }
            }
        }
        var next = (used.max() ?? 0) + 1
        for id in clashing {
            renumbered[id] = Place(primaryKey: next, entity: id.entityName)
            next += 1
        }
        maxPrimaryKey[hierarchy.root] = next - 1
    }

    /// Calls `body` with the objects of exactly `entity`, store by store, in pages of
    /// ``pageSize`` in primary-key order.
    static func forEachPage(
        of entity: String, in coordinator: StoreCoordinator, _ body: ([StoreRow]) throws -> Void
    ) throws {
        for store in coordinator.stores(for: entity) {
            var after: Int64 = 0
            var offset = 0
            while true {
                let page: [StoreRow]
                if let file = store as? SQLiteStore {
                    page = try file.rows(of: entity, after: after, limit: pageSize)
                } else if let shared = store as? PostgreSQLStore {
                    page = try shared.rows(of: entity, after: after, limit: pageSize)
                } else {
                    var request = FetchRequest(
                        entityName: entity, sortDescriptors: [SortKey(SortKey.objectKey)], fetchLimit: pageSize)
                    request.includesSubentities = false
                    request.fetchOffset = offset
                    page = try store.fetch(request)
                }
                guard let last = page.last else { break }
                try body(page)
                after = last.id.primaryKey ?? after
                offset += page.count
                if page.count < pageSize { break }
            }
        }
    }

    /// Where object `id` goes in the new store: its own key, or the one it was given.
    func place(of id: ObjectID) -> Place? {
        if !renumbered.isEmpty, let place = renumbered[id] { return place }
        guard let key = id.primaryKey, key > 0, leavingOut.isEmpty || !leavingOut.contains(id.entityName) else {
            return nil
        }
        return Place(primaryKey: key, entity: id.entityName)
    }

    /// The positions of objects in ordered to-many relationships kept by their inverse to-one.
    private mutating func readPositions() throws {
        for hierarchy in layout.hierarchies {
            for entity in exported(hierarchy) {
                let ordered = model.relationships(of: entity).filter { relationship in
                    guard relationship.isToMany, relationship.isOrdered,
                        let inverse = model.inverse(of: relationship.name, of: entity)
                    else { return false }
                    return !inverse.isToMany
                }
                guard !ordered.isEmpty else { continue }
                var found: [ObjectID: [String: Int64]] = [:]
                try Self.forEachPage(of: entity, in: coordinator) { page in
                    for row in page {
                        for relationship in ordered {
                            let inverse = model.inverse(of: relationship.name, of: entity)!.name
                            let members = try coordinator.relatedIDs(of: row.id, relationship: relationship.name)
                            for (index, member) in members.enumerated() {
                                found[member, default: [:]][inverse] = Self.position(index)
                            }
                        }
                    }
                }
                positions.merge(found) { old, new in old.merging(new) { _, latest in latest } }
            }
        }
    }

    /// Notes `count` more rows written.
    private mutating func advance(_ count: Int) {
        written += count
        progress?(written, total)
    }

    /// The rows of one hierarchy's table.
    mutating func writeRows(of hierarchy: CoreDataLayout.Hierarchy, into db: SQLiteConnection) throws {
        let names = ["Z_PK", "Z_ENT", "Z_OPT"] + hierarchy.columns.map(\.name)
        let index = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($0.element, $0.offset) })
        let insert = try db.statement(
            "INSERT INTO \(hierarchy.table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
        )
        for entity in exported(hierarchy) {
            counts[entity] = 0
            try Self.forEachPage(of: entity, in: coordinator) { page in
                for row in page {
                    try insert.bind(values(of: row, entity, in: hierarchy, names: names, index: index))
                    defer { insert.reset() }
                    while try insert.step() {}
                }
                counts[entity]! += page.count
                advance(page.count)
            }
        }
    }

    /// The column values of one object's row (`names` in order; `index` by name).
    private func values(
        of row: StoreRow, _ entity: String, in hierarchy: CoreDataLayout.Hierarchy, names: [String],
        index: [String: Int]
    ) -> [SQLiteValue] {
        var values = [SQLiteValue](repeating: .null, count: names.count)
        values[0] = .integer(place(of: row.id)!.primaryKey)
        values[1] = .integer(Int64(layout.numbers[entity]!))
        values[2] = .integer(max(row.version, 1))
        for (name, column) in hierarchy.attributes[entity] ?? [:] {
            guard let attribute = model.attribute(name, of: entity), let value = row.attributes[name] else {
                continue
            }
            values[index[column]!] = CoreDataValues.encode(value, attribute)
        }
        for (name, place) in hierarchy.toOne[entity] ?? [:] {
            guard let target = row.toOne[name] ?? nil, let destination = self.place(of: target) else { continue }
            values[index[place.column]!] = .integer(destination.primaryKey)
            if let column = place.entityColumn {
                values[index[column]!] = .integer(Int64(layout.numbers[destination.entity]!))
            }
            if let column = place.orderColumn, let position = positions[row.id]?[name] {
                values[index[column]!] = .integer(position)
            }
        }
        return values
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
        for entity in model.entityAndSubentities(of: join.entity) where isExported(entity) {
            try Self.forEachPage(of: entity, in: coordinator) { page in
                for row in page {
                    let members = try coordinator.relatedIDs(of: row.id, relationship: join.relationship)
                    for (position, member) in members.enumerated() {
                        guard let target = place(of: member) else { continue }
                        var values: [SQLiteValue] = [
                            .integer(place(of: row.id)!.primaryKey), .integer(target.primaryKey),
                        ]
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
        }
        return count
    }
}
