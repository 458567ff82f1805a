import Foundation

/// One group of a grouped count: how many objects have `value` for the counted key (an attribute's
/// value, or a to-one relationship's related primary key as an integer; null for none).
public struct ValueCount: Sendable, Hashable {
    /// The value shared by the group.
    public var value: AttributeValue
    /// How many objects have it.
    public var count: Int

    /// A group of `count` objects with `value`.
    public init(value: AttributeValue, count: Int) {
        self.value = value
        self.count = count
    }

    /// The groups of `rows` by `key`, counted in memory: by attribute value, or, when the rows
    /// hold `key` as a to-one relationship, by the related object's primary key.
    public static func counting(_ rows: [StoreRow], key: String) -> [ValueCount] {
        var counts: [AttributeValue: Int] = [:]
        for row in rows {
            let value: AttributeValue
            if let related = row.toOne[key] {
                value = related?.primaryKey.map { .integer($0) } ?? .null
            } else {
                value = row[attribute: key]
            }
            counts[value, default: 0] += 1
        }
        return counts.map { ValueCount(value: $0.key, count: $0.value) }
    }

    /// Refuses a key that is neither an attribute (other than a composite) nor a to-one
    /// relationship of `entity`.
    static func check(_ key: String, entity: String, model: ObjectModel) throws(StoreError) {
        if let attribute = model.attribute(key, of: entity), !attribute.isComposite { return }
        if let relationship = model.relationship(key, of: entity), !relationship.isToMany { return }
        throw StoreError(
            .invalidRequest, "cannot count by '\(key)': not an attribute or to-one relationship of \(entity)",
            entity: entity)
    }

    /// `request` over every match: no window and no order.
    static func unwindowed(_ request: FetchRequest) -> FetchRequest {
        var every = request
        every.fetchLimit = nil
        every.fetchOffset = 0
        every.sortDescriptors = []
        return every
    }
}

extension PersistentStore {
    /// How many objects matching `request` (its window ignored) have each value of `key`, an
    /// attribute or a to-one relationship (counted by related primary key), in no order. This
    /// default counts over the fetched rows; a store that can groups in its query language.
    /// The caller checks the key (``StoreCoordinator/valueCounts(_:key:)`` does).
    public func valueCounts(_ request: FetchRequest, key: String) throws(StoreError) -> [ValueCount] {
        ValueCount.counting(try fetch(ValueCount.unwindowed(request)), key: key)
    }
}

extension CommittedReads {
    /// ``PersistentStore/valueCounts(_:key:)`` over every store holding the entity, counted over
    /// the fetched rows (``StoreCoordinator`` asks each store instead).
    public func valueCounts(_ request: FetchRequest, key: String) throws(StoreError) -> [ValueCount] {
        try ValueCount.check(key, entity: request.entityName, model: model)
        return ValueCount.counting(try fetch(ValueCount.unwindowed(request)), key: key)
    }
}

extension StoreCoordinator {
    /// ``PersistentStore/valueCounts(_:key:)`` over every store holding the entity, the groups of
    /// equal values added up.
    public func valueCounts(_ request: FetchRequest, key: String) throws(StoreError) -> [ValueCount] {
        try ValueCount.check(key, entity: request.entityName, model: model)
        var counts: [AttributeValue: Int] = [:]
        for store in try holders(of: request) {
            for group in try store.valueCounts(request, key: key) { counts[group.value, default: 0] += group.count }
        }
        return counts.map { ValueCount(value: $0.key, count: $0.value) }
    }
}
