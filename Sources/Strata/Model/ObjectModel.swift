import Foundation

/// An immutable, validated object model: entities, their properties, and named configurations.
///
/// Create one with ``init(name:version:entities:configurations:fetchRequestTemplates:warnings:)``,
/// from the JSON format with ``ObjectModel/load(json:file:)``, from Core Data files with
/// ``ObjectModel/load(contentsOf:)-(URL)``,
/// or by merging several with ``ObjectModel/merged(_:)``. Every initializer validates the model and
/// throws a ``ModelError`` listing every problem.
public struct ObjectModel: Sendable {
    /// The model's name.
    public let name: String
    /// The model version identifier, if declared.
    public let version: String?
    /// The entities, in declaration order.
    public let entities: [EntityDescription]
    /// The named configurations, in declaration order.
    public let configurations: [ConfigurationDescription]
    /// Named fetch requests (Core Data's fetch request templates), by name.
    public let fetchRequestTemplates: [FetchRequestTemplate]
    /// What the model's sources hold that loads with a caveat (a relationship without an inverse,
    /// a property read differently than in Core Data, something ignored): what Core Data itself
    /// only warns about. `strata model` lists them; `--strict` refuses a model that has any.
    public let warnings: [ModelIssue]
    /// The warnings the model's sources gave (the rest validation finds again).
    let sourceWarnings: [ModelIssue]

    let resolved: [String: ResolvedEntity]
    /// Each entity's REST resource path segment, worked out once (see ``resourcePath(of:)``).
    private let resources: [String: String]
    /// Whether any entity has a derived attribute (saves compute them).
    let hasDerivedAttributes: Bool
    /// How each relationship is stored, by entity and name, worked out once.
    private(set) var storages: [String: [String: RelationshipStorage]] = [:]
    /// The relationships without an inverse into each entity (see `relationshipsWithoutInverse`).
    private(set) var incomingWithoutInverse: [String: [(owner: String, relationship: RelationshipDescription)]] = [:]

    /// Builds and validates a model.
    /// - Parameters:
    ///   - name: the model's name.
    ///   - version: the model version identifier, if declared.
    ///   - entities: the entities, in declaration order.
    ///   - configurations: the named configurations; none: every entity in the default one.
    ///   - fetchRequestTemplates: named fetch requests (Core Data's fetch request templates).
    ///   - warnings: caveats found while reading the model's sources, kept with the ones
    ///     validation finds in ``warnings``.
    /// - Throws: ``ModelError`` of kind `.invalid` naming every problem.
    public init(
        name: String, version: String? = nil, entities: [EntityDescription],
        configurations: [ConfigurationDescription] = [], fetchRequestTemplates: [FetchRequestTemplate] = [],
        warnings: [ModelIssue] = []
    ) throws(ModelError) {
        self.name = name
        self.version = version
        self.entities = entities
        self.configurations = configurations
        self.fetchRequestTemplates = fetchRequestTemplates
        var validator = ModelValidator(
            entities: entities, configurations: configurations, fetchRequestTemplates: fetchRequestTemplates)
        let (issues, found) = validator.validate()
        guard issues.isEmpty else { throw ModelError(.invalid, issues: issues) }
        var resourceWarnings: [ModelIssue] = []
        resources = Self.assignResources(entities, warnings: &resourceWarnings)
        sourceWarnings = warnings
        self.warnings = warnings + found + resourceWarnings
        resolved = ResolvedEntity.resolve(entities: entities, configurations: configurations)
        hasDerivedAttributes = resolved.values.contains { !$0.derived.isEmpty }
        var storages: [String: [String: RelationshipStorage]] = [:]
        for entity in entities {
            for relationship in relationships(of: entity.name) {
                storages[entity.name, default: [:]][relationship.name] = computeStorage(
                    of: relationship.name, in: entity.name)
            }
        }
        self.storages = storages
        incomingWithoutInverse = Self.incomingWithoutInverse(self)
    }

    /// The entity named `name`.
    public func entity(named name: String) -> EntityDescription? { resolved[name]?.entity }

    /// What a server lets clients do with `entity`: `overrides` for it or, failing that, its own
    /// ``EntityDescription/access``; then the same for its nearest ancestor; else read-write.
    public func access(of entity: String, overrides: [String: EntityAccess] = [:]) -> EntityAccess {
        var current: String? = entity
        while let name = current, let description = self.entity(named: name) {
            if let access = overrides[name] ?? description.access { return access }
            current = description.parent
        }
        return .readWrite
    }

