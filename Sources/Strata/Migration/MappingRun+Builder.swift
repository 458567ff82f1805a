import Foundation

extension MappingRun {
    /// Makes the destination objects of one mapping step from the source graph. A class: the
    /// ``MigrationManager`` a policy is handed works on it.
    final class Builder {
        let step: MigrationStep
        let mapping: MappingModel
        let graph: SourceGraph
        let schema: SQLiteSchema
        let policies: [String: any EntityMigrationPolicy]
        /// Destination objects (their values by column name), and the order they were made in.
        var objects: [Key: Object] = [:]
        var order: [Key] = []
        /// Entity mapping → source object → the destination object made of it.
        var made: [String: [Key: Key]] = [:]
        /// Source object → the destination object the first entity mapping that took it made.
        var madeOf: [Key: Key] = [:]
        /// Join table → its pairs, in order.
        var pairs: [String: [(source: Int64, target: Int64)]] = [:]
        private var pairSet: [String: Set<[Int64]>] = [:]
        /// Per join table, each pair's place in its source's list and in its target's list, as
        /// the relationship mapping of that side gave them (a pair may be linked from either side
        /// first; each side's order is its own mapping's).
        var sourcePlaces: [String: [[Int64]: Int]] = [:]
        var targetPlaces: [String: [[Int64]: Int]] = [:]
        private var used: [String: Set<Int64>] = [:]
        private var next: [String: Int64] = [:]

        init(step: MigrationStep, mapping: MappingModel, graph: SourceGraph, schema: SQLiteSchema) {
            self.step = step
            self.mapping = mapping
            self.graph = graph
            self.schema = schema
            policies = step.policies
            // A key a destination table already gave out goes to the next one past every source key.
            let start = (graph.objects.keys.map(\.pk).max() ?? 0) + 1
            next = Dictionary(uniqueKeysWithValues: schema.tables.keys.map { ($0, start) })
        }

        /// The entity mappings that run in this store: both entities in it, and no policy or a
        /// registered one.
        var runnable: [EntityMapping] {
            mapping.entityMappings.filter {
                guard let source = $0.sourceEntity, let destination = $0.destinationEntity else { return false }
                return ($0.policyClassName.map { policies[$0] != nil } ?? true) && step.oldEntities.contains(source)
                    && step.newEntities.contains(destination)
            }
        }

        /// Runs every entity mapping as Core Data does: the destination objects of every mapping
        /// first, then the relationships of every mapping, each through its policy if it has one.
        func run() throws {
            let manager = MigrationManager(self)
            for entityMapping in runnable {
                let policy = entityMapping.policyClassName.flatMap { policies[$0] }
                for source in graph.byEntity[entityMapping.sourceEntity!] ?? [] {
                    if let policy {
                        let object = MigrationObject(
                            entity: entityMapping.sourceEntity!, isDestination: false, key: source)
                        try policy.createDestinationInstances(for: object, mapping: entityMapping, manager: manager)
                    } else {
                        try createDestination(of: source, mapping: entityMapping)
                    }
                }
                try policy?.endInstanceCreation(for: entityMapping, manager: manager)
            }
            for entityMapping in runnable {
                let policy = entityMapping.policyClassName.flatMap { policies[$0] }
                for (source, key) in (made[entityMapping.name] ?? [:]).sorted(by: { $0.value.pk < $1.value.pk }) {
                    if let policy {
                        let object = MigrationObject(entity: objects[key]!.entity, isDestination: true, key: key)
                        try policy.createRelationships(for: object, mapping: entityMapping, manager: manager)
                    } else {
                        try setRelationships(of: key, from: source, mapping: entityMapping)
                    }
                }
                try policy?.end(entityMapping, manager: manager)
            }
        }

