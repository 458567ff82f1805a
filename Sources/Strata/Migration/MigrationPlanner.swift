import Foundation

/// Infers lightweight migrations: which entities and properties of one model version become which
/// of the next, what that changes in a store, and what cannot be inferred.
///
/// Entities and properties are matched by `renamedFrom` (the name in the previous version), then
/// by name, then by equal renaming identifiers (`renamedFrom ?? name` on both sides, as Core Data
/// matches them).
enum MigrationPlanner {
    /// The hashes of the entities a store of `configuration` holds under `model`; nil when the model
    /// has no such configuration.
    static func hashes(of model: ObjectModel, configuration: String?) -> [String: String]? {
        guard let entities = model.entityNames(inConfiguration: configuration) else { return nil }
        let all = model.entityVersionHashes
        return Dictionary(uniqueKeysWithValues: entities.map { ($0, all[$0]!) })
    }

    /// Plans the migration of a store to `model`.
    /// - Parameters:
    ///   - storedHashes: the entity hashes the store recorded.
    ///   - storedVersion: the model version the store recorded.
    ///   - recorded: the model the store recorded, if it did.
    ///   - history: earlier model versions, oldest first.
    static func plan(
        storedHashes: [String: String], storedVersion: String?, recorded: ObjectModel?, configuration: String?,
        model: ObjectModel, history: [ObjectModel], url: URL?
    ) -> MigrationPlan {
        var plan = MigrationPlan(storeURL: url, configuration: configuration, steps: [], globalRefusals: [])
        guard let targetHashes = hashes(of: model, configuration: configuration) else {
            plan.globalRefusals.append(
                MigrationRefusal(
                    .configurationMissing,
                    "the model has no configuration '\(configuration ?? ObjectModel.defaultConfiguration)'"))
            return plan
        }
        if storedHashes == targetHashes { return plan }
        let source: ObjectModel
        if let recorded, hashes(of: recorded, configuration: configuration) == storedHashes {
            source = recorded
        } else if let found = history.last(where: { hashes(of: $0, configuration: configuration) == storedHashes }) {
            source = found
        } else {
            plan.globalRefusals.append(
                MigrationRefusal(
                    .unknownStoreModel,
                    "the store (model version \(storedVersion ?? "?")) does not record the model it was written with and no version in the model history matches its hashes; give the model versions in between (an .xcdatamodeld or --history files)"
                ))
            return plan
        }
        // One inferred step from the store's version to the model, as Core Data's automatic
        // lightweight migration infers one mapping between those two and walks no version between
        // them (a bundle's versions have no order of their own either: real ones are named
        // `Model_course_info_v18`, `Model_v9`, `Model 2`). Mapping models, when given, add steps
        // of their own (``MigrationPlan/using(_:policies:)``).
        plan.origin = source
        plan.target = model
        plan.history = history
        plan.steps = [step(from: source, to: model, configuration: configuration)]
        return plan
    }

    /// One stretch of a migration: from `old` to `new`, through `mapping` or inferred.
    struct Segment {
        var old: ObjectModel
        var new: ObjectModel
        var mapping: MappingModel?
    }

