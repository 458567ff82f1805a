import Strata

/// The bounds on a request's shape that the REST service enforces, each answered 400 with a
/// problem naming it; `strata serve --limit NAME=N` (repeatable, `STRATA_LIMITS` comma-separated)
/// sets them, and the served OpenAPI document states the ones a schema can (`limit`'s maximum,
/// a batch's `maxItems`, how many keys `order`'s pattern admits).
///
/// The `where=` nesting bound (100 levels) is not among them: it keeps the predicate parser's
/// recursion within the thread's stack, so it is no policy to loosen.
public struct RequestLimits: Sendable, Hashable {
    /// The largest `limit` of a list page.
    public var pageSize = 1000
    /// The most sort keys in `order`.
    public var orderKeys = 32
    /// The most filters (attribute filters and `where`) in one list request.
    public var filters = 64
    /// The longest `where=` predicate, in characters.
    public var whereLength = 4096
    /// The most operations in one `POST /_batch`.
    public var batchOperations = 100
    /// The deepest nesting of a JSON body.
    public var jsonDepth = 32
    /// The most values in a JSON body (every value counts, objects and arrays too).
    public var jsonElements = 200_000

    /// The defaults above.
    public init() {}

    /// Each limit's option name, key path and accepted range.
    static var settings: [(name: String, path: WritableKeyPath<RequestLimits, Int>, range: ClosedRange<Int>)] {
        [
            ("page-size", \.pageSize, 1...100_000), ("order-keys", \.orderKeys, 1...1000),
            ("filters", \.filters, 1...1000), ("where-length", \.whereLength, 1...1_048_576),
            ("batch", \.batchOperations, 1...100_000), ("json-depth", \.jsonDepth, 1...64),
            ("json-elements", \.jsonElements, 1...100_000_000),
        ]
    }

    /// The option names, for help texts and errors.
    public static var names: [String] { settings.map(\.name) }

    /// Sets one limit from `NAME=N`.
    /// - Throws: a message naming the known limits or the accepted range.
    public mutating func set(_ specification: String) throws(ServeError) {
        let parts = specification.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, let setting = Self.settings.first(where: { $0.name == parts[0] }) else {
            throw ServeError(
                "--limit takes NAME=N with NAME one of \(Self.names.joined(separator: ", ")), not '\(specification)'")
        }
        guard let value = Int(parts[1]), setting.range.contains(value) else {
            throw ServeError(
                "--limit \(setting.name) must be a number from \(setting.range.lowerBound) to \(setting.range.upperBound), not '\(parts[1])'"
            )
        }
        self[keyPath: setting.path] = value
    }
}
