/// An attribute of an entity.
public struct AttributeDescription: Sendable, Hashable {
    /// The attribute's name, also its JSON member and (see ``columnName``) its column name.
    public var name: String
    /// The value type.
    public var type: AttributeType
    /// Whether the attribute may be nil (default `true`, as in Core Data).
    public var isOptional: Bool = true
    /// The value an inserted object starts with.
    public var defaultValue: AttributeValue? = nil
    /// Smallest allowed value (numbers and dates).
    public var minValue: AttributeValue? = nil
    /// Largest allowed value (numbers and dates).
    public var maxValue: AttributeValue? = nil
    /// Shortest allowed length (strings: characters; binary: bytes).
    public var minLength: Int? = nil
    /// Longest allowed length (strings: characters; binary: bytes).
    public var maxLength: Int? = nil
    /// A regular expression a string value must match in full.
    public var regex: String? = nil
    /// The name this attribute had in the previous model version.
    public var renamedFrom: String? = nil
    /// Documentation shown in the OpenAPI document.
    public var documentation: String? = nil
    /// Core Data's version hash modifier: changing it changes the version hash (forcing a
    /// migration) although nothing else changed.
    public var versionHashModifier: String? = nil
    /// For a derived attribute: the expression its value is computed from on every save (see
    /// ``Derivation``); it cannot be set.
    public var derivation: String? = nil
    /// What a Core Data model says of the attribute beyond its type, when it was read from one.
    public var coreData: CoreDataAttributeInfo? = nil
    /// For a composite attribute (Core Data's `NSCompositeAttributeDescription`): its elements, each
    /// an attribute of its own with a name, type, optionality and default (an element with elements
    /// is a nested composite). Its value is a JSON object with one member per element, so its
    /// ``type`` is ``AttributeType/json``; nil for any other attribute.
    public var elements: [AttributeDescription]? = nil
    /// Whether the attribute is searchable: the stores keep a full-text index of its words (SQLite
    /// FTS5, a PostgreSQL `tsvector` with a GIN index) in the same transaction as every save, and
    /// ``FetchPredicate/textSearch(_:)`` reads it. Only string attributes can be searchable.
    public var isSearchable = false
    /// Set by ``ObjectModel`` when another entity of the hierarchy declares an attribute of the same
    /// name with another type: the column this one's values take instead of `name`.
    var suffixedColumn: String? = nil

    /// The column that holds the attribute in its hierarchy's table: its name, or, when an entity
    /// of the same hierarchy (not an ancestor) declares an attribute of that name with another
    /// type, the name with a numeric suffix (`duration1`), as Core Data names such columns.
    public var columnName: String { suffixedColumn ?? name }

    /// Creates an attribute.
    public init(
        name: String, type: AttributeType, isOptional: Bool = true, defaultValue: AttributeValue? = nil,
        minValue: AttributeValue? = nil, maxValue: AttributeValue? = nil, minLength: Int? = nil,
        maxLength: Int? = nil, regex: String? = nil, renamedFrom: String? = nil, documentation: String? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
        self.minValue = minValue
        self.maxValue = maxValue
        self.minLength = minLength
        self.maxLength = maxLength
        self.regex = regex
        self.renamedFrom = renamedFrom
        self.documentation = documentation
    }
}

/// A relationship from one entity to another.
public struct RelationshipDescription: Sendable, Hashable {
    /// The relationship's name.
    public var name: String
    /// The entity at the other end.
    public var destination: String
    /// The relationship at the other end that points back here.
    public var inverse: String?
    /// Whether it holds many objects.
    public var isToMany: Bool = false
    /// Whether a to-many relationship keeps its order.
    public var isOrdered: Bool = false
    /// Whether it may be empty (to-one: nil).
    public var isOptional: Bool = true
    /// What deleting the source does to the destination objects.
    public var deleteRule: DeleteRule = .nullify
    /// Fewest related objects (to-many).
    public var minCount: Int? = nil
    /// Most related objects (to-many).
    public var maxCount: Int? = nil
    /// The name this relationship had in the previous model version.
    public var renamedFrom: String? = nil
    /// Documentation shown in the OpenAPI document.
    public var documentation: String? = nil
    /// Core Data's version hash modifier (see ``AttributeDescription/versionHashModifier``).
    public var versionHashModifier: String? = nil
    /// The counts a Core Data model wrote for the relationship, when it was read from one.
    public var coreData: CoreDataRelationshipInfo? = nil

    /// Creates a relationship.
    public init(
        name: String, destination: String, inverse: String?, isToMany: Bool = false, isOrdered: Bool = false,
        isOptional: Bool = true, deleteRule: DeleteRule = .nullify, minCount: Int? = nil, maxCount: Int? = nil,
        renamedFrom: String? = nil, documentation: String? = nil
    ) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = isToMany
        self.isOrdered = isOrdered
        self.isOptional = isOptional
        self.deleteRule = deleteRule
        self.minCount = minCount
        self.maxCount = maxCount
        self.renamedFrom = renamedFrom
        self.documentation = documentation
    }
}

/// What a Core Data model says of an attribute that its Strata type does not: Core Data's version
/// hash of the entity and the import of a store Core Data wrote need it.
public struct CoreDataAttributeInfo: Sendable, Hashable {
    /// The `attributeType` it was declared with (`Transformable`, `Composite`, `Integer 32`, ...).
    public var attributeType: String
    /// A Transformable attribute's `valueTransformerName` (nil: Core Data's default keyed archiver).
    public var valueTransformerName: String?
    /// `allowsExternalBinaryDataStorage`: a store may keep the bytes in a file of their own.
    public var allowsExternalBinaryDataStorage: Bool
    /// `preserveAfterDeletion` (persistent history keeps the value of a deleted object).
    public var preservesValueInHistoryOnDeletion: Bool

