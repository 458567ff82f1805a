import Foundation

/// One change a lightweight migration makes to a store, inferred by comparing two model versions.
public struct MigrationChange: Sendable, Hashable, CustomStringConvertible {
    /// What kind of change it is.
    public enum Kind: String, Sendable, Hashable {
        /// A new entity: its table or columns are created, empty.
        case addEntity
        /// An entity the new model no longer has (or no longer puts in this store): its objects are deleted.
        case removeEntity
        /// An entity renamed (`renamedFrom`): its objects keep their keys.
        case renameEntity
        /// An abstract entity that became concrete.
        case makeConcrete
        /// A new attribute, optional or with a default that existing objects take.
        case addAttribute
        /// An attribute the new model no longer has: its values are dropped.
        case removeAttribute
        /// An attribute renamed (`renamedFrom`): its values are kept.
        case renameAttribute
        /// A required attribute that became optional.
        case makeOptional
        /// An optional attribute that became required; objects without a value take the default, or,
        /// with no default, the migration is refused when an object has no value.
        case makeRequired
        /// An integer type widened (16 → 32 → 64 bits) or `float` → `double`: values are kept as they are.
        case widenType
        /// A numeric type changed to another (integers of any width, `double`, `float`, `decimal`):
        /// values are converted, and the migration is refused when one does not fit the new type.
        /// A `boolean` becomes 1 or 0 of a numeric type, and a number becomes a `boolean` as
        /// `NSNumber.boolValue` reads it (zero is false, anything else true).
        case convertType
        /// A new relationship, empty for existing objects.
        case addRelationship
        /// A relationship the new model no longer has.
        case removeRelationship
        /// A relationship renamed (`renamedFrom`): its contents are kept.
        case renameRelationship
        /// A required to-one relationship that became optional.
        case makeRelationshipOptional
        /// A to-one relationship that became to-many: each object's destination becomes its single
        /// member (in a join table when its inverse is to-many or it has none).
        case makeToMany
        /// A to-many relationship that became to-one: each object's single member becomes its
        /// destination (none: nil); the migration is refused when an object has more than one.
        case makeToOne
        /// An unordered to-many relationship that became ordered: each object's members are ordered
        /// by their primary keys (Core Data makes an ordered set of an unordered one, whose order
        /// it does not define).
        case makeOrdered
        /// An ordered to-many relationship that became unordered: its members are kept, their
        /// order dropped.
        case makeUnordered
        /// A relationship whose destination entity changed: links to objects that become objects
        /// of the new destination (the old one renamed, or an entity of its hierarchy that is
        /// kind of the new one) are kept, the others dropped, as Core Data's inferred mapping
        /// gives a relationship the objects its old members become.
        case changeDestination
        /// A to-many relationship that gained a new to-one inverse, through whose column it is
        /// read: its links fill that column; the migration is refused when an object is a member
        /// of more than one object's (a to-one holds one).
        case gainInverse
        /// A new index.
        case addIndex
        /// An index the new model no longer has.
        case removeIndex
        /// A new uniqueness constraint; the migration fails if existing objects break it.
        case addUniqueness
        /// A uniqueness constraint the new model no longer has.
        case removeUniqueness
        /// An entity mapping of a mapping model (``MappingModel``) makes the entity's objects.
        case entityMapping
    }

    /// What kind of change it is.
    public var kind: Kind
    /// The entity concerned (its name in the new model, or in the old one when it is removed).
    public var entity: String
    /// The property or index concerned, if any.
    public var property: String?
    /// A sentence describing the change.
    public var message: String

    /// Creates a change.
    public init(_ kind: Kind, entity: String, property: String? = nil, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.property = property
        self.message = message
    }

    /// The change as one line: where, then what.
    public var description: String {
        "\(entity)\(property.map { ".\($0)" } ?? ""): \(message)"
    }
}

/// A difference between two model versions that a lightweight migration cannot infer.
public struct MigrationRefusal: Sendable, Hashable, CustomStringConvertible {
    /// Why the change cannot be migrated.
    public enum Kind: String, Sendable, Hashable {
        /// An attribute's type changed to one that Core Data's inferred mappings do not convert
        /// (anything but numeric, Boolean included, to numeric): a mapping model is needed.
        case typeChange
        /// A required attribute was added with no default value.
        case requiredWithoutDefault
        /// A to-one relationship was added as required, or made required.
        case requiredRelationship
        /// A relationship whose contents its new storage cannot take: a to-many read through an
        /// inverse's column that is not its old inverse's.
        case relationshipShape
        /// An entity changed its parent entity.
        case parentChange
        /// A concrete entity became abstract.
        case madeAbstract
        /// The store's configuration is missing from a model version.
        case configurationMissing
        /// The store's model cannot be told (no recorded model and no matching version in the history).
        case unknownStoreModel
        /// The store is at a newer model version than the model it is opened with.
        case downgrade
        /// A mapping model (``MappingModel``) names a custom migration policy or an expression
        /// that Strata does not evaluate.
        case mappingModel
        /// The store's data does not fit the new model: an object with no value for an attribute
        /// that becomes required with no default, a value out of an attribute's new type, or more
        /// than one member in a to-many that becomes to-one.
        case dataDoesNotFit
    }

