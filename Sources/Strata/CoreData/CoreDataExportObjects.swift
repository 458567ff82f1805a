import Foundation

/// The objects an export writes, read from a ``StoreCoordinator`` page by page in primary-key
/// order (never all at once): those its filters keep, of the entities the target version has (see
/// ``CoreDataExportMapping``), with their Core Data primary keys. An object keeps its own primary
/// key when no other object of its hierarchy (from another store) has it, and gets the next free
/// one otherwise.
///
/// A hierarchy held by one store (the usual case) keeps every key, and nothing is remembered per
/// object; only a hierarchy spread over several stores keeps the keys of the objects renumbered,
/// and only a filtered entity the IDs of the objects its filter keeps. The positions of objects in
/// ordered to-many relationships kept by their inverse to-one are remembered per member.
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
    /// Source entities whose objects are not written (see ``CoreDataExportOptions/leavingOut``).
    let leavingOut: Set<String>
    /// Source entity → its entity in the target version.
    private let targets: [String: String]
    /// Called after each page written with the objects written so far and the total.
    var progress: ((Int, Int) -> Void)?
    /// The objects of hierarchies spread over several stores that got a new primary key.
    private var renumbered: [ObjectID: Place] = [:]
    /// Target entity → the objects its filter keeps, for the filtered entities.
    private var kept: [String: Set<ObjectID>] = [:]
    /// The last primary key of each hierarchy, by root.
    private(set) var maxPrimaryKey: [String: Int64] = [:]
    /// The position (`Z_FOK_`) of an object in the ordered to-many that holds it, by its to-one.
    private var positions: [ObjectID: [String: Int64]] = [:]
    /// Objects written per entity.
    private(set) var counts: [String: Int] = [:]
    /// How many objects the export holds, and how many rows are written so far.
    private(set) var total = 0
    private var written = 0

    /// The version written.
    var model: ObjectModel { mapping.target }

    /// How many objects one read takes.
    static let pageSize = 2_000

    /// Core Data's sparse positions of an ordered relationship: 2048, 3072, ...
    static func position(_ index: Int) -> Int64 { Int64(index + 2) * 1024 }

    init(
        mapping: CoreDataExportMapping, layout: CoreDataLayout, coordinator: StoreCoordinator,
        filters: [String: FetchPredicate], leavingOut: Set<String> = []
    ) throws(StoreError) {
        self.mapping = mapping
        self.layout = layout
        self.coordinator = coordinator
        self.filters = filters
        self.leavingOut = leavingOut
        targets = Dictionary(mapping.entities.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        do {
            for hierarchy in layout.hierarchies { try number(hierarchy) }
            try readPositions()
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.io, "cannot read the objects to export: \(error)")
        }
    }

    /// The source entity of target entity `entity` when the export writes its objects.
    private func source(of entity: String) -> String? {
        guard model.entity(named: entity)?.isAbstract != true, let source = mapping.entities[entity],
            !leavingOut.contains(source), !coordinator.stores(for: source).isEmpty
        else { return nil }
        return source
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

    /// Counts the objects of `hierarchy`, notes those its filters keep, and finds its last key;
    /// renumbers clashing keys when its objects live in several stores.
    private mutating func number(_ hierarchy: CoreDataLayout.Hierarchy) throws {
        let entities = hierarchy.family.filter { source(of: $0) != nil }
        var holders: Set<String> = []
        for entity in entities {
            let source = source(of: entity)!
            holders.formUnion(coordinator.stores(for: source).map(\.identifier))
            let count = try coordinator.count(
                FetchRequest(entityName: source, predicate: predicate(for: source), includesSubentities: false))
            if count > 0, let problems = mapping.problems[entity] {
                throw StoreError(
                    .invalidRequest,
                    "cannot export the \(count) objects of \(source) for version \(model.name): "
                        + problems.joined(separator: "; "))
            }
            total += count
            if predicate(for: source) != nil {
                var ids: Set<ObjectID> = []
                try forEachPage(of: entity) { page in for row in page { ids.insert(row.id) } }
                kept[entity] = ids
            }
        }
        guard holders.count > 1 else {
            var last: Int64 = 0
            for entity in entities {
                if let kept = kept[entity] {
                    last = max(last, kept.compactMap(\.primaryKey).max() ?? 0)
                    continue
                }
                for store in coordinator.stores(for: source(of: entity)!) {
                    var request = FetchRequest(
                        entityName: source(of: entity)!,
                        sortDescriptors: [SortKey(SortKey.objectKey, ascending: false)],
                        fetchLimit: 1)
                    request.includesSubentities = false
                    last = max(last, try store.fetch(request).first?.id.primaryKey ?? 0)
                }
            }
            maxPrimaryKey[hierarchy.root] = last
            return
        }
        var used: Set<Int64> = []
        var clashing: [ObjectID] = []
        for entity in entities {
            try forEachPage(of: entity) { page in
                for row in page {
                    if let key = row.id.primaryKey, key > 0, used.insert(key).inserted { continue }
                    clashing.append(row.id)
                }
            }
        }
        var next = (used.max() ?? 0) + 1
        for id in clashing {
            renumbered[id] = Place(primaryKey: next, entity: targets[id.entityName] ?? id.entityName)
            next += 1
        }
        maxPrimaryKey[hierarchy.root] = next - 1
    }

    /// Calls `body` with the objects of exactly target entity `entity` the export writes, store by
    /// store, in pages of ``pageSize`` in primary-key order.
    func forEachPage(of entity: String, _ body: ([StoreRow]) throws -> Void) throws {
        guard let source = source(of: entity) else { return }
        if let predicate = predicate(for: source) {
            let rows = try coordinator.fetch(
                FetchRequest(entityName: source, predicate: predicate, includesSubentities: false)
            ).sorted { ($0.id.primaryKey ?? 0) < ($1.id.primaryKey ?? 0) }
            for start in stride(from: 0, to: rows.count, by: Self.pageSize) {
                try body(Array(rows[start..<min(rows.count, start + Self.pageSize)]))
            }
            return
        }
        for store in coordinator.stores(for: source) {
            var after: Int64 = 0
            var offset = 0
            while true {
                let page: [StoreRow]
                if let file = store as? SQLiteStore {
                    page = try file.rows(of: source, after: after, limit: Self.pageSize)
                } else if let shared = store as? PostgreSQLStore {
                    page = try shared.rows(of: source, after: after, limit: Self.pageSize)
                } else {
                    var request = FetchRequest(
                        entityName: source, sortDescriptors: [SortKey(SortKey.objectKey)], fetchLimit: Self.pageSize)
                    request.includesSubentities = false
                    request.fetchOffset = offset
                    page = try store.fetch(request)
                }
                guard let last = page.last else { break }
                try body(page)
                after = last.id.primaryKey ?? after
                offset += page.count
                if page.count < Self.pageSize { break }
            }
        }
    }

    /// Where object `id` (of the source model) goes in the new store: nil when the export leaves
    /// it out.
    func place(of id: ObjectID) -> Place? {
        guard let entity = targets[id.entityName], source(of: entity) != nil else { return nil }
        if let kept = kept[entity], !kept.contains(id) { return nil }
        if !renumbered.isEmpty, let place = renumbered[id] { return place }
        guard let key = id.primaryKey, key > 0 else { return nil }
        return Place(primaryKey: key, entity: entity)
    }

    /// The object `row`'s to-one `relationship` (of the target version) leads to, when the export
    /// holds it as an object of the relationship's destination.
    private func destination(of row: StoreRow, _ relationship: RelationshipDescription, entity: String) -> Place? {
        guard let name = mapping.sourceRelationship(relationship.name, of: entity), let id = row.toOne[name] ?? nil,
            let place = place(of: id), model.entity(place.entity, isKindOf: relationship.destination)
        else { return nil }
        return place
    }

    /// Refuses a kept object whose required to-one `relationship` would be empty in the store.
    private func refuse(_ row: StoreRow, _ relationship: RelationshipDescription, entity: String) -> StoreError {
        let object = "\(row.id.entityName) \(row.id.primaryKey.map(String.init) ?? "?")"
        guard let name = mapping.sourceRelationship(relationship.name, of: entity), let target = row.toOne[name] ?? nil
        else {
            return StoreError(
                .invalidRequest,
                "cannot export \(object): its relationship \(relationship.name) is required in version \(model.name) and empty in the data"
            )
        }
        return StoreError(
            .invalidRequest,
            "cannot export \(object): its required relationship \(relationship.name) leads to \(target.entityName) \(target.primaryKey.map(String.init) ?? "?"), which the export leaves out"
        )
    }

    /// The positions of objects in ordered to-many relationships kept by their inverse to-one.
    private mutating func readPositions() throws {
        for hierarchy in layout.hierarchies {
            for entity in hierarchy.family where source(of: entity) != nil {
                var ordered: [(name: String, inverse: String)] = []
                for relationship in model.relationships(of: entity)
                where relationship.isToMany && relationship.isOrdered {
                    guard let inverse = model.inverse(of: relationship.name, of: entity), !inverse.isToMany,
                        let name = mapping.sourceRelationship(relationship.name, of: entity)
                    else { continue }
                    ordered.append((name, inverse.name))
                }
                guard !ordered.isEmpty else { continue }
                var found: [ObjectID: [String: Int64]] = [:]
                try forEachPage(of: entity) { page in
                    for row in page {
                        for (name, inverse) in ordered {
                            let members = try coordinator.relatedIDs(of: row.id, relationship: name)
                            for (index, member) in members.filter({ place(of: $0) != nil }).enumerated() {
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
    mutating func writeRows(
        of hierarchy: CoreDataLayout.Hierarchy, into db: SQLiteConnection, values: inout CoreDataExportValues
    ) throws {
        let names = ["Z_PK", "Z_ENT", "Z_OPT"] + hierarchy.columns.map(\.name)
        let index = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($0.element, $0.offset) })
        let insert = try db.statement(
            "INSERT INTO \(hierarchy.table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
        )
        for entity in hierarchy.family where source(of: entity) != nil {
            counts[entity] = 0
            try forEachPage(of: entity) { page in
                for row in page {
                    let columns = try self.columns(
                        of: row, entity, in: hierarchy, names: names, index: index, values: &values)
                    try insert.bind(columns)
                    defer { insert.reset() }
                    while try insert.step() {}
                }
                counts[entity]! += page.count
                advance(page.count)
            }
        }
    }

    /// The column values of one object's row (`names` in order; `index` by name).
    private func columns(
        of row: StoreRow, _ entity: String, in hierarchy: CoreDataLayout.Hierarchy, names: [String],
        index: [String: Int], values: inout CoreDataExportValues
    ) throws -> [SQLiteValue] {
        var columns = [SQLiteValue](repeating: .null, count: names.count)
        columns[0] = .integer(place(of: row.id)!.primaryKey)
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
            guard let place = hierarchy.toOne[entity]?[relationship.name] else { continue }
            guard let destination = destination(of: row, relationship, entity: entity) else {
                if !relationship.isOptional { throw refuse(row, relationship, entity: entity) }
                continue
            }
            columns[index[place.column]!] = .integer(destination.primaryKey)
            if let column = place.entityColumn {
                columns[index[column]!] = .integer(Int64(layout.numbers[destination.entity]!))
            }
            if let column = place.orderColumn, let position = positions[row.id]?[relationship.name] {
                columns[index[column]!] = .integer(position)
            }
        }
        return columns
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
        for entity in model.entityAndSubentities(of: join.entity) where source(of: entity) != nil {
            guard let name = mapping.sourceRelationship(join.relationship, of: entity) else { continue }
            try forEachPage(of: entity) { page in
                for row in page {
                    let members = try coordinator.relatedIDs(of: row.id, relationship: name).filter {
                        place(of: $0).map { model.entity($0.entity, isKindOf: destination) } ?? false
                    }
                    for (position, member) in members.enumerated() {
                        let target = place(of: member)!
                        var values: [SQLiteValue] = [
                            .integer(place(of: row.id)!.primaryKey), .integer(target.primaryKey),
                        ]
                        if join.sourceOrder != nil, let inverse = join.inverse {
                            if inverseLists[member] == nil {
                                let inverseName = mapping.sourceRelationship(inverse, of: target.entity)
                                inverseLists[member] =
                                    try inverseName.map {
                                        try coordinator.relatedIDs(of: member, relationship: $0).filter {
                                            place(of: $0) != nil
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
        }
        return count
    }
}