    /// ``access(of:overrides:)`` of every entity.
    public func resolvedAccess(overrides: [String: EntityAccess] = [:]) -> [String: EntityAccess] {
        Dictionary(uniqueKeysWithValues: entityNames.map { ($0, access(of: $0, overrides: overrides)) })
    }

    /// The same model with one more warning.
    func adding(warning: ModelIssue) throws(ModelError) -> ObjectModel {
        try ObjectModel(
            name: name, version: version, entities: entities, configurations: configurations,
            fetchRequestTemplates: fetchRequestTemplates,
            warnings: sourceWarnings + [warning])
    }

    /// The names of every entity, in declaration order.
    public var entityNames: [String] { entities.map(\.name) }

    /// Every attribute of `entity`, inherited ones first.
    public func attributes(of entity: String) -> [AttributeDescription] { resolved[entity]?.attributes ?? [] }

    /// Every relationship of `entity`, inherited ones first.
    public func relationships(of entity: String) -> [RelationshipDescription] {
        resolved[entity]?.relationships ?? []
    }

    /// Every fetched property of `entity`, inherited ones first.
    public func fetchedProperties(of entity: String) -> [FetchedPropertyDescription] {
        resolved[entity]?.fetchedProperties ?? []
    }

    /// The fetch request template named `name` (Core Data's `fetchRequestTemplate(forName:)`).
    public func fetchRequestTemplate(named name: String) -> FetchRequestTemplate? {
        fetchRequestTemplates.first { $0.name == name }
    }

    /// A fetch request made from template `name` with its `$VARIABLES` replaced (Core Data's
    /// `fetchRequestFromTemplate(withName:substitutionVariables:)`).
    /// - Throws: ``PredicateError`` for an unknown template or a variable without a value.
    public func fetchRequest(
        fromTemplate name: String, substitutionVariables variables: [String: PredicateArgument] = [:]
    ) throws(PredicateError) -> FetchRequest {
        guard let template = fetchRequestTemplate(named: name) else {
            throw PredicateError("the model has no fetch request template '\(name)'")
        }
        let text = template.predicate.trimmingCharacters(in: .whitespaces)
        let predicate = text.isEmpty ? nil : try FetchPredicate(format: text).substituting(variables)
        return FetchRequest(entityName: template.entity, predicate: predicate)
    }

    /// The derived attributes of `entity` (computed on every save, never set).
    public func derivedAttributes(of entity: String) -> [AttributeDescription] {
        resolved[entity]?.derived.map(\.attribute) ?? []
    }

    /// Whether attribute `name` of `entity` is derived (computed on every save, never set).
    public func isDerived(_ name: String, of entity: String) -> Bool {
        resolved[entity]?.derived.contains { $0.attribute.name == name } ?? false
    }

    /// The attribute `name` of `entity`, inherited or own.
    public func attribute(_ name: String, of entity: String) -> AttributeDescription? {
        resolved[entity]?.attributesByName[name]
    }

    /// The relationship `name` of `entity`, inherited or own.
    public func relationship(_ name: String, of entity: String) -> RelationshipDescription? {
        resolved[entity]?.relationshipsByName[name]
    }

    /// The inverse of relationship `name` of `entity`: nil when it has none, or when the one it
    /// names does not point back (Core Data loads such a model with a warning; the relationship
    /// is kept as one without an inverse).
    public func inverse(of name: String, of entity: String) -> RelationshipDescription? {
        guard let relationship = relationship(name, of: entity), let inverseName = relationship.inverse,
            let inverse = self.relationship(inverseName, of: relationship.destination), inverse.inverse == name,
            self.entity(entity, isKindOf: inverse.destination)
        else { return nil }
        return inverse
    }

    /// The positions of `entity`'s attributes, shared by every object of it.
    public func attributeLayout(of entity: String) -> AttributeLayout? { resolved[entity]?.layout }

    /// The resolved description of `entity`, for paths that look up several of its parts.
    func resolvedEntity(_ entity: String) -> ResolvedEntity? { resolved[entity] }

    /// The root of `entity`'s inheritance hierarchy (the entity itself when it has no parent).
    public func rootEntity(of entity: String) -> String { resolved[entity]?.root ?? entity }

    /// `entity` and every entity that inherits from it, directly or not.
    public func entityAndSubentities(of entity: String) -> [String] { resolved[entity]?.family ?? [] }

    /// Whether `entity` is `ancestor` or inherits from it.
    public func entity(_ entity: String, isKindOf ancestor: String) -> Bool {
        var current: String? = entity
        while let name = current {
            if name == ancestor { return true }
            current = resolved[name]?.entity.parent
        }
        return false
    }

