/// How model names become Swift names in generated code. Every rule keeps the name where Swift
/// accepts it and changes it as little as it can otherwise, always the same way:
///
/// - A character Swift does not take in an identifier (`-`, `.`, a space, anything outside ASCII
///   letters, digits and `_`) becomes `_`; a name that starts with a digit gets a leading `_`.
/// - A Swift keyword is written in backticks as a property or function name (`` `class` ``,
///   `` `default` ``), and gets a trailing `_` as a type name (`Protocol_`), as do the names
///   Swift does not take even in backticks (`self`, `Self`, `init`, `Type`, `Protocol`, `_`).
/// - A property or function that would take the name of a member every generated type has
///   (``reservedMembers``: `managedObject`, `objectID`, `context`, `version`, `description`,
///   `hash`, `entityName`, `fetchRequest`, ...) gets a trailing `_` (`description_`), and so does
///   one named like an entity's type or a module (`Set_` for an attribute `Set`: in an expression
///   the member would hide the type), and one whose name another member of the same type took
///   first (members are named in the order attributes, relationships, their helpers, fetched
///   properties, conversions, templates).
/// - An entity named like a module the generated code names (`Swift`, `Foundation`, the runtime
///   module) gets a trailing `_`. Entities named like Swift or Foundation types (`Data`, `Date`,
///   `URL`, `Set`, `Error`, `String`) keep their names: the generated code names every standard
///   type by its module (`Foundation.Data`, `Swift.Set`), so nothing in it is shadowed.
/// - Two entities whose names become the same Swift name (`a-b` and `a_b`) are told apart by
///   trailing `_`s, the first in model order keeping the plain name.
///
/// The model's own names stay what the generated code reads and writes: only Swift names change.
public enum SwiftNames {
    /// The words Swift reserves in declarations and expressions.
    public static let keywords: Set<String> = [
        "associatedtype", "borrowing", "class", "consuming", "deinit", "enum", "extension", "fileprivate", "func",
        "import", "init", "inout", "internal", "let", "nonisolated", "open", "operator", "private",
        "precedencegroup", "protocol", "public", "rethrows", "static", "struct", "subscript", "typealias", "var",
        "break", "case", "catch", "continue", "default", "defer", "do", "else", "fallthrough", "for", "guard", "if",
        "in", "repeat", "return", "throw", "switch", "where", "while", "Any", "as", "await", "false", "is", "nil",
        "self", "Self", "super", "throws", "true", "try", "_",
    ]

    /// Names a member cannot take even in backticks, or that mean something else after a dot.
    static let unusableMembers: Set<String> = ["self", "Self", "init", "deinit", "subscript", "Type", "Protocol", "_"]

    /// The members every generated type has (declared or from `TypedObject`'s extensions): a
    /// model property of one of these names is renamed with a trailing `_`.
    public static let reservedMembers: Set<String> = [
        "managedObject", "objectID", "typedObjectID", "context", "version", "isInserted", "isUpdated", "isDeleted",
        "description", "debugDescription", "hash", "hashValue", "entityName", "entityFamily", "propertyNames",
        "fetchRequest",
    ]

    /// `name` with every character an identifier cannot hold replaced by `_`, and a leading `_`
    /// before a digit.
    public static func identifier(_ name: String) -> String {
        var result = String(
            name.unicodeScalars.map { scalar -> Character in
                let v = scalar.value
                let ok = (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A) || v == 0x5F
                return ok ? Character(scalar) : "_"
            })
        if result.isEmpty { result = "_" }
        if let first = result.unicodeScalars.first, first.value >= 0x30 && first.value <= 0x39 { result = "_" + result }
        return result
    }

    /// The member name as written in code: in backticks when it is a keyword.
    public static func escaped(_ member: String) -> String { keywords.contains(member) ? "`\(member)`" : member }

    /// `name` with its first letter upper-cased (`tags` → `Tags`), for helper names.
    static func capitalized(_ name: String) -> String { name.prefix(1).uppercased() + name.dropFirst() }

    /// The type names of `entities`, in order: each an identifier, not a keyword, not one of
    /// `modules`, distinct from the ones before it.
    public static func typeNames(_ entities: [String], modules: Set<String>) -> [String: String] {
        var taken: Set<String> = []
        var names: [String: String] = [:]
        for entity in entities {
            var name = identifier(entity)
            while keywords.contains(name) || unusableMembers.contains(name) || modules.contains(name)
                || taken.contains(name)
            {
                name += "_"
            }
            taken.insert(name)
            names[entity] = name
        }
        return names
    }
}

/// Hands out the member names of one generated type: each an identifier, none reserved, none
/// taken twice.
struct MemberNames {
    private var taken: Set<String>

    /// Names to keep free besides the reserved members (the type names of the model's entities,
    /// for nested types).
    init(alsoReserved: Set<String> = []) { taken = SwiftNames.reservedMembers.union(alsoReserved) }

    /// Names for a scope of its own (a function's parameters): only `reserved` is kept free.
    init(reserved: Set<String>) { taken = reserved }

    /// A free name for `name` (unescaped); marks it taken.
    mutating func claim(_ name: String) -> String {
        var result = SwiftNames.identifier(name)
        while SwiftNames.unusableMembers.contains(result) || taken.contains(result) { result += "_" }
        taken.insert(result)
        return result
    }

    /// Whether `name` is already taken.
    func isTaken(_ name: String) -> Bool { taken.contains(name) }
}
