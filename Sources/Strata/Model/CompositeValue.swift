/// A value that does not fit a composite attribute's elements.
public struct CompositeValueError: Error, Sendable, Hashable {
    /// The element the problem is in, as a key path from the entity (`address.city`); the
    /// attribute's name when the value as a whole does not fit.
    public var path: String
    /// What is wrong, naming ``path``.
    public var message: String
}

extension AttributeDescription {
    /// Whether the attribute is a composite (has ``elements``).
    public var isComposite: Bool { elements != nil }

    /// The leaf elements of a composite, in declaration order, each with its key path below the
    /// attribute (`["street"]`, or `["position", "latitude"]` through a nested composite).
    public var compositeLeaves: [(path: [String], element: AttributeDescription)] {
        var leaves: [(path: [String], element: AttributeDescription)] = []
        func visit(_ elements: [AttributeDescription], _ prefix: [String]) {
            for element in elements {
                if let nested = element.elements {
                    visit(nested, prefix + [element.name])
                } else {
                    leaves.append((prefix + [element.name], element))
                }
            }
        }
        visit(elements ?? [], [])
        return leaves
    }

    /// The element of a composite at `path` below it (a nested composite or a leaf), nil when
    /// there is none.
    public func element(at path: some Collection<String>) -> AttributeDescription? {
        var current = self
        for name in path {
            guard let next = current.elements?.first(where: { $0.name == name }) else { return nil }
            current = next
        }
        return current
    }

    /// A composite's default value built from its elements' defaults, as Core Data builds it: an
    /// object with every element (the defaults, nil for an element without one), or nil when no
    /// element has a default.
    public static func compositeDefault(_ elements: [AttributeDescription]) -> AttributeValue? {
        func build(_ elements: [AttributeDescription]) -> (JSONValue, Bool) {
            var members: [String: JSONValue] = [:]
            var any = false
            for element in elements {
                if let nested = element.elements {
                    let (value, has) = build(nested)
                    members[element.name] = value
                    any = any || has
                } else if let value = element.defaultValue, !value.isNull {
                    members[element.name] = value.json
                    any = true
                } else {
                    members[element.name] = .null
                }
            }
            return (.object(members), any)
        }
        let (value, any) = build(elements)
        return any ? .json(value) : nil
    }

    /// Checks a composite attribute's value against its elements and gives it in canonical form.
    ///
    /// The value must be a JSON object whose keys are elements; each element's value must be of
    /// its type and keep its bounds, lengths and pattern (a nested composite's an object checked
    /// the same way). A missing or null optional element is null; a required one must be there.
    /// The result has every element, each value written as its type writes it (a date in UTC to
    /// the microsecond, a UUID in lower case).
    /// - Throws: ``CompositeValueError`` naming the attribute and the element that does not fit.
    public func checkedComposite(_ json: JSONValue) throws(CompositeValueError) -> JSONValue {
        guard let elements else { return json }
        return try Self.check(json, elements, path: name)
    }

    private static func check(_ json: JSONValue, _ elements: [AttributeDescription], path: String)
        throws(CompositeValueError) -> JSONValue
    {
        let names = elements.map(\.name)
        guard let object = json.objectValue else {
            throw CompositeValueError(
                path: path,
                message:
                    "\(path) must be an object with the elements \(names.joined(separator: ", ")), not \(json.typeName)"
            )
        }
        if let unknown = object.keys.sorted().first(where: { !names.contains($0) }) {
            throw CompositeValueError(
                path: path + "." + unknown,
                message: "\(path) has no element '\(unknown)' (elements: \(names.joined(separator: ", ")))")
        }
        var members: [String: JSONValue] = [:]
        for element in elements {
            let elementPath = path + "." + element.name
            let value = object[element.name] ?? .null
            if value.isNull {
                guard element.isOptional else {
                    throw CompositeValueError(path: elementPath, message: "\(elementPath) is required")
                }
                members[element.name] = .null
                continue
            }
            if let nested = element.elements {
                members[element.name] = try check(value, nested, path: elementPath)
                continue
            }
            guard let converted = AttributeValue(json: value, as: element.type) else {
                throw CompositeValueError(
                    path: elementPath,
                    message: "\(elementPath) must be \(element.type.rawValue), not \(value.typeName) \(value.jsonText)")
            }
            if let problem = rulesProblem(converted, element) {
                throw CompositeValueError(path: elementPath, message: "\(elementPath) \(problem)")
            }
            members[element.name] = converted.json
        }
        return .object(members)
    }

    /// What `value` breaks of an element's bounds, lengths and pattern, nil when nothing.
    private static func rulesProblem(_ value: AttributeValue, _ element: AttributeDescription) -> String? {
        if let min = element.minValue, let order = ValueOrdering.compare(value, min), order < 0 {
            return "must be at least \(min.json.jsonText)"
        }
        if let max = element.maxValue, let order = ValueOrdering.compare(value, max), order > 0 {
            return "must be at most \(max.json.jsonText)"
        }
        var length: Int?
        if case .string(let text) = value { length = text.unicodeScalars.count }
        if case .binary(let data) = value { length = data.count }
        if let length, let minLength = element.minLength, length < minLength {
            return "must be at least \(minLength) long"
        }
        if let length, let maxLength = element.maxLength, length > maxLength {
            return "must be at most \(maxLength) long"
        }
        if let pattern = element.regex, case .string(let text) = value {
            do throws(PredicateError) {
                if try !ValueOrdering.matchText(.matches, text, pattern, []) { return "must match \(pattern)" }
            } catch {
                return "could not be checked against \(pattern): \(error.message)"
            }
        }
        return nil
    }
}