    /// Creates the information.
    public init(
        attributeType: String, valueTransformerName: String? = nil, allowsExternalBinaryDataStorage: Bool = false,
        preservesValueInHistoryOnDeletion: Bool = false
    ) {
        self.attributeType = attributeType
        self.valueTransformerName = valueTransformerName
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
    }
}

/// The counts a Core Data model wrote for a relationship (0 for none), as its version hash uses
/// them: a to-one keeps its `minCount` here although Strata reads optionality alone.
public struct CoreDataRelationshipInfo: Sendable, Hashable {
    /// `minCount`, 0 when absent.
    public var minCount: Int
    /// `maxCount`, 0 when absent (1 for a to-one).
    public var maxCount: Int

    /// Creates the information.
    public init(minCount: Int, maxCount: Int) {
        self.minCount = minCount
        self.maxCount = maxCount
    }
}

/// A fetched property: a stored query, evaluated by the coordinator, that may read other stores.
public struct FetchedPropertyDescription: Sendable, Hashable {
    /// The property's name.
    public var name: String
    /// The entity it fetches.
    public var entity: String
    /// The predicate format string; `$FETCH_SOURCE` is the object the property is read from.
    public var predicate: String
    /// Documentation shown in the OpenAPI document.
    public var documentation: String? = nil

    /// Creates a fetched property.
    public init(name: String, entity: String, predicate: String, documentation: String? = nil) {
        self.name = name
        self.entity = entity
        self.predicate = predicate
        self.documentation = documentation
    }
}

/// An index over one or more properties of an entity.
public struct IndexDescription: Sendable, Hashable {
    /// The index name.
    public var name: String
    /// The indexed properties, in order.
    public var properties: [String]
    /// The properties ordered descending in the index (Core Data's fetch index elements).
    public var descending: Set<String> = []

    /// Creates an index.
    public init(name: String, properties: [String], descending: Set<String> = []) {
        self.name = name
        self.properties = properties
        self.descending = descending
    }
}

/// A named fetch request of the model (Core Data's fetch request template): an entity and a
/// predicate whose `$VARIABLES` are filled in when it is used.
public struct FetchRequestTemplate: Sendable, Hashable {
    /// The name it is used by (`GET /books?query=recentBooks`).
    public var name: String
    /// The entity it fetches.
    public var entity: String
    /// The predicate format string; empty matches every object.
    public var predicate: String
    /// Documentation shown in the OpenAPI document.
    public var documentation: String? = nil

    /// Creates a template.
    public init(name: String, entity: String, predicate: String, documentation: String? = nil) {
        self.name = name
        self.entity = entity
        self.predicate = predicate
        self.documentation = documentation
    }
}

/// What a server lets clients do with an entity's objects (not part of the model's hashes).
public enum EntityAccess: String, Sendable, Hashable, CaseIterable {
    /// Read and write (the default).
    case readWrite = "read-write"
    /// Read only: writes are answered 405.
    case readOnly = "read-only"
    /// Not served at all: 404, and absent from `/` and the OpenAPI document.
    case hidden
}

/// An entity: a kind of object with attributes and relationships.
public struct EntityDescription: Sendable, Hashable {
    /// The entity's name.
    public var name: String
    /// The parent entity, whose properties this one inherits.
    public var parent: String? = nil
    /// Whether only subentities can be instantiated.
    public var isAbstract: Bool = false
    /// The attributes declared by this entity (not inherited ones), in declaration order.
    public var attributes: [AttributeDescription] = []
    /// The relationships declared by this entity, in declaration order.
    public var relationships: [RelationshipDescription] = []
    /// The fetched properties declared by this entity.
    public var fetchedProperties: [FetchedPropertyDescription] = []
    /// Sets of properties whose values together must be unique.
    public var uniqueness: [[String]] = []
    /// Indexes.
    public var indexes: [IndexDescription] = []
    /// The REST resource path segment, overriding the derived plural kebab-case name.
    public var resource: String? = nil
    /// The name this entity had in the previous model version.
    public var renamedFrom: String? = nil
    /// Documentation shown in the OpenAPI document.
    public var documentation: String? = nil
    /// Core Data's version hash modifier (see ``AttributeDescription/versionHashModifier``).
    public var versionHashModifier: String? = nil
    /// What a server lets clients do with its objects; nil: as its parent entity (read-write at
    /// the top). JSON `"access"`, Core Data `userInfo` key `access`.
    public var access: EntityAccess? = nil

    /// Creates an entity.
    public init(
        name: String, parent: String? = nil, isAbstract: Bool = false, attributes: [AttributeDescription] = [],
        relationships: [RelationshipDescription] = [], fetchedProperties: [FetchedPropertyDescription] = [],
        uniqueness: [[String]] = [], indexes: [IndexDescription] = [], resource: String? = nil,
        renamedFrom: String? = nil, documentation: String? = nil
    ) {
        self.name = name
        self.parent = parent
        self.isAbstract = isAbstract
        self.attributes = attributes
        self.relationships = relationships
        self.fetchedProperties = fetchedProperties
        self.uniqueness = uniqueness
        self.indexes = indexes
        self.resource = resource
        self.renamedFrom = renamedFrom
        self.documentation = documentation
    }
}

/// A named set of entities; each store is added for one configuration.
public struct ConfigurationDescription: Sendable, Hashable {
    /// The configuration's name.
    public var name: String
    /// The member entities.
    public var entities: [String]

    /// Creates a configuration.
    public init(name: String, entities: [String]) {
        self.name = name
        self.entities = entities
    }
}
