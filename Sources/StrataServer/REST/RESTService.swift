import Foundation
import Strata
import StrataHTTP

/// The REST API over one model's stack: every entity becomes a resource; every request runs in its
/// own child context of one root context, whose save routes each object to its configuration's
/// store before the response is sent.
public final class RESTService: Sendable {
    /// The model.
    public let model: ObjectModel
    /// Committed state, read without a context (the service writes only through ``root``).
    let reads: any CommittedReads
    /// The root context every request's child context saves into.
    public let root: ObjectContext
    /// Request and save counters, for `/metrics`.
    public let metrics: Metrics
    let codec: ObjectCodec
    let resources: [String: String]
    /// What clients may do with each entity (from the model, then the server's overrides).
    let access: [String: EntityAccess]
    /// Entities in stores reached over a network (PostgreSQL): never cached, so reading one waits
    /// for a round trip and is not answered on a polling thread.
    let remoteEntities: Set<String>
    /// Each entity's resource path segment (the inverse of `resources`).
    let pathByEntity: [String: String]
    /// The entities in no hierarchy (no parent, no subentities).
    let leafEntities: Set<String>
    /// Each entity's object route as the metrics name it (`/books/{id}`), written once: reads by
    /// id are most of the requests counted.
    private let itemTemplates: [String: String]
    /// Each entity's to-many relationships, which a rendering lists.
    let toManyNames: [String: [String]]
    /// For each entity, the attributes an index the model declares starts with (its own and its
    /// ancestors' fetch indexes and uniqueness constraints): what a cheap list filters and sorts by.
    let leadingIndexed: [String: Set<String>]
    /// An ID of each entity in its store, to make others from (`withPrimaryKey`).
    let prototypeByEntity: [String: ObjectID]
    /// For an entity several stores hold, the one store it is served from (lists search only it).
    let homeStores: [String: Set<String>]
    /// Rendered objects read by primary key.
    let readCache: ReadCache
    /// The OpenAPI document, if one is served.
    let openAPI: (@Sendable () -> (json: String, yaml: String))?
    /// The interactive docs at `/docs` (a plain page without their assets).
    let docs: APIDocs
    /// The bounds on a request's shape.
    let limits: RequestLimits
    /// The readers of `/_changes` that wait, and the token responses carry; nil when no store
    /// records history.
    let changeFeed: ChangeFeed?
    /// Where `GET /_export` builds its files, and the threads that build them.
    let exports: SnapshotExports

