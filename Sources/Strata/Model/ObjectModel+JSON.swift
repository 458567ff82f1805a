import Foundation

extension ObjectModel {
    /// Loads a model from our JSON model format (see DESIGN.md §6).
    /// - Parameters:
    ///   - json: the model file's bytes.
    ///   - file: the file's path, quoted in errors.
    /// - Throws: ``ModelError``: `.malformed` for bad JSON, `.invalid` listing every problem.
    public static func load(json: some Collection<UInt8>, file: String? = nil) throws(ModelError) -> ObjectModel {
        let document: JSONValue
        do {
            document = try JSONValue.parse(json)
        } catch {
            throw ModelError(.malformed, file: file, issues: [ModelIssue(.invalidValue, error.description)])
        }
        var reader = JSONModelReader()
        let parsed = reader.readModel(document)
        guard reader.issues.isEmpty, let parsed else { throw ModelError(.invalid, file: file, issues: reader.issues) }
        do {
            return try ObjectModel(
                name: parsed.name, version: parsed.version, entities: parsed.entities,
                configurations: parsed.configurations, fetchRequestTemplates: parsed.fetchRequestTemplates)
        } catch {
            throw ModelError(error.kind, file: file, issues: error.issues)
        }
    }
}

/// Reads the JSON model format into descriptions, collecting every problem.
struct JSONModelReader {
    var issues: [ModelIssue] = []

    struct Parsed {
        var name: String
        var version: String?
        var entities: [EntityDescription]
        var configurations: [ConfigurationDescription]
        var fetchRequestTemplates: [FetchRequestTemplate]
    }

    private mutating func add(_ code: ModelIssue.Code, _ entity: String?, _ property: String?, _ message: String) {
        issues.append(ModelIssue(code, entity: entity, property: property, message))
    }

    /// Reports keys of `object` that are not in `known`: a misspelt key must not be ignored silently.
    private mutating func checkKeys(
        _ object: [String: JSONValue], _ known: Set<String>, _ entity: String?, _ property: String?
    ) {
        for key in object.keys.sorted() where !known.contains(key) {
            add(
                .unknownKey, entity, property, "unknown key '\(key)' (known: \(known.sorted().joined(separator: ", ")))"
            )
        }
    }

    private mutating func string(_ object: [String: JSONValue], _ key: String, _ entity: String?, _ property: String?)
        -> String?
    {
        guard let value = object[key], !value.isNull else { return nil }
        guard let string = value.stringValue else {
            add(.invalidValue, entity, property, "'\(key)' must be a string, not \(value.typeName)")
            return nil
        }
        return string
    }

    private mutating func bool(_ object: [String: JSONValue], _ key: String, _ entity: String?, _ property: String?)
        -> Bool?
    {
        guard let value = object[key], !value.isNull else { return nil }
        guard let bool = value.boolValue else {
            add(.invalidValue, entity, property, "'\(key)' must be true or false, not \(value.typeName)")
            return nil
        }
        return bool
    }

    private mutating func int(_ object: [String: JSONValue], _ key: String, _ entity: String?, _ property: String?)
        -> Int?
    {
        guard let value = object[key], !value.isNull else { return nil }
        guard case .integer(let int) = value, let small = Int(exactly: int) else {
            add(.invalidValue, entity, property, "'\(key)' must be an integer, not \(value.typeName)")
            return nil
        }
        return small
    }

    private mutating func objects(_ object: [String: JSONValue], _ key: String, _ entity: String?) -> [[String:
        JSONValue]]
    {
        guard let value = object[key], !value.isNull else { return [] }
        guard let array = value.arrayValue else {
            add(.invalidValue, entity, nil, "'\(key)' must be an array")
            return []
        }
        return array.compactMap { item in
            if let member = item.objectValue { return member }
            add(.invalidValue, entity, nil, "every item of '\(key)' must be an object")
            return nil
        }
    }

    private mutating func strings(_ value: JSONValue?, _ what: String, _ entity: String?, _ property: String?)
        -> [String]
    {
        guard let value, !value.isNull else { return [] }
        guard let array = value.arrayValue, array.allSatisfy({ $0.stringValue != nil }) else {
            add(.invalidValue, entity, property, "\(what) must be an array of strings")
            return []
        }
        return array.compactMap(\.stringValue)
    }

