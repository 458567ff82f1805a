import Foundation

/// An object of the model, belonging to one context.
///
/// Read and change it through its context's thread discipline (inside `perform` when several
/// threads share the context). Its ``objectID`` is what crosses contexts.
public final class ManagedObject: CustomStringConvertible {
    /// The context's one weak reference, shared by all its objects: holding it costs an object a
    /// retain, where a weak reference of its own would cost a side-table update on every object made.
    private let link: ContextLink
    var storedID: ObjectID

    init(link: ContextLink, id: ObjectID) {
        self.link = link
        storedID = id
    }

    /// The context the object belongs to; nil once the context was released.
    public var context: ObjectContext? { link.context }

    private var owner: ObjectContext {
        guard let context else { preconditionFailure("a managed object was used after its context was released") }
        return context
    }

    /// The object's ID: temporary until the root save, then permanent (in every context).
    public var objectID: ObjectID { context?.registry.canonical(storedID) ?? storedID }
    /// The object's entity.
    public var entityName: String { storedID.entityName }

    /// The stored version this object's values were read at (0 before the first save).
    public var version: Int64 { (try? owner.currentState(storedID).version) ?? 0 }
    /// Whether the object was inserted and not saved yet.
    public var isInserted: Bool { owner.status(storedID).inserted }
    /// Whether the object has unsaved changes.
    public var isUpdated: Bool { owner.status(storedID).updated }
    /// Whether the object was deleted (saved or not).
    public var isDeleted: Bool { owner.status(storedID).deleted }

    /// The value of an attribute; `.null` when nil or unknown.
    public subscript(key: String) -> AttributeValue {
        (try? owner.currentAttribute(storedID, key)) ?? nil ?? .null
    }

    /// The value of an attribute.
    /// - Throws: `.unknownProperty`, `.notFound` when the object was deleted.
    public func value(forKey key: String) throws(ContextError) -> AttributeValue {
        guard let value = try owner.currentAttribute(storedID, key) else {
            throw ContextError(.unknownProperty, "'\(entityName)' has no attribute '\(key)'")
        }
        return value
    }

    /// Sets an attribute.
    /// - Throws: `.unknownProperty`, or `.invalidValue` when the value does not fit the attribute's type.
    public func setValue(_ value: AttributeValue, forKey key: String) throws(ContextError) {
        try owner.setAttribute(storedID, key, value)
    }

    /// A string attribute, or nil.
    public func string(_ key: String) -> String? { if case .string(let s) = self[key] { s } else { nil } }
    /// An integer attribute, or nil.
    public func integer(_ key: String) -> Int64? { if case .integer(let i) = self[key] { i } else { nil } }
    /// A double or float attribute, or nil.
    public func double(_ key: String) -> Double? { if case .double(let d) = self[key] { d } else { nil } }
    /// A Boolean attribute, or nil.
    public func bool(_ key: String) -> Bool? { if case .boolean(let b) = self[key] { b } else { nil } }
    /// A date attribute, or nil.
    public func date(_ key: String) -> Date? { if case .date(let d) = self[key] { d } else { nil } }
    /// A decimal attribute, or nil.
    public func decimal(_ key: String) -> Decimal? { if case .decimal(let d) = self[key] { d } else { nil } }

    /// The object a to-one relationship holds.
    public func object(forKey key: String) throws(ContextError) -> ManagedObject? {
        let state = try owner.currentState(storedID)
        guard let value = state.toOne[key] else {
            throw ContextError(.unknownProperty, "'\(entityName)' has no to-one relationship '\(key)'")
        }
        guard let value else { return nil }
        return try owner.object(with: value)
    }

    /// The ID a to-one relationship holds, without loading the object.
    public func objectID(forKey key: String) throws(ContextError) -> ObjectID? {
        let state = try owner.currentState(storedID)
        guard let value = state.toOne[key] else {
            throw ContextError(.unknownProperty, "'\(entityName)' has no to-one relationship '\(key)'")
        }
        return value.map { owner.registry.canonical($0) }
    }

    /// Sets a to-one relationship (nil to clear); the inverse is kept in step.
    public func setObject(_ object: ManagedObject?, forKey key: String) throws(ContextError) {
        try owner.setToOne(storedID, key, object?.storedID)
    }

    /// The objects a to-many relationship holds, in order.
    public func objects(forKey key: String) throws(ContextError) -> [ManagedObject] {
        owner.managedObjects(try owner.currentToMany(storedID, key))
    }

    /// The IDs a to-many relationship holds, in order.
    public func objectIDs(forKey key: String) throws(ContextError) -> [ObjectID] {
        try owner.currentToMany(storedID, key)
    }

    /// Replaces the contents of a to-many relationship; inverses are kept in step.
    public func setObjects(_ objects: [ManagedObject], forKey key: String) throws(ContextError) {
        try owner.setToMany(storedID, key, objects.map(\.storedID))
    }

    /// Adds an object to a to-many relationship (at the end when ordered).
    public func add(_ object: ManagedObject, toKey key: String) throws(ContextError) {
        let current = try owner.currentToMany(storedID, key)
        try owner.setToMany(storedID, key, current + [object.objectID])
    }

    /// Removes an object from a to-many relationship.
    public func remove(_ object: ManagedObject, fromKey key: String) throws(ContextError) {
        let target = object.objectID
        try owner.setToMany(storedID, key, try owner.currentToMany(storedID, key).filter { $0 != target })
    }

    public var description: String { "<\(entityName) \(objectID)>" }
}

/// A weak reference to a context, made once per context and shared by its managed objects.
final class ContextLink {
    weak var context: ObjectContext?
}