        /// A new destination object of `entity` with its attributes' defaults, keyed `preferred`
        /// when its table has that key free.
        func insert(_ entity: String, preferred: Int64? = nil) throws(Failure) -> Key {
            guard step.newEntities.contains(entity), let table = schema.table(for: entity)?.name else {
                throw failure("the destination model has no entity '\(entity)' in this store")
            }
            var pk = preferred ?? next[table]!
            if used[table, default: []].contains(pk) { pk = next[table]! }
            if pk >= next[table]! { next[table] = pk + 1 }
            used[table, default: []].insert(pk)
            let key = Key(table: table, pk: pk)
            var object = Object(entity: entity)
            for attribute in step.new.attributes(of: entity) {
                if let value = attribute.defaultValue {
                    object.values[attribute.columnName] = SQLiteSchema.encode(value)
                }
            }
            objects[key] = object
            order.append(key)
            return key
        }

        /// Records that entity mapping `name` made `destination` of `source`.
        func associate(_ source: Key, _ destination: Key, mapping name: String) {
            made[name, default: [:]][source] = destination
            if madeOf[source] == nil { madeOf[source] = destination }
        }

        /// The default destination object of `source`: its attributes from the mapping's expressions.
        func createDestination(of source: Key, mapping entityMapping: EntityMapping) throws(Failure) {
            let destination = entityMapping.destinationEntity!
            let key = try insert(destination, preferred: source.pk)
            for (name, expression) in MappingPlanner.resolvedProperties(entityMapping, old: step.old, new: step.new) {
                guard let expression, let attribute = step.new.attribute(name, of: destination) else { continue }
                objects[key]!.values[attribute.columnName] = try value(of: expression, for: attribute, from: source)
            }
            associate(source, key, mapping: entityMapping.name)
        }

        private func value(of expression: MappingExpression, for attribute: AttributeDescription, from key: Key)
            throws(Failure) -> SQLiteValue
        {
            switch expression {
            case .keyPath("source", let path): return graph.value(path, from: key)
            case .constant(let constant): return Self.encode(constant, as: attribute.type)
            default: throw failure("the value expression \(expression) is not one Strata evaluates")
            }
        }

        /// A constant in the column form of an attribute of `type`.
        static func encode(_ constant: MappingConstant, as type: AttributeType) -> SQLiteValue {
            switch (constant, type) {
            case (.null, _): return .null
            case (.boolean(let b), _): return .integer(b ? 1 : 0)
            case (.integer(let i), .double), (.integer(let i), .float): return .real(Double(i))
            case (.integer(let i), .string), (.integer(let i), .decimal): return .text(String(i))
            case (.integer(let i), _): return .integer(i)
            case (.double(let d), .integer16), (.double(let d), .integer32), (.double(let d), .integer64):
                return .integer(Int64(d))
            case (.double(let d), .string), (.double(let d), .decimal): return .text(String(d))
            case (.double(let d), _): return .real(d)
            case (.string(let s), .integer16), (.string(let s), .integer32), (.string(let s), .integer64):
                return Int64(s).map { .integer($0) } ?? .text(s)
            case (.string(let s), .double), (.string(let s), .float): return Double(s).map { .real($0) } ?? .text(s)
            case (.string(let s), _): return .text(s)
            }
        }

        /// Sets the relationships of destination object `key` from their expressions: the source
        /// objects each reaches from `source`, as the destination objects made of them (by the
        /// named entity mapping, or by whichever made them).
        func setRelationships(of key: Key, from source: Key, mapping entityMapping: EntityMapping) throws(Failure) {
            let destination = entityMapping.destinationEntity!
            for (name, expression) in MappingPlanner.resolvedProperties(entityMapping, old: step.old, new: step.new) {
                guard let expression, step.new.relationship(name, of: destination) != nil else { continue }
                try link(key, name, try targets(of: expression, from: source), mappingName: entityMapping.name)
            }
        }

        private func targets(of expression: MappingExpression, from key: Key) throws(Failure) -> [Key] {
            var found: [Key] = []
            var seen: Set<Key> = []
            func add(_ key: Key?) { if let key, seen.insert(key).inserted { found.append(key) } }
            switch expression {
            case .keyPath("source", let path):
                for source in graph.objects(path, from: key) { add(madeOf[source]) }
            case .function(_, _, let arguments):
                guard case .constant(.string(let name)) = arguments.first,
                    case .keyPath("source", let path)? = arguments.last
                else { throw failure("the value expression \(expression) is not one Strata evaluates") }
                for source in graph.objects(path, from: key) { add(made[name]?[source]) }
            default: throw failure("the value expression \(expression) is not one Strata evaluates")
            }
            return found
        }