    /// The stretches from `origin` to `target`: the mapping models that lie between them, each
    /// from its source version to its destination version, with inferred stretches from one to
    /// the next. A mapping model lies between them when its source version is the origin's, or,
    /// in the order of `history`, comes after the origin's (or the previous mapping's destination)
    /// and its destination no later than the target's; the one whose source comes first is taken.
    /// A mapping model whose versions are not found in `history` (or are not `origin` and
    /// `target`) is left out.
    static func segments(
        from origin: ObjectModel, to target: ObjectModel, history: [ObjectModel], mappings: [MappingModel],
        configuration: String?
    ) -> [Segment] {
        let hash = { (model: ObjectModel) in hashes(of: model, configuration: configuration) }
        let index = { (model: ObjectModel) in history.lastIndex { hash($0) == hash(model) } }
        let resolve = { (name: String) in ([origin, target] + history).first { $0.name == name } }
        let candidates = mappings.compactMap { mapping -> (MappingModel, ObjectModel, ObjectModel)? in
            guard let source = resolve(mapping.sourceModelName),
                let destination = resolve(mapping.destinationModelName)
            else { return nil }
            return (mapping, source, destination)
        }
        let end = hash(target) == nil ? nil : index(target)
        var result: [Segment] = []
        var current = origin
        var used: Set<String> = []
        while hash(current) != hash(target) {
            let open = candidates.filter { !used.contains($0.0.name) }
            let from = index(current)
            let reachesNoFurther = { (destination: ObjectModel) in
                hash(destination) == hash(target)
                    || (index(destination).flatMap { at in end.map { at <= $0 } } ?? false)
            }
            var next = open.first { hash($0.1) == hash(current) && reachesNoFurther($0.2) }
            if next == nil, let from, let end {
                next =
                    open.filter { _, source, destination in
                        guard let start = index(source), let stop = index(destination) else { return false }
                        return start > from && start < stop && stop <= end
                    }.min { index($0.1)! < index($1.1)! }
            }
            guard let (mapping, source, destination) = next else { break }
            if hash(source) != hash(current) { result.append(Segment(old: current, new: source)) }
            result.append(Segment(old: source, new: destination, mapping: mapping))
            used.insert(mapping.name)
            current = destination
        }
        if hash(current) != hash(target) { result.append(Segment(old: current, new: target)) }
        return result
    }

    /// Matches `new` names to `old` names: by `renamedFrom`, then by name, then by renaming identifier.
    /// - Returns: new name → old name for the matched ones.
    static func match(
        new: [(name: String, renamedFrom: String?)], old: [(name: String, renamedFrom: String?)]
    ) -> [String: String] {
        var result: [String: String] = [:]
        var claimed: Set<String> = []
        let oldNames = Set(old.map(\.name))
        for item in new {
            if let previous = item.renamedFrom, oldNames.contains(previous), !claimed.contains(previous) {
                result[item.name] = previous
                claimed.insert(previous)
            }
        }
        for item in new where result[item.name] == nil && oldNames.contains(item.name) && !claimed.contains(item.name) {
            result[item.name] = item.name
            claimed.insert(item.name)
        }
        for item in new where result[item.name] == nil {
            let identifier = item.renamedFrom ?? item.name
            if let found = old.first(where: { !claimed.contains($0.name) && ($0.renamedFrom ?? $0.name) == identifier })
            {
                result[item.name] = found.name
                claimed.insert(found.name)
            }
        }
        return result
    }

    /// Collects changes and refusals without repeating one (an inherited property is seen from
    /// every subentity).
    struct Collector {
        var changes: [MigrationChange] = []
        var refusals: [MigrationRefusal] = []
        var checks: [MigrationCheck] = []
        private var seen: Set<String> = []

        mutating func check(_ check: MigrationCheck) {
            if !checks.contains(check) { checks.append(check) }
        }

        mutating func change(_ change: MigrationChange) {
            if seen.insert("c:\(change.kind.rawValue):\(change)").inserted { changes.append(change) }
        }

        mutating func refuse(_ refusal: MigrationRefusal) {
            if seen.insert("r:\(refusal.kind.rawValue):\(refusal)").inserted { refusals.append(refusal) }
        }
    }

    /// Whether `old` values can be kept as they are under type `new`.
    private static func widens(_ old: AttributeType, to new: AttributeType) -> Bool {
        switch (old, new) {
        case (.integer16, .integer32), (.integer16, .integer64), (.integer32, .integer64), (.float, .double): true
        default: false
        }
    }

    /// The numeric types: integers of every width, `double`, `float`, `decimal`, and `boolean`
    /// (Core Data holds a Boolean in an `NSNumber` too, stored as 0 or 1).
    private static let numericTypes: Set<AttributeType> = [
        .integer16, .integer32, .integer64, .double, .float, .decimal, .boolean,
    ]

    /// Whether `old` values are converted to type `new` (each checked to fit): Core Data's
    /// inferred mappings carry a numeric value over to another numeric type, a Boolean included.
    static func converts(_ old: AttributeType, to new: AttributeType) -> Bool {
        numericTypes.contains(old) && numericTypes.contains(new) && !widens(old, to: new)
    }

