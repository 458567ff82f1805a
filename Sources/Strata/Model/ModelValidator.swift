import Foundation

/// Checks a model's rules and collects every problem, so one run reports them all.
struct ModelValidator {
    let entities: [EntityDescription]
    let configurations: [ConfigurationDescription]
    let fetchRequestTemplates: [FetchRequestTemplate]
    private var issues: [ModelIssue] = []
    /// What loads with a caveat, as Core Data only warns about it.
    private var warnings: [ModelIssue] = []
    private let byName: [String: EntityDescription]

    init(
        entities: [EntityDescription], configurations: [ConfigurationDescription],
        fetchRequestTemplates: [FetchRequestTemplate] = []
    ) {
        self.entities = entities
        self.configurations = configurations
        self.fetchRequestTemplates = fetchRequestTemplates
        byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.properties.isAlphabetic, first.isASCII else { return false }
        return name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
        }
    }

    /// Every problem (the model is refused) and every caveat (it loads).
    mutating func validate() -> (issues: [ModelIssue], warnings: [ModelIssue]) {
        checkEntityNames()
        checkInheritance()
        for entity in entities {
            checkProperties(of: entity)
            if !entity.isAbstract, lineage(of: entity).allSatisfy({ $0.attributes.isEmpty && $0.relationships.isEmpty })
            {
                warn(.unsupported, entity.name, nil, "entity has no properties: its objects hold nothing but their id")
            }
            for attribute in entity.attributes { check(attribute, in: entity) }
            for relationship in entity.relationships { check(relationship, in: entity) }
            for fetched in entity.fetchedProperties { check(fetched, in: entity) }
            checkConstraintsAndIndexes(of: entity)
        }
        checkConfigurations()
        checkResources()
        checkTemplates()
        return (issues, warnings)
    }

    private mutating func warn(_ code: ModelIssue.Code, _ entity: String?, _ property: String?, _ message: String) {
        warnings.append(ModelIssue(code, entity: entity, property: property, message))
    }

    private mutating func checkTemplates() {
        var seen: Set<String> = []
        for template in fetchRequestTemplates {
            if !seen.insert(template.name).inserted || !Self.isIdentifier(template.name) {
                add(
                    .invalidName, template.entity, template.name,
                    "fetch request template names must be unique identifiers")
            }
            guard byName[template.entity] != nil else {
                add(
                    .unknownEntity, template.entity, template.name,
                    "fetch request template '\(template.name)' names unknown entity '\(template.entity)'")
                continue
            }
            if !template.predicate.trimmingCharacters(in: .whitespaces).isEmpty {
                do {
                    _ = try FetchPredicate(format: template.predicate)
                } catch {
                    warn(
                        .unsupported, template.entity, template.name,
                        "fetch request template predicate '\(template.predicate)' does not parse: \(error.message); the template cannot be used"
                    )
                }
            }
        }
    }

    private mutating func add(_ code: ModelIssue.Code, _ entity: String?, _ property: String?, _ message: String) {
        issues.append(ModelIssue(code, entity: entity, property: property, message))
    }

    private mutating func checkEntityNames() {
        var seen: Set<String> = []
        for entity in entities {
            if !Self.isIdentifier(entity.name) {
                add(
                    .invalidName, entity.name, nil,
                    "entity name must start with a letter and hold only ASCII letters, digits and '_'")
            }
            if !seen.insert(entity.name).inserted {
                add(.duplicateName, entity.name, nil, "entity '\(entity.name)' is declared more than once")
            }
        }
    }

    private mutating func checkInheritance() {
        for entity in entities {
            guard let parent = entity.parent else { continue }
            guard byName[parent] != nil else {
                add(.unknownEntity, entity.name, nil, "parent entity '\(parent)' does not exist")
                continue
            }
            var visited: Set<String> = [entity.name]
            var current: String? = parent
            while let name = current {
                if !visited.insert(name).inserted {
                    add(.inheritanceCycle, entity.name, nil, "entity inherits from itself through '\(name)'")
                    break
                }
                current = byName[name]?.parent
            }
        }
    }

    /// Every property of `entity`, inherited ones first; stops at cycles.
    private func lineage(of entity: EntityDescription) -> [EntityDescription] {
        var result: [EntityDescription] = []
        var current: EntityDescription? = entity
        while let found = current, !result.contains(where: { $0.name == found.name }) {
            result.insert(found, at: 0)
            current = found.parent.flatMap { byName[$0] }
        }
        return result
    }

    /// Names of properties: unique along a lineage (a subentity cannot redeclare an inherited one,
    /// as in Core Data). Entities that are not each other's ancestors may share a name: an attribute
    /// whose column would clash takes one of its own (``AttributeDescription/columnName``).
    private mutating func checkProperties(of entity: EntityDescription) {
        var seen: [String: String] = [:]
        for ancestor in lineage(of: entity) {
            let names =
                ancestor.attributes.map(\.name) + ancestor.relationships.map(\.name)
                + ancestor.fetchedProperties.map(\.name)
            for name in names {
                if let owner = seen[name] {
                    // Report each duplicate once, at the entity that declares the second one.
                    if ancestor.name == entity.name {
                        let detail =
                            owner == entity.name ? "is declared more than once" : "is already declared by '\(owner)'"
                        add(.duplicateName, entity.name, name, "property '\(name)' \(detail)")
                    }
                } else {
                    seen[name] = ancestor.name
                }
            }
        }
        for name in entity.attributes.map(\.name) + entity.relationships.map(\.name)
            + entity.fetchedProperties.map(\.name)
        {
            if !Self.isIdentifier(name) {
                add(
                    .invalidName, entity.name, name,
                    "property name must start with a letter and hold only ASCII letters, digits and '_'")
            }
        }
    }

    private mutating func check(_ attribute: AttributeDescription, in entity: EntityDescription) {
        let (name, type) = (attribute.name, attribute.type)
        if attribute.isSearchable && (type != .string || attribute.elements != nil) {
            add(
                .invalidValue, entity.name, name,
                "only a string attribute can be searchable (full-text search reads words); this one is "
                    + (attribute.elements != nil ? "composite" : type.rawValue))
        }
        if let min = attribute.minValue, let max = attribute.maxValue, let order = Self.compare(min, max), order > 0 {
            add(
                .minGreaterThanMax, entity.name, name,
                "min (\(min.json.jsonText)) is greater than max (\(max.json.jsonText))")
        }
        for (key, bound) in [("min", attribute.minValue), ("max", attribute.maxValue)] {
            guard let bound else { continue }
            let allowed = type.isNumeric || type == .date
            if !allowed {
                add(.invalidValue, entity.name, name, "'\(key)' applies to numbers and dates, not \(type.rawValue)")
            } else if !bound.fits(type) && !(type.isNumeric && Self.number(bound) != nil) {
                add(.invalidValue, entity.name, name, "'\(key)' is not a \(type.rawValue) value")
            }
        }
        if let minLength = attribute.minLength, let maxLength = attribute.maxLength, minLength > maxLength {
            add(
                .minGreaterThanMax, entity.name, name,
                "minLength (\(minLength)) is greater than maxLength (\(maxLength))")
        }
        for (key, length) in [("minLength", attribute.minLength), ("maxLength", attribute.maxLength)] {
            guard let length else { continue }
            if length < 0 { add(.invalidValue, entity.name, name, "'\(key)' must not be negative") }
            if type != .string && type != .binary {
                add(
                    .invalidValue, entity.name, name,
                    "'\(key)' applies to string and binary attributes, not \(type.rawValue)")
            }
        }
        if let regex = attribute.regex {
            if type != .string {
                add(.invalidValue, entity.name, name, "'regex' applies to string attributes, not \(type.rawValue)")
            }
            do {
                _ = try NSRegularExpression(pattern: regex)
            } catch {
                add(.invalidRegex, entity.name, name, "regex '\(regex)' is not a valid regular expression")
            }
        }
        if let expression = attribute.derivation {
            if let derivation = Derivation(expression) {
                if let problem = unresolved(derivation, in: entity) {
                    warn(.invalidValue, entity.name, name, "derivation '\(expression)': \(problem); stored as it is")
                }
            } else {
                warn(
                    .unsupported, entity.name, name,
                    "derivation '\(expression)' is not one Strata computes (key paths, lowercase:/uppercase:/canonical:, @count/@sum/@min/@max/@avg, now()); stored as it is"
                )
            }
        }
        if let value = attribute.defaultValue, !value.fits(type) {
            add(.invalidDefault, entity.name, name, "default \(value.json.jsonText) is not a \(type.rawValue) value")
        }
    }

    private mutating func check(_ relationship: RelationshipDescription, in entity: EntityDescription) {
        let name = relationship.name
        if let min = relationship.minCount, let max = relationship.maxCount, min > max {
            add(.minGreaterThanMax, entity.name, name, "minCount (\(min)) is greater than maxCount (\(max))")
        }
        if relationship.isToMany, relationship.isOptional, let min = relationship.minCount, min > 1 {
            warn(
                .invalidValue, entity.name, name,
                "optional to-many with minCount \(min): it may be empty, else it needs at least \(min) (as Core Data validates it)"
            )
        }
        if relationship.isOrdered && !relationship.isToMany {
            // Core Data loads it and ignores the flag.
            warn(.invalidValue, entity.name, name, "a to-one relationship cannot be ordered: 'ordered' is ignored")
        }
        guard let destination = byName[relationship.destination] else {
            add(.unknownEntity, entity.name, name, "destination entity '\(relationship.destination)' does not exist")
            return
        }
        guard let inverseName = relationship.inverse else {
            // Core Data allows it with a build warning: it is stored on this side only, and
            // deleting a destination object removes it from these relationships.
            warn(
                .missingInverse, entity.name, name,
                "relationship has no inverse (it is stored on this side only; declaring one on '\(destination.name)' is recommended)"
            )
            checkConfigurations(of: relationship, in: entity, destination: destination)
            return
        }
        let destinationProperties = lineage(of: destination).flatMap(\.relationships)
        guard let inverse = destinationProperties.first(where: { $0.name == inverseName }) else {
            add(.missingInverse, entity.name, name, "inverse '\(inverseName)' does not exist on '\(destination.name)'")
            return
        }
        let sourceFamily = Set(lineage(of: entity).map(\.name))
        if inverse.inverse != name || !sourceFamily.contains(inverse.destination) {
            // Core Data loads it with a warning: each side then keeps its own references.
            warn(
                .mismatchedInverse, entity.name, name,
                "inverse '\(destination.name).\(inverseName)' points to '\(inverse.destination).\(inverse.inverse ?? "nil")', not back to '\(entity.name).\(name)': stored as a relationship without an inverse"
            )
        }
        checkConfigurations(of: relationship, in: entity, destination: destination)
    }

    /// Relationships cannot cross stores: source and destination must share a configuration.
    private mutating func checkConfigurations(
        of relationship: RelationshipDescription, in entity: EntityDescription, destination: EntityDescription
    ) {
        let name = relationship.name
        let sourceConfigurations = Set(configurations.filter { $0.entities.contains(entity.name) }.map(\.name))
        let destinationConfigurations = Set(
            configurations.filter { $0.entities.contains(destination.name) }.map(\.name))
        if sourceConfigurations != destinationConfigurations
            && sourceConfigurations.isDisjoint(with: destinationConfigurations)
            && !(sourceConfigurations.isEmpty && destinationConfigurations.isEmpty)
        {
            add(
                .crossConfigurationRelationship, entity.name, name,
                "'\(entity.name)' and '\(destination.name)' share no configuration, so they live in different stores; relationships cannot cross stores: use a fetched property instead"
            )
        }
    }

    private mutating func check(_ fetched: FetchedPropertyDescription, in entity: EntityDescription) {
        if byName[fetched.entity] == nil {
            add(.unknownEntity, entity.name, fetched.name, "fetched entity '\(fetched.entity)' does not exist")
        }
        // An empty predicate fetches every object, as in Core Data.
        if !fetched.predicate.trimmingCharacters(in: .whitespaces).isEmpty {
            do {
                _ = try FetchPredicate(format: fetched.predicate)
            } catch {
                // Core Data's predicates are a larger language than the one Strata parses: the
                // model loads without this fetched property, as a template that does not parse.
                warn(
                    .unsupported, entity.name, fetched.name,
                    "fetched property predicate '\(fetched.predicate)' does not parse: \(error.message); the fetched property is left out"
                )
            }
        }
    }

    private mutating func checkConstraintsAndIndexes(of entity: EntityDescription) {
        let lineage = lineage(of: entity)
        let attributes = Set(lineage.flatMap(\.attributes).map(\.name))
        let toOne = Set(lineage.flatMap(\.relationships).filter { !$0.isToMany }.map(\.name))
        let groups =
            entity.uniqueness.map { ("uniqueness constraint", $0) }
            + entity.indexes.map { ("index '\($0.name)'", $0.properties) }
        for (what, properties) in groups {
            if properties.isEmpty { add(.missingValue, entity.name, nil, "\(what) names no property") }
            for property in properties where !attributes.contains(property) && !toOne.contains(property) {
                add(
                    .unknownProperty, entity.name, property,
                    "\(what) names '\(property)', which is not an attribute or to-one relationship")
            }
        }
        var indexNames: Set<String> = []
        for index in entity.indexes where !indexNames.insert(index.name).inserted || !Self.isIdentifier(index.name) {
            add(.invalidName, entity.name, index.name, "index names must be unique identifiers")
        }
    }

    private mutating func checkConfigurations() {
        var seen: Set<String> = []
        for configuration in configurations {
            if configuration.name == ObjectModel.defaultConfiguration {
                add(
                    .reservedName, nil, configuration.name,
                    "'Default' is the configuration of every entity and cannot be declared")
            }
            if !seen.insert(configuration.name).inserted {
                add(
                    .duplicateName, nil, configuration.name,
                    "configuration '\(configuration.name)' is declared more than once")
            }
            for member in configuration.entities where byName[member] == nil {
                add(
                    .unknownConfigurationEntity, member, configuration.name,
                    "configuration '\(configuration.name)' names unknown entity '\(member)'")
            }
        }
        for entity in entities {
            guard let parent = entity.parent, byName[parent] != nil else { continue }
            let own = Set(configurations.filter { $0.entities.contains(entity.name) }.map(\.name))
            let parents = Set(configurations.filter { $0.entities.contains(parent) }.map(\.name))
            if own != parents {
                add(.inheritanceConfiguration, entity.name, nil, Self.inheritanceFix(entity.name, own, parent, parents))
            }
        }
    }

    /// Why a subentity and its parent must share their configurations, and how to make them.
    static func inheritanceFix(_ entity: String, _ own: Set<String>, _ parent: String, _ parents: Set<String>)
        -> String
    {
        func names(_ set: Set<String>) -> String {
            set.isEmpty ? "none" : set.sorted().map { "'\($0)'" }.joined(separator: ", ")
        }
        var fixes: [String] = []
        let parentMissing = own.subtracting(parents)
        let entityMissing = parents.subtracting(own)
        if !parentMissing.isEmpty { fixes.append("add '\(parent)' to \(names(parentMissing))") }
        if !entityMissing.isEmpty { fixes.append("add '\(entity)' to \(names(entityMissing))") }
        return "'\(entity)' is in configurations \(names(own)) and its parent '\(parent)' in \(names(parents)); "
            + "a subentity's objects live in its root entity's table, so each store that holds one needs the "
            + "other: \(fixes.joined(separator: " and ")) (or list them together in one configuration)"
    }

    /// Explicit resource paths (derived ones move off system paths and each other by themselves).
    private mutating func checkResources() {
        // An explicit path may not take another entity's derived one: the user chose it.
        var owners: [String: String] = [:]
        for entity in entities where entity.resource == nil {
            owners[ObjectModel.derivedResourcePath(entity.name)] = entity.name
        }
        for entity in entities {
            guard let path = entity.resource else { continue }
            if let resource = entity.resource,
                resource.isEmpty
                    || !resource.unicodeScalars.allSatisfy({
                        $0.isASCII
                            && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                                || "-._~".unicodeScalars.contains($0))
                    })
            {
                add(
                    .invalidName, entity.name, nil,
                    "resource '\(resource)' must be one path segment of letters, digits, '-', '.', '_' or '~'")
            }
            if ObjectModel.systemPaths.contains(path) || path.hasPrefix("_") {
                add(
                    .resourceCollision, entity.name, nil,
                    "resource path '/\(path)' collides with a system path of the server")
            } else if let owner = owners[path] {
                add(.resourceCollision, entity.name, nil, "resource path '/\(path)' is already used by '\(owner)'")
            } else {
                owners[path] = entity.name
            }
        }
    }

    /// Why `derivation` cannot be computed for `entity` (an unknown property, say); nil when it can.
    private func unresolved(_ derivation: Derivation, in entity: EntityDescription) -> String? {
        func relationships(of name: String) -> [RelationshipDescription] {
            lineage(of: byName[name] ?? entity).flatMap(\.relationships)
        }
        func attributes(of name: String) -> [AttributeDescription] {
            lineage(of: byName[name] ?? entity).flatMap(\.attributes)
        }
        switch derivation {
        case .now: return nil
        case .keyPath(let path), .text(_, let path):
            var current = entity.name
            for name in path.dropLast() {
                guard let relationship = relationships(of: current).first(where: { $0.name == name }),
                    !relationship.isToMany
                else { return "'\(name)' is not a to-one relationship of \(current)" }
                current = relationship.destination
            }
            return attributes(of: current).contains { $0.name == path.last! }
                ? nil : "'\(path.last!)' is not an attribute of \(current)"
        case .aggregate(let name, _, let attribute):
            guard let relationship = relationships(of: entity.name).first(where: { $0.name == name }),
                relationship.isToMany
            else {
                return "'\(name)' is not a to-many relationship"
            }
            if let attribute, !attributes(of: relationship.destination).contains(where: { $0.name == attribute }) {
                return "'\(attribute)' is not an attribute of \(relationship.destination)"
            }
            return nil
        }
    }

    static func number(_ value: AttributeValue) -> Double? {
        switch value {
        case .integer(let i): Double(i)
        case .double(let d): d
        case .decimal(let d): NSDecimalNumber(decimal: d).doubleValue
        default: nil
        }
    }

    /// Orders two bounds of one attribute exactly (decimals digit by digit, 64-bit integers
    /// without a detour through `Double`); nil when they are not comparable.
    static func compare(_ lhs: AttributeValue, _ rhs: AttributeValue) -> Int? {
        if case .date(let a) = lhs, case .date(let b) = rhs { return a < b ? -1 : (a > b ? 1 : 0) }
        guard number(lhs) != nil, number(rhs) != nil else { return nil }
        return ValueOrdering.compare(lhs, rhs)
    }
}
