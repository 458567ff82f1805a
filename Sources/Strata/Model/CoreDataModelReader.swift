import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// One element of an XML document: its name, its attributes and its child elements. Text content
/// is dropped; Core Data's `contents` files keep everything in attributes.
struct ModelXMLNode: Sendable {
    var name: String
    var attributes: [String: String]
    var children: [ModelXMLNode] = []

    /// The attribute `key`, nil when it is absent or empty.
    subscript(_ key: String) -> String? {
        guard let value = attributes[key], !value.isEmpty else { return nil }
        return value
    }

    /// The child elements named `name`, in document order.
    func children(named name: String) -> [ModelXMLNode] { children.filter { $0.name == name } }

    /// Parses an XML document into its root element.
    /// - Throws: ``ModelError`` of kind `.malformed` naming `file`, the line and the parser's reason.
    static func parse(_ data: Data, file: String) throws(ModelError) -> ModelXMLNode {
        // Core Data writes UTF-8; Foundation's XMLParser traps on a name that is not valid UTF-8
        // instead of failing, so such a file is refused here, naming where.
        if String(validating: data, as: UTF8.self) == nil {
            var valid = 0
            var decoder = Unicode.UTF8.ForwardParser()
            var bytes = data.makeIterator()
            scanning: while true {
                switch decoder.parseScalar(from: &bytes) {
                case .valid(let scalar): valid += scalar.count
                case .error, .emptyInput: break scanning
                }
            }
            let line = data.prefix(valid).reduce(1) { $0 + ($1 == 10 ? 1 : 0) }
            throw ModelError(
                .malformed, file: file,
                issues: [
                    ModelIssue(
                        .invalidValue,
                        "line \(line): the byte at offset \(valid) is not valid UTF-8; a Core Data model is UTF-8")
                ])
        }
        try refuseProcessingInstructions(in: data, file: file)
        let parser = XMLParser(data: data)
        let builder = XMLTreeBuilder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        let succeeded = parser.parse()
        // The parser may report success yet record an error (a truncated document, for one).
        guard succeeded, parser.parserError == nil, let root = builder.root else {
            var reason = "not well-formed XML"
            if let error = parser.parserError {
                reason += " (parser error \((error as NSError).code))"
            } else if succeeded {
                reason = "the document has no root element"
            }
            let place = "line \(parser.lineNumber), column \(parser.columnNumber)"
            throw ModelError(.malformed, file: file, issues: [ModelIssue(.invalidValue, "\(place): \(reason)")])
        }
        return root
    }
}

extension ModelXMLNode {
    /// Refuses a processing instruction anywhere but the leading XML declaration. Core Data never
    /// writes one, and Foundation's XMLParser traps on a processing instruction without data
    /// (`<?xml <?xml …`, `<?target?>`) instead of failing, so they are refused here, naming the line.
    /// Comments and CDATA sections are skipped; `<` cannot appear raw in text or attribute values.
    fileprivate static func refuseProcessingInstructions(in data: Data, file: String) throws(ModelError) {
        let bytes = [UInt8](data)
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let start = bytes.starts(with: bom) ? 3 : 0
        func matches(_ literal: String, at index: Int) -> Bool {
            let pattern = Array(literal.utf8)
            return index + pattern.count <= bytes.count && Array(bytes[index..<index + pattern.count]) == pattern
        }
        func skip(past terminator: String, from index: Int) -> Int {
            var cursor = index
            while cursor < bytes.count, !matches(terminator, at: cursor) { cursor += 1 }
            return cursor + terminator.utf8.count
        }
        var index = start
        while index + 1 < bytes.count {
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            if matches("<!--", at: index) {
                index = skip(past: "-->", from: index + 4)
            } else if matches("<![CDATA[", at: index) {
                index = skip(past: "]]>", from: index + 9)
            } else if bytes[index + 1] == UInt8(ascii: "?") {
                let isDeclaration =
                    index == start && matches("<?xml", at: index) && index + 5 < bytes.count
                    && [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index + 5])
                guard isDeclaration else {
                    let line = bytes[..<index].reduce(1) { $0 + ($1 == 10 ? 1 : 0) }
                    throw ModelError(
                        .malformed, file: file,
                        issues: [
                            ModelIssue(
                                .invalidValue,
                                "line \(line): a processing instruction (<?…?>) other than the leading XML declaration; "
                                    + "a Core Data model has none")
                        ])
                }
                index += 5
            } else {
                index += 1
            }
        }
    }
}