    /// Plans one step between consecutive model versions.
    static func step(from old: ObjectModel, to new: ObjectModel, configuration: String?) -> MigrationStep {
        var collector = Collector()
        var mapping = MigrationMapping()
        let configurationName = configuration ?? ObjectModel.defaultConfiguration
        let oldEntities = old.entityNames(inConfiguration: configuration) ?? []
        let newEntities = new.entityNames(inConfiguration: configuration) ?? []
        if old.entityNames(inConfiguration: configuration) == nil {
            collector.refuse(
                MigrationRefusal(
                    .configurationMissing,
                    "model version \(old.version ?? "?") has no configuration '\(configurationName)'"))
        }
        if new.entityNames(inConfiguration: configuration) == nil {
            collector.refuse(
                MigrationRefusal(
                    .configurationMissing,
                    "model version \(new.version ?? "?") has no configuration '\(configurationName)'"))
        }
        mapping.entities = match(
            new: newEntities.map { ($0, new.entity(named: $0)?.renamedFrom) },
            old: oldEntities.map { ($0, old.entity(named: $0)?.renamedFrom) })
        let matchedOld = Set(mapping.entities.values)
        for name in oldEntities where !matchedOld.contains(name) {
            mapping.removesObjects = true
            collector.change(
                MigrationChange(
                    .removeEntity, entity: name,
                    new.entity(named: name) == nil
                        ? "the entity is removed; its objects are deleted"
                        : "the entity leaves configuration '\(configurationName)'; its objects in this store are deleted"
                ))
        }
        for name in newEntities {
            let entity = new.entity(named: name)!
            guard let oldName = mapping.entities[name] else {
                // A renaming identifier that names nothing the store's model has: the entity is new,
                // as in Core Data's inferred mappings (they match renaming identifiers only).
                collector.change(MigrationChange(.addEntity, entity: name, "a new entity, with no objects yet"))
                continue
            }
            let oldEntity = old.entity(named: oldName)!
            if oldName != name {
                collector.change(
                    MigrationChange(.renameEntity, entity: name, "renamed from '\(oldName)'; its objects are kept"))
            }
            let parentMatches: Bool
            switch (entity.parent, oldEntity.parent) {
            case (nil, nil): parentMatches = true
            case (let newParent?, let oldParent?): parentMatches = mapping.entities[newParent] == oldParent
            default: parentMatches = false
            }
            if !parentMatches {
                collector.refuse(
                    MigrationRefusal(
                        .parentChange, entity: name,
                        "its parent entity changes from \(oldEntity.parent.map { "'\($0)'" } ?? "none") to \(entity.parent.map { "'\($0)'" } ?? "none"); objects cannot move between tables"
                    ))
            }
            if oldEntity.isAbstract && !entity.isAbstract {
                collector.change(MigrationChange(.makeConcrete, entity: name, "is no longer abstract"))
            } else if !oldEntity.isAbstract && entity.isAbstract {
                collector.refuse(
                    MigrationRefusal(
                        .madeAbstract, entity: name, "becomes abstract; its existing objects would have no entity"))
            }
            planAttributes(
                name, oldName, old: old, new: new, mapping: &mapping, collector: &collector)
            planRelationships(
                name, oldName, old: old, new: new, mapping: &mapping, collector: &collector)
            planIndexes(entity, oldEntity, mapping: mapping, collector: &collector)
        }
        return MigrationStep(
            fromVersion: old.version, toVersion: new.version, changes: collector.changes, refusals: collector.refusals,
            old: old, new: new, oldEntities: oldEntities, newEntities: newEntities, mapping: mapping,
            checks: collector.checks)
    }

