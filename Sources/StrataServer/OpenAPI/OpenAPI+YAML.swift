/// A small, deterministic YAML writer for ``OpenAPINode`` trees: block mappings and sequences
/// indented by two spaces, members in writing order, and scalars that read back as exactly the
/// same JSON value under YAML 1.1 and 1.2 readers alike.
///
/// A string is written plain only when it cannot be mistaken for anything else: it starts with a
/// letter, `/` or `_`, holds only letters, digits, spaces and `_ . / - ( ) ,`, does not end in a
/// space, and is not one of the words YAML reads as a Boolean or null. Every other string is
/// double-quoted with escapes for `"`, `\`, control characters and the characters YAML 1.1
/// treats as line breaks or refuses to read raw.
enum OpenAPIYAML {
    /// The YAML text of `node`, ending in a newline.
    static func text(_ node: OpenAPINode) -> String {
        var lines: [String] = []
        switch node {
        case .object(let members) where !members.isEmpty: writeMembers(members, indent: 0, into: &lines)
        case .array(let items) where !items.isEmpty: writeItems(items, indent: 0, into: &lines)
        default: lines.append(inline(node))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func writeMembers(
        _ members: [(key: String, value: OpenAPINode)], indent: Int, into lines: inout [String]
    ) {
        let pad = String(repeating: " ", count: indent)
        for (key, value) in members {
            let head = pad + scalar(key) + ":"
            switch value {
            case .object(let inner) where !inner.isEmpty:
                lines.append(head)
                writeMembers(inner, indent: indent + 2, into: &lines)
            case .array(let items) where !items.isEmpty:
                lines.append(head)
                writeItems(items, indent: indent + 2, into: &lines)
            default:
                lines.append(head + " " + inline(value))
            }
        }
    }

    private static func writeItems(_ items: [OpenAPINode], indent: Int, into lines: inout [String]) {
        let pad = String(repeating: " ", count: indent)
        for item in items {
            var nested: [String] = []
            switch item {
            case .object(let members) where !members.isEmpty:
                writeMembers(members, indent: indent + 2, into: &nested)
            case .array(let inner) where !inner.isEmpty:
                writeItems(inner, indent: indent + 2, into: &nested)
            default:
                lines.append(pad + "- " + inline(item))
                continue
            }
            // The first line of the nested block moves up beside the dash.
            nested[0] = pad + "- " + nested[0].dropFirst(indent + 2)
            lines += nested
        }
    }

    /// A scalar, or an empty collection, on one line.
    private static func inline(_ node: OpenAPINode) -> String {
        switch node {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .integer(let value): String(value)
        case .double(let value): OpenAPINode.numberText(value)
        case .string(let value): scalar(value)
        case .array: "[]"
        case .object: "{}"
        }
    }

    /// Words that some YAML reader takes for a Boolean or null when written plain.
    private static let reserved: Set<String> = ["y", "yes", "n", "no", "true", "false", "on", "off", "null"]

    /// A string as a plain scalar when that is unambiguous, else double-quoted.
    static func scalar(_ text: String) -> String {
        isPlainSafe(text) ? text : quoted(text)
    }

    static func isPlainSafe(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, text.unicodeScalars.last != " " else { return false }
        guard isASCIILetter(first) || first == "/" || first == "_" else { return false }
        guard !reserved.contains(text.lowercased()) else { return false }
        return text.unicodeScalars.allSatisfy { scalar in
            isASCIILetter(scalar) || ("0"..."9").contains(scalar) || " _./-(),".unicodeScalars.contains(scalar)
        }
    }

    private static func isASCIILetter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }

    /// A double-quoted YAML scalar.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where needsEscape(scalar):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Characters a YAML 1.1 reader refuses raw (C0 and C1 controls, DEL, noncharacters) or reads
    /// as a line break (U+0085, U+2028, U+2029), and the byte order mark.
    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0xA0, 0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF: true
        default: false
        }
    }
}
