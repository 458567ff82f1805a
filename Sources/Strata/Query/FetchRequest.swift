/// One key of a sort order.
public struct SortKey: Sendable, Hashable {
    /// The attribute to sort by.
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
