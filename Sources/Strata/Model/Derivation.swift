import Foundation

/// The expression a derived attribute is computed from on every save, in Core Data's spellings:
///
/// - a key path: `name`, or through to-one relationships, `author.name`: the value there;
/// - `lowercase:(path)`, `uppercase:(path)`, `canonical:(path)` (lower case, no diacritics): of a
///   string at a key path;
/// - an aggregate over a to-many relationship: `books.@count`, `books.@sum.pages`, `@min`, `@max`,
///   `@avg`;
/// - `now()`: the time of the save.
///
/// What does not parse loads as a plain attribute with a warning (the model validator reports it).
public enum Derivation: Sendable, Hashable {
    /// The value at a key path of to-one relationships and an attribute.
    case keyPath([String])
    /// A string function of the value at a key path.
    case text(TextFunction, [String])
    /// An aggregate over a to-many relationship: its size, or a function of an attribute of its
    /// objects.
    case aggregate(relationship: String, Aggregate, attribute: String?)
    /// The time of the save.
    case now

    /// A string function of Core Data's derivations.
    public enum TextFunction: String, Sendable, Hashable {
        case lowercase, uppercase, canonical
    }

    /// An aggregate function of Core Data's derivations.
    public enum Aggregate: String, Sendable, Hashable {
        case count, sum, min, max, avg
    }

    /// Parses a derivation expression; nil when it is not one of the forms above.
    public init?(_ expression: String) {
        let text = expression.trimmingCharacters(in: .whitespaces)
        func path(_ text: Substring) -> [String]? {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !parts.isEmpty, parts.allSatisfy({ ModelValidator.isIdentifier($0) }) else { return nil }
            return parts
        }
        if text == "now()" {
            self = .now
            return
        }
        for function in [TextFunction.lowercase, .uppercase, .canonical] {
            let prefix = function.rawValue + ":("
            if text.hasPrefix(prefix), text.hasSuffix(")"),
                let keyPath = path(text.dropFirst(prefix.count).dropLast())
            {
                self = .text(function, keyPath)
                return
            }
        }
        if let at = text.range(of: ".@") {
            let relationship = String(text[..<at.lowerBound])
            let rest = text[at.upperBound...].split(separator: ".", maxSplits: 1).map(String.init)
            guard ModelValidator.isIdentifier(relationship), let first = rest.first,
                let aggregate = Aggregate(rawValue: first)
            else { return nil }
            let attribute = rest.count > 1 ? rest[1] : nil
            if aggregate == .count ? attribute != nil : attribute.map({ !ModelValidator.isIdentifier($0) }) ?? true {
                return nil
            }
            self = .aggregate(relationship: relationship, aggregate, attribute: attribute)
            return
        }
        guard let keyPath = path(text[...]) else { return nil }
        self = .keyPath(keyPath)
    }

    /// The relationship the value depends on first (nil for `now()` and the object's own values):
    /// a change of the objects it leads to changes the derived value.
    var relationship: String? {
        switch self {
        case .keyPath(let path), .text(_, let path): path.count > 1 ? path[0] : nil
        case .aggregate(let relationship, _, _): relationship
        case .now: nil
        }
    }
}
