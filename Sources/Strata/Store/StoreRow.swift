/// The stored state of one object, as stores read and write it.
///
/// `attributes` holds every attribute (nil values as `.null`); `toOne` holds every to-one
/// relationship (nil when empty). To-many relationships are read on demand with
/// ``PersistentStore/relatedIDs(of:relationship:)``; when a row is written, `toMany` holds the
/// to-many relationships whose contents the save sets.
public struct StoreRow: Sendable, Hashable {
    /// The object's ID.
    public var id: ObjectID
    /// The optimistic-locking version: 1 after the first save, one more after each update.
    public var version: Int64
    /// Attribute values by name.
    public var attributes: AttributeValues
    /// To-one relationships by name.
    public var toOne: [String: ObjectID?]
    /// To-many relationships by name, in order; only those being written.
    public var toMany: [String: [ObjectID]]

    /// Creates a row.
    public init(
        id: ObjectID, version: Int64 = 0, attributes: AttributeValues = [:],
        toOne: [String: ObjectID?] = [:], toMany: [String: [ObjectID]] = [:]
    ) {
        self.id = id
        self.version = version
        self.attributes = attributes
        self.toOne = toOne
        self.toMany = toMany
    }

    /// Creates a row from attribute values given as a dictionary.
    public init(
        id: ObjectID, version: Int64 = 0, attributes: [String: AttributeValue], toOne: [String: ObjectID?] = [:],
        toMany: [String: [ObjectID]] = [:]
    ) {
        self.init(id: id, version: version, attributes: AttributeValues(attributes), toOne: toOne, toMany: toMany)
    }

    /// The value of attribute `name`, `.null` when absent.
    public subscript(attribute name: String) -> AttributeValue { attributes[name] ?? .null }
}
