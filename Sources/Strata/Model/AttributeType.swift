/// The type of an attribute, with its JSON form noted on each case.
public enum AttributeType: String, Sendable, Hashable, CaseIterable {
    /// A JSON string.
    case string
    /// A JSON integer in -32768...32767.
    case integer16
    /// A JSON integer in the 32-bit range.
    case integer32
    /// A JSON integer in the 64-bit range.
    case integer64
    /// A JSON number.
    case double
    /// A JSON number (stored as a `Double`).
    case float
    /// An exact decimal, written as a JSON string.
    case decimal
    /// A JSON Boolean.
    case boolean
    /// An RFC 3339 string in UTC, kept to the microsecond.
    case date
    /// Base64 text.
    case binary
    /// A UUID string.
    case uuid
    /// A URI string.
    case uri
    /// Any JSON value (Core Data's "Transformable").
    case json

    /// Parses a type name as our JSON format or a Core Data model spells it.
    public init?(modelName: String) {
        if let type = AttributeType(rawValue: modelName) {
            self = type
            return
        }
        switch modelName {
        case "String": self = .string
        case "Integer 16": self = .integer16
        case "Integer 32": self = .integer32
        case "Integer 64": self = .integer64
        case "Double": self = .double
        case "Float": self = .float
        case "Decimal": self = .decimal
        case "Boolean": self = .boolean
        case "Date": self = .date
        case "Binary": self = .binary
        case "UUID": self = .uuid
        case "URI": self = .uri
        case "Transformable": self = .json
        default: return nil
        }
    }

    /// Whether the type is an integer type.
    public var isInteger: Bool { self == .integer16 || self == .integer32 || self == .integer64 }
    /// Whether values of the type are numbers (integers, floating point or decimal).
    public var isNumeric: Bool { isInteger || self == .double || self == .float || self == .decimal }

    /// The range an integer type accepts.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: Int64(Int16.min)...Int64(Int16.max)
        case .integer32: Int64(Int32.min)...Int64(Int32.max)
        case .integer64: Int64.min...Int64.max
        default: nil
        }
    }
}

/// What happens to related objects when an object is deleted.
public enum DeleteRule: String, Sendable, Hashable, CaseIterable {
    /// Clear the inverse reference on related objects (the default).
    case nullify
    /// Delete related objects too.
    case cascade
    /// Refuse the delete while related objects exist.
    case deny
    /// Leave related objects as they are.
    case noAction

    /// Parses a rule as our JSON format or a Core Data model spells it.
    public init?(modelName: String) {
        switch modelName {
        case "nullify", "Nullify": self = .nullify
        case "cascade", "Cascade": self = .cascade
        case "deny", "Deny": self = .deny
        case "noAction", "No Action", "NoAction": self = .noAction
        default: return nil
        }
    }
}