        /// Records that relationship `name` of destination object `key` holds `targets`, where the
        /// store keeps it: its foreign key, its inverse's, or its join table.
        func link(_ key: Key, _ name: String, _ targets: [Key], mappingName: String) throws(Failure) {
            guard !targets.isEmpty, let entity = objects[key]?.entity else { return }
            switch step.new.storage(of: name, in: entity) {
            case .foreignKey?:
                guard targets.count == 1 else {
                    throw failure(
                        "\(mappingName): to-one relationship '\(name)' of \(entity) \(key.pk) gets \(targets.count) objects"
                    )
                }
                objects[key]!.values[name] = .integer(targets[0].pk)
            case .inverseForeignKey(let inverse)?:
                for target in targets { objects[target]?.values[inverse] = .integer(key.pk) }
            case .joinTable(let join, let isSource)?:
                for (place, target) in targets.enumerated() {
                    let pair = isSource ? [key.pk, target.pk] : [target.pk, key.pk]
                    if pairSet[join.name, default: []].insert(pair).inserted {
                        pairs[join.name, default: []].append((pair[0], pair[1]))
                    }
                    if isSource {
                        sourcePlaces[join.name, default: [:]][pair] = sourcePlaces[join.name]?[pair] ?? place
                    } else {
                        targetPlaces[join.name, default: [:]][pair] = targetPlaces[join.name]?[pair] ?? place
                    }
                }
            case nil: break
            }
        }

        /// The columns of destination object `key`'s row after `_pk`, `_entity` and `_version`
        /// (every column of its entity), and their values.
        func row(_ key: Key) -> (columns: [SQLiteSchema.Column], values: [SQLiteValue]) {
            let object = objects[key]!
            let columns = schema.columnsByEntity[object.entity] ?? []
            return (columns, columns.map { object.values[$0.name] ?? .null })
        }

        /// The rows of join table `join`: source, target, position in the source's list, and,
        /// when the target's side is ordered too, position in the target's list.
        func joinRows(_ join: JoinTableDescription) -> [[Int64]] {
            let pairs = pairs[join.name] ?? []
            let positions = Self.places(of: pairs, by: { $0.source }, given: sourcePlaces[join.name] ?? [:])
            let targetPositions = Self.places(of: pairs, by: { $0.target }, given: targetPlaces[join.name] ?? [:])
            return pairs.enumerated().map { index, pair in
                [pair.source, pair.target, Int64(positions[index])]
                    + (join.isTargetOrdered ? [Int64(targetPositions[index])] : [])
            }
        }

        /// Each pair's place in the list of the object `owner` names: the order the relationship
        /// mapping of that side gave (`given`), then, for pairs only the other side linked, the order
        /// they were linked in.
        private static func places(
            of pairs: [(source: Int64, target: Int64)], by owner: ((source: Int64, target: Int64)) -> Int64,
            given: [[Int64]: Int]
        ) -> [Int] {
            var byOwner: [Int64: [Int]] = [:]
            for (index, pair) in pairs.enumerated() { byOwner[owner(pair), default: []].append(index) }
            var result = [Int](repeating: 0, count: pairs.count)
            for indexes in byOwner.values {
                let sorted = indexes.sorted { first, second in
                    let a = given[[pairs[first].source, pairs[first].target]] ?? Int.max
                    let b = given[[pairs[second].source, pairs[second].target]] ?? Int.max
                    return (a, first) < (b, second)
                }
                for (place, index) in sorted.enumerated() { result[index] = place }
            }
            return result
        }

        /// Fails when a destination object has no value for a required attribute.
        func checkRequired() throws(Failure) {
            for key in order {
                let object = objects[key]!
                for attribute in step.new.attributes(of: object.entity)
                where !attribute.isOptional && !step.new.isDerived(attribute.name, of: object.entity)
                    && (object.values[attribute.columnName] ?? .null) == .null
                {
                    throw failure(
                        "the mapping model gives \(object.entity) \(key.pk) no value for required attribute '\(attribute.name)'"
                    )
                }
            }
        }
    }
}