/// Builds an ``ModelXMLNode`` tree from `XMLParser` events.
private final class XMLTreeBuilder: NSObject, XMLParserDelegate {
    private var stack: [ModelXMLNode] = []
    private(set) var root: ModelXMLNode?

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        stack.append(ModelXMLNode(name: elementName, attributes: attributeDict))
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
    ) {
        guard let node = stack.popLast() else { return }
        if stack.isEmpty {
            root = node
        } else {
            stack[stack.count - 1].children.append(node)
        }
    }
}

/// Reads the `<model>` element of a Core Data `contents` file into descriptions, collecting every
/// problem so one run reports them all.
///
/// What is read: entities (`name`, `parentEntity`, `isAbstract`, `renamingIdentifier`, and the
/// `resource` and `access` entries of the entity's own `userInfo`; the `documentation` or
/// `description` entry of any element's), attributes, relationships, fetched properties,
/// uniqueness constraints, fetch indexes (and the older `indexed="YES"` and `compoundIndexes`),
/// configurations and the model's `userDefinedModelVersionIdentifier`. Everything else (layout
/// `elements`, other `userInfo` entries, `representedClassName`, `syncable`, `codeGenerationType`,
/// `usesScalarValueType`, `versionHashModifier`, unknown attributes and elements) is ignored.
/// Transient attributes and relationships are skipped: they hold no stored data.
struct CoreDataModelReader {
    var issues: [ModelIssue] = []
    /// What loads with a caveat: read differently than Core Data would, or ignored.
    var warnings: [ModelIssue] = []

    /// The parts of a model read from a `contents` file.
    struct Parsed {
        var version: String?
        var entities: [EntityDescription]
        var configurations: [ConfigurationDescription]
        var fetchRequestTemplates: [FetchRequestTemplate]
    }

    private mutating func add(_ code: ModelIssue.Code, _ entity: String?, _ property: String?, _ message: String) {
        issues.append(ModelIssue(code, entity: entity, property: property, message))
    }

    private mutating func warn(_ code: ModelIssue.Code, _ entity: String?, _ property: String?, _ message: String) {
        warnings.append(ModelIssue(code, entity: entity, property: property, message))
    }