    private static func planAttributes(
        _ name: String, _ oldName: String, old: ObjectModel, new: ObjectModel, mapping: inout MigrationMapping,
        collector: inout Collector
    ) {
        let newAttributes = new.attributes(of: name)
        let oldAttributes = old.attributes(of: oldName)
        let matched = match(
            new: newAttributes.map { ($0.name, $0.renamedFrom) }, old: oldAttributes.map { ($0.name, $0.renamedFrom) })
        var sources: [String: MigrationMapping.Source] = [:]
        // Report each property once, at the entity that declares it.
        let owner = { (attribute: String) in new.declaringEntity(of: attribute, in: name) ?? name }
        for attribute in newAttributes {
            let place = owner(attribute.name)
            guard let previousName = matched[attribute.name], let previous = old.attribute(previousName, of: oldName)
            else {
                // Unmatched (a renaming identifier that names nothing the store's model has too):
                // new, as in Core Data's inferred mappings.
                if !attribute.isOptional && (attribute.defaultValue ?? .null).isNull {
                    collector.refuse(
                        MigrationRefusal(
                            .requiredWithoutDefault, entity: place, property: attribute.name,
                            "is added as required with no default value for the existing objects"))
                } else {
                    let value = attribute.defaultValue ?? .null
                    sources[attribute.name] = value.isNull ? .null : .value(value)
                    collector.change(
                        MigrationChange(
                            .addAttribute, entity: place, property: attribute.name,
                            value.isNull
                                ? "a new \(attribute.type.rawValue) attribute, empty for existing objects"
                                : "a new \(attribute.type.rawValue) attribute; existing objects take the default \(value.json.jsonText)"
                        ))
                }
                continue
            }
            if previousName != attribute.name {
                collector.change(
                    MigrationChange(
                        .renameAttribute, entity: place, property: attribute.name,
                        "renamed from '\(previousName)'; values are kept"))
            }
            let context = AttributeContext(
                entity: name, oldEntity: oldName, place: place, column: old.columnName(of: previousName, in: oldName))
            var source = planType(attribute, from: previous, context, collector: &collector)
            if previous.isOptional && !attribute.isOptional {
                source = planRequired(attribute, source: source, context, collector: &collector)
            } else if !previous.isOptional && attribute.isOptional {
                collector.change(
                    MigrationChange(.makeOptional, entity: place, property: attribute.name, "becomes optional"))
            }
            sources[attribute.name] = source
        }
        let kept = Set(matched.values)
        for attribute in oldAttributes where !kept.contains(attribute.name) {
            let place =
                mapping.entities.first(where: {
                    $0.value == (old.declaringEntity(of: attribute.name, in: oldName) ?? oldName)
                })?.key ?? name
            collector.change(
                MigrationChange(
                    .removeAttribute, entity: place, property: attribute.name, "removed; its values are dropped"))
        }
        mapping.attributes[name] = sources
    }

    /// Where an attribute kept from the old version is: its entity in both versions, the entity
    /// that declares it (where it is reported) and its old column.
    private struct AttributeContext {
        let entity: String
        let oldEntity: String
        let place: String
        let column: String
    }

    /// Plans a kept attribute's change of type, if any: kept as it is when it widens, converted
    /// (each value checked) between numeric types, refused otherwise.
    /// - Returns: where its values come from.
    private static func planType(
        _ attribute: AttributeDescription, from previous: AttributeDescription, _ context: AttributeContext,
        collector: inout Collector
    ) -> MigrationMapping.Source {
        let (from, to) = (previous.type, attribute.type)
        guard from != to else { return .old(previous.name) }
        if widens(from, to: to) {
            collector.change(
                MigrationChange(
                    .widenType, entity: context.place, property: attribute.name,
                    "type widens from \(from.rawValue) to \(to.rawValue); values are kept"))
            return .old(previous.name)
        }
        guard converts(from, to: to) else {
            collector.refuse(
                MigrationRefusal(
                    .typeChange, entity: context.place, property: attribute.name,
                    "type changes from \(from.rawValue) to \(to.rawValue), which a lightweight migration does not convert; a mapping model is needed (give one with --mapping)"
                ))
            return .old(previous.name)
        }
        if from == .boolean || to == .boolean {
            // Every value fits: a Boolean is 1 or 0, and a number reads as a Boolean as
            // `NSNumber.boolValue` reads it (zero is false, anything else true).
            collector.change(
                MigrationChange(
                    .convertType, entity: context.place, property: attribute.name,
                    from == .boolean
                        ? "type changes from boolean to \(to.rawValue); true becomes 1 and false 0"
                        : "type changes from \(from.rawValue) to boolean; zero becomes false and any other value true"))
            return .converted(previous.name, from: from, to: to, default: nil)
        }
        collector.change(
            MigrationChange(
                .convertType, entity: context.place, property: attribute.name,
                "type changes from \(from.rawValue) to \(to.rawValue); values are converted, and the migration is refused if one does not fit"
            ))
        collector.check(
            .fits(
                entity: context.entity, oldEntity: context.oldEntity, attribute: attribute.name,
                column: context.column, from: from, to: to))
        return .converted(previous.name, from: from, to: to, default: nil)
    }

