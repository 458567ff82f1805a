extension FetchPredicate: CustomStringConvertible {
    /// The predicate as a format string that ``init(format:arguments:)`` parses back to an equal
    /// predicate, with these exceptions: an empty `AND`/`OR` prints as `TRUEPREDICATE`/`FALSEPREDICATE`
    /// and a one-item one as its item; values without a literal form (decimals, dates, UUIDs, URIs,
    /// binary, JSON) print as quoted strings, which ``bound(to:in:)`` converts back for an attribute
    /// of their type; objects print as `<URI>`, which does not parse.
    public var predicateFormat: String { PredicateFormatter.format(self) }

    /// The ``predicateFormat``.
    public var description: String { predicateFormat }
}

extension PredicateTerm: CustomStringConvertible {
    /// The term as it is written in a format string; see ``FetchPredicate/predicateFormat``.
    public var predicateFormat: String { PredicateFormatter.format(self) }

    /// The ``predicateFormat``.
    public var description: String { predicateFormat }
}

/// Writes predicates as format strings.
enum PredicateFormatter {
    static func format(_ predicate: FetchPredicate) -> String {
        switch predicate {
        case .always: return "TRUEPREDICATE"
        case .never: return "FALSEPREDICATE"
        case .and(let items):
            if items.isEmpty { return "TRUEPREDICATE" }
            if items.count == 1 { return format(items[0]) }
            return items.map(grouped).joined(separator: " AND ")
        case .or(let items):
            if items.isEmpty { return "FALSEPREDICATE" }
            if items.count == 1 { return format(items[0]) }
            return items.map(grouped).joined(separator: " OR ")
        case .not(let item): return "NOT " + grouped(item)
        case .textSearch(let search):
            return search.keyPath + " " + TextSearch.formatOperator + " "
                + format(.constant(.string(search.query.text)))
        case .comparison(let comparison):
            var text = comparison.modifier == .direct ? "" : comparison.modifier.rawValue + " "
            text += format(comparison.lhs) + " " + comparison.op.rawValue
            if !comparison.options.isEmpty { text += options(comparison.options) }
            return text + " " + format(comparison.rhs)
        }
    }

    /// A predicate that is safe next to `AND`, `OR` and `NOT`: compound ones in parentheses.
    private static func grouped(_ predicate: FetchPredicate) -> String {
        switch predicate {
        case .and(let items) where items.count > 1: "(" + format(predicate) + ")"
        case .or(let items) where items.count > 1: "(" + format(predicate) + ")"
        default: format(predicate)
        }
    }

    static func options(_ options: ComparisonOptions) -> String {
        "[" + (options.contains(.caseInsensitive) ? "c" : "") + (options.contains(.diacriticInsensitive) ? "d" : "")
            + "]"
    }

    static func format(_ term: PredicateTerm) -> String {
        switch term {
        case .keyPath(let path): return keyPath(path)
        case .variable(let name): return "$" + name
        case .object(let id): return id.map { "<\($0.uri)>" } ?? "nil"
        case .list(let items): return "{" + items.map(format).joined(separator: ", ") + "}"
        case .constant(let value):
            switch value {
            case .null: return "nil"
            case .boolean(let b): return b ? "TRUE" : "FALSE"
            case .integer(let i): return String(i)
            case .double(let d):
                if d.isNaN { return "nan" }
                if d.isInfinite { return d < 0 ? "-1e999" : "1e999" }
                return "\(d)"
            case .string(let s), .uri(let s): return quoted(s)
            case .json(let json): return quoted(json.jsonText)
            default:
                if case .string(let text) = value.json { return quoted(text) }
                return quoted(value.json.jsonText)
            }
        }
    }

    /// A key path with reserved words escaped by `#`.
    static func keyPath(_ path: String) -> String {
        path.split(separator: ".", omittingEmptySubsequences: false).enumerated().map { index, component in
            if index == 0 && component == "SELF" { return String(component) }
            let isReserved = predicateKeywords.contains(component.uppercased()) || component.uppercased() == "SELF"
            return isReserved ? "#" + component : String(component)
        }.joined(separator: ".")
    }

    /// `text` in double quotes with backslash escapes.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\0": result += "\\0"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}
