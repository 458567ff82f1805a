import Foundation

/// What generated property accessors call: the string API's reads and writes, typed.
///
/// A property setter cannot throw, so the writes stop the program with the context's error where
/// the string API throws it: on an object deleted from its context or whose context was released,
/// on a related object of another context or entity. Those are mistakes in the program, as the
/// same calls are in Core Data (which raises an exception); a value of the wrong type cannot occur,
/// the property's type rules it out. Use the string API where such an error is to be handled.
///
/// The attribute accessors are `@inlinable`, so the generated code's calls are specialized for
/// their types: a typed read is the string API's `object[key]` and one conversion.
extension ManagedObject {
    /// The value of attribute `key`, or nil when it holds none.
    @inlinable
    public func typedValue<Value: TypedAttributeValue>(forKey key: String, as type: Value.Type = Value.self)
        -> Value?
    {
        Value(attributeValue: self[key])
    }

    /// The value of non-optional attribute `key`, or the type's ``TypedAttributeValue/emptyValue``
    /// while it holds none.
    @inlinable
    public func typedValue<Value: TypedAttributeValue>(nonOptional key: String, as type: Value.Type = Value.self)
        -> Value
    {
        Value(attributeValue: self[key]) ?? Value.emptyValue
    }

    /// Sets attribute `key` (nil clears it); stops the program on a context error (see above).
    @inlinable
    public func setTypedValue<Value: TypedAttributeValue>(_ value: Value?, forKey key: String) {
        do {
            try setValue(value?.attributeValue ?? .null, forKey: key)
        } catch {
            preconditionFailure("setting \(entityName).\(key): \(error)")
        }
    }

    /// The object to-one relationship `key` holds, viewed as `Object`.
    public func typedObject<Object: TypedObject>(forKey key: String, as type: Object.Type = Object.self) -> Object? {
        do {
            guard let object = try object(forKey: key) else { return nil }
            return Object(unchecked: object)
        } catch {
            preconditionFailure("reading \(entityName).\(key): \(error)")
        }
    }

    /// Sets to-one relationship `key` (nil clears it), keeping the inverse in step.
    public func setTypedObject<Object: TypedObject>(_ object: Object?, forKey key: String) {
        do {
            try setObject(object?.managedObject, forKey: key)
        } catch {
            preconditionFailure("setting \(entityName).\(key): \(error)")
        }
    }

    /// The objects to-many relationship `key` holds, in order, viewed as `Object`.
    public func typedObjects<Object: TypedObject>(forKey key: String, as type: Object.Type = Object.self) -> [Object] {
        do {
            return views(try objects(forKey: key))
        } catch {
            preconditionFailure("reading \(entityName).\(key): \(error)")
        }
    }

    /// Replaces the contents of to-many relationship `key` (in the order given), keeping inverses
    /// in step.
    public func setTypedObjects<Objects: Sequence>(_ objects: Objects, forKey key: String)
    where Objects.Element: TypedObject {
        do {
            try setObjects(objects.map(\.managedObject), forKey: key)
        } catch {
            preconditionFailure("setting \(entityName).\(key): \(error)")
        }
    }

    /// Adds `object` to to-many relationship `key` (at the end when ordered; nothing when it is
    /// there already), keeping the inverse in step.
    public func addTypedObject<Object: TypedObject>(_ object: Object, toKey key: String) {
        do {
            try add(object.managedObject, toKey: key)
        } catch {
            preconditionFailure("adding to \(entityName).\(key): \(error)")
        }
    }

    /// Adds `objects` to to-many relationship `key` in one change (at the end, in their order,
    /// when ordered; those there already stay where they are), keeping the inverses in step.
    public func addTypedObjects<Objects: Sequence>(_ objects: Objects, toKey key: String)
    where Objects.Element: TypedObject {
        do {
            try setObjectIDs(try objectIDs(forKey: key) + objects.map(\.objectID), forKey: key)
        } catch {
            preconditionFailure("adding to \(entityName).\(key): \(error)")
        }
    }

