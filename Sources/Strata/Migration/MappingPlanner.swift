import Foundation

/// Plans a migration step that a ``MappingModel`` gives instead of an inferred one: checks every
/// entity mapping and value expression against the two model versions, and refuses (before
/// anything is written) an entity mapping that names a custom migration policy class, a custom
/// source expression, or a value expression Strata does not evaluate, naming the entity mapping
/// and the expression.
///
/// Strata evaluates `$source.<key path>` (through to-one and to-many relationships, the set and
/// array union operators and `@count`), constants, and
/// `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "<mapping>", <key path>)`.
/// A destination property without an expression takes the source property of the same name when
/// the source entity has one (the expression Xcode generates), and keeps its default otherwise.
enum MappingPlanner {
    /// The step from `old` to `new` that `mapping` describes.
    static func step(
        _ mapping: MappingModel, old: ObjectModel, new: ObjectModel, oldEntities: [String], newEntities: [String],
        policies: [String: any EntityMigrationPolicy] = [:]
    ) -> MigrationStep {
        var changes: [MigrationChange] = []
        var refusals: [MigrationRefusal] = []
        let oldSet = Set(oldEntities)
        let newSet = Set(newEntities)
        for entityMapping in mapping.entityMappings {
            let name = entityMapping.name
            func refuse(_ message: String, property: String? = nil) {
                refusals.append(
                    MigrationRefusal(
                        .mappingModel, entity: entityMapping.destinationEntity ?? entityMapping.sourceEntity,
                        property: property,
                        "mapping model \(mapping.name), entity mapping \(name): \(message)"))
            }
            if let policy = entityMapping.policyClassName, policies[policy] == nil {
                refuse(
                    "names the custom migration policy class '\(policy)', code of the app that Strata cannot run; "
                        + "register an EntityMigrationPolicy under that name (StoreOptions.migrationPolicies), "
                        + "or migrate this step with Core Data")
                continue
            }
            if entityMapping.mappingType == "Custom" {
                refuse("is a custom entity mapping, whose objects only the app's code creates")
                continue
            }
            if let expression = entityMapping.sourceExpression {
                refuse("has a custom source expression (\(expression)), which Strata does not evaluate")
                continue
            }
            if let source = entityMapping.sourceEntity, old.entity(named: source) == nil {
                refuse("its source entity '\(source)' is not in model version \(mapping.sourceModelName)")
                continue
            }
            if let destination = entityMapping.destinationEntity, new.entity(named: destination) == nil {
                refuse(
                    "its destination entity '\(destination)' is not in model version \(mapping.destinationModelName)")
                continue
            }
            guard let source = entityMapping.sourceEntity, let destination = entityMapping.destinationEntity,
                oldSet.contains(source), newSet.contains(destination)
            else {
                if let source = entityMapping.sourceEntity, oldSet.contains(source) {
                    changes.append(
                        MigrationChange(
                            .entityMapping, entity: source, "entity mapping \(name): its objects are not migrated"))
                }
                continue
            }
            for (property, expression) in resolvedProperties(entityMapping, old: old, new: new) {
                if let problem = check(
                    expression, property: property, of: entityMapping, in: mapping, old: old, new: new)
                {
                    refuse(problem, property: property)
                }
            }
            changes.append(
                MigrationChange(
                    .entityMapping, entity: destination,
                    "entity mapping \(name): objects of \(source) become objects of \(destination)"))
        }
        let taken = Set(mapping.entityMappings.compactMap { $0.destinationEntity == nil ? nil : $0.sourceEntity })
        for entity in oldEntities where !taken.contains(entity) && old.entity(named: entity)?.isAbstract == false {
            changes.append(
                MigrationChange(
                    .removeEntity, entity: entity, "no entity mapping takes its objects; they are not migrated"))
        }
        let named = Set(mapping.entityMappings.compactMap(\.policyClassName))
        return MigrationStep(
            fromVersion: old.version ?? old.name, toVersion: new.version ?? new.name, changes: changes,
            refusals: refusals, old: old, new: new, oldEntities: oldEntities, newEntities: newEntities,
            mapping: MigrationMapping(), mappingModel: mapping, policies: policies.filter { named.contains($0.key) })
    }

    /// Every stored destination property of the entity mapping with its expression (nil: the
    /// property keeps its default): the one the mapping gives, else the source property of the
    /// same name.
    static func resolvedProperties(_ entityMapping: EntityMapping, old: ObjectModel, new: ObjectModel)
        -> [(String, MappingExpression?)]
    {
        guard let source = entityMapping.sourceEntity, let destination = entityMapping.destinationEntity else {
            return []
        }
        let given = Dictionary(
            (entityMapping.attributeMappings + entityMapping.relationshipMappings).map { ($0.name, $0.expression) },
            uniquingKeysWith: { first, _ in first })
        var result: [(String, MappingExpression?)] = []
        let names =
            new.attributes(of: destination).filter { !new.isDerived($0.name, of: destination) }.map(\.name)
            + new.relationships(of: destination).map(\.name)
        for name in names {
            if let expression = given[name] ?? nil {
                result.append((name, expression))
            } else if old.attribute(name, of: source) != nil || old.relationship(name, of: source) != nil {
                result.append((name, .keyPath(variable: "source", path: [name])))
            } else {
                result.append((name, nil))
            }
        }
        for name in given.keys.sorted() where !names.contains(name) {
            result.append((name, .unsupported("a property mapping for '\(name)', which \(destination) does not have")))
        }
        return result
    }