    /// Why the change cannot be migrated.
    public var kind: Kind
    /// The entity concerned, if any.
    public var entity: String?
    /// The property concerned, if any.
    public var property: String?
    /// A sentence saying what cannot be migrated and, where it helps, what to do.
    public var message: String

    /// Creates a refusal.
    public init(_ kind: Kind, entity: String? = nil, property: String? = nil, _ message: String) {
        self.kind = kind
        self.entity = entity
        self.property = property
        self.message = message
    }

    /// The refusal as one line: where, then why.
    public var description: String {
        var place = entity ?? ""
        if let property { place += place.isEmpty ? property : ".\(property)" }
        return place.isEmpty ? message : "\(place): \(message)"
    }
}

/// One step of a migration: inferred from the store's version to the model (or between mapping
/// models' versions), or given by a mapping model from its source version to its destination.
public struct MigrationStep: Sendable {
    /// The version identifier of the model the step starts from.
    public var fromVersion: String?
    /// The version identifier of the model the step leads to.
    public var toVersion: String?
    /// What the step changes.
    public var changes: [MigrationChange]
    /// What the step cannot migrate.
    public var refusals: [MigrationRefusal]

    let old: ObjectModel
    let new: ObjectModel
    let oldEntities: [String]
    let newEntities: [String]
    let mapping: MigrationMapping
    /// The mapping model the step runs instead of an inferred migration, if any.
    public internal(set) var mappingModel: MappingModel? = nil
    /// The registered policies of the mapping model's policy classes, by class name.
    var policies: [String: any EntityMigrationPolicy] = [:]
    /// What the store's data must satisfy for the step to run, checked before it writes anything.
    var checks: [MigrationCheck] = []
}

/// A condition on a store's data that a step needs and its models alone cannot tell: checked in
/// the migration's transaction before the step writes anything; when it fails, the migration is
/// refused with a ``MigrationCheck/Failure`` and the store is left as it was.
enum MigrationCheck: Sendable, Hashable {
    /// Every object of `entity` (`oldEntity` in the store) has a value in old column `column`,
    /// for an attribute that becomes required with no default.
    case hasValue(entity: String, oldEntity: String, attribute: String, column: String)
    /// Every value of old column `column` of `oldEntity`'s objects fits type `to`.
    case fits(
        entity: String, oldEntity: String, attribute: String, column: String, from: AttributeType, to: AttributeType)
    /// Every object of `entity` has at most one member in old to-many `oldRelationship` of
    /// `oldEntity`, which becomes to-one `relationship`; the pairs are kept in temporary table
    /// ``membersTable(entity:relationship:)`` for the copy.
    case atMostOneMember(entity: String, relationship: String, oldEntity: String, oldRelationship: String)
    /// Every object of `entity` is a member of at most one object's old to-many `oldRelationship`
    /// of `oldEntity`, whose links fill new to-one `relationship` (the new inverse of that
    /// to-many); the pairs, turned around, are kept in ``membersTable(entity:relationship:)``.
    case atMostOneOwner(entity: String, relationship: String, oldEntity: String, oldRelationship: String)

    /// The members table a check fills: (entity, relationship, old entity, old relationship,
    /// whether the old pairs are turned around); nil for a check that fills none.
    var members: (entity: String, relationship: String, oldEntity: String, oldRelationship: String, reversed: Bool)? {
        switch self {
        case .atMostOneMember(let entity, let relationship, let oldEntity, let oldRelationship):
            (entity, relationship, oldEntity, oldRelationship, false)
        case .atMostOneOwner(let entity, let relationship, let oldEntity, let oldRelationship):
            (entity, relationship, oldEntity, oldRelationship, true)
        case .hasValue, .fits: nil
        }
    }

    /// The temporary table holding the (owner, member) pairs of a to-many becoming to-one.
    static func membersTable(entity: String, relationship: String) -> String {
        "_strata_members_\(entity)_\(relationship)"
    }

