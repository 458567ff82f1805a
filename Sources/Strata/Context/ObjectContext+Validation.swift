import Foundation

extension ObjectContext {
    /// Every rule broken by the unsaved inserts, updates and deletes.
    func validationFailures(_ s: inout ContextStorage) throws(ContextError) -> [ValidationFailure] {
        var failures: [ValidationFailure] = []
        let changed = s.inserted + s.updated.keys.sorted { ObjectID.precedes($0, $1) }
        // Changes come in runs of one entity: look it up once per run, not by name per object.
        var home: ObjectID.Home?
        var resolved: ResolvedEntity?
        for k in changed {
            guard let index = s.objects.index(forKey: k) else { continue }
            if k.home !== home {
                home = k.home
                resolved = model.resolvedEntity(k.entityName)
            }
            guard let resolved else { continue }
            // Checked where it is kept: a copy of each state would cost a retain and a release of
            // everything it holds.
            let broken = s.objects.values[index].reading { validateAttributes($0, resolved) }
            if !broken.isEmpty { failures += broken }
            if resolved.relationshipRules.isEmpty { continue }
            let state = s.objects.values[index]
            for relationship in resolved.relationshipRules {
                var id: ObjectID { registry.canonical(k) }
                if relationship.isToMany {
                    // Only rules with a count need the list; a materialized one is used as is. As in
                    // Core Data, a to-many value is never nil (an empty set), so "not optional" asks
                    // nothing more of it: only its counts are checked (NSRelationshipDescription:
                    // "the counts are only enforced if the relationship value is not nil").
                    let counted = relationship.minCount != nil || relationship.maxCount != nil
                    guard counted else { continue }
                    let count: Int
                    if let list = state.toMany[relationship.name] {
                        count = list.count
                    } else {
                        count = try toManyList(k, relationship.name, &s).count
                    }
                    // As in Core Data, an optional relationship may be empty whatever its minCount.
                    if let minCount = relationship.minCount, count < minCount, !(relationship.isOptional && count == 0)
                    {
                        failures.append(
                            ValidationFailure(
                                entity: k.entityName, objectID: id, field: relationship.name, rule: .minCount,
                                message: "needs at least \(minCount) objects, has \(count)"))
                    }
                    if let maxCount = relationship.maxCount, count > maxCount {
                        failures.append(
                            ValidationFailure(
                                entity: k.entityName, objectID: id, field: relationship.name, rule: .maxCount,
                                message: "holds at most \(maxCount) objects, has \(count)"))
                    }
                } else if !relationship.isOptional, (state.toOne[relationship.name] ?? nil) == nil {
                    failures.append(
                        ValidationFailure(
                            entity: k.entityName, objectID: id, field: relationship.name, rule: .required,
                            message: "is required"))
                }
            }
        }
        // Deny: an object cannot be deleted while a deny relationship still holds objects.
        for (k, state) in s.deletedStates.sorted(by: { ObjectID.precedes($0.key, $1.key) }) {
            for relationship in model.relationships(of: k.entityName) where relationship.deleteRule == .deny {
                var related: [ObjectID]
                if relationship.isToMany {
                    if let list = state.toMany[relationship.name] {
                        related = list
                    } else {
                        s.objects[k] = state
                        related = try toManyList(k, relationship.name, &s)
                        s.objects[k] = nil
                    }
                } else {
                    related = (state.toOne[relationship.name] ?? nil).map { [$0] } ?? []
                }
                related.removeAll { s.deleted[key($0, s)] != nil || s.deletedStates[key($0, s)] != nil }
                // A no-action inverse can leave references to objects deleted earlier: they do not count.
                var existing: [ObjectID] = []
                for id in related where try loadState(id, &s) != nil { existing.append(id) }
                related = existing
                if !related.isEmpty {
                    failures.append(
                        ValidationFailure(
                            entity: k.entityName, objectID: registry.canonical(k), field: relationship.name,
                            rule: .deny,
                            message:
                                "cannot be deleted while '\(relationship.name)' holds \(related.count) object\(related.count == 1 ? "" : "s")"
                        ))
                }
            }
        }
        return failures
    }

    /// The attribute rules of the model, checked on one object of `resolved`.
    func validateAttributes(_ state: ObjectState, _ resolved: ResolvedEntity) -> [ValidationFailure] {
        var failures: [ValidationFailure] = []
        func fail(_ field: String, _ rule: ValidationFailure.Rule, _ message: String) {
            failures.append(
                ValidationFailure(
                    entity: state.id.entityName, objectID: registry.canonical(state.id), field: field, rule: rule,
                    message: message)
            )
        }
        let positional = state.attributes.follows(resolved.layout)
        for attribute in resolved.rules {
            let value =
                (positional ? state.attributes[position: attribute.position] : state.attributes[attribute.name])
                ?? .null
            if value.isNull {
                if !attribute.isOptional { fail(attribute.name, .required, "is required") }
                continue
            }
            guard value.fits(attribute.type) else {
                fail(attribute.name, .type, "must be \(attribute.type.rawValue), not \(value.kindName)")
                continue
            }
            if let composite = attribute.composite, case .json(let json) = value {
                do throws(CompositeValueError) {
                    _ = try composite.checkedComposite(json)
                } catch {
                    fail(attribute.name, .type, error.message)
                }
            }
            if let min = attribute.minValue, let order = ValueOrdering.compare(value, min), order < 0 {
                fail(attribute.name, .min, "must be at least \(min.json.jsonText)")
            }
            if let max = attribute.maxValue, let order = ValueOrdering.compare(value, max), order > 0 {
                fail(attribute.name, .max, "must be at most \(max.json.jsonText)")
            }
            var length: Int?
            // Code points, as JSON Schema's maxLength counts them (so the OpenAPI document holds).
            if case .string(let text) = value, attribute.minLength != nil || attribute.maxLength != nil {
                // A string has between utf8/4 and utf8 code points: count them only when that
                // range straddles a bound.
                let bytes = text.utf8.count
                let surelyFits = bytes <= (attribute.maxLength ?? .max) && (bytes + 3) / 4 >= (attribute.minLength ?? 0)
                if !surelyFits { length = text.unicodeScalars.count }
            }
            if case .binary(let data) = value { length = data.count }
            if let length, let minLength = attribute.minLength, length < minLength {
                fail(attribute.name, .minLength, "must be at least \(minLength) long")
            }
            if let length, let maxLength = attribute.maxLength, length > maxLength {
                fail(attribute.name, .maxLength, "must be at most \(maxLength) long")
            }
            if let pattern = attribute.regex, case .string(let text) = value {
                do throws(PredicateError) {
                    if try !ValueOrdering.matchText(.matches, text, pattern, []) {
                        fail(attribute.name, .regex, "must match \(pattern)")
                    }
                } catch {
                    fail(attribute.name, .regex, "could not be checked against \(pattern): \(error.message)")
                }
            }
        }
        return failures
    }
}