    /// Plans an optional attribute that becomes required: objects without a value take the
    /// default; with no default, the migration is refused if any object has no value.
    /// - Returns: where its values come from, given where they came from so far.
    private static func planRequired(
        _ attribute: AttributeDescription, source: MigrationMapping.Source, _ context: AttributeContext,
        collector: inout Collector
    ) -> MigrationMapping.Source {
        guard let value = attribute.defaultValue, !value.isNull else {
            collector.change(
                MigrationChange(
                    .makeRequired, entity: context.place, property: attribute.name,
                    "becomes required with no default value; the migration is refused if an object has no value"))
            collector.check(
                .hasValue(
                    entity: context.entity, oldEntity: context.oldEntity, attribute: attribute.name,
                    column: context.column))
            return source
        }
        collector.change(
            MigrationChange(
                .makeRequired, entity: context.place, property: attribute.name,
                "becomes required; objects without a value take the default \(value.json.jsonText)"))
        switch source {
        case .old(let name): return .coalesce(name, value)
        case .converted(let name, let from, let to, _): return .converted(name, from: from, to: to, default: value)
        default: return source
        }
    }

    private static func planIndexes(
        _ entity: EntityDescription, _ oldEntity: EntityDescription, mapping: MigrationMapping,
        collector: inout Collector
    ) {
        // Old property names as the new model calls them.
        var renamed: [String: String] = [:]
        for (newName, source) in mapping.attributes[entity.name] ?? [:] {
            switch source {
            case .old(let oldName), .coalesce(let oldName, _), .converted(let oldName, _, _, _):
                renamed[oldName] = newName
            default: break
            }
        }
        for (newName, oldName) in mapping.relationships[entity.name] ?? [:] {
            if let oldName = oldName { renamed[oldName] = newName }
        }
        let translate = { (properties: [String]) in properties.map { renamed[$0] ?? "\u{0}removed:\($0)" } }
        let oldGroups = Set(oldEntity.uniqueness.map { translate($0).sorted() })
        let newGroups = Set(entity.uniqueness.map { $0.sorted() })
        for group in entity.uniqueness where !oldGroups.contains(group.sorted()) {
            collector.change(
                MigrationChange(
                    .addUniqueness, entity: entity.name, property: group.joined(separator: ","),
                    "a new uniqueness constraint on (\(group.joined(separator: ", "))); the migration fails if existing objects break it"
                ))
        }
        for group in oldEntity.uniqueness where !newGroups.contains(translate(group).sorted()) {
            collector.change(
                MigrationChange(
                    .removeUniqueness, entity: entity.name, property: group.joined(separator: ","),
                    "the uniqueness constraint on (\(group.joined(separator: ", "))) is removed"))
        }
        let oldIndexes = Set(oldEntity.indexes.map { "\($0.name)=\(translate($0.properties).joined(separator: ","))" })
        let newIndexes = Set(entity.indexes.map { "\($0.name)=\($0.properties.joined(separator: ","))" })
        for index in entity.indexes
        where !oldIndexes.contains("\(index.name)=\(index.properties.joined(separator: ","))") {
            collector.change(
                MigrationChange(
                    .addIndex, entity: entity.name, property: index.name,
                    "a new index on (\(index.properties.joined(separator: ", ")))"))
        }
        for index in oldEntity.indexes
        where !newIndexes.contains("\(index.name)=\(translate(index.properties).joined(separator: ","))") {
            collector.change(
                MigrationChange(
                    .removeIndex, entity: entity.name, property: index.name,
                    "the index on (\(index.properties.joined(separator: ", "))) is removed"))
        }
    }
}