    mutating func readModel(_ document: JSONValue) -> Parsed? {
        guard let root = document.objectValue else {
            add(.invalidValue, nil, nil, "the model must be a JSON object")
            return nil
        }
        checkKeys(root, ["name", "version", "entities", "configurations", "fetchRequests", "description"], nil, nil)
        let name = string(root, "name", nil, nil) ?? "Model"
        var version = string(root, "version", nil, nil)
        if version == nil, case .integer(let number) = root["version"] { version = String(number) }
        let entities = objects(root, "entities", nil).compactMap { readEntity($0) }
        let configurations = objects(root, "configurations", nil).compactMap { object -> ConfigurationDescription? in
            checkKeys(object, ["name", "entities"], nil, nil)
            guard let name = string(object, "name", nil, nil) else {
                add(.missingValue, nil, nil, "a configuration needs a 'name'")
                return nil
            }
            return ConfigurationDescription(name: name, entities: strings(object["entities"], "'entities'", nil, name))
        }
        let templates = objects(root, "fetchRequests", nil).compactMap { object -> FetchRequestTemplate? in
            checkKeys(object, ["name", "entity", "predicate", "description"], nil, nil)
            guard let name = string(object, "name", nil, nil), let entity = string(object, "entity", nil, name) else {
                add(.missingValue, nil, nil, "a fetch request needs a 'name' and an 'entity'")
                return nil
            }
            return FetchRequestTemplate(
                name: name, entity: entity, predicate: string(object, "predicate", entity, name) ?? "",
                documentation: string(object, "description", entity, name))
        }
        return Parsed(
            name: name, version: version, entities: entities, configurations: configurations,
            fetchRequestTemplates: templates)
    }

