extension ObjectContext {
    /// Evaluates a fetched property of `object`: its predicate, with `$FETCH_SOURCE.<attribute>`
    /// replaced by the object's values (and `$FETCH_SOURCE` by the object itself), fetched through
    /// this context from every store that holds the target entity — which may be another store
    /// than the object's, as with Core Data's cross-store fetched properties.
    /// - Throws: `.unknownProperty`, `.invalidPredicate` for a predicate that does not parse or fit.
    public func fetch(fetchedProperty name: String, of object: ManagedObject, sortedBy sortKeys: [SortKey] = [])
        throws(ContextError) -> [ManagedObject]
    {
        guard let property = model.fetchedProperties(of: object.entityName).first(where: { $0.name == name }) else {
            throw ContextError(.unknownProperty, "'\(object.entityName)' has no fetched property '\(name)'")
        }
        let source = try currentState(object.storedID)
        var variables: [String: PredicateArgument] = ["FETCH_SOURCE": .object(registry.canonical(source.id))]
        for (attribute, value) in source.attributes { variables["FETCH_SOURCE.\(attribute)"] = .value(value) }
        for (relationship, value) in source.toOne {
            variables["FETCH_SOURCE.\(relationship)"] = .object(value.map(registry.canonical))
        }
        let predicate: FetchPredicate
        do {
            predicate = try FetchPredicate(format: property.predicate).substituting(variables)
        } catch {
            throw ContextError(.invalidPredicate, "fetched property \(object.entityName).\(name): \(error.message)")
        }
        return try fetch(FetchRequest(entityName: property.entity, predicate: predicate, sortDescriptors: sortKeys))
    }
}
