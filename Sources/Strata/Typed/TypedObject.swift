import Foundation

/// A typed view of a ``ManagedObject``: what `strata generate swift` (and the build-tool plugin)
/// generates for each entity of a model, with a typed property for each of its properties.
///
/// A generated type is a struct holding the one ``ManagedObject`` its context keeps for the
/// object, not a subclass or a copy: reading a property reads the context's state, writing it
/// changes that state, and the string API (`object["title"]`, `setObject(_:forKey:)`) sees the
/// same values. Making a view costs no allocation and no lookup, so a fetch of `[Book]` costs what
/// a fetch of `[ManagedObject]` costs, and no second cache of objects exists beside the context's.
/// A struct rather than a class: `ManagedObject` is a final class, so a generated class could
/// only wrap it too, and one would then be allocated for every object fetched (or cached beside
/// the context to keep identity). Two views of the same object are equal and hash alike.
///
/// Like ``ManagedObject``, a view is not `Sendable`: it belongs to its object's context. Pass
/// ``objectID`` (or ``TypedObjectID``) between contexts and tasks.
///
/// Entity inheritance: a subentity's view declares its inherited properties as well, converts to
/// any ancestor's view with ``init(_:)-(TypedObject)`` (or the generated `as…` properties), and
/// an ancestor's view converts down to a subentity's the same way, failing when the object is of
/// another entity. A fetch of an ancestor includes the objects of its subentities.
public protocol TypedObject: Hashable, CustomStringConvertible {
    /// The entity the type stands for.
    static var entityName: String { get }
    /// The entity and its subentities, at any depth: the entities whose objects this type views.
    static var entityFamily: Set<String> { get }
    /// The name of the property behind each generated key path, for typed predicates and sorts.
    static var propertyNames: PropertyNames<Self> { get }
    /// The object of the context this is a view of.
    var managedObject: ManagedObject { get }
    /// A view of `object`, whose entity the caller knows to be in ``entityFamily``.
    init(unchecked object: ManagedObject)
}

extension TypedObject {
    /// A view of `object`, or nil when its entity is not this type's entity or one of its subentities.
    public init?(_ object: ManagedObject) {
        guard Self.entityFamily.contains(object.entityName) else { return nil }
        self.init(unchecked: object)
    }

    /// The same object viewed as another entity's type (an ancestor or a subentity), or nil when
    /// its entity is not in this type's family.
    public init?(_ other: some TypedObject) { self.init(other.managedObject) }

    /// The object's ID: temporary until the root save, then permanent (in every context).
    public var objectID: ObjectID { managedObject.objectID }
    /// The context the object belongs to; nil once the context was released.
    public var context: ObjectContext? { managedObject.context }
    /// The stored version this object's values were read at (0 before the first save).
    public var version: Int64 { managedObject.version }
    /// Whether the object was inserted and not saved yet.
    public var isInserted: Bool { managedObject.isInserted }
    /// Whether the object has unsaved changes.
    public var isUpdated: Bool { managedObject.isUpdated }
    /// Whether the object was deleted (saved or not).
    public var isDeleted: Bool { managedObject.isDeleted }
    /// `<Book x-strata://…>`, as the managed object describes itself.
    public var description: String { managedObject.description }

    /// Views of the same object are equal.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.managedObject === rhs.managedObject }
    /// Hashes the object's identity (a context keeps one managed object per object, for as long as
    /// the object lives in it, so the identity outlives the temporary ID of an insert).
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(managedObject)) }

    /// A request for every object of the entity (and its subentities); narrow it with
    /// ``TypedFetchRequest/filter(_:)`` and order it with ``TypedFetchRequest/sorted(by:ascending:caseInsensitive:)-(KeyPath<Root,Value>,_,_)``.
    public static func fetchRequest() -> TypedFetchRequest<Self> { TypedFetchRequest() }
}

/// The model property each generated key path of `Root` reads, made once per generated type.
///
/// `@unchecked Sendable`: it holds only key paths and strings, set once in `init` and never
/// changed. Key path objects are immutable; the standard library declares them `Sendable` only
/// where a key path captures subscript arguments, which generated property key paths never do.
public struct PropertyNames<Root>: @unchecked Sendable {
    private let names: [PartialKeyPath<Root>: String]

    /// The table: each key path with the name of the model property it reads.
    public init(_ names: [PartialKeyPath<Root>: String]) { self.names = names }

    /// The model property `keyPath` reads, or nil when it is not a generated property.
    public subscript(keyPath: PartialKeyPath<Root>) -> String? { names[keyPath] }

    /// How many properties the table names.
    public var count: Int { names.count }
}

/// An ``ObjectID`` that remembers the generated type of its object: what crosses contexts and
/// tasks, where views themselves cannot.
public struct TypedObjectID<Object: TypedObject>: Sendable, Hashable {
    /// The untyped ID.
    public let objectID: ObjectID

    /// The ID of `object`.
    public init(_ object: Object) { objectID = object.objectID }

    /// An ID the caller knows to name an object of `Object`'s family.
    public init(unchecked objectID: ObjectID) { self.objectID = objectID }
}

extension TypedObject {
    /// The object's ID with its type, to hand to another context or task.
    public var typedObjectID: TypedObjectID<Self> { TypedObjectID(self) }
}