    /// Removes `object` from to-many relationship `key`, keeping the inverse in step.
    public func removeTypedObject<Object: TypedObject>(_ object: Object, fromKey key: String) {
        do {
            try remove(object.managedObject, fromKey: key)
        } catch {
            preconditionFailure("removing from \(entityName).\(key): \(error)")
        }
    }

    /// Removes `objects` from to-many relationship `key` in one change, keeping the inverses in step.
    public func removeTypedObjects<Objects: Sequence>(_ objects: Objects, fromKey key: String)
    where Objects.Element: TypedObject {
        do {
            let removed = Set(objects.map(\.objectID))
            try setObjectIDs(try objectIDs(forKey: key).filter { !removed.contains($0) }, forKey: key)
        } catch {
            preconditionFailure("removing from \(entityName).\(key): \(error)")
        }
    }

    /// Replaces the contents of to-many relationship `key` by the objects with `ids`.
    private func setObjectIDs(_ ids: [ObjectID], forKey key: String) throws(ContextError) {
        guard let context else { throw ContextError(.notFound, "the context of \(description) was released") }
        try context.setToMany(storedID, key, ids)
    }

    /// Evaluates fetched property `name` (see ``ObjectContext/fetch(fetchedProperty:of:sortedBy:)``),
    /// viewed as `Object`.
    /// - Throws: what the fetch throws; `.notFound` when the object's context was released.
    public func typedFetchedProperty<Object: TypedObject>(_ name: String, as type: Object.Type = Object.self)
        throws(ContextError) -> [Object]
    {
        guard let context else { throw ContextError(.notFound, "the context of \(description) was released") }
        return views(try context.fetch(fetchedProperty: name, of: self))
    }
}

extension ObjectContext {
    /// Inserts a new object of `type`'s entity with its default values.
    /// - Throws: `.unknownProperty` when the context's model has no such entity, `.abstractEntity`.
    public func insert<Object: TypedObject>(_ type: Object.Type) throws(ContextError) -> Object {
        Object(unchecked: try insert(Object.entityName))
    }

    /// Inserts a new object of `type`'s entity for a generated `init(context:)`, stopping the
    /// program when the context's model has no such (concrete) entity: the generated code was then
    /// made from another model than the context's.
    public func insertGenerated<Object: TypedObject>(_ type: Object.Type) -> ManagedObject {
        do {
            return try insert(Object.entityName)
        } catch {
            preconditionFailure("inserting a \(Object.entityName): \(error)")
        }
    }

    /// The object with `id`, viewed as its type.
    /// - Throws: `.notFound` when it does not exist (or is deleted here), `.invalidValue` when it is
    ///   of an entity outside `Object`'s family.
    public func object<Object: TypedObject>(with id: TypedObjectID<Object>) throws(ContextError) -> Object {
        try object(with: id.objectID, as: Object.self)
    }

    /// The object with `id`, viewed as `type`.
    /// - Throws: `.notFound` when it does not exist (or is deleted here), `.invalidValue` when it is
    ///   of an entity outside `type`'s family.
    public func object<Object: TypedObject>(with id: ObjectID, as type: Object.Type) throws(ContextError) -> Object {
        let object = try object(with: id)
        guard let typed = Object(object) else {
            throw ContextError(.invalidValue, "\(object.description) is not a \(Object.entityName)")
        }
        return typed
    }

    /// Marks an object deleted, applying its relationships' delete rules (see ``delete(_:)-(ManagedObject)``).
    public func delete(_ object: some TypedObject) throws(ContextError) { try delete(object.managedObject) }
}

/// `objects` viewed as `Object` (a loop: a closure over `Object.init` would capture its metatype).
func views<Object: TypedObject>(_ objects: [ManagedObject]) -> [Object] {
    var result: [Object] = []
    result.reserveCapacity(objects.count)
    for object in objects { result.append(Object(unchecked: object)) }
    return result
}