    /// Creates the service.
    /// - Parameters:
    ///   - root: the root context every request's child context saves into; its merge policy
    ///     becomes `objectTrump` (a write without `If-Match` wins per property over concurrent ones).
    ///   - reads: committed reads over the same stores; every entity must be held by exactly one
    ///     store.
    ///   - metrics: the counters `/metrics` shows.
    ///   - openAPI: the OpenAPI document to serve, if any.
    ///   - readCacheLimit: how many rendered objects per entity the service keeps for reads by id
    ///     (0 keeps none). The cache sees writes made through ``root`` only.
    ///   - heartbeatSeconds: how often an event stream of `/_changes` gets a comment line when no
    ///     change is sent (a client or proxy then knows the connection is alive).
    ///   - export: where and how `GET /_export` builds its files.
    /// - Throws: ``Problem`` (status 500) when an entity is held by no store or by several, or the
    ///   history cannot be read.
    public init(
        root: ObjectContext, reads: any CommittedReads, metrics: Metrics = Metrics(),
        openAPI: (@Sendable () -> (json: String, yaml: String))? = nil, readCacheLimit: Int = 10_000,
        entityAccess: [String: EntityAccess] = [:], docs: APIDocs = APIDocs(), limits: RequestLimits = RequestLimits(),
        heartbeatSeconds: Double = 15, export: SnapshotExportSettings = SnapshotExportSettings()
    ) throws(Problem) {
        exports = SnapshotExports(export)
        self.docs = docs
        self.limits = limits
        if root.coordinator.historyStores.isEmpty {
            changeFeed = nil
        } else {
            do {
                changeFeed = try ChangeFeed(coordinator: root.coordinator, heartbeatInterval: heartbeatSeconds)
            } catch {
                throw Problem(error)
            }
        }
        model = reads.model
        access = reads.model.resolvedAccess(overrides: entityAccess)
        self.reads = reads
        // Writes from requests carry no If-Match unless the client sends one: per property, the
        // request's changes win over concurrent ones (If-Match is checked when the commit happens).
        root.mergePolicy = .objectTrump
        self.root = root
        self.metrics = metrics
        self.openAPI = openAPI
        codec = ObjectCodec(model: reads.model)
        var resources: [String: String] = [:]
        var prototypes: [String: ObjectID] = [:]
        var homeStores: [String: Set<String>] = [:]
        let routes = reads.routes
        for entity in reads.model.entityNames {
            // A hidden entity has no routes: 404, as for a path that names nothing.
            if access[entity] != .hidden { resources[reads.model.resourcePath(of: entity)] = entity }
            let holders = routes[entity] ?? []
            guard let prototype = reads.objectID(of: entity, primaryKey: 0) else {
                throw Problem(
                    500, "Internal Server Error",
                    "no store holds entity \(entity): add a store for one of its configurations")
            }
            // An entity in several configurations is served from the first store holding it
            // (where inserts go): an object's id is its key in one store.
            if holders.count > 1, let home = prototype.storeIdentifier { homeStores[entity] = [home] }
            prototypes[entity] = prototype
        }
        self.resources = resources
        self.homeStores = homeStores
        let pathByEntity = Dictionary(resources.map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        self.pathByEntity = pathByEntity
        // Only an entity outside any hierarchy: a subentity's key may be another subentity's object
        // (a Vet's id naming an Owner: the two share their root's table and its keys).
        leafEntities = Set(
            reads.model.entityNames.filter {
                reads.model.entityAndSubentities(of: reads.model.rootEntity(of: $0)).count == 1
            })
        itemTemplates = pathByEntity.mapValues { Route.item(entity: $0, id: "").template { $0 } }
        toManyNames = Dictionary(
            uniqueKeysWithValues: reads.model.entityNames.map { entity in
                (entity, reads.model.relationships(of: entity).filter(\.isToMany).map(\.name))
            })
        var leading: [String: Set<String>] = [:]
        for entity in reads.model.entityNames {
            var names = Set<String>()
            var current: String? = entity
            while let name = current, let description = reads.model.entity(named: name) {
                for index in description.indexes { if let first = index.properties.first { names.insert(first) } }
                for unique in description.uniqueness { if let first = unique.first { names.insert(first) } }
                current = description.parent
            }
            leading[entity] = names
        }
        leadingIndexed = leading
        prototypeByEntity = prototypes
        let shared = reads.storeSummaries.filter { $0.type == .postgresql }.flatMap(\.entityNames)
        remoteEntities = Set(shared)
        let readCache = ReadCache(model: reads.model, limit: readCacheLimit, uncached: remoteEntities)
        self.readCache = readCache
        let changeFeed = self.changeFeed
        root.observeSaves { changes in
            readCache.invalidate(changes)
            metrics.recordSave(stores: Array(changes.byStore.keys))
            changeFeed?.noteCommitted(changes.historyToken)
        }
        // Another server's saves into a shared store: forget what they changed, here and in the root.
        reads.observeExternalChanges { [root] change in
            changeFeed?.wake()
            switch change {
            case .objects(let ids): readCache.invalidate(ContextChanges(externallyChanged: ids))
            case .everything: readCache.clearAll()
            }
            root.mergeExternalChanges(change)
        }
        // Keep the root's cache from growing with every object ever written.
        root.cacheLimit = 10_000
    }

    /// Answers one request. Never throws and never answers 5xx for a client's mistake.
    /// - Parameter context: who the request acts for (by default anonymous access, which may do
    ///   everything).
    public func handle(_ request: HTTPRequest, context: RequestContext = RequestContext()) -> HTTPResponse {
        let started = DispatchTime.now().uptimeNanoseconds
        let token = changeFeed?.knownTokenText
        let route = Route(path: request.path, resources: resources)
        var response: HTTPResponse
        do {
            response = try dispatch(request, route, context)
        } catch {
            response = error.response
        }
        Self.mark(&response, token)
        record(response, to: request, on: route, started: started)
        return response
    }

    /// Counts an answered request in the metrics.
    func record(_ response: HTTPResponse, to request: HTTPRequest, on route: Route, started: UInt64) {
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let template: String
        if case .item(let entity, _) = route, let known = itemTemplates[entity] {
            template = known
        } else {
            template = route.template { pathByEntity[$0] ?? $0 }
        }
        metrics.record(route: template, method: request.method, status: response.status, seconds: seconds)
    }

    /// Where a server should handle `request`: ``HTTPDispatch/inline`` for what is answered
    /// quickly without waiting for a lock or a commit (a read of one object by primary key, the
    /// service documents that need no store, paths that are not resources);
    /// ``HTTPDispatch/deferred`` for writes to a collection or an object, which
    /// ``handle(_:context:lead:completion:)`` answers once their group commit is durable, and for
    /// reads by primary key from PostgreSQL stores, answered when the store's pipelined read
    /// comes back; and ``HTTPDispatch/pool`` for the rest (lists and indexes over PostgreSQL
    /// stores, sub-resources, batches, the OpenAPI document).
    public func dispatch(for request: HTTPRequest) -> HTTPDispatch {
        let method = request.method == "HEAD" ? "GET" : request.method
        let route = Route(path: request.path, resources: resources)
        switch (method, route) {
        case ("GET", .index), ("GET", .item), ("GET", .collection): if Self.wantsHTML(request) { return .pool }
        default: break
        }
        switch (method, route) {
        case ("GET", .item(let entity, _)) where remoteEntities.contains(entity): return .deferred
        case ("GET", .index) where !remoteEntities.isEmpty: return .pool
        case ("GET", .changes) where isLongPoll(request): return .deferred
        case ("GET", .export): return .deferred
        case ("GET", .index), ("GET", .live), ("GET", .ready), ("GET", .metrics), ("GET", .item), ("GET", .unknown),
            ("GET", .docs):
            return .inline
        case ("GET", .collection(let entity)) where !remoteEntities.contains(entity):
            return isCheapList(request, entity) ? .inline : .pool
        case ("POST", .collection), ("POST", .bulk), ("PATCH", .item), ("PUT", .item), ("DELETE", .item):
            return .deferred
        default: return .pool
        }
    }

    /// The health answers, written once.
    static let live = Array(#"{"status":"live"}"#.utf8)
    static let ready = Array(#"{"status":"ready"}"#.utf8)

    /// Whether a list request is answered on the polling thread: a page of at most 100 (the
    /// default 50) read through an index the model declares or by id, so that it costs about as
    /// much as a few reads by id. Filters on indexed attributes or `_id`, `order` by `_id` or
    /// starting with an indexed attribute, no `where`, named query or `count`, an `offset` of at
    /// most 1,000 (a cursor costs what the first page costs). Anything else may read many rows
    /// and runs on a handler thread, so that it never holds up the other connections.
    func isCheapList(_ request: HTTPRequest, _ entity: String) -> Bool {
        let indexed = leadingIndexed[entity] ?? []
        for (name, value) in request.query {
            switch name {
            case "limit": guard let limit = Int(value), limit <= 100 else { return false }
            case "offset": guard let offset = Int(value), offset <= 1_000 else { return false }
            case "after": continue
            case "order":
                guard let first = value.split(separator: ",").first?.split(separator: ".").first else { return false }
                guard first == Substring(ObjectCodec.idKey) || indexed.contains(String(first)) else { return false }
            case "where", "count", "query": return false
            default: guard name == ObjectCodec.idKey || indexed.contains(name) else { return false }
            }
        }
        return true
    }

    /// Whether `request` is a write this server takes (a POST to a collection or `/_batch`, a PATCH,
    /// PUT or DELETE of an object, not of a read-only entity): what an `Idempotency-Key` applies to.
    /// Anything else is answered as if the header were not there (405, 404, …).
    public func isWrite(_ request: HTTPRequest) -> Bool {
        if request.method == "GET" || request.method == "HEAD" { return false }
        let route = Route(path: request.path, resources: resources)
        switch (request.method, route) {
        case ("POST", .batch): return true
        case ("POST", .collection), ("POST", .bulk): return !isReadOnly(route) && !createsAbstract(route)
        case ("PATCH", .item), ("PUT", .item), ("DELETE", .item): return !isReadOnly(route)
        case ("PATCH", .collection), ("DELETE", .collection): return !isReadOnly(route)
        default: return false
        }
    }

    /// Whether `route` is a collection or object of a read-only entity.
    func isReadOnly(_ route: Route) -> Bool {
        switch route {
        case .collection(let entity), .bulk(let entity), .item(let entity, _): access[entity] == .readOnly
        default: false
        }
    }

    /// Whether `route` is the collection (or `_bulk`) of an abstract entity, whose objects are
    /// created at their subentities' paths.
    func createsAbstract(_ route: Route) -> Bool {
        switch route {
        case .collection(let entity), .bulk(let entity): model.entity(named: entity)?.isAbstract == true
        default: false
        }
    }

    /// The 405 for a POST to an abstract entity's collection, naming where its objects are created.
    func abstractCreate(_ method: String, _ route: Route) -> Problem {
        guard case .collection(let entity) = route else {
            return Problem.methodNotAllowed(method, allowed: allowed(route))
        }
        let concrete = model.entities.filter { !$0.isAbstract && model.entity($0.name, isKindOf: entity) }
        var problem = Problem.methodNotAllowed(method, allowed: allowed(route))
        problem.detail =
            "\(entity) is abstract: create one of its subentities ("
            + concrete.map { "\($0.name) at /\(model.resourcePath(of: $0.name))" }.joined(separator: ", ") + ")"
        return problem
    }

    /// The methods `route` accepts: only reads for a read-only entity; reads and batch changes (no
    /// POST) for an abstract entity's collection; none for an abstract entity's `_bulk`; no batch
    /// `PATCH` of a collection whose entity has no attribute a patch can set (every body would
    /// be refused).
    func allowed(_ route: Route) -> [String] {
        if case .bulk = route, createsAbstract(route) { return [] }
        if isReadOnly(route) { return ["GET", "HEAD"] }
        let methods = createsAbstract(route) ? ["GET", "HEAD", "PATCH", "DELETE"] : route.allowed
        if case .collection(let entity) = route, !Self.hasSettableAttributes(entity, model: model) {
            return methods.filter { $0 != "PATCH" }
        }
        return methods
    }

    /// Whether `entity` has an attribute a batch `PATCH` can set (one that is not derived).
    static func hasSettableAttributes(_ entity: String, model: ObjectModel) -> Bool {
        model.attributes(of: entity).contains { !model.isDerived($0.name, of: entity) }
    }

    /// Answers one request without blocking the calling thread: a write to a collection or an
    /// object is prepared here and answered through `completion` when the root's group commit
    /// holding it is durable (on the thread that committed it); a read by primary key answers
    /// when the store's read comes back (see ``CommittedReads/rowWithToMany(for:blocking:completion:)``);
    /// anything else runs ``handle(_:context:)`` through `lead`.
    /// - Parameters:
    ///   - context: who the request acts for (by default anonymous access).
    ///   - lead: runs a job on a thread that may block (the group commit, or a whole request).
    ///   - completion: gets the response, exactly once.
    public func handle(
        _ request: HTTPRequest, context: RequestContext = RequestContext(),
        lead: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        let started = DispatchTime.now().uptimeNanoseconds
        let token = changeFeed?.knownTokenText
        let route = Route(path: request.path, resources: resources)
        if case .item(let entity, let id) = route, request.method == "GET" || request.method == "HEAD",
            allowed(route).contains("GET"), !Self.wantsHTML(request)
        {
            read(entity, id, request, blocking: lead) { [self] response in
                var response = response
                Self.mark(&response, token)
                record(response, to: request, on: route, started: started)
                completion(response)
            }
            return
        }
        if route == .export, request.method == "GET" || request.method == "HEAD" {
            exports.run { [self] in
                let response = exportSnapshot(request)
                record(response, to: request, on: route, started: started)
                completion(response)
            }
            return
        }
        if route == .changes, isLongPoll(request) {
            awaitChanges(request, lead: lead) { [self] response in
                record(response, to: request, on: route, started: started)
                completion(response)
            }
            return
        }
        guard let prepare = writeBody(request, route) else {
            lead { [self] in completion(handle(request, context: context)) }
            return
        }
        write(request, prepare, claim: context.idempotencyClaim, lead: lead) { [self] response in
            var response = response
            Self.mark(&response, token)
            record(response, to: request, on: route, started: started)
            completion(response)
        }
    }

    /// The one write path for a collection or an object: runs `body` in a new child context of the
    /// root and commits it through the root's group commit, then renders the outcome as the
    /// commit saved it. `completion` gets the response once the transaction holding the change
    /// is durable (or the problem), on the thread that committed it.
    /// - Parameters:
    ///   - claim: the `Idempotency-Key` the request holds: the commit keeps its receipt.
    ///   - lead: runs the group commit when this write has to lead it.
    func write(
        _ request: HTTPRequest, _ body: (ObjectContext, inout [ObjectID: Int64]) throws(Problem) -> WriteOutcome,
        claim: IdempotencyClaim? = nil, lead: (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        let child = root.newChildContext()
        let start = changeFeed?.knownToken
        var expectations: [ObjectID: Int64] = [:]
        do throws(Problem) {
            let outcome = try body(child, &expectations)
            let kept = outcome.kept(model)
            var objects: [ObjectID] = []
            let note = Self.note(outcome, minimal: Self.wantsMinimal(request), objects: &objects)
            if let receipt = Self.receipt(claim, note: note, objects: objects) { child.keepReceipt(receipt) }
            do {
                try root.commit(child, expecting: expectations, keeping: kept, lead: lead) {
                    [self] result in
                    switch result {
                    case .failure(let error):
                        // Saved by an earlier attempt of the same request: its answer.
                        if let claim, let replayed = savedAlready(error, claim) { return completion(replayed) }
                        completion(Self.problem(error, keeping: Set(kept)).response)
                    case .success(let saved):
                        do throws(Problem) {
                            var response = try render(outcome, request, created: child, saved: saved)
                            response.headers += savedTokenHeader(child, since: start)
                            completion(response)
                        } catch {
                            completion(error.response)
                        }
                    }
                }
            } catch {
                throw Self.problem(error, keeping: Set(kept))
            }
        } catch {
            completion(error.response)
        }
    }

    /// What a write request does in its child context, for the routes and methods that write one
    /// collection or object; `nil` for any other request.
    private func writeBody(_ request: HTTPRequest, _ route: Route)
        -> ((ObjectContext, inout [ObjectID: Int64]) throws(Problem) -> WriteOutcome)?
    {
        if isReadOnly(route) || createsAbstract(route) { return nil }
        switch (request.method, route) {
        case ("POST", .collection(let entity)):
            return { [self] (child: ObjectContext, _: inout [ObjectID: Int64]) throws(Problem) in
                try create(entity, request, child)
            }
        case ("POST", .bulk(let entity)):
            return { [self] (child: ObjectContext, _: inout [ObjectID: Int64]) throws(Problem) in
                try create(entity, request, child, bulk: true)
            }
        case ("PATCH", .item(let entity, let id)), ("PUT", .item(let entity, let id)),
            ("DELETE", .item(let entity, let id)):
            return { [self] (child: ObjectContext, expectations: inout [ObjectID: Int64]) throws(Problem) in
                try change(entity, id, request, child, expectations: &expectations)
            }
        default: return nil
        }
    }

    private func dispatch(_ request: HTTPRequest, _ route: Route, _ context: RequestContext) throws(Problem)
        -> HTTPResponse
    {
        let method = request.method == "HEAD" ? "GET" : request.method
        if route == .unknown { throw Problem.notFound("no resource at \(request.path)") }
        if case .bulk(let entity) = route, createsAbstract(route) {
            throw Problem.notFound(
                "no resource at \(request.path): \(entity) is abstract, so its objects are created at its subentities' paths"
            )
        }
        if method == "OPTIONS" {
            return HTTPResponse(status: 204, headers: [("Allow", allowed(route).joined(separator: ", "))])
        }
        if request.method == "POST", createsAbstract(route) { throw abstractCreate(request.method, route) }
        let methods = allowed(route)
        guard methods.contains(request.method) || (request.method == "HEAD" && methods.contains("GET")) else {
            throw Problem.methodNotAllowed(request.method, allowed: methods)
        }
        if method == "GET", Self.wantsHTML(request), let page = try htmlPage(route, request) { return page }
        switch route {
        case .index:
            // The stores' locations and server versions are for admins.
            return json(200, indexDocument(detailed: context.scopes.contains(.admin)))
        case .live: return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Self.live)
        case .ready:
            // Ready means ready to write: a server whose database is a standby now is taken out.
            let problems = reads.writabilityProblems()
            guard problems.isEmpty else {
                var problem = Problem(
                    503, "Service Unavailable", "not ready: " + problems.joined(separator: "; "),
                    headers: [("Retry-After", "2")])
                problem.extra["status"] = .string("not ready")
                throw problem
            }
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Self.ready)
        case .metrics:
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "text/plain; version=0.0.4")],
                body: Array(metrics.render(stores: reads.storeSummaries).utf8))
        case .openAPIJSON, .openAPIYAML:
            guard let openAPI else { throw Problem.notFound("this server has no OpenAPI document") }
            let document = openAPI()
            return route == .openAPIJSON
                ? HTTPResponse(
                    status: 200, headers: [("Content-Type", "application/json")], body: Array(document.json.utf8))
                : HTTPResponse(
                    status: 200, headers: [("Content-Type", "application/yaml")], body: Array(document.yaml.utf8))
        case .batch: return try batch(request, claim: context.idempotencyClaim)
        case .changes: return try changes(request)
        case .export: return exportSnapshot(request)
        case .diagram(let format): return diagram(format)
        case .docs(let file):
            guard let response = docs.response(file, document: openAPI) else {
                throw Problem.notFound("no resource at \(request.path)")
            }
            return response
        case .collection(let entity):
            if method == "GET" { return try list(entity, request) }
            if method == "PATCH" || method == "DELETE" {
                return try batchChange(entity, request, claim: context.idempotencyClaim)
            }
        case .item(let entity, let id):
            if method == "GET" { return try read(entity, id, request) }
        case .bulk: break
        case .property(let entity, let id, let name): return try property(entity, id, name, request)
        case .unknown: throw Problem.notFound("no resource at \(request.path)")
        }
        guard let body = writeBody(request, route) else {
            throw Problem.methodNotAllowed(request.method, allowed: allowed(route))
        }
        return write(request, body, claim: context.idempotencyClaim)
    }

    // MARK: - Shared pieces

    func json(_ status: Int, _ value: JSONValue, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")] + headers, body: value.jsonBytes)
    }

    /// The ID of object `id` of `entity` (the concrete subentity when the row is one).
    func objectID(_ entity: String, _ id: String, in context: ObjectContext) throws(Problem) -> ObjectID {
        // An entity in no hierarchy names its objects' IDs itself: the context that is about to read
        // the object tells whether it exists (from its parent's cache, without a store read).
        if let pk = Int64(id), pk > 0, let prototype = prototypeByEntity[entity], leafEntities.contains(entity) {
            let objectID = prototype.withPrimaryKey(pk)
            let object: ManagedObject
            do {
                object = try context.object(with: objectID)
            } catch {
                if error.code == .notFound { throw Problem.notFound("\(entity) \(id) does not exist") }
                throw Problem(error)
            }
            guard object.entityName == entity else { throw Problem.notFound("\(entity) \(id) does not exist") }
            return objectID
        }
        do throws(Problem) {
            return try storedRow(entity, id).id
        } catch {
            // Objects inserted earlier in the same batch live only in the context. A stored object
            // of another entity of the hierarchy (a Cat at /dogs/16) is not one: it stays a 404.
            guard error.status == 404, let pk = Int64(id), pk > 0,
                let guess = prototypeByEntity[entity]?.withPrimaryKey(pk),
                (try? reads.row(for: guess)) == nil
            else {
                throw error
            }
            if (try? context.object(with: guess)) != nil { return guess }
            throw error
        }
    }

    /// The stored row of object `id` of `entity` (or of a subentity).
    /// - Throws: a 404 ``Problem`` when there is none.
    /// - Parameter toMany: whether to read its to-many relationships too (into `toMany`).
    func storedRow(_ entity: String, _ id: String, toMany: Bool = false) throws(Problem) -> StoreRow {
        guard let pk = Int64(id), pk > 0, let prototype = prototypeByEntity[entity] else {
            throw Problem.notFound("'\(id)' is not an id of \(entity): ids are positive integers")
        }
        let row: StoreRow?
        do {
            let objectID = prototype.withPrimaryKey(pk)
            row = try toMany ? reads.rowWithToMany(for: objectID) : reads.row(for: objectID)
        } catch {
            throw Problem(error)
        }
        guard let row, model.entity(row.id.entityName, isKindOf: entity) else {
            throw Problem.notFound("\(entity) \(id) does not exist")
        }
        return row
    }

    /// The parsed JSON body of a write request.
    func body(_ request: HTTPRequest) throws(Problem) -> JSONValue {
        let type = Self.mediaType(request.header("content-type") ?? "")
        guard type == "application/json" || type.hasSuffix("+json") else {
            throw Problem(
                415, "Unsupported Media Type",
                type.isEmpty
                    ? "send the body as application/json (no Content-Type was given)"
                    : "send the body as application/json, not \(type)")
        }
        do {
            return try JSONValue.parse(request.body, maxDepth: limits.jsonDepth, maxElements: limits.jsonElements)
        } catch {
            throw Problem.badRequest("the body is not valid JSON: \(error)")
        }
    }

    /// ``write(_:_:lead:completion:)`` on the calling thread, waiting for its response (the
    /// calling thread leads the group commit when nobody else is).
    func write(
        _ request: HTTPRequest, _ body: (ObjectContext, inout [ObjectID: Int64]) throws(Problem) -> WriteOutcome,
        claim: IdempotencyClaim? = nil
    ) -> HTTPResponse {
        let answer = Locked<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        write(request, body, claim: claim, lead: { job in job() }) { response in
            answer.withLock { $0 = response }
            done.signal()
        }
        done.wait()
        return answer.withLock { $0! }
    }

    /// The problem for a failed commit. A change that is valid itself but would leave another,
    /// stored object without a required relationship (or with too few or too many related
    /// objects: moving a `Note` out of its `Appointment`, nullifying a required inverse) conflicts
    /// with the stored state, as a deny rule does: 409 naming those objects, not 422, which says
    /// the request's own body does not fit the model.
    static func problem(_ error: ContextError, keeping: Set<ObjectID>) -> Problem {
        let relationshipRules: Set<ValidationFailure.Rule> = [.required, .minCount, .maxCount]
        guard error.code == .validation, !error.failures.isEmpty,
            error.failures.allSatisfy({
                relationshipRules.contains($0.rule) && !keeping.contains($0.objectID) && !$0.objectID.isTemporary
            })
        else { return Problem(error) }
        // The failing fields are other objects' (a Note's `appointment`), not the request body's:
        // they go in `objects`, so that `errors` keeps naming only the request's own fields.
        var named: [String] = []
        var objects: [JSONValue] = []
        for failure in error.failures {
            let id = failure.objectID.primaryKey ?? 0
            let text = "\(failure.entity) \(id).\(failure.field) \(failure.message)"
            guard !named.contains(text) else { continue }
            named.append(text)
            objects.append(
                .object([
                    "entity": .string(failure.entity), "id": .integer(id), "field": .string(failure.field),
                    "code": .string(failure.rule.rawValue), "message": .string(failure.message),
                ]))
        }
        var problem = Problem.conflict(
            "the change would leave stored objects breaking the model's rules: " + named.joined(separator: "; "))
        problem.extra["objects"] = .array(objects)
        return problem
    }

    /// A context for a read: a fresh root over the same stores, so reads never wait for the
    /// shared root while it commits.
    func readContext() -> ObjectContext { reads.newReadContext() }
}

/// What a write produced, rendered after the save when permanent IDs are known.
enum WriteOutcome {
    /// One object: its ID, the status, whether to send `Location`.
    case object(ObjectID, status: Int, location: Bool)
    /// Several created objects.
    case objects([ObjectID], status: Int)
    /// No body.
    case empty(status: Int)

    /// The objects the response shows whose states as committed the render needs (a later
    /// commit may change the stored ones before the response is rendered): the existing ones,
    /// and created ones with derived attributes (computed by the commit). Other created objects
    /// render from the committed child.
    func kept(_ model: ObjectModel) -> [ObjectID] {
        switch self {
        case .object(let id, _, _):
            return !id.isTemporary || !model.derivedAttributes(of: id.entityName).isEmpty ? [id] : []
        case .objects(let ids, _):
            return ids.filter { !model.derivedAttributes(of: $0.entityName).isEmpty }
        case .empty:
            return []
        }
    }
}