    private mutating func readEntity(_ object: [String: JSONValue]) -> EntityDescription? {
        let keys: Set<String> = [
            "name", "parent", "abstract", "attributes", "relationships", "fetchedProperties", "uniqueness",
            "indexes", "resource", "renamedFrom", "versionHashModifier", "description", "access",
        ]
        guard let name = string(object, "name", nil, nil) else {
            add(.missingValue, nil, nil, "an entity needs a 'name'")
            return nil
        }
        checkKeys(object, keys, name, nil)
        var entity = EntityDescription(name: name)
        entity.parent = string(object, "parent", name, nil)
        entity.isAbstract = bool(object, "abstract", name, nil) ?? false
        entity.resource = string(object, "resource", name, nil)
        entity.renamedFrom = string(object, "renamedFrom", name, nil)
        entity.versionHashModifier = string(object, "versionHashModifier", name, nil)
        entity.documentation = string(object, "description", name, nil)
        if let access = string(object, "access", name, nil) {
            if let known = EntityAccess(rawValue: access) {
                entity.access = known
            } else {
                add(
                    .invalidValue, name, nil,
                    "access '\(access)' is not one of \(EntityAccess.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
        entity.attributes = objects(object, "attributes", name).compactMap { readAttribute($0, entity: name) }
        entity.relationships = objects(object, "relationships", name).compactMap { readRelationship($0, entity: name) }
        entity.fetchedProperties = objects(object, "fetchedProperties", name).compactMap { item in
            checkKeys(item, ["name", "entity", "predicate", "description"], name, item["name"]?.stringValue)
            guard let property = string(item, "name", name, nil) else {
                add(.missingValue, name, nil, "a fetched property needs a 'name'")
                return nil
            }
            return FetchedPropertyDescription(
                name: property, entity: string(item, "entity", name, property) ?? "",
                predicate: string(item, "predicate", name, property) ?? "",
                documentation: string(item, "description", name, property))
        }
        if let uniqueness = object["uniqueness"], !uniqueness.isNull {
            for group in uniqueness.arrayValue ?? [uniqueness] {
                entity.uniqueness.append(strings(group, "each 'uniqueness' item", name, nil))
            }
        }
        if let indexes = object["indexes"], !indexes.isNull {
            for (position, index) in (indexes.arrayValue ?? []).enumerated() {
                if let member = index.objectValue {
                    checkKeys(member, ["name", "properties", "descending"], name, nil)
                    let properties = strings(member["properties"], "'properties' of an index", name, nil)
                    let indexName = string(member, "name", name, nil) ?? "\(name)_\(properties.joined(separator: "_"))"
                    let descending = strings(member["descending"], "'descending' of an index", name, nil)
                    entity.indexes.append(
                        IndexDescription(name: indexName, properties: properties, descending: Set(descending)))
                } else {
                    let properties = strings(index, "each 'indexes' item", name, nil)
                    entity.indexes.append(
                        IndexDescription(
                            name: "\(name)_\(properties.joined(separator: "_"))_\(position)", properties: properties))
                }
            }
        }
        return entity
    }

    private mutating func readAttribute(_ object: [String: JSONValue], entity: String) -> AttributeDescription? {
        let keys: Set<String> = [
            "name", "type", "optional", "default", "min", "max", "minLength", "maxLength", "regex", "renamedFrom",
            "versionHashModifier", "derivation", "description", "coreData", "elements", "searchable",
        ]
        guard let name = string(object, "name", entity, nil) else {
            add(.missingValue, entity, nil, "an attribute needs a 'name'")
            return nil
        }
        checkKeys(object, keys, entity, name)
        guard let typeName = string(object, "type", entity, name) else {
            add(.missingValue, entity, name, "attribute needs a 'type'")
            return nil
        }
        if typeName == "composite" {
            return readComposite(object, name: name, entity: entity)
        } else if object["elements"] != nil {
            add(.invalidValue, entity, name, "only a composite attribute has 'elements'")
        }
        guard let type = AttributeType(modelName: typeName) else {
            add(
                .unknownType, entity, name,
                "unknown type '\(typeName)' (known: \(AttributeType.allCases.map(\.rawValue).joined(separator: ", ")))")
            return nil
        }
        var attribute = AttributeDescription(name: name, type: type)
        attribute.isOptional = bool(object, "optional", entity, name) ?? true
        attribute.minLength = int(object, "minLength", entity, name)
        attribute.maxLength = int(object, "maxLength", entity, name)
        attribute.regex = string(object, "regex", entity, name)
        attribute.renamedFrom = string(object, "renamedFrom", entity, name)
        attribute.versionHashModifier = string(object, "versionHashModifier", entity, name)
        attribute.derivation = string(object, "derivation", entity, name)
        attribute.documentation = string(object, "description", entity, name)
        attribute.isSearchable = bool(object, "searchable", entity, name) ?? false
        if case .object(let info)? = object["coreData"] {
            checkKeys(
                info,
                [
                    "attributeType", "valueTransformerName", "allowsExternalBinaryDataStorage",
                    "preservesValueInHistoryOnDeletion",
                ],
                entity, name)
            attribute.coreData = CoreDataAttributeInfo(
                attributeType: string(info, "attributeType", entity, name) ?? typeName,
                valueTransformerName: string(info, "valueTransformerName", entity, name),
                allowsExternalBinaryDataStorage: bool(info, "allowsExternalBinaryDataStorage", entity, name) ?? false,
                preservesValueInHistoryOnDeletion: bool(info, "preservesValueInHistoryOnDeletion", entity, name)
                    ?? false)
        }
        if let json = object["default"] {
            attribute.defaultValue = value(json, type, "default", entity, name)
        }
        let boundType: AttributeType = type.isInteger ? .integer64 : type
        if let json = object["min"] { attribute.minValue = bound(json, boundType, "min", entity, name) }
        if let json = object["max"] { attribute.maxValue = bound(json, boundType, "max", entity, name) }
        return attribute
    }

    /// A composite attribute: `"type": "composite"` with `"elements"`, an array of attributes (each
    /// element's default makes up the composite's default, so it takes no `default` of its own).
    private mutating func readComposite(_ object: [String: JSONValue], name: String, entity: String)
        -> AttributeDescription?
    {
        for key in ["default", "min", "max", "minLength", "maxLength", "regex", "derivation"] where object[key] != nil {
            add(.invalidValue, entity, name, "a composite attribute takes no '\(key)' (its elements may)")
        }
        guard object["elements"]?.arrayValue != nil else {
            add(.missingValue, entity, name, "a composite attribute needs 'elements', an array of attributes")
            return nil
        }
        var elements: [AttributeDescription] = []
        for item in objects(object, "elements", entity) {
            guard let element = readAttribute(item, entity: "\(entity).\(name)") else { continue }
            if elements.contains(where: { $0.name == element.name }) {
                add(.duplicateName, entity, name, "two elements are named '\(element.name)'")
                continue
            }
            elements.append(element)
        }
        var attribute = AttributeDescription(name: name, type: .json)
        attribute.elements = elements
        attribute.isOptional = bool(object, "optional", entity, name) ?? true
        attribute.defaultValue = AttributeDescription.compositeDefault(elements)
        attribute.renamedFrom = string(object, "renamedFrom", entity, name)
        attribute.versionHashModifier = string(object, "versionHashModifier", entity, name)
        attribute.documentation = string(object, "description", entity, name)
        if case .object(let info)? = object["coreData"] {
            attribute.coreData = CoreDataAttributeInfo(
                attributeType: string(info, "attributeType", entity, name) ?? "Composite",
                valueTransformerName: nil, allowsExternalBinaryDataStorage: false,
                preservesValueInHistoryOnDeletion: bool(info, "preservesValueInHistoryOnDeletion", entity, name)
                    ?? false)
        }
        return attribute
    }

    private mutating func bound(
        _ json: JSONValue, _ type: AttributeType, _ key: String, _ entity: String, _ name: String
    ) -> AttributeValue? {
        if type.isNumeric, let number = json.doubleValue {
            if case .integer(let int) = json { return type == .decimal ? .decimal(Decimal(int)) : .integer(int) }
            return .double(number)
        }
        return value(json, type, key, entity, name)
    }

    private mutating func value(
        _ json: JSONValue, _ type: AttributeType, _ key: String, _ entity: String, _ name: String
    ) -> AttributeValue? {
        guard let value = AttributeValue(json: json, as: type) else {
            add(
                key == "default" ? .invalidDefault : .invalidValue, entity, name,
                "'\(key)' \(json.jsonText) is not a \(type.rawValue) value")
            return nil
        }
        return value.isNull ? nil : value
    }

    private mutating func readRelationship(_ object: [String: JSONValue], entity: String) -> RelationshipDescription? {
        let keys: Set<String> = [
            "name", "destination", "inverse", "toMany", "ordered", "optional", "deleteRule", "minCount", "maxCount",
            "renamedFrom", "versionHashModifier", "description", "coreData",
        ]
        guard let name = string(object, "name", entity, nil) else {
            add(.missingValue, entity, nil, "a relationship needs a 'name'")
            return nil
        }
        checkKeys(object, keys, entity, name)
        guard let destination = string(object, "destination", entity, name) else {
            add(.missingValue, entity, name, "relationship needs a 'destination'")
            return nil
        }
        var relationship = RelationshipDescription(
            name: name, destination: destination, inverse: string(object, "inverse", entity, name))
        relationship.isToMany = bool(object, "toMany", entity, name) ?? false
        relationship.isOrdered = bool(object, "ordered", entity, name) ?? false
        relationship.isOptional = bool(object, "optional", entity, name) ?? true
        relationship.minCount = int(object, "minCount", entity, name)
        relationship.maxCount = int(object, "maxCount", entity, name)
        relationship.renamedFrom = string(object, "renamedFrom", entity, name)
        relationship.versionHashModifier = string(object, "versionHashModifier", entity, name)
        relationship.documentation = string(object, "description", entity, name)
        if case .object(let info)? = object["coreData"] {
            checkKeys(info, ["minCount", "maxCount"], entity, name)
            relationship.coreData = CoreDataRelationshipInfo(
                minCount: int(info, "minCount", entity, name) ?? 0, maxCount: int(info, "maxCount", entity, name) ?? 0)
        }
        if let rule = string(object, "deleteRule", entity, name) {
            if let parsed = DeleteRule(modelName: rule) {
                relationship.deleteRule = parsed
            } else {
                add(
                    .invalidValue, entity, name,
                    "unknown deleteRule '\(rule)' (known: nullify, cascade, deny, noAction)")
            }
        }
        return relationship
    }
}