    /// The configurations holding `entity`.
    public func configurations(containing entity: String) -> [String] { resolved[entity]?.configurations ?? [] }

    /// The entities a store added for `configuration` holds: every entity for `nil` or `"Default"`
    /// (Core Data's default configuration), else the configuration's members.
    /// - Returns: nil when the model has no such configuration.
    public func entityNames(inConfiguration configuration: String?) -> [String]? {
        guard let configuration, configuration != Self.defaultConfiguration else { return entityNames }
        guard let found = configurations.first(where: { $0.name == configuration }) else { return nil }
        let members = Set(found.entities)
        return entityNames.filter { members.contains($0) }
    }

    /// The name of the configuration that holds every entity.
    public static let defaultConfiguration = "Default"

    /// The REST resource path segment of `entity`: its `resource`, else its plural kebab-case name
    /// (when that is a path the server keeps for itself or another entity's, the singular, then
    /// `<singular>-entity`, with a warning).
    public func resourcePath(of entity: String) -> String {
        resources[entity] ?? ObjectModel.derivedResourcePath(entity)
    }

    /// Every entity's resource path: explicit ones as given (validated), derived ones moved off
    /// system paths and each other's.
    private static func assignResources(_ entities: [EntityDescription], warnings: inout [ModelIssue])
        -> [String: String]
    {
        var result: [String: String] = [:]
        var taken = Set(entities.compactMap(\.resource))
        for entity in entities where entity.resource != nil { result[entity.name] = entity.resource }
        for entity in entities where entity.resource == nil {
            let plural = derivedResourcePath(entity.name)
            let singular = derivedResourcePath(entity.name, plural: false)
            let candidates = [plural, singular, singular + "-entity", singular + "-entity-2", singular + "-entity-3"]
            let path =
                candidates.first { !systemPaths.contains($0) && !$0.hasPrefix("_") && !taken.contains($0) }
                ?? entity.name
            if path != plural {
                warnings.append(
                    ModelIssue(
                        .resourceCollision, entity: entity.name,
                        "'/\(plural)' is \(systemPaths.contains(plural) ? "a path of the server" : "another entity's path"), so \(entity.name) is served at '/\(path)' (set a 'resource' to choose)"
                    ))
            }
            taken.insert(path)
            result[entity.name] = path
        }
        return result
    }

    /// The plural kebab-case path for an entity name: `Book` → `books`, `SearchLog` → `search-logs`
    /// (with `plural: false`, `book`, `search-log`).
    public static func derivedResourcePath(_ entityName: String, plural: Bool = true) -> String {
        var words: [String] = []
        var current = ""
        let characters = Array(entityName)
        for (index, character) in characters.enumerated() {
            let startsWord =
                character.isUppercase && !current.isEmpty
                && (characters[index - 1].isLowercase || characters[index - 1].isNumber
                    || (index + 1 < characters.count && characters[index + 1].isLowercase))
            if character == "_" || character == "-" {
                if !current.isEmpty { words.append(current) }
                current = ""
                continue
            }
            if startsWord {
                words.append(current)
                current = ""
            }
            current.append(character)
        }
        if !current.isEmpty { words.append(current) }
        guard var last = words.popLast()?.lowercased() else { return entityName.lowercased() }
        guard plural else { return (words.map { $0.lowercased() } + [last]).joined(separator: "-") }
        let vowels: Set<Character> = ["a", "e", "i", "o", "u"]
        if last.hasSuffix("y"), last.count > 1, !vowels.contains(last[last.index(last.endIndex, offsetBy: -2)]) {
            last = String(last.dropLast()) + "ies"
        } else if Self.isPlural(last) {
            // Already plural (`SubscriptionAlerts`, `Settings`, `Messages`): kept, not `alertses`.
        } else if ["s", "x", "z", "ch", "sh"].contains(where: { last.hasSuffix($0) }) {
            last += "es"
        } else {
            last += "s"
        }
        return (words.map { $0.lowercased() } + [last]).joined(separator: "-")
    }

    /// Whether a lowercased word ending in `s` reads as a plural already: an `s` after a letter
    /// other than `s`, `u`, `i` and `a` (`alerts`, `settings`, `messages`, `days`, `photos`);
    /// `class`, `status`, `axis` and `canvas` read as singular and take `es`.
    static func isPlural(_ word: String) -> Bool {
        guard word.count > 2, word.hasSuffix("s") else { return false }
        let before = word[word.index(word.endIndex, offsetBy: -2)]
        return !["s", "u", "i", "a"].contains(before) && before.isLetter
    }

