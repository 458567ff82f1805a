import Strata

/// A JSON-shaped tree whose objects keep their members in the order they were written, so the
/// OpenAPI document comes out byte for byte the same every time, in a readable order (paths in
/// entity declaration order, properties in attribute declaration order).
///
/// ``json`` turns it into a ``JSONValue`` (which keeps no member order); the JSON and YAML
/// writers work on the node itself.
enum OpenAPINode: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([OpenAPINode])
    /// Members in writing order; a key appears at most once (``setting(_:_:)`` replaces).
    case object([(key: String, value: OpenAPINode)])

    static func == (lhs: OpenAPINode, rhs: OpenAPINode) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.map(\.key) == b.map(\.key) && a.map(\.value) == b.map(\.value)
        default: false
        }
    }

    /// The same tree as a ``JSONValue``.
    var json: JSONValue {
        switch self {
        case .null: .null
        case .bool(let value): .bool(value)
        case .integer(let value): .integer(value)
        case .double(let value): .double(value)
        case .string(let value): .string(value)
        case .array(let items): .array(items.map(\.json))
        case .object(let members):
            .object(Dictionary(members.map { ($0.key, $0.value.json) }, uniquingKeysWith: { _, last in last }))
        }
    }

    /// The object's members, or none.
    var members: [(key: String, value: OpenAPINode)] {
        if case .object(let members) = self { members } else { [] }
    }

    /// The member `key` of an object.
    subscript(key: String) -> OpenAPINode? {
        members.first { $0.key == key }?.value
    }

    /// This object with `key` set to `value` (replacing an earlier value in place, or appended);
    /// a nil value leaves the object as it is.
    func setting(_ key: String, _ value: OpenAPINode?) -> OpenAPINode {
        guard let value, case .object(var members) = self else { return self }
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append((key, value))
        }
        return .object(members)
    }

    /// Sets `key` to `value` in place; see ``setting(_:_:)``.
    mutating func set(_ key: String, _ value: OpenAPINode?) {
        self = setting(key, value)
    }

    /// An object of `members`, in the order given, skipping nil values.
    static func members(_ members: [(String, OpenAPINode?)]) -> OpenAPINode {
        var node = OpenAPINode.object([])
        for (key, value) in members { node.set(key, value) }
        return node
    }
}

extension OpenAPINode: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int64) { self = .integer(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(arrayLiteral elements: OpenAPINode...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, OpenAPINode)...) {
        self = .members(elements.map { ($0.0, $0.1) })
    }
}

extension OpenAPINode {
    /// The text of a number, the same in the JSON and the YAML output: integral doubles without a
    /// fraction (`5`), others in Swift's shortest form with a `.0` added before an exponent
    /// (`1.0e-05`) so that YAML 1.1 readers still see a float.
    static func numberText(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        var text = "\(value)"
        if let exponent = text.firstIndex(where: { $0 == "e" || $0 == "E" }), !text[..<exponent].contains(".") {
            text.insert(contentsOf: ".0", at: exponent)
        }
        return text
    }

    /// The document as indented JSON (two spaces), members in writing order, ending in a newline.
    var prettyJSON: String {
        var out = ""
        writeJSON(to: &out, indent: 0)
        return out + "\n"
    }

    private func writeJSON(to out: inout String, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .integer(let value): out += String(value)
        case .double(let value): out += Self.numberText(value)
        case .string(let value): JSONValue.writeString(value, to: &out)
        case .array(let items):
            if items.isEmpty {
                out += "[]"
                return
            }
            out += "[\n"
            for (index, item) in items.enumerated() {
                out += String(repeating: " ", count: indent + 2)
                item.writeJSON(to: &out, indent: indent + 2)
                out += index == items.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "]"
        case .object(let members):
            if members.isEmpty {
                out += "{}"
                return
            }
            out += "{\n"
            for (index, member) in members.enumerated() {
                out += String(repeating: " ", count: indent + 2)
                JSONValue.writeString(member.key, to: &out)
                out += ": "
                member.value.writeJSON(to: &out, indent: indent + 2)
                out += index == members.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "}"
        }
    }
}
