/// A key path of a predicate checked against the model: the relationships it walks, in order, and
/// what it ends on. In-memory evaluation, SQL generation and binding all read paths through this
/// one definition, so they accept the same paths and give them the same meaning.
struct ModelKeyPath: Sendable, Hashable {
    /// One relationship walked from an object of `entity`.
    struct Step: Sendable, Hashable {
        var relationship: RelationshipDescription
        var entity: String
    }

    /// What the path ends on.
    enum Leaf: Sendable, Hashable {
        /// An attribute of the object reached.
        case attribute(AttributeDescription)
        /// The object reached itself (`SELF`, or a path ending on a relationship); `entity` is its
        /// declared entity.
        case object(entity: String)
        /// `relationship.@count`: the number of objects a to-many relationship of the object reached
        /// (an object of `entity`) holds.
        case count(RelationshipDescription, entity: String)
        /// `composite.element`: a leaf element of a composite attribute of the object reached, at
        /// `path` below the attribute.
        case element(AttributeDescription, path: [String], element: AttributeDescription)
    }

    /// The path as written.
    var text: String
    var steps: [Step]
    var leaf: Leaf

    /// Whether the path yields a list of values (it walks a to-many relationship).
    var isCollection: Bool { steps.contains { $0.relationship.isToMany } }

    /// The attribute type of the value the path ends on, nil for an object.
    var valueType: AttributeType? {
        switch leaf {
        case .attribute(let attribute): attribute.type
        case .element(_, _, let element): element.type
        case .count: .integer64
        case .object: nil
        }
    }

    /// Checks `text` against `entity`.
    /// - Throws: ``PredicateError`` naming the part of the path that does not fit.
    init(_ text: String, from entity: String, in model: ObjectModel) throws(PredicateError) {
        self.text = text
        var components = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if components.first == "SELF" { components.removeFirst() }
        if components.contains(where: \.isEmpty) { throw PredicateError("'\(text)' is not a key path") }
        var current = entity
        var steps: [Step] = []
        var leaf = Leaf.object(entity: entity)
        var index = 0
        while index < components.count {
            let name = components[index]
            let isLast = index == components.count - 1
            if name == "SELF" { throw PredicateError("'SELF' can only start a key path, in '\(text)'") }
            if name.hasPrefix("@") {
                throw PredicateError("'\(name)' in '\(text)' must follow a to-many relationship")
            }
            if let attribute = model.attribute(name, of: current), attribute.isComposite, !isLast {
                let path = Array(components[(index + 1)...])
                guard let element = attribute.element(at: path) else {
                    throw PredicateError(
                        "'\(name)' of '\(current)' has no element '\(path.joined(separator: "."))' (elements: \((attribute.elements ?? []).map(\.name).joined(separator: ", ")))"
                    )
                }
                guard !element.isComposite else {
                    throw PredicateError("'\(text)' is a composite; compare one of its elements")
                }
                leaf = .element(attribute, path: path, element: element)
                break
            }
            if let attribute = model.attribute(name, of: current) {
                guard isLast else {
                    throw PredicateError(
                        "'\(name)' is an attribute of '\(current)'; it has no key '\(components[index + 1])' (in '\(text)')"
                    )
                }
                leaf = .attribute(attribute)
                break
            }
            guard let relationship = model.relationship(name, of: current) else {
                if model.fetchedProperties(of: current).contains(where: { $0.name == name }) {
                    throw PredicateError("'\(name)' is a fetched property of '\(current)'; predicates cannot read it")
                }
                if index == 0 && components.count == 1 {
                    throw PredicateError("'\(current)' has no attribute or relationship '\(name)'")
                }
                throw PredicateError("'\(current)' has no attribute or relationship '\(name)' (in '\(text)')")
            }
            if !isLast, components[index + 1].hasPrefix("@") {
                let function = components[index + 1]
                guard function == "@count" else {
                    throw PredicateError("'\(function)' is not supported in predicates; only '@count' is")
                }
                guard relationship.isToMany else {
                    throw PredicateError("'@count' needs a to-many relationship; '\(name)' of '\(current)' is to-one")
                }
                guard index + 2 == components.count else {
                    throw PredicateError("'@count' must end the key path '\(text)'")
                }
                leaf = .count(relationship, entity: current)
                break
            }
            steps.append(Step(relationship: relationship, entity: current))
            current = relationship.destination
            leaf = .object(entity: current)
            index += 1
        }
        self.steps = steps
        self.leaf = leaf
    }

    /// The operand the path yields for `object`: a value or object for a path without to-many
    /// relationships, otherwise a list with one element per related object reached.
    ///
    /// `property` reads one key of one object: an attribute as `.value`, a to-one relationship as
    /// `.object`, a to-many relationship as a `.list` of `.object`s. A path through an empty to-one
    /// relationship yields nil (`.value(.null)` or `.object(nil)`), or no elements when a to-many
    /// relationship follows it.
    func resolve(from object: ObjectID, property: (ObjectID, String) throws -> PredicateOperand) throws
        -> PredicateOperand
    {
        var elements: [PredicateOperand] = []
        try collect(0, object, property, into: &elements)
        if isCollection { return .list(elements) }
        return elements.first ?? .value(.null)
    }

    private func collect(
        _ index: Int, _ object: ObjectID?, _ property: (ObjectID, String) throws -> PredicateOperand,
        into elements: inout [PredicateOperand]
    ) throws {
        guard let object else {
            if !steps[index...].contains(where: { $0.relationship.isToMany }) {
                if case .object = leaf { elements.append(.object(nil)) } else { elements.append(.value(.null)) }
            }
            return
        }
        if index == steps.count {
            switch leaf {
            case .attribute(let attribute):
                let value = try property(object, attribute.name)
                if case .value = value { elements.append(value) } else { elements.append(.value(.null)) }
            case .element(let attribute, let path, let element):
                var json: JSONValue = .null
                if case .value(.json(let value)) = try property(object, attribute.name) { json = value }
                for key in path { json = json.objectValue?[key] ?? .null }
                elements.append(.value(AttributeValue(json: json, as: element.type) ?? .null))
            case .object: elements.append(.object(object))
            case .count(let relationship, _):
                if case .list(let items) = try property(object, relationship.name) {
                    elements.append(.value(.integer(Int64(items.count))))
                } else {
                    elements.append(.value(.integer(0)))
                }
            }
            return
        }
        let relationship = steps[index].relationship
        switch try property(object, relationship.name) {
        case .object(let next): try collect(index + 1, next, property, into: &elements)
        case .list(let items):
            for case .object(let next) in items { try collect(index + 1, next, property, into: &elements) }
        case .value: try collect(index + 1, nil, property, into: &elements)
        }
    }
}