    /// Paths the server keeps for itself; no entity may use them.
    public static let systemPaths: Set<String> = [
        "", "live", "ready", "metrics", "docs", "openapi.json", "openapi.yaml", "_batch", "_model",
    ]
}

extension ObjectModel: Equatable {
    /// Models are equal when their names, versions, entities, configurations and fetch request
    /// templates are (warnings are not compared).
    public static func == (lhs: ObjectModel, rhs: ObjectModel) -> Bool {
        lhs.name == rhs.name && lhs.version == rhs.version && lhs.entities == rhs.entities
            && lhs.configurations == rhs.configurations && lhs.fetchRequestTemplates == rhs.fetchRequestTemplates
    }
}

/// One attribute's validation rules, in a class so that checking an object copies one reference
/// per rule rather than a whole attribute description, and with the rules as fields of their own:
/// reading them through the description copied all of it, every string retained, per object.
final class AttributeRule: Sendable {
    let name: String
    let type: AttributeType
    let isOptional: Bool
    let minValue: AttributeValue?
    let maxValue: AttributeValue?
    let minLength: Int?
    let maxLength: Int?
    let regex: String?
    /// A composite's description, whose elements its value must fit.
    let composite: AttributeDescription?
    /// The attribute's position in its entity's layout.
    let position: Int

    init(_ attribute: AttributeDescription, position: Int) {
        name = attribute.name
        type = attribute.type
        isOptional = attribute.isOptional
        minValue = attribute.minValue
        maxValue = attribute.maxValue
        minLength = attribute.minLength
        maxLength = attribute.maxLength
        regex = attribute.regex
        composite = attribute.isComposite ? attribute : nil
        self.position = position
    }
}

/// An entity with its inherited properties gathered, computed once when a model is built (a class,
/// so that a lookup on a hot path retains one reference instead of copying every field).
final class ResolvedEntity: Sendable {
    let entity: EntityDescription
    let root: String
    let family: [String]
    let configurations: [String]
    let attributes: [AttributeDescription]
    let relationships: [RelationshipDescription]
    let fetchedProperties: [FetchedPropertyDescription]
    let attributesByName: [String: AttributeDescription]
    let relationshipsByName: [String: RelationshipDescription]
    /// The attributes with a rule to validate (required, bounds, lengths, pattern); values of the
    /// others were checked against their type when set.
    let rules: [AttributeRule]
    /// The relationships with a rule to validate (required, or a count).
    let relationshipRules: [RelationshipDescription]
    /// The derived attributes whose expressions parse, with them (computed on every save).
    let derived: [(attribute: AttributeDescription, derivation: Derivation)]
    /// The positions of the entity's attributes, shared by every object of it.
    let layout: AttributeLayout
    /// The type of the attribute at each position of `layout`.
    let attributeTypes: [AttributeType]
    /// Where the entity's temporary IDs live.
    let temporaryHome: ObjectID.Home
    /// A new object's values: every attribute's default (or null), empty relationships.
    let newAttributes: AttributeValues
    let newToOne: [String: ObjectID?]
    let newToMany: [String: [ObjectID]]

