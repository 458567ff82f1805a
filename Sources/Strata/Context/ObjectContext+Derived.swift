import Foundation

extension ObjectContext {
    /// Computes the derived attributes (see ``Derivation``) of every object a root save writes,
    /// and of the objects whose derived values depend on one it writes (an author's `books.@count`
    /// when a book is added, a book's `author.name` when the author is renamed), before validation.
    func computeDerived(_ s: inout ContextStorage) throws(ContextError) {
        guard model.hasDerivedAttributes else { return }
        let now = Date()
        var targets = s.inserted + s.updated.keys.sorted { ObjectID.precedes($0, $1) }
        var seen = Set(targets)
        // Objects that read a changed object through a relationship's inverse.
        for k in targets {
            guard let state = s.objects[k] else { continue }
            for relationship in model.relationships(of: k.entityName) {
                guard let inverse = model.inverse(of: relationship.name, of: k.entityName),
                    model.hasDerivedAttributes(dependingOn: inverse.name, in: relationship.destination)
                else { continue }
                let related =
                    relationship.isToMany
                    ? try toManyList(k, relationship.name, &s)
                    : [(state.toOne[relationship.name] ?? nil)].compactMap { $0 }
                for id in related where seen.insert(id).inserted { targets.append(id) }
            }
        }
        for k in targets {
            guard let state = try loadState(k, &s), let resolved = model.resolvedEntity(state.id.entityName) else {
                continue
            }
            for (attribute, derivation) in resolved.derived {
                let value = try derive(derivation, of: state.id, as: attribute.type, now: now, &s)
                guard s.objects[state.id]?.attributes[attribute.name] != value else { continue }
                track(state.id, &s)
                s.objects[state.id]?.attributes[attribute.name] = value
                s.updated[state.id]?.attributes.insert(attribute.name)
            }
        }
    }

    /// The value of `derivation` for object `k`, converted to `type` (null when it cannot be).
    private func derive(
        _ derivation: Derivation, of k: ObjectID, as type: AttributeType, now: Date, _ s: inout ContextStorage
    ) throws(ContextError) -> AttributeValue {
        switch derivation {
        case .now:
            return type == .date ? .date(now) : .null
        case .keyPath(let path):
            return Self.converted(try value(at: path, from: k, &s), to: type)
        case .text(let function, let path):
            guard case .string(let text) = try value(at: path, from: k, &s) else { return .null }
            let result: String
            switch function {
            case .lowercase: result = text.lowercased()
            case .uppercase: result = text.uppercased()
            case .canonical: result = text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
            }
            return Self.converted(.string(result), to: type)
        case .aggregate(let relationship, let aggregate, let attribute):
            guard model.relationship(relationship, of: k.entityName)?.isToMany == true else { return .null }
            let members = try toManyList(k, relationship, &s)
            if aggregate == .count { return Self.converted(.integer(Int64(members.count)), to: type) }
            var numbers: [Double] = []
            for member in members {
                guard let attribute, let state = try loadState(member, &s),
                    let number = ModelValidator.number(state.attributes[attribute] ?? .null)
                else { continue }
                numbers.append(number)
            }
            let result: Double?
            switch aggregate {
            case .count: result = Double(members.count)
            case .sum: result = numbers.reduce(0, +)
            case .min: result = numbers.min()
            case .max: result = numbers.max()
            case .avg: result = numbers.isEmpty ? nil : numbers.reduce(0, +) / Double(numbers.count)
            }
            return result.map { Self.converted(.double($0), to: type) } ?? .null
        }
    }

    /// The value at a key path of to-one relationships ending on an attribute.
    private func value(at path: [String], from k: ObjectID, _ s: inout ContextStorage) throws(ContextError)
        -> AttributeValue
    {
        var current = try loadState(k, &s)
        for name in path.dropLast() {
            guard let state = current, let next = state.toOne[name] ?? nil else { return .null }
            current = try loadState(next, &s)
        }
        return current?.attributes[path.last!] ?? .null
    }

    /// `value` as a value of `type` where it converts without surprise, else null.
    static func converted(_ value: AttributeValue, to type: AttributeType) -> AttributeValue {
        if value.fits(type) { return value }
        switch (value, type) {
        case (.double(let d), _) where type.isInteger:
            guard d.isFinite, d == d.rounded(), type.integerRange!.contains(Int64(d)) else { return .null }
            return .integer(Int64(d))
        case (.integer(let i), .double), (.integer(let i), .float): return .double(Double(i))
        case (.integer(let i), .decimal): return .decimal(Decimal(i))
        case (.double(let d), .decimal): return .decimal(Decimal(d))
        case (_, .string): return value.isNull ? .null : .string(value.json.stringValue ?? value.json.jsonText)
        default: return .null
        }
    }
}

extension ObjectModel {
    /// Whether `entity` (or one of its subentities) has a derived attribute that reads through
    /// relationship `relationship`.
    func hasDerivedAttributes(dependingOn relationship: String, in entity: String) -> Bool {
        entityAndSubentities(of: entity).contains { name in
            resolvedEntity(name)?.derived.contains { $0.derivation.relationship == relationship } ?? false
        }
    }
}
