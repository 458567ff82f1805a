extension ObjectModel {
    /// The model in our JSON model format (DESIGN.md §6), as a value.
    ///
    /// Loading it back with ``ObjectModel/load(json:file:)`` gives an equal model. Keys whose value
    /// is the format's default (`optional: true`, `deleteRule: nullify`, …) are left out; arrays keep
    /// declaration order. Stores record this form of their model so that a later migration can
    /// compare the model a store was written with against the one it is opened with.
    public var jsonRepresentation: JSONValue {
        var root: [String: JSONValue] = [
            "name": .string(name),
            "entities": .array(entities.map(Self.json(entity:))),
        ]
        if let version { root["version"] = .string(version) }
        if !configurations.isEmpty {
            root["configurations"] = .array(
                configurations.map {
                    .object(["name": .string($0.name), "entities": .array($0.entities.map { .string($0) })])
                })
        }
        if !fetchRequestTemplates.isEmpty {
            root["fetchRequests"] = .array(
                fetchRequestTemplates.map { template in
                    var member: [String: JSONValue] = [
                        "name": .string(template.name), "entity": .string(template.entity),
                        "predicate": .string(template.predicate),
                    ]
                    if let documentation = template.documentation { member["description"] = .string(documentation) }
                    return .object(member)
                })
        }
        return .object(root)
    }

    /// The canonical JSON text of ``jsonRepresentation``: compact, object keys sorted, so equal
    /// models always give the same bytes.
    public var canonicalJSON: String { jsonRepresentation.jsonText }

    private static func json(entity: EntityDescription) -> JSONValue {
        var object: [String: JSONValue] = ["name": .string(entity.name)]
        if let parent = entity.parent { object["parent"] = .string(parent) }
        if entity.isAbstract { object["abstract"] = .bool(true) }
        if !entity.attributes.isEmpty { object["attributes"] = .array(entity.attributes.map(json(attribute:))) }
        if !entity.relationships.isEmpty {
            object["relationships"] = .array(entity.relationships.map(json(relationship:)))
        }
        if !entity.fetchedProperties.isEmpty {
            object["fetchedProperties"] = .array(
                entity.fetchedProperties.map { fetched in
                    var member: [String: JSONValue] = [
                        "name": .string(fetched.name), "entity": .string(fetched.entity),
                        "predicate": .string(fetched.predicate),
                    ]
                    if let documentation = fetched.documentation { member["description"] = .string(documentation) }
                    return .object(member)
                })
        }
        if !entity.uniqueness.isEmpty {
            object["uniqueness"] = .array(entity.uniqueness.map { group in .array(group.map { .string($0) }) })
        }
        if !entity.indexes.isEmpty {
            object["indexes"] = .array(
                entity.indexes.map { index in
                    var member: [String: JSONValue] = [
                        "name": .string(index.name), "properties": .array(index.properties.map { .string($0) }),
                    ]
                    if !index.descending.isEmpty {
                        member["descending"] = .array(index.descending.sorted().map { .string($0) })
                    }
                    return .object(member)
                })
        }
        if let resource = entity.resource { object["resource"] = .string(resource) }
        if let renamedFrom = entity.renamedFrom { object["renamedFrom"] = .string(renamedFrom) }
        if let modifier = entity.versionHashModifier { object["versionHashModifier"] = .string(modifier) }
        if let documentation = entity.documentation { object["description"] = .string(documentation) }
        if let access = entity.access { object["access"] = .string(access.rawValue) }
        return .object(object)
    }

    private static func json(attribute: AttributeDescription) -> JSONValue {
        var object: [String: JSONValue] = ["name": .string(attribute.name), "type": .string(attribute.type.rawValue)]
        if !attribute.isOptional { object["optional"] = .bool(false) }
        if let elements = attribute.elements {
            // The default is built from the elements' defaults.
            object["type"] = .string("composite")
            object["elements"] = .array(elements.map(json(attribute:)))
        } else if let value = attribute.defaultValue, !value.isNull {
            object["default"] = value.json
        }
        if let value = attribute.minValue, !value.isNull { object["min"] = value.json }
        if let value = attribute.maxValue, !value.isNull { object["max"] = value.json }
        if let length = attribute.minLength { object["minLength"] = .integer(Int64(length)) }
        if let length = attribute.maxLength { object["maxLength"] = .integer(Int64(length)) }
        if let regex = attribute.regex { object["regex"] = .string(regex) }
        if let renamedFrom = attribute.renamedFrom { object["renamedFrom"] = .string(renamedFrom) }
        if let modifier = attribute.versionHashModifier { object["versionHashModifier"] = .string(modifier) }
        if let derivation = attribute.derivation { object["derivation"] = .string(derivation) }
        if attribute.isSearchable { object["searchable"] = .bool(true) }
        if let info = attribute.coreData {
            var members: [String: JSONValue] = ["attributeType": .string(info.attributeType)]
            if let name = info.valueTransformerName { members["valueTransformerName"] = .string(name) }
            if info.allowsExternalBinaryDataStorage { members["allowsExternalBinaryDataStorage"] = .bool(true) }
            if info.preservesValueInHistoryOnDeletion { members["preservesValueInHistoryOnDeletion"] = .bool(true) }
            object["coreData"] = .object(members)
        }
        if let documentation = attribute.documentation { object["description"] = .string(documentation) }
        return .object(object)
    }

    private static func json(relationship: RelationshipDescription) -> JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(relationship.name), "destination": .string(relationship.destination),
        ]
        if let inverse = relationship.inverse { object["inverse"] = .string(inverse) }
        if relationship.isToMany { object["toMany"] = .bool(true) }
        if relationship.isOrdered { object["ordered"] = .bool(true) }
        if !relationship.isOptional { object["optional"] = .bool(false) }
        if relationship.deleteRule != .nullify { object["deleteRule"] = .string(relationship.deleteRule.rawValue) }
        if let count = relationship.minCount { object["minCount"] = .integer(Int64(count)) }
        if let count = relationship.maxCount { object["maxCount"] = .integer(Int64(count)) }
        if let renamedFrom = relationship.renamedFrom { object["renamedFrom"] = .string(renamedFrom) }
        if let modifier = relationship.versionHashModifier { object["versionHashModifier"] = .string(modifier) }
        if let info = relationship.coreData {
            object["coreData"] = .object([
                "minCount": .integer(Int64(info.minCount)), "maxCount": .integer(Int64(info.maxCount)),
            ])
        }
        if let documentation = relationship.documentation { object["description"] = .string(documentation) }
        return .object(object)
    }
}
