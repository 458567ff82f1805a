import Foundation

extension SQLiteMappingMigrator {
    /// Makes the destination objects of one mapping step from the source graph.
    struct Builder {
        let step: MigrationStep
        let mapping: MappingModel
        let graph: SourceGraph
        let schema: SQLiteSchema
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

        init(step: MigrationStep, mapping: MappingModel, graph: SourceGraph, schema: SQLiteSchema) {
            self.step = step
            self.mapping = mapping
            self.graph = graph
            self.schema = schema
        }

        /// The entity mappings that run in this store: both entities in it, no policy.
        var runnable: [EntityMapping] {
            mapping.entityMappings.filter {
                guard let source = $0.sourceEntity, let destination = $0.destinationEntity else { return false }
                return $0.policyClassName == nil && step.oldEntities.contains(source)
                    && step.newEntities.contains(destination)
            }
        }

        /// Makes a destination object of every source object of each entity mapping, with its
        /// attributes' defaults, then their values.
        mutating func createObjects() throws(SQLiteError) {
            var used: [String: Set<Int64>] = [:]
            // A key a destination table already gave out goes to the next one past every source key.
            let start = (graph.objects.keys.map(\.pk).max() ?? 0) + 1
            var next = Dictionary(uniqueKeysWithValues: schema.tables.keys.map { ($0, start) })
            for entityMapping in runnable {
                let source = entityMapping.sourceEntity!
                let destination = entityMapping.destinationEntity!
                guard let table = schema.table(for: destination)?.name else { continue }
                let properties = MappingPlanner.resolvedProperties(entityMapping, old: step.old, new: step.new)
                for sourceKey in graph.byEntity[source] ?? [] {
                    var pk = sourceKey.pk
                    if used[table, default: []].contains(pk) {
                        pk = next[table]!
                        next[table]! += 1
                    }
                    used[table, default: []].insert(pk)
                    let key = Key(table: table, pk: pk)
                    var object = Object(entity: destination)
                    for attribute in step.new.attributes(of: destination) {
                        if let value = attribute.defaultValue {
                            object.values[attribute.columnName] = SQLiteSchema.encode(value)
                        }
                    }
                    for (name, expression) in properties {
                        guard let expression, let attribute = step.new.attribute(name, of: destination) else {
                            continue
                        }
                        object.values[attribute.columnName] = try value(of: expression, for: attribute, from: sourceKey)
                    }
                    objects[key] = object
                    order.append(key)
                    made[entityMapping.name, default: [:]][sourceKey] = key
                    if madeOf[sourceKey] == nil { madeOf[sourceKey] = key }
                }
            }
        }

        private func value(of expression: MappingExpression, for attribute: AttributeDescription, from key: Key)
            throws(SQLiteError) -> SQLiteValue
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

        /// Sets every destination relationship from its expression: the source objects it reaches,
        /// as the destination objects made of them (by the named entity mapping, or by whichever
        /// made them).
        mutating func setRelationships() throws(SQLiteError) {
            for entityMapping in runnable {
                let destination = entityMapping.destinationEntity!
                let properties = MappingPlanner.resolvedProperties(entityMapping, old: step.old, new: step.new)
                for (sourceKey, key) in (made[entityMapping.name] ?? [:]).sorted(by: { $0.value.pk < $1.value.pk }) {
                    for (name, expression) in properties {
                        guard let expression, step.new.relationship(name, of: destination) != nil else { continue }
                        let targets = try self.targets(of: expression, from: sourceKey)
                        try link(key, name, targets, in: entityMapping)
                    }
                }
            }
        }

        private func targets(of expression: MappingExpression, from key: Key) throws(SQLiteError) -> [Key] {
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
        private mutating func link(_ key: Key, _ name: String, _ targets: [Key], in entityMapping: EntityMapping)
            throws(SQLiteError)
        {
            guard !targets.isEmpty, let entity = objects[key]?.entity else { return }
            switch step.new.storage(of: name, in: entity) {
            case .foreignKey?:
                guard targets.count == 1 else {
                    throw failure(
                        "entity mapping \(entityMapping.name): to-one relationship '\(name)' of \(entity) \(key.pk) gets \(targets.count) objects"
                    )
                }
                objects[key]!.values[name] = .integer(targets[0].pk)
            case .inverseForeignKey(let inverse)?:
                for target in targets { objects[target]?.values[inverse] = .integer(key.pk) }
            case .joinTable(let join, let isSource)?:
                for target in targets {
                    let pair = isSource ? [key.pk, target.pk] : [target.pk, key.pk]
                    if pairSet[join.name, default: []].insert(pair).inserted {
                        pairs[join.name, default: []].append((pair[0], pair[1]))
                    }
                }
            case nil: break
            }
        }

        /// Fails when a destination object has no value for a required attribute.
        func checkRequired() throws(SQLiteError) {
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
