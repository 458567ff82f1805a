/// One key of a sort order.
public struct SortKey: Sendable, Hashable {
    /// The key that sorts by the objects themselves: their primary keys (store by store).
    public static let objectKey = "SELF"
    /// The key that sorts by relevance to the request's text searches
    /// (``FetchPredicate/textSearch(_:)``, see ``TextSearch/rank(_:)``); descending puts the most
    /// relevant first. Every store computes the same relevance.
    public static let rank = "@rank"

    /// The attribute to sort by, or ``objectKey``.
    public var key: String
    /// Ascending (default) or descending.
    public var ascending: Bool
    /// Compare strings ignoring case.
    public var caseInsensitive: Bool

    /// Creates a sort key.
    public init(_ key: String, ascending: Bool = true, caseInsensitive: Bool = false) {
        self.key = key
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }
}

/// What to fetch: an entity (and its subentities), a filter, an order and a window.
public struct FetchRequest: Sendable, Hashable {
    /// The entity to fetch.
    public var entityName: String
    /// Whether objects of subentities are included (default true, as in Core Data).
    public var includesSubentities: Bool
    /// The filter; nil matches every object.
    public var predicate: FetchPredicate?
    /// The order; objects with equal keys are ordered by primary key.
    public var sortDescriptors: [SortKey]
    /// The most objects to return.
    public var fetchLimit: Int?
    /// How many matching objects to skip.
    public var fetchOffset: Int
    /// The identifiers of the stores to search (Core Data's `affectedStores`); nil searches every
    /// store that holds the entity.
    public var affectedStores: Set<String>? = nil

    /// Creates a request.
    public init(
        entityName: String, predicate: FetchPredicate? = nil, sortDescriptors: [SortKey] = [],
        fetchLimit: Int? = nil, fetchOffset: Int = 0, includesSubentities: Bool = true
    ) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesSubentities = includesSubentities
    }
}

extension FetchRequest {
    /// Whether ties are broken by ascending object ID: the last sort key's direction (ascending
    /// without keys). `ORDER BY year DESC, _pk DESC` is an index on `year` read backwards, where
    /// `_pk ASC` would make SQLite sort each run of equal years before it could stop at the limit.
    public var tiesAscending: Bool { sortDescriptors.last?.ascending ?? true }

    /// Whether `lhs` comes before `rhs` in this request's order: by its sort keys, ties broken by
    /// ``ObjectID/precedes(_:_:)`` in the direction of the last key (``tiesAscending``). Every
    /// store, the coordinator across stores and contexts over their unsaved objects sort with this
    /// one comparator, so a page is the same wherever it is cut.
    func sortsBefore(_ lhs: StoreRow, _ rhs: StoreRow) -> Bool {
        for descriptor in sortDescriptors {
            if descriptor.key == SortKey.objectKey {
                if lhs.id == rhs.id { continue }
                return ObjectID.precedes(lhs.id, rhs.id) == descriptor.ascending
            }
            if descriptor.key == SortKey.rank {
                let left = predicate?.rank { lhs[attribute: $0] } ?? 0
                let right = predicate?.rank { rhs[attribute: $0] } ?? 0
                if left != right { return descriptor.ascending ? left < right : left > right }
                continue
            }
            let order = ValueOrdering.sortOrder(
                lhs[attribute: descriptor.key], rhs[attribute: descriptor.key],
                caseInsensitive: descriptor.caseInsensitive
            )
            if order != 0 { return descriptor.ascending ? order < 0 : order > 0 }
        }
        if lhs.id == rhs.id { return false }
        return ObjectID.precedes(lhs.id, rhs.id) == tiesAscending
    }

    /// The part of sorted `rows` this request's offset and limit select.
    func window(_ rows: [StoreRow]) -> [StoreRow] {
        let start = min(fetchOffset, rows.count)
        let end = fetchLimit.map { start + min(rows.count - start, $0) } ?? rows.count
        return start == 0 && end == rows.count ? rows : Array(rows[start..<end])
    }
}

extension FetchRequest {
    /// The first sort key that names neither an attribute of the entity nor the object itself.
    func unknownSortKey(in model: ObjectModel) -> String? {
        sortDescriptors.first {
            $0.key != SortKey.objectKey && $0.key != SortKey.rank && model.attribute($0.key, of: entityName) == nil
        }?.key
    }
}
