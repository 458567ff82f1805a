/// One problem found in a model, naming where it is and why.
public struct ModelIssue: Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem, stable for matching in code and tests.
    public enum Code: String, Sendable, Hashable {
        case unknownType
        case unknownKey
        case missingValue
        case invalidValue
        case invalidName
        case reservedName
        case duplicateName
        case unknownEntity
        case unknownProperty
        case missingInverse
        case mismatchedInverse
        case crossConfigurationRelationship
        case unknownConfigurationEntity
        case minGreaterThanMax
        case invalidRegex
        case invalidDefault
        case resourceCollision
        case inheritanceCycle
        case inheritanceConfiguration
        case conflictingColumn
        case unsupported
    }

    /// The kind of problem.
    public var code: Code
    /// The entity concerned, if any.
    public var entity: String?
    /// The property (or configuration) concerned, if any.
    public var property: String?
    /// A sentence saying what is wrong and, where it helps, what to do.
    public var message: String

    /// Creates an issue.
    public init(_ code: Code, entity: String? = nil, property: String? = nil, _ message: String) {
        self.code = code
        self.entity = entity
        self.property = property
        self.message = message
    }

    public var description: String {
        var place = ""
        if let entity { place = entity }
        if let property { place += place.isEmpty ? property : ".\(property)" }
        return place.isEmpty ? message : "\(place): \(message)"
    }
}

/// A model that could not be read or is not valid.
public struct ModelError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What stage failed.
    public enum Kind: String, Sendable, Hashable {
        /// The file or folder could not be read.
        case unreadable
        /// The file is not well-formed JSON or XML.
        case malformed
        /// The model's content breaks a rule.
        case invalid
    }

    /// What stage failed.
    public var kind: Kind
    /// The file the model came from, if any.
    public var file: String?
    /// Every problem found.
    public var issues: [ModelIssue]

    /// Creates an error.
    public init(_ kind: Kind, file: String? = nil, issues: [ModelIssue]) {
        self.kind = kind
        self.file = file
        self.issues = issues
    }

    public var description: String {
        let head = file.map { "model \($0)" } ?? "model"
        let verb =
            switch kind {
            case .unreadable: "could not be read"
            case .malformed: "is malformed"
            case .invalid: "is invalid"
            }
        return "\(head) \(verb): " + issues.map(\.description).joined(separator: "; ")
    }
}