    /// What a key path reaches from an entity.
    struct PathEnd {
        /// The attribute it ends in, if it does.
        var attribute: AttributeDescription?
        /// Whether it goes through a to-many relationship (it reaches several objects).
        var toMany: Bool
        /// Whether it ends in `@count`.
        var count: Bool
    }

    static let unionOperators: Set<String> = [
        "@distinctUnionOfSets", "@unionOfSets", "@distinctUnionOfArrays", "@unionOfArrays",
        "@distinctUnionOfObjects", "@unionOfObjects",
    ]

    /// Follows `path` from `entity` in `model`.
    /// - Returns: where it ends, or why it cannot be evaluated.
    static func walk(_ path: [String], from entity: String, in model: ObjectModel) -> Result<PathEnd, PathProblem> {
        var current = entity
        var end = PathEnd(attribute: nil, toMany: false, count: false)
        for (index, key) in path.enumerated() {
            let last = index == path.count - 1
            if key == "@count", last, end.toMany {
                end.count = true
                return .success(end)
            }
            if unionOperators.contains(key) {
                guard end.toMany, !last else {
                    return .failure(PathProblem("'\(key)' needs a to-many before it and a key after"))
                }
                continue
            }
            guard end.attribute == nil else {
                return .failure(PathProblem("'\(key)' follows attribute '\(end.attribute!.name)'"))
            }
            if let attribute = model.attribute(key, of: current), !model.isDerived(key, of: current) {
                end.attribute = attribute
            } else if let relationship = model.relationship(key, of: current) {
                end.toMany = end.toMany || relationship.isToMany
                current = relationship.destination
            } else {
                return .failure(PathProblem("\(current) has no stored property '\(key)'"))
            }
        }
        return .success(end)
    }

    struct PathProblem: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// Why `expression` cannot give destination property `property` its value, or nil when it can.
    private static func check(
        _ expression: MappingExpression?, property: String, of entityMapping: EntityMapping, in mapping: MappingModel,
        old: ObjectModel, new: ObjectModel
    ) -> String? {
        guard let expression else { return nil }
        let source = entityMapping.sourceEntity!
        let destination = entityMapping.destinationEntity!
        let unsupported = "the value expression \(expression) of '\(property)' is not one Strata evaluates"
        if let attribute = new.attribute(property, of: destination) {
            switch expression {
            case .constant: return nil
            case .keyPath("source", let path) where !path.isEmpty:
                switch walk(path, from: source, in: old) {
                case .failure(let problem): return "\(unsupported) (\(problem.message))"
                case .success(let end):
                    if end.count { return nil }
                    guard let from = end.attribute, !end.toMany else {
                        return "\(unsupported) (it reaches objects, not one value)"
                    }
                    guard
                        SQLiteSchema.Column.attribute(from).sqlType == SQLiteSchema.Column.attribute(attribute).sqlType
                    else {
                        return
                            "\(unsupported) (it gives a \(from.type.rawValue) value to a \(attribute.type.rawValue) attribute)"
                    }
                    return nil
                }
            default: return unsupported
            }
        }
        var path: [String]
        switch expression {
        case .keyPath("source", let keys): path = keys
        case .function(.keyPath("manager", []), MappingExpression.destinationInstancesSelector, let arguments):
            guard arguments.count == 2, case .constant(.string(let name)) = arguments[0],
                case .keyPath("source", let keys) = arguments[1]
            else { return unsupported }
            guard mapping.entityMapping(named: name) != nil else {
                return "\(unsupported) (the mapping model has no entity mapping named '\(name)')"
            }
            path = keys
        default: return unsupported
        }
        if path.isEmpty { return nil }
        switch walk(path, from: source, in: old) {
        case .failure(let problem): return "\(unsupported) (\(problem.message))"
        case .success(let end):
            return end.attribute == nil && !end.count ? nil : "\(unsupported) (it reaches a value, not objects)"
        }
    }
}

extension MigrationPlan {
    /// The plan with the steps of `mappings` that lie between the store's version and the model
    /// (see `MigrationPlanner.segments(from:to:history:mappings:configuration:)`): each mapping
    /// model's step, from its source version to its destination version (named by the
    /// `.xcdatamodel` names), with one inferred step from the store's version to the first, from
    /// each to the next and from the last to the model. An entity mapping naming a custom policy
    /// class runs the policy registered under that name in `policies`, and is refused when there
    /// is none.
    public func using(_ mappings: [MappingModel], policies: [String: any EntityMigrationPolicy] = [:])
        -> MigrationPlan
    {
        guard !mappings.isEmpty, let origin, let target else { return self }
        let segments = MigrationPlanner.segments(
            from: origin, to: target, history: history, mappings: mappings, configuration: configuration)
        var plan = self
        plan.steps = segments.map { segment in
            let oldEntities = segment.old.entityNames(inConfiguration: configuration) ?? []
            let newEntities = segment.new.entityNames(inConfiguration: configuration) ?? []
            guard let mapping = segment.mapping else {
                // The inferred step planned already (its data checked) when it is the same one.
                if let same = steps.first(where: {
                    $0.mappingModel == nil && $0.old == segment.old && $0.new == segment.new
                }) {
                    return same
                }
                return MigrationPlanner.step(from: segment.old, to: segment.new, configuration: configuration)
            }
            return MappingPlanner.step(
                mapping, old: segment.old, new: segment.new, oldEntities: oldEntities, newEntities: newEntities,
                policies: policies)
        }
        return plan
    }
}