    init(
        entity: EntityDescription, root: String, family: [String], configurations: [String],
        attributes: [AttributeDescription], relationships: [RelationshipDescription],
        fetchedProperties: [FetchedPropertyDescription]
    ) {
        self.entity = entity
        self.root = root
        self.family = family
        self.configurations = configurations
        self.attributes = attributes
        self.relationships = relationships
        self.fetchedProperties = fetchedProperties
        derived = attributes.compactMap { attribute in
            attribute.derivation.flatMap(Derivation.init).map { (attribute, $0) }
        }
        let derivedNames = Set(derived.map(\.attribute.name))
        rules = attributes.enumerated().compactMap { position, attribute in
            // A derived value is computed, not given: it has no rule to break.
            guard !derivedNames.contains(attribute.name) else { return nil }
            let ruled =
                !attribute.isOptional || attribute.minValue != nil || attribute.maxValue != nil
                || attribute.minLength != nil || attribute.maxLength != nil || attribute.regex != nil
                || attribute.isComposite
            return ruled ? AttributeRule(attribute, position: position) : nil
        }
        relationshipRules = relationships.filter { !$0.isOptional || $0.minCount != nil || $0.maxCount != nil }
        attributesByName = Dictionary(attributes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        relationshipsByName = Dictionary(relationships.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var names: [String] = []
        var defaults: [AttributeValue?] = []
        var types: [AttributeType] = []
        for attribute in attributes where !names.contains(attribute.name) {
            names.append(attribute.name)
            defaults.append(attribute.defaultValue ?? .null)
            types.append(attribute.type)
        }
        layout = AttributeLayout(names)
        attributeTypes = types
        temporaryHome = ObjectID.Home.of(entity: entity.name, store: nil)
        newAttributes = AttributeValues(layout: layout, slots: defaults)
        var toOne: [String: ObjectID?] = [:]
        var toMany: [String: [ObjectID]] = [:]
        for relationship in relationships {
            if relationship.isToMany { toMany[relationship.name] = [] } else { toOne[relationship.name] = .some(nil) }
        }
        newToOne = toOne
        newToMany = toMany
    }

    static func resolve(
        entities: [EntityDescription], configurations: [ConfigurationDescription]
    ) -> [String: ResolvedEntity] {
        let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        func chain(_ name: String) -> [EntityDescription] {
            var result: [EntityDescription] = []
            var current = byName[name]
            while let entity = current, !result.contains(where: { $0.name == entity.name }) {
                result.insert(entity, at: 0)
                current = entity.parent.flatMap { byName[$0] }
            }
            return result
        }
        let columns = suffixedColumns(entities: entities, root: { chain($0).first?.name ?? $0 })
        var resolved: [String: ResolvedEntity] = [:]
        for entity in entities {
            let lineage = chain(entity.name)
            let attributes = lineage.flatMap { declaring in
                declaring.attributes.map { attribute in
                    var attribute = attribute
                    attribute.suffixedColumn = columns[declaring.name]?[attribute.name]
                    return attribute
                }
            }
            let relationships = lineage.flatMap(\.relationships)
            let family = entities.filter { candidate in chain(candidate.name).contains { $0.name == entity.name } }
            resolved[entity.name] = ResolvedEntity(
                entity: entity,
                root: lineage.first?.name ?? entity.name,
                family: family.map(\.name),
                configurations: configurations.filter { $0.entities.contains(entity.name) }.map(\.name),
                attributes: attributes,
                relationships: relationships,
                fetchedProperties: lineage.flatMap(\.fetchedProperties).filter {
                    $0.predicate.allSatisfy(\.isWhitespace) || (try? FetchPredicate(format: $0.predicate)) != nil
                })
        }
        return resolved
    }

    /// For each declaring entity, the attributes whose column is not their name: within one
    /// hierarchy (one table), the first type declared under a name (entities in the order Core Data
    /// numbers them: depth first, siblings by name) keeps the name, and each other type takes the
    /// name with the next free suffix (`1`, `2`, …), shared by the entities that declare it with
    /// that type. A to-one relationship of that name keeps the bare name for its foreign key.
    static func suffixedColumns(
        entities: [EntityDescription], root: (String) -> String
    ) -> [String: [String: String]] {
        var result: [String: [String: String]] = [:]
        let hierarchies = Dictionary(grouping: entities, by: { root($0.name) })
        for family in hierarchies.values where family.count > 1 {
            // Core Data's entity numbering: depth first, siblings in case-insensitive name order.
            let children = Dictionary(grouping: family.filter { $0.parent != nil }, by: { $0.parent! })
            func visit(_ entity: EntityDescription) -> [EntityDescription] {
                let next = (children[entity.name] ?? []).sorted {
                    ($0.name.lowercased(), $0.name) < ($1.name.lowercased(), $1.name)
                }
                return [entity] + next.flatMap(visit)
            }
            guard let top = family.first(where: { $0.name == root($0.name) && $0.parent == nil }) else { continue }
            let sorted = visit(top)
            var used = Set(sorted.flatMap { $0.attributes.map(\.name) + $0.relationships.map(\.name) })
            // A to-one relationship's column keeps its name: attributes of that name take suffixes.
            let toOne = Set(sorted.flatMap { $0.relationships.filter { !$0.isToMany }.map(\.name) })
            var columnOf: [String: [AttributeType: String]] = [:]
            for entity in sorted {
                for attribute in entity.attributes {
                    var types = columnOf[attribute.name, default: [:]]
                    if types.isEmpty && !toOne.contains(attribute.name) { types[attribute.type] = attribute.name }
                    if types[attribute.type] == nil {
                        var suffix = 1
                        while used.contains(attribute.name + String(suffix)) { suffix += 1 }
                        types[attribute.type] = attribute.name + String(suffix)
                        used.insert(attribute.name + String(suffix))
                    }
                    columnOf[attribute.name] = types
                    if let column = types[attribute.type], column != attribute.name {
                        result[entity.name, default: [:]][attribute.name] = column
                    }
                }
            }
        }
        return result
    }
}