    /// A failed check: what the data holds that the new model cannot.
    struct Failure: Error, Sendable, Hashable {
        /// A sentence naming the entity, the property, how many objects and an example.
        var message: String
    }
}

/// How a store gets from the model it was written with to the model it is opened with.
public struct MigrationPlan: Sendable {
    /// The store's file.
    public var storeURL: URL?
    /// The store's configuration (nil: every entity).
    public var configuration: String?
    /// The steps, in order: one inferred step from the store's version to the model, or, with
    /// mapping models (``using(_:policies:)``), each mapping model's step and inferred steps between.
    public var steps: [MigrationStep]
    /// Problems that are not about one step (no recorded model, a downgrade, …).
    public var globalRefusals: [MigrationRefusal]
    /// The model the store was written with, when it needs migrating.
    var origin: ObjectModel? = nil
    /// The model the store is opened with.
    var target: ObjectModel? = nil
    /// The model versions given, in the order that places mapping models between the two.
    var history: [ObjectModel] = []

    /// Every refusal: the global ones, then each step's.
    public var refusals: [MigrationRefusal] { globalRefusals + steps.flatMap(\.refusals) }

    /// Whether the migration can run (nothing refused).
    public var isPossible: Bool { refusals.isEmpty }

    /// Every change of every step.
    public var changes: [MigrationChange] { steps.flatMap(\.changes) }

    /// A multi-line description: each step with its changes and refusals.
    public var summary: String {
        var lines: [String] = []
        for refusal in globalRefusals { lines.append("cannot migrate: \(refusal)") }
        for step in steps {
            let through = step.mappingModel.map { " (mapping model \($0.name))" } ?? ""
            lines.append("step \(step.fromVersion ?? "?") → \(step.toVersion ?? "?")\(through):")
            for change in step.changes { lines.append("  \(change.kind.rawValue) \(change)") }
            for refusal in step.refusals { lines.append("  cannot migrate (\(refusal.kind.rawValue)) \(refusal)") }
        }
        return lines.joined(separator: "\n")
    }

    /// The plan with what the store's data holds that its first step's new model cannot, found
    /// by `refusals` (which reads the data as it is), among that step's refusals. Later steps
    /// start from data the earlier ones convert: they are checked when they run.
    func checkingData(_ refusals: (MigrationStep) -> [MigrationRefusal]) -> MigrationPlan {
        guard let first = steps.first, first.mappingModel == nil, !first.checks.isEmpty else { return self }
        var plan = self
        plan.steps[0].refusals += refusals(first)
        return plan
    }

    /// One line naming every refused change, for errors.
    var refusalMessage: String {
        let mapped = refusals.contains { $0.kind == .mappingModel }
        let data = refusals.allSatisfy { $0.kind == .dataDoesNotFit }
        return "the store cannot be migrated to the model; "
            + (mapped
                ? "the migration cannot run: "
                : data ? "its data does not fit the new model: " : "lightweight migration cannot infer: ")
            + refusals.map(\.description).joined(separator: "; ")
    }
}

/// How old columns, entities and relationships map to new ones in one step (internal to the planner
/// and the SQLite writer).
struct MigrationMapping: Sendable {
    /// Where a new attribute's values come from.
    enum Source: Sendable, Hashable {
        /// The old column of that name.
        case old(String)
        /// The old column, with NULL replaced by a value.
        case coalesce(String, AttributeValue)
        /// The old column's values converted from one type to another, NULL replaced by the value
        /// when there is one.
        case converted(String, from: AttributeType, to: AttributeType, default: AttributeValue?)
        /// The single member of the old to-many relationship, looked up in a temporary table of
        /// (owner, member) pairs.
        case member(table: String)
        /// A constant (a default).
        case value(AttributeValue)
        /// Nothing.
        case null
    }

    /// New entity → old entity, for the entities of the store that both models have.
    var entities: [String: String] = [:]
    /// New entity → attribute (resolved, inherited ones too) → where its values come from.
    var attributes: [String: [String: Source]] = [:]
    /// New entity → relationship (resolved) → its old name, nil when added.
    var relationships: [String: [String: String?]] = [:]
    /// Whether objects of some old entity are deleted (so references to them must be cleared).
    var removesObjects = false
    /// The new to-one relationships (by the entity that declares them) filled from the old links
    /// of the to-many they are the new inverse of, through a members table.
    var inverseFills: Set<Link> = []
    /// The relationships (by the entity that declares them) whose destination changed, keeping
    /// only the links to objects of the new destination: the others are cleared after the copy.
    var destinationFilters: Set<Link> = []

    /// A relationship of an entity.
    struct Link: Sendable, Hashable {
        var entity: String
        var relationship: String
    }
}
