import Foundation

/// What an app's `NSEntityMigrationPolicy` subclass does, in Swift: the code an entity mapping
/// that names a custom policy class runs. Register one under that class name
/// (``StoreOptions/migrationPolicies``) and the mapping runs it instead of being refused.
///
/// The hooks are Core Data's, called in its order: ``createDestinationInstances(for:mapping:manager:)``
/// for every source object of the mapping, ``endInstanceCreation(for:manager:)``, then
/// ``createRelationships(for:mapping:manager:)`` for every destination object the mapping made,
/// and ``end(_:manager:)``. Each has the default behaviour of `NSEntityMigrationPolicy`, which
/// a policy calls through the manager (as a subclass calls `super`).
public protocol EntityMigrationPolicy: Sendable {
    /// Makes the destination objects of `source` (by default: one, with the mapping's values).
    func createDestinationInstances(for source: MigrationObject, mapping: EntityMapping, manager: MigrationManager)
        throws
    /// Called when every source object of `mapping` has its destination objects.
    func endInstanceCreation(for mapping: EntityMapping, manager: MigrationManager) throws
    /// Sets the relationships of `destination` (by default: from the mapping's expressions).
    func createRelationships(for destination: MigrationObject, mapping: EntityMapping, manager: MigrationManager)
        throws
    /// Called at the end of the entity mapping.
    func end(_ mapping: EntityMapping, manager: MigrationManager) throws
}

extension EntityMigrationPolicy {
    /// One destination object of `source`, with the mapping's values.
    public func createDestinationInstances(
        for source: MigrationObject, mapping: EntityMapping, manager: MigrationManager
    ) throws {
        try manager.createDefaultDestinationInstance(for: source, mapping: mapping)
    }

    /// Nothing.
    public func endInstanceCreation(for mapping: EntityMapping, manager: MigrationManager) throws {}

    /// The relationships of `destination` from the mapping's expressions.
    public func createRelationships(
        for destination: MigrationObject, mapping: EntityMapping, manager: MigrationManager
    ) throws {
        try manager.createDefaultRelationships(for: destination, mapping: mapping)
    }

    /// Nothing.
    public func end(_ mapping: EntityMapping, manager: MigrationManager) throws {}
}

/// An object of a migration: of the source store (as the source model version has it) or made
/// for the destination.
public struct MigrationObject: Sendable, Hashable {
    /// Its entity.
    public var entity: String
    /// Whether it is a destination object.
    public var isDestination: Bool
    let key: MappingRun.Key
}

/// The running migration of one mapping step, as a policy sees it (Core Data's
/// `NSMigrationManager`): source objects to read, destination objects to make and set, and which
/// destination objects each entity mapping made of which source objects.
public final class MigrationManager {
    let builder: MappingRun.Builder

    init(_ builder: MappingRun.Builder) { self.builder = builder }

    /// The source objects of `entity` (that entity exactly, not its subentities).
    public func sourceObjects(of entity: String) -> [MigrationObject] {
        (builder.graph.byEntity[entity] ?? []).map { MigrationObject(entity: entity, isDestination: false, key: $0) }
    }

    /// The value of `key` of a source object: an attribute, or a key path through relationships.
    public func value(_ key: String, of source: MigrationObject) -> AttributeValue {
        let path = key.split(separator: ".").map(String.init)
        let holder = builder.graph.objects(Array(path.dropLast()), from: source.key).first
        guard let holder, let entity = builder.graph.objects[holder]?.entity,
            let attribute = builder.step.old.attribute(path.last ?? "", of: entity)
        else { return .null }
        return MappingRun.decode(
            builder.graph.objects[holder]?.values[attribute.name] ?? .null, attribute.type)
    }

    /// The source objects relationship `name` of a source object holds.
    public func related(_ name: String, of source: MigrationObject) -> [MigrationObject] {
        builder.graph.related(source.key, name).map {
            MigrationObject(entity: builder.graph.objects[$0]!.entity, isDestination: false, key: $0)
        }
    }

    /// The destination objects entity mapping `name` made of `sources`.
    public func destinationObjects(forEntityMappingNamed name: String, sources: [MigrationObject]) -> [MigrationObject]
    {
        sources.compactMap { builder.made[name]?[$0.key] }.map(destination)
    }

    /// The destination objects of `entity` made so far.
    public func destinationObjects(of entity: String) -> [MigrationObject] {
        builder.order.filter { builder.objects[$0]?.entity == entity }.map(destination)
    }

    /// Makes a new destination object of `entity`, with its attributes' defaults.
    @discardableResult
    public func insertDestinationObject(of entity: String) throws -> MigrationObject {
        destination(try builder.insert(entity))
    }

    /// Records that entity mapping `mapping` made `destination` of `source`.
    public func associate(source: MigrationObject, destination: MigrationObject, mapping: EntityMapping) {
        builder.associate(source.key, destination.key, mapping: mapping.name)
    }

    /// The value of attribute `name` of a destination object.
    public func destinationValue(_ name: String, of object: MigrationObject) -> AttributeValue {
        guard let attribute = builder.step.new.attribute(name, of: object.entity) else { return .null }
        return MappingRun.decode(
            builder.objects[object.key]?.values[attribute.columnName] ?? .null, attribute.type)
    }

    /// Sets attribute `name` of a destination object.
    public func setValue(_ value: AttributeValue, _ name: String, of object: MigrationObject) throws {
        guard let attribute = builder.step.new.attribute(name, of: object.entity) else {
            throw MappingRun.failure("\(object.entity) has no attribute '\(name)'")
        }
        builder.objects[object.key]?.values[attribute.columnName] = SQLiteSchema.encode(value)
    }

    /// Adds `targets` to relationship `name` of a destination object (replaces a to-one's).
    public func relate(_ object: MigrationObject, _ name: String, to targets: [MigrationObject]) throws {
        guard builder.step.new.relationship(name, of: object.entity) != nil else {
            throw MappingRun.failure("\(object.entity) has no relationship '\(name)'")
        }
        try builder.link(object.key, name, targets.map(\.key), mappingName: "a migration policy")
    }

    /// What `NSEntityMigrationPolicy` does by default: one destination object of `source`, its
    /// attributes from the mapping's expressions.
    public func createDefaultDestinationInstance(for source: MigrationObject, mapping: EntityMapping) throws {
        try builder.createDestination(of: source.key, mapping: mapping)
    }

    /// What `NSEntityMigrationPolicy` does by default: the relationships of `destination` from the
    /// mapping's expressions.
    public func createDefaultRelationships(for destination: MigrationObject, mapping: EntityMapping) throws {
        guard let source = builder.made[mapping.name]?.first(where: { $0.value == destination.key })?.key else {
            return
        }
        try builder.setRelationships(of: destination.key, from: source, mapping: mapping)
    }

    private func destination(_ key: MappingRun.Key) -> MigrationObject {
        MigrationObject(entity: builder.objects[key]?.entity ?? "", isDestination: true, key: key)
    }
}
