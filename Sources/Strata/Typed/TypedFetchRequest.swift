import Foundation

/// A ``FetchRequest`` whose results are views of one generated type: `Book.fetchRequest()`.
///
/// Filters and sorts built from key paths (`.filter(\.year > 1960).sorted(by: \.title)`) are
/// lowered to the same ``FetchPredicate`` and ``SortKey``s a format string gives, so the stores
/// receive the same request and push it down to SQL alike. `Sendable`: it holds only the request.
public struct TypedFetchRequest<Root: TypedObject>: Sendable, Hashable {
    /// The request the context runs; its predicate and sort keys name the model's properties.
    public var request: FetchRequest
    /// The key paths that named no generated property, which make the fetch fail.
    public private(set) var problems: [String] = []

    /// A request for every object of `Root`'s entity (and its subentities).
    public init() { request = FetchRequest(entityName: Root.entityName) }

    /// A request over `request`, whose entity the caller knows to be `Root`'s.
    public init(unchecked request: FetchRequest) { self.request = request }

    /// The request with `predicate` added: every filter given must match.
    public func filter(_ predicate: TypedPredicate<Root>) -> Self {
        var copy = self
        copy.problems += predicate.problems
        copy.request.predicate = copy.request.predicate.map { .and([$0, predicate.predicate]) } ?? predicate.predicate
        return copy
    }

    /// The request with a filter given as a format string (`"title BEGINSWITH[c] $p"`), as in the string API.
    /// - Throws: ``PredicateError`` for a format string that does not parse.
    public func filter(format: String, _ arguments: PredicateArgument...) throws(PredicateError) -> Self {
        filter(TypedPredicate(try FetchPredicate(format: format, arguments: arguments)))
    }

    /// The request ordered by `keyPath` after the sort keys it has.
    public func sorted<Value: TypedAttributeValue>(
        by keyPath: KeyPath<Root, Value>, ascending: Bool = true, caseInsensitive: Bool = false
    ) -> Self {
        sorted(key: keyPath, ascending: ascending, caseInsensitive: caseInsensitive)
    }

    /// The request ordered by optional attribute `keyPath` after the sort keys it has (objects
    /// without a value first when ascending).
    public func sorted<Value: TypedAttributeValue>(
        by keyPath: KeyPath<Root, Value?>, ascending: Bool = true, caseInsensitive: Bool = false
    ) -> Self {
        sorted(key: keyPath, ascending: ascending, caseInsensitive: caseInsensitive)
    }

    private func sorted(key keyPath: PartialKeyPath<Root>, ascending: Bool, caseInsensitive: Bool) -> Self {
        var copy = self
        let name = TypedPredicate<Root>.name(of: keyPath, problems: &copy.problems)
        copy.request.sortDescriptors.append(SortKey(name, ascending: ascending, caseInsensitive: caseInsensitive))
        return copy
    }

    /// The request returning at most `limit` objects.
    public func limit(_ limit: Int?) -> Self {
        var copy = self
        copy.request.fetchLimit = limit
        return copy
    }

    /// The request skipping the first `offset` matching objects.
    public func offset(_ offset: Int) -> Self {
        var copy = self
        copy.request.fetchOffset = offset
        return copy
    }

    /// The request with or without the objects of subentities (with them by default).
    public func includingSubentities(_ include: Bool) -> Self {
        var copy = self
        copy.request.includesSubentities = include
        return copy
    }

    /// The request as the context runs it.
    /// - Throws: `.invalidPredicate` naming each key path that is not a generated property.
    public func checkedRequest() throws(ContextError) -> FetchRequest {
        guard problems.isEmpty else {
            throw ContextError(.invalidPredicate, problems.joined(separator: "; "))
        }
        return request
    }
}

extension ObjectContext {
    /// The objects matching `request`, as views of its type (see ``fetch(_:)->[ManagedObject]``).
    /// - Throws: `.invalidPredicate` for a key path that names no model property, and what the
    ///   untyped fetch throws.
    public func fetch<Root: TypedObject>(_ request: TypedFetchRequest<Root>) throws(ContextError) -> [Root] {
        views(try fetch(request.checkedRequest()))
    }

    /// How many objects match `request` (ignoring its limit and offset), unsaved changes included.
    public func count<Root: TypedObject>(_ request: TypedFetchRequest<Root>) throws(ContextError) -> Int {
        try count(request.checkedRequest())
    }

    /// The IDs of the objects matching `request`.
    public func fetchIDs<Root: TypedObject>(_ request: TypedFetchRequest<Root>) throws(ContextError)
        -> [TypedObjectID<Root>]
    {
        try fetchIDs(request.checkedRequest()).map { TypedObjectID<Root>(unchecked: $0) }
    }
}

extension TypedFetchRequest {
    /// The request of fetch request template `name`, whose predicate is `format` with `variables`
    /// substituted, for the generated template functions. The generator parsed `format` and
    /// typed every variable from the model, so a failure here means the generated code was made
    /// from another model or Strata version: it stops the program, naming the template.
    public init(template name: String, format: String, substituting variables: [String: PredicateArgument]) {
        do {
            let predicate = format.isEmpty ? nil : try FetchPredicate(format: format).substituting(variables)
            self.init(unchecked: FetchRequest(entityName: Root.entityName, predicate: predicate))
        } catch {
            preconditionFailure("fetch request template \(name): \(error)")
        }
    }
}