    /// Reads a Core Data `YES`/`NO` flag; `absent` when the attribute is missing. Core Data reads
    /// anything else as NO; so does this, with a warning.
    private mutating func flag(
        _ node: ModelXMLNode, _ key: String, absent: Bool, _ entity: String?, _ property: String?
    ) -> Bool {
        guard let text = node[key]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return absent }
        if let value = Self.boolean(text) { return value }
        warn(.invalidValue, entity, property, "'\(key)' is '\(text)', read as NO")
        return false
    }

    /// `YES`/`NO`, `true`/`false` or a number (non-zero is true), as Core Data parses flags and
    /// Boolean defaults.
    static func boolean(_ text: String) -> Bool? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        switch trimmed.lowercased() {
        case "yes", "true": return true
        case "no", "false": return false
        default: return Double(trimmed).map { $0 != 0 }
        }
    }

    /// Reads a non-negative whole number.
    private mutating func count(_ node: ModelXMLNode, _ key: String, _ entity: String, _ property: String) -> Int? {
        guard let text = node[key] else { return nil }
        guard let value = Int(text), value >= 0 else {
            add(.invalidValue, entity, property, "'\(key)' must be a non-negative whole number, not '\(text)'")
            return nil
        }
        return value
    }

    /// Reads the `<model>` root element; problems are added to ``issues``.
    mutating func readModel(_ root: ModelXMLNode) -> Parsed {
        if root.name != "model" {
            add(.invalidValue, nil, nil, "the root element is <\(root.name)>, not <model>")
        }
        composites = Dictionary(
            root.children(named: "composite").compactMap { node in node["name"].map { ($0, node) } },
            uniquingKeysWith: { first, _ in first })
        let entities = root.children(named: "entity").compactMap { readEntity($0) }
        var templates: [FetchRequestTemplate] = []
        for node in root.children(named: "fetchRequest") {
            guard let name = node["name"], let entity = node["entity"] else {
                add(
                    .missingValue, node["entity"], node["name"],
                    "a fetch request template needs a 'name' and an 'entity'")
                continue
            }
            templates.append(FetchRequestTemplate(name: name, entity: entity, predicate: node["predicateString"] ?? ""))
            for key in ["fetchLimit", "fetchBatchSize", "resultType", "includesPendingChanges"] where node[key] != nil {
                warn(.unsupported, entity, name, "fetch request template '\(name)': '\(key)' is ignored")
            }
        }
        var configurations: [ConfigurationDescription] = []
        for node in root.children(named: "configuration") {
            guard let name = node["name"] else {
                add(.missingValue, nil, nil, "a configuration needs a 'name'")
                continue
            }
            // Core Data's "Default" holds every entity; Xcode may write it to carry CloudKit settings.
            if name == ObjectModel.defaultConfiguration { continue }
            let members = node.children(named: "memberEntity").compactMap { $0["name"] }
            configurations.append(ConfigurationDescription(name: name, entities: members))
        }
        return Parsed(
            version: root["userDefinedModelVersionIdentifier"], entities: entities, configurations: configurations,
            fetchRequestTemplates: templates)
    }

    /// The model's composite types (iOS 17), by name.
    private var composites: [String: ModelXMLNode] = [:]
    /// The composites whose elements are being read, innermost last (a composite cannot nest itself).
    private var compositesBeingRead: [String] = []

    private mutating func readEntity(_ node: ModelXMLNode) -> EntityDescription? {
        guard let name = node["name"] else {
            add(.missingValue, nil, nil, "an entity needs a 'name'")
            return nil
        }
        var entity = EntityDescription(name: name)
        entity.parent = node["parentEntity"]
        entity.isAbstract = flag(node, "isAbstract", absent: false, name, nil)
        entity.renamedFrom = Self.renamingIdentifier(node)
        entity.versionHashModifier = node["versionHashModifier"]
        entity.documentation = Self.documentation(node)
        for child in node.children {
            switch child.name {
            case "attribute":
                if let attribute = readAttribute(child, entity: name) { entity.attributes.append(attribute) }
                if flag(child, "indexed", absent: false, name, child["name"]), let property = child["name"] {
                    addIndex(to: &entity, properties: [property])
                }
            case "relationship":
                if let relationship = readRelationship(child, entity: name) {
                    entity.relationships.append(relationship)
                }
            case "fetchedProperty":
                if let fetched = readFetchedProperty(child, entity: name) { entity.fetchedProperties.append(fetched) }
            case "uniquenessConstraints":
                for constraint in child.children(named: "uniquenessConstraint") {
                    let values = constraint.children(named: "constraint").compactMap { $0["value"] }
                    // A composite's elements live inside its one column: Strata cannot hold them unique.
                    if let element = values.first(where: { $0.contains(".") }) {
                        warn(
                            .unsupported, name, element,
                            "a uniqueness constraint over composite element '\(element)' is not enforced")
                        continue
                    }
                    entity.uniqueness.append(values)
                }
            case "fetchIndex":
                var properties: [String] = []
                var descending: Set<String> = []
                for element in child.children(named: "fetchIndexElement") {
                    guard let property = element["property"] else {
                        warn(
                            .unsupported, name, child["name"],
                            "fetch index '\(child["name"] ?? "")': an element over an expression is ignored")
                        continue
                    }
                    // Xcode and Core Data accept an element over a to-many relationship (shipping
                    // models have one); no column of the entity holds it, so there is nothing to
                    // index: the element is left out with a warning rather than the model refused.
                    if entity.relationships.contains(where: { $0.name == property && $0.isToMany }) {
                        warn(
                            .unsupported, name, property,
                            "fetch index '\(child["name"] ?? "")' names to-many relationship '\(property)', which has no column to index: the element is left out"
                        )
                        continue
                    }
                    if property.contains(".") {
                        warn(
                            .unsupported, name, property,
                            "fetch index '\(child["name"] ?? "")' names composite element '\(property)', which Strata keeps inside its composite's column: the element is left out"
                        )
                        continue
                    }
                    properties.append(property)
                    if element["order"]?.lowercased() == "descending" { descending.insert(property) }
                }
                guard !properties.isEmpty else { continue }
                if let indexName = child["name"], !entity.indexes.contains(where: { $0.name == indexName }) {
                    entity.indexes.append(
                        IndexDescription(name: indexName, properties: properties, descending: descending))
                } else {
                    addIndex(to: &entity, properties: properties)
                }
            case "compoundIndexes":
                for index in child.children(named: "compoundIndex") {
                    addIndex(to: &entity, properties: index.children(named: "index").compactMap { $0["value"] })
                }
            case "userInfo":
                if let entry = child.children(named: "entry").last(where: { $0["key"] == "resource" }) {
                    entity.resource = entry.attributes["value"]
                }
                // A value Strata does not know is left alone (Core Data accepts any userInfo).
                if let entry = child.children(named: "entry").last(where: { $0["key"] == "access" }),
                    let value = entry.attributes["value"], let access = EntityAccess(rawValue: value)
                {
                    entity.access = access
                }
            default:
                break
            }
        }
        return entity
    }

    /// Adds an unnamed index (older Core Data spellings), naming it `<Entity>_<property>_…`, unless
    /// an index over the same properties exists.
    private func addIndex(to entity: inout EntityDescription, properties: [String]) {
        guard !entity.indexes.contains(where: { $0.properties == properties }) else { return }
        var name = ([entity.name] + properties).joined(separator: "_")
        while entity.indexes.contains(where: { $0.name == name }) { name += "_" }
        entity.indexes.append(IndexDescription(name: name, properties: properties))
    }

    /// Core Data's renaming identifier: `renamingIdentifier` in older files, `elementID` in current
    /// Xcode's.
    static func renamingIdentifier(_ node: ModelXMLNode) -> String? { node["renamingIdentifier"] ?? node["elementID"] }

    private mutating func readAttribute(_ node: ModelXMLNode, entity: String) -> AttributeDescription? {
        guard let name = node["name"] else {
            add(.missingValue, entity, nil, "an attribute needs a 'name'")
            return nil
        }
        if flag(node, "transient", absent: false, entity, name) {
            warn(.unsupported, entity, name, "transient attribute: not stored, so not served either")
            return nil
        }
        guard let typeName = node["attributeType"] else {
            add(.missingValue, entity, name, "attribute needs an 'attributeType'")
            return nil
        }
        if typeName == "Composite" { return readComposite(node, name: name, entity: entity) }
        guard let type = AttributeType(modelName: typeName) else {
            let known =
                "String, Integer 16, Integer 32, Integer 64, Double, Float, Decimal, Boolean, Date, Binary, UUID, URI, Transformable"
            add(.unknownType, entity, name, "unknown attributeType '\(typeName)' (known: \(known))")
            return nil
        }
        var attribute = AttributeDescription(name: name, type: type)
        attribute.isOptional = flag(node, "optional", absent: false, entity, name)
        attribute.regex = node["regularExpressionString"]
        attribute.renamedFrom = Self.renamingIdentifier(node)
        attribute.versionHashModifier = node["versionHashModifier"]
        attribute.coreData = coreDataInfo(node, typeName, entity, name)
        if flag(node, "derived", absent: false, entity, name) {
            if let expression = node["derivationExpression"] {
                attribute.derivation = expression
            } else {
                warn(.missingValue, entity, name, "derived attribute without a derivationExpression: stored as it is")
            }
        }
        if type == .string || type == .binary {
            attribute.minLength = count(node, "minValueString", entity, name)
            attribute.maxLength = count(node, "maxValueString", entity, name)
        } else if type.isNumeric || type == .date {
            attribute.minValue = bound(node, ["minValueString", "minDateTimeInterval"], type, entity, name)
            attribute.maxValue = bound(node, ["maxValueString", "maxDateTimeInterval"], type, entity, name)
        } else if let key = ["minValueString", "maxValueString"].first(where: { node[$0] != nil }) {
            add(
                .invalidValue, entity, name,
                "'\(key)' applies to numbers, dates, strings and binary data, not \(typeName)")
        }
        for key in ["defaultValueString", "defaultDateTimeInterval"] {
            guard let text = node.attributes[key] else { continue }
            guard let value = Self.value(text, as: type) else {
                warn(
                    .invalidDefault, entity, name,
                    "'\(key)' '\(text)' does not fit attributeType \(typeName): the attribute has no default")
                continue
            }
            attribute.defaultValue = value
        }
        attribute.documentation = Self.documentation(node)
        return attribute
    }

    /// A composite attribute: its elements are the `<attribute>`s of the model's `<composite>` it
    /// names, each read as an attribute (one of type Composite nests another composite).
    private mutating func readComposite(_ node: ModelXMLNode, name: String, entity: String) -> AttributeDescription? {
        let compositeName = node["composite"] ?? ""
        guard let composite = composites[compositeName] else {
            add(
                .missingValue, entity, name,
                "composite attribute names no <composite> of the model ('\(compositeName)')")
            return nil
        }
        guard !compositesBeingRead.contains(compositeName) else {
            add(.invalidValue, entity, name, "composite '\(compositeName)' contains itself")
            return nil
        }
        compositesBeingRead.append(compositeName)
        defer { compositesBeingRead.removeLast() }
        var elements: [AttributeDescription] = []
        for child in composite.children(named: "attribute") {
            guard let element = readAttribute(child, entity: "\(entity).\(name)") else { continue }
            if elements.contains(where: { $0.name == element.name }) {
                add(.duplicateName, entity, name, "composite '\(compositeName)' has two elements '\(element.name)'")
                continue
            }
            elements.append(element)
        }
        var attribute = AttributeDescription(name: name, type: .json)
        attribute.elements = elements
        attribute.isOptional = flag(node, "optional", absent: false, entity, name)
        attribute.defaultValue = AttributeDescription.compositeDefault(elements)
        attribute.renamedFrom = Self.renamingIdentifier(node)
        attribute.versionHashModifier = node["versionHashModifier"]
        attribute.coreData = coreDataInfo(node, "Composite", entity, name)
        attribute.documentation = Self.documentation(node)
        return attribute
    }

    /// What Core Data's version hash and a store import need beyond the attribute's type.
    private mutating func coreDataInfo(_ node: ModelXMLNode, _ typeName: String, _ entity: String, _ name: String)
        -> CoreDataAttributeInfo
    {
        let transformer = node["valueTransformerName"].flatMap { $0.isEmpty ? nil : $0 }
        return CoreDataAttributeInfo(
            attributeType: typeName, valueTransformerName: transformer,
            allowsExternalBinaryDataStorage: flag(node, "allowsExternalBinaryDataStorage", absent: false, entity, name),
            preservesValueInHistoryOnDeletion: flag(node, "preserveAfterDeletion", absent: false, entity, name))
    }

    /// Reads a min or max bound the way the JSON format holds it: a whole number as `.integer`
    /// (`.decimal` for decimal attributes), another number as `.double`, a date as `.date`.
    private mutating func bound(
        _ node: ModelXMLNode, _ keys: [String], _ type: AttributeType, _ entity: String, _ name: String
    ) -> AttributeValue? {
        guard let key = keys.first(where: { node[$0] != nil }), let text = node[key] else { return nil }
        if type == .date {
            if let date = Self.date(text) { return .date(date) }
        } else if let integer = Int64(text) {
            return type == .decimal ? .decimal(Decimal(integer)) : .integer(integer)
        } else if let number = Double(text), number.isFinite {
            return .double(number)
        }
        warn(
            .invalidValue, entity, name,
            "'\(key)' '\(text)' does not fit attributeType \(node["attributeType"] ?? type.rawValue): no bound is checked"
        )
        return nil
    }

    /// A date as Core Data writes it (seconds since 2001-01-01) or as RFC 3339, kept to the microsecond.
    static func date(_ text: String) -> Date? {
        if let seconds = Double(text), seconds.isFinite {
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            return AttributeValue.date(microseconds: AttributeValue.microseconds(of: date))
        }
        return AttributeValue.parseDate(text)
    }

    /// Converts a `defaultValueString` to a value of `type` as leniently as Core Data parses it
    /// (surrounding white space ignored, `YES`/`NO` as 1/0 for numbers, numbers as Booleans); nil
    /// when it does not fit.
    static func value(_ raw: String, as type: AttributeType) -> AttributeValue? {
        let text = type == .string ? raw : raw.trimmingCharacters(in: .whitespacesAndNewlines)
        let flag: Bool? =
            switch text.lowercased() {
            case "yes", "true": true
            case "no", "false": false
            default: nil
            }
        switch type {
        case .string:
            return .string(text)
        case .integer16, .integer32, .integer64:
            if let flag { return .integer(flag ? 1 : 0) }
            var integer = Int64(text)
            if integer == nil, let number = Double(text), number == number.rounded(), abs(number) < 9.2e18 {
                integer = Int64(number)
            }
            guard let integer, type.integerRange!.contains(integer) else { return nil }
            return .integer(integer)
        case .double, .float:
            if let flag { return .double(flag ? 1 : 0) }
            return Double(text).flatMap { $0.isFinite ? .double($0) : nil }
        case .decimal:
            if let flag { return .decimal(flag ? 1 : 0) }
            return AttributeValue.parseDecimal(text).map { .decimal($0) }
        case .boolean:
            return boolean(text).map { .boolean($0) }
        case .date:
            return date(text).map { .date($0) }
        case .binary:
            return Data(base64Encoded: text).map { .binary($0) }
        case .uuid:
            return UUID(uuidString: text).map { .uuid($0) }
        case .uri:
            return AttributeValue.isURI(text) ? .uri(text) : nil
        case .json:
            guard let json = try? JSONValue.parse(text) else { return nil }
            return .json(json)
        }
    }

    private mutating func readRelationship(_ node: ModelXMLNode, entity: String) -> RelationshipDescription? {
        guard let name = node["name"] else {
            add(.missingValue, entity, nil, "a relationship needs a 'name'")
            return nil
        }
        if flag(node, "transient", absent: false, entity, name) {
            warn(.unsupported, entity, name, "transient relationship: not stored, so not served either")
            return nil
        }
        guard let destination = node["destinationEntity"] else {
            add(.missingValue, entity, name, "relationship needs a 'destinationEntity'")
            return nil
        }
        var relationship = RelationshipDescription(name: name, destination: destination, inverse: node["inverseName"])
        relationship.isToMany = flag(node, "toMany", absent: false, entity, name)
        relationship.isOrdered = flag(node, "ordered", absent: false, entity, name)
        relationship.isOptional = flag(node, "optional", absent: false, entity, name)
        relationship.renamedFrom = Self.renamingIdentifier(node)
        relationship.versionHashModifier = node["versionHashModifier"]
        let minCount = count(node, "minCount", entity, name) ?? 0
        let maxCount = count(node, "maxCount", entity, name) ?? 0
        relationship.coreData = CoreDataRelationshipInfo(
            minCount: minCount, maxCount: relationship.isToMany ? maxCount : 1)
        if relationship.isToMany {
            // Core Data writes 0 for "no limit".
            relationship.minCount = minCount == 0 ? nil : minCount
            relationship.maxCount = maxCount == 0 ? nil : maxCount
        }
        if let rule = node["deletionRule"] {
            if let parsed = DeleteRule(modelName: rule) {
                relationship.deleteRule = parsed
            } else {
                add(
                    .invalidValue, entity, name,
                    "unknown deletionRule '\(rule)' (known: Nullify, Cascade, Deny, No Action)")
            }
        }
        relationship.documentation = Self.documentation(node)
        return relationship
    }

    private mutating func readFetchedProperty(_ node: ModelXMLNode, entity: String) -> FetchedPropertyDescription? {
        guard let name = node["name"] else {
            add(.missingValue, entity, nil, "a fetched property needs a 'name'")
            return nil
        }
        guard let request = node.children(named: "fetchRequest").first, let fetched = request["entity"] else {
            add(.missingValue, entity, name, "fetched property needs a <fetchRequest> with an 'entity'")
            return nil
        }
        return FetchedPropertyDescription(
            name: name, entity: fetched, predicate: request["predicateString"] ?? "",
            documentation: Self.documentation(node))
    }

    /// The `documentation` (else `description`) entry of an element's own `userInfo`: what the
    /// OpenAPI document and generated Swift show of it.
    static func documentation(_ node: ModelXMLNode) -> String? {
        let entries = node.children(named: "userInfo").flatMap { $0.children(named: "entry") }
        for key in ["documentation", "description"] {
            if let value = entries.last(where: { $0["key"] == key })?["value"], !value.isEmpty { return value }
        }
        return nil
    }
}
