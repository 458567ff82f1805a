/// One rule an object broke, found when a context saved.
public struct ValidationFailure: Sendable, Hashable, CustomStringConvertible {
    /// The rule that failed.
    public enum Rule: String, Sendable, Hashable {
        case required, type, min, max, minLength, maxLength, regex, minCount, maxCount, deny, abstract
        /// A relationship names an object that does not exist (deleted by another save meanwhile).
        case reference
    }

    /// The object's entity.
    public var entity: String
    /// The object.
    public var objectID: ObjectID
    /// The attribute or relationship.
    public var field: String
    /// The rule.
    public var rule: Rule
    /// A sentence for people.
    public var message: String

    public var description: String { "\(entity).\(field) (\(objectID)): \(message)" }
}

/// A failure of a context operation.
public struct ContextError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, Hashable {
        /// One or more objects broke model rules; see `failures`.
        case validation
        /// Objects changed in the store since they were read; see `conflicts`.
        case conflict
        /// No such object.
        case notFound
        /// A relationship names an object that another save deleted meanwhile; see `failures`.
        case missingReference
        /// No such entity, attribute or relationship.
        case unknownProperty
        /// A value of the wrong type for an attribute.
        case invalidValue
        /// An abstract entity cannot be instantiated.
        case abstractEntity
        /// A store failed; see `underlying`.
        case store
        /// A predicate could not be parsed or applied.
        case invalidPredicate
        /// A batch change matches more objects than its limit allows; nothing was changed.
        case tooManyAffected
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for people.
    public var message: String
    /// Every failing object and field, for `.validation`.
    public var failures: [ValidationFailure] = []
    /// Every stale object with both versions, for `.conflict`.
    public var conflicts: [VersionConflict] = []
    /// The store error behind a `.store` failure (or a `.conflict`).
    public var storeError: StoreError?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, failures: [ValidationFailure] = [], conflicts: [VersionConflict] = [],
        storeError: StoreError? = nil
    ) {
        self.code = code
        self.message = message
        self.failures = failures
        self.conflicts = conflicts
        self.storeError = storeError
    }

    public var description: String {
        switch code {
        case .validation: "validation failed: " + failures.map(\.description).joined(separator: "; ")
        default: message
        }
    }
}

/// What a root save does when objects changed in the store since the context read them.
public enum MergePolicy: String, Sendable, Hashable, CaseIterable {
    /// Fail with a `.conflict` error naming every object and both versions (the default).
    case error
    /// Per property: values the store changed win; the context's other changes are kept.
    case storeTrump
    /// Per property: the context's changed values win; the store's other values are kept.
    case objectTrump
    /// The context's whole object replaces the stored one, whatever its version.
    case overwrite
    /// The context's changes to conflicting objects are dropped; the store's state is taken.
    case rollback
}
