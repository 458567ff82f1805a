import Foundation
import Strata
import StrataHTTP

extension RESTService {
    // MARK: - Reading

    func list(_ entity: String, _ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        if ListAggregates.applies(to: request.query) { return try listAggregates(entity, request) }
        let query = try ListQuery(
            request.query, entity: entity, model: model, limits: limits,
            objectID: { prototypeByEntity[$0]?.withPrimaryKey($1) })
        let facets = try ListFacets(request.query, entity: entity, model: model)
        let rows: [StoreRow]
        var total: Int?
        var counts: [[ValueCount]] = []
        // Taken before the rows are read: a rendering is kept only if no save changed the entity
        // since (as GET by id does).
        let generation = readCache.generation(of: entity)
        do {
            rows = try page(entity, query)
            if query.countExact {
                var every = query.request(entity)
                every.affectedStores = homeStores[entity]
                total = try reads.count(every)
            }
            if !facets.names.isEmpty {
                // Facets count over every object the filters match, not only the page, grouped in
                // the store (`GROUP BY` in SQLite, and in PostgreSQL when its SQL states the filters).
                var every = query.request(entity)
                every.affectedStores = homeStores[entity]
                for name in facets.names { counts.append(try reads.valueCounts(every, key: name)) }
            }
        } catch {
            // A predicate the store cannot apply is the client's mistake, as through a context.
            throw error.code == .invalidRequest ? Problem.badRequest(error.message) : Problem(error)
        }
        // {"facets":…,"items":[…],"next":…,"total":…}: keys in the order every other document sorts
        // them (`facets` only when asked for).
        var body = Array("{".utf8)
        if !facets.names.isEmpty {
            body += Array(#""facets":"#.utf8)
            facets.write(counts, to: &body)
            body.append(UInt8(ascii: ","))
        }
        body += Array(#""items":["#.utf8)
        for (index, row) in rows.prefix(query.limit).enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            // The rendering GET by id keeps, when it is of this very version; else rendered here
            // and kept for the next read.
            let key = row.id.primaryKey ?? 0
            let cached = readCache.lookup(entity, key).entry
            if let cached, cached.version == row.version {
                body += cached.body
            } else {
                let rendered = try render(row)
                if cached == nil {
                    readCache.offer(entity, key, .init(version: row.version, body: rendered), generation: generation)
                }
                body += rendered
            }
        }
        body += Array(#"],"next":"#.utf8)
        if rows.count > query.limit {
            // The next page starts after this page's last row (a keyset, when its sort values fit
            // in a cursor), else at the position after it.
            let anchor = ListQuery.anchor(
                of: rows[query.limit - 1], order: query.order, entity: entity, model: model)
            let (position, overflow) = query.position.addingReportingOverflow(query.limit)
            JSONValue.writeString(
                nextLink(request, offset: overflow ? Int.max : position, anchor: anchor), to: &body)
        } else {
            body += Array("null".utf8)
        }
        body += Array(#","total":"#.utf8)
        if let total { JSONValue.writeInteger(Int64(total), to: &body) } else { body += Array("null".utf8) }
        body.append(UInt8(ascii: "}"))
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
    }

    /// A page's rows and one more (which tells whether there is a next page): from the keyset's
    /// segments in turn, `offset` skipping into them, or by position.
    private func page(_ entity: String, _ query: ListQuery) throws(StoreError) -> [StoreRow] {
        let segments: [FetchPredicate?] = query.keyset.isEmpty ? [nil] : query.keyset
        var rows: [StoreRow] = []
        var skip = query.offset
        for segment in segments {
            var fetch = query.request(entity, segment: segment)
            fetch.affectedStores = homeStores[entity]
            fetch.fetchLimit = query.limit + 1 - rows.count
            fetch.fetchOffset = skip
            let found = try reads.fetch(fetch)
            rows += found
            if rows.count > query.limit || segment == nil { break }
            if skip > 0 {
                // Nothing found: the segment held no more than `skip` rows, which the next skips less.
                skip = found.isEmpty ? max(0, skip - (try reads.count(fetch))) : 0
            }
        }
        return rows
    }

    /// The link to the page starting at `offset`, keeping the other parameters.
    func nextLink(_ request: HTTPRequest, offset: Int, anchor: [JSONValue]? = nil) -> String {
        var parts = request.query.filter { $0.name != "after" && $0.name != "offset" }.map {
            "\(Self.escape($0.name))=\(Self.escape($0.value))"
        }
        parts.append("after=\(ListQuery.cursor(offset, anchor: anchor))")
        return request.path + "?" + parts.joined(separator: "&")
    }

    /// `text` percent-encoded for a query, ASCII letters, digits and `-._~(),` kept (by hand: a
    /// `CharacterSet` built per call was a tenth of a list page's time).
    static func escape(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ","):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// One object, rendered from its stored row: a read sees committed state only, so it needs no
    /// context (the same answer a fresh context gives, without building one).
    func read(_ entity: String, _ id: String, _ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        if !request.query.isEmpty { throw Problem.badRequest("a single object takes no query parameters") }
        let key = Int64(id) ?? 0
        let (cached, generation) = readCache.lookup(entity, key)
        let entry: ReadCache.Entry
        if let cached {
            entry = cached
        } else {
            let row = try storedRow(entity, id, toMany: true)
            entry = ReadCache.Entry(version: row.version, body: try render(row))
            readCache.offer(entity, key, entry, generation: generation)
        }
        return try answer(entry, request)
    }

    /// ``read(_:_:_:)`` without blocking the calling thread: the same answer, given to
    /// `completion` when the store's read comes back (pipelined for a PostgreSQL store), or at
    /// once from the read cache; `blocking` runs what must block on a thread that may.
    func read(
        _ entity: String, _ id: String, _ request: HTTPRequest,
        blocking: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        let key = Int64(id) ?? 0
        let (cached, generation) = readCache.lookup(entity, key)
        guard request.query.isEmpty, cached == nil, key > 0, let prototype = prototypeByEntity[entity] else {
            // A refusal or a cached object: answered as the blocking read answers it, at once.
            do throws(Problem) {
                completion(try read(entity, id, request))
            } catch {
                completion(error.response)
            }
            return
        }
        reads.rowWithToMany(for: prototype.withPrimaryKey(key), blocking: blocking) { [self] result in
            do throws(Problem) {
                let row: StoreRow?
                switch result {
                case .success(let found): row = found
                case .failure(let error): throw Problem(error)
                }
                guard let row, model.entity(row.id.entityName, isKindOf: entity) else {
                    throw Problem.notFound("\(entity) \(id) does not exist")
                }
                let entry = ReadCache.Entry(version: row.version, body: try render(row))
                readCache.offer(entity, key, entry, generation: generation)
                completion(try answer(entry, request))
            } catch {
                completion(error.response)
            }
        }
    }

    /// The answer of a read of `entry`: `304` when the request's `If-None-Match` holds its tag.
    private func answer(_ entry: ReadCache.Entry, _ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        let version = entry.version
        let etag = entry.etag
        if let header = request.header("if-none-match") {
            let tags = try Self.entityTags(header)
            if tags == nil || tags!.contains(version) {
                return HTTPResponse(status: 304, headers: [("ETag", etag)])
            }
        }
        return HTTPResponse(
            status: 200, headers: [("Content-Type", "application/json"), ("ETag", etag)], body: entry.body)
    }

    /// The JSON bytes of a row, its to-many relationships read from the store unless the row holds
    /// them.
    func render(_ row: StoreRow) throws(Problem) -> [UInt8] {
        var lists = row.toMany
        do {
            for name in toManyNames[row.id.entityName] ?? [] where lists[name] == nil {
                lists[name] = try reads.relatedIDs(of: row.id, relationship: name)
            }
        } catch {
            throw Problem(error)
        }
        return codec.render(row: row, toMany: lists)
    }

    func property(_ entity: String, _ id: String, _ name: String, _ request: HTTPRequest) throws(Problem)
        -> HTTPResponse
    {
        let context = readContext()
        let objectID = try objectID(entity, id, in: context)
        if let relationship = model.relationship(name, of: objectID.entityName) {
            guard access[relationship.destination] != .hidden else {
                throw Problem.notFound("no resource at \(request.path)")
            }
            do {
                let object = try context.object(with: objectID)
                if !relationship.isToMany {
                    if !request.query.isEmpty {
                        throw Problem.badRequest("a to-one relationship takes no query parameters")
                    }
                    // 204 for an empty to-one, so that "no author" is not "no book" (404): an object
                    // just created is always there, whatever it relates to.
                    guard let target = try object.object(forKey: name) else { return HTTPResponse(status: 204) }
                    return json(200, try codec.render(target), headers: [("ETag", ObjectCodec.etag(target.version))])
                }
                return try page(try object.objects(forKey: name), request)
            } catch {
                throw Problem.from(error)
            }
        }
        if let fetched = model.fetchedProperties(of: objectID.entityName).first(where: { $0.name == name }) {
            guard access[fetched.entity] != .hidden else { throw Problem.notFound("no resource at \(request.path)") }
            do {
                let object = try context.object(with: objectID)
                return try page(try context.fetch(fetchedProperty: name, of: object), request)
            } catch {
                throw Problem.from(error)
            }
        }
        throw Problem.notFound("\(entity) has no relationship or fetched property '\(name)'")
    }

    /// A list envelope over already-fetched objects, windowed by `limit` and `after`/`offset`.
    func page(_ objects: [ManagedObject], _ request: HTTPRequest) throws -> HTTPResponse {
        var limit = ListQuery.defaultLimit
        var offset = 0
        var countExact = false
        for (name, value) in request.query {
            switch name {
            case "limit":
                guard let number = Int(value), (1...limits.pageSize).contains(number) else {
                    throw Problem.badRequest("limit must be an integer from 1 to \(limits.pageSize), not '\(value)'")
                }
                limit = number
            case "offset":
                guard let number = Int(value), number >= 0 else {
                    throw Problem.badRequest("offset must be a non-negative integer")
                }
                offset = number
            case "after":
                guard let position = ListQuery.decodeCursor(value) else {
                    throw Problem.badRequest("after: '\(value)' is not a cursor this server issued")
                }
                offset = position
            case "count":
                guard value == "exact" else { throw Problem.badRequest("count takes only 'exact'") }
                countExact = true
            default:
                throw Problem.badRequest(
                    "unknown query parameter '\(name)' for a related list (use limit, after, offset, count)")
            }
        }
        let window = objects.dropFirst(offset).prefix(limit)
        let items = try window.map { try codec.render($0) }
        return json(
            200,
            .object([
                "items": .array(items), "total": countExact ? .integer(Int64(objects.count)) : .null,
                // Written so that no offset (up to Int.max) overflows.
                "next": offset < objects.count && objects.count - offset > limit
                    ? .string(nextLink(request, offset: offset + limit)) : .null,
            ]))
    }

    // MARK: - Writing

    /// Resolves a related id in a body: an integer id, or `{"$ref": n}` in a batch.
    func resolver(_ context: ObjectContext, refs: [ObjectID?]) -> (String, JSONValue) throws(Problem) -> ManagedObject {
        { (entity: String, value: JSONValue) throws(Problem) -> ManagedObject in
            var id: ObjectID
            switch value {
            case .integer(let pk): id = try self.objectID(entity, String(pk), in: context)
            case .object(let members) where members.count == 1:
                guard case .integer(let index)? = members["$ref"], refs.indices.contains(Int(index)),
                    let ref = refs[Int(index)]
                else {
                    throw Problem.badRequest("a {\"$ref\": n} must name an earlier operation that created an object")
                }
                id = ref
            default: throw Problem.badRequest("\(value.jsonText) is not a \(entity) id")
            }
            do {
                return try context.object(with: id)
            } catch {
                throw Problem.notFound("\(entity) \(value.jsonText) does not exist")
            }
        }
    }

    /// Creates one object from `POST /books`, or several from an array to `POST /books/_bulk`
    /// (`bulk`): one operation per shape, so that the OpenAPI document needs no `oneOf` of an object
    /// and an array of it, which generated clients handle badly.
    func create(
        _ entity: String, _ request: HTTPRequest, _ child: ObjectContext, refs: [ObjectID?] = [], bulk: Bool = false
    ) throws(Problem) -> WriteOutcome {
        if !request.query.isEmpty { throw Problem.badRequest("creating takes no query parameters") }
        let document = try body(request)
        let many = bulk
        let items: [JSONValue]
        let path = "/" + model.resourcePath(of: entity)
        switch (document, bulk) {
        case (.object, false): items = [document]
        case (.array(let array), true):
            guard !array.isEmpty else { throw Problem.badRequest("the array is empty: send at least one object") }
            items = array
        case (.array, false):
            throw Problem.badRequest("\(path) creates one object; POST an array of objects to \(path)/_bulk")
        case (_, true):
            throw Problem.badRequest("the body must be a JSON array of objects, not \(document.typeName)")
        default:
            throw Problem.badRequest("the body must be a JSON object, not \(document.typeName)")
        }
        var created: [ObjectID] = []
        for (index, item) in items.enumerated() {
            guard let members = item.objectValue else {
                throw Problem.badRequest("item \(index) is \(item.typeName), not an object")
            }
            let object: ManagedObject
            do {
                object = try child.insert(entity)
            } catch {
                throw Problem(error)
            }
            do throws(Problem) {
                try codec.apply(members, to: object, replace: false, pathID: nil, resolve: resolver(child, refs: refs))
            } catch {
                var problem = error
                if many { problem.extra["index"] = .integer(Int64(index)) }
                throw problem
            }
            created.append(object.objectID)
        }
        return many ? .objects(created, status: 201) : .object(created[0], status: 201, location: true)
    }

    func change(
        _ entity: String, _ id: String, _ request: HTTPRequest, _ child: ObjectContext, refs: [ObjectID?] = [],
        expectations: inout [ObjectID: Int64]
    ) throws(Problem) -> WriteOutcome {
        if !request.query.isEmpty { throw Problem.badRequest("this request takes no query parameters") }
        let objectID = try objectID(entity, id, in: child)
        let object: ManagedObject
        do {
            object = try child.object(with: objectID)
        } catch {
            throw Problem(error)
        }
        if let header = request.header("if-match") {
            if let tags = try Self.entityTags(header), !tags.contains(object.version) {
                throw Problem(
                    412, "Precondition Failed",
                    "\(entity) \(id) is at version \(object.version), not \(tags.sorted().map(String.init).joined(separator: " or ")); read it again and retry",
                    extra: ["currentVersion": .integer(object.version)])
            }
            // Checked again when the commit happens, in case another write got there first.
            expectations[objectID] = object.version
        }
        switch request.method {
        case "DELETE":
            do {
                try child.delete(object)
            } catch {
                throw Problem(error)
            }
            return .empty(status: 204)
        case "PATCH", "PUT":
            let document = try body(request)
            guard let members = document.objectValue else {
                throw Problem.badRequest("the body must be a JSON object, not \(document.typeName)")
            }
            try codec.apply(
                members, to: object, replace: request.method == "PUT", pathID: objectID.primaryKey,
                resolve: resolver(child, refs: refs))
            return .object(objectID, status: 200, location: false)
        default:
            throw Problem.methodNotAllowed(request.method, allowed: allowed(Route.item(entity: entity, id: id)))
        }
    }

    /// Renders a write's outcome after its commit: each object as that commit saved it (its
    /// permanent ID and new version), so the `ETag` and body describe what this request wrote even
    /// when a later write has already changed the object.
    /// - Parameters:
    ///   - created: the committed context, to render objects it created from (a new object's row
    ///     is what the context holds, at version 1: no need to read it back).
    ///   - saved: states of changed objects as the commit saved them; other objects are read from
    ///     the stores.
    func render(
        _ outcome: WriteOutcome, _ request: HTTPRequest, created child: ObjectContext? = nil,
        saved: [ObjectID: StoreRow] = [:]
    ) throws(Problem) -> HTTPResponse {
        let minimal = (request.header("prefer") ?? "").lowercased().contains("return=minimal")
        func savedRow(_ id: ObjectID) throws(Problem) -> StoreRow {
            if let row = saved[id] { return row }
            if let child, id.isTemporary, var row = try? child.snapshot(of: id), !row.id.isTemporary {
                row.version = 1
                return row
            }
            let permanent = root.permanentID(for: id)
            let row: StoreRow?
            do {
                row = try reads.row(for: permanent)
            } catch {
                throw Problem(error)
            }
            // Deleted by a concurrent request between the commit and now.
            guard let row else { throw Problem.notFound("\(permanent.entityName) was deleted meanwhile") }
            return row
        }
        switch outcome {
        case .empty(let status): return HTTPResponse(status: status)
        case .object(let id, let status, let location):
            let row = try savedRow(id)
            var headers: [(name: String, value: String)] = [("ETag", ObjectCodec.etag(row.version))]
            if location, let pk = row.id.primaryKey {
                headers.append(("Location", "/\(pathByEntity[row.id.entityName] ?? row.id.entityName)/\(pk)"))
            }
            if minimal {
                return HTTPResponse(status: status, headers: headers + [("Preference-Applied", "return=minimal")])
            }
            return HTTPResponse(
                status: status, headers: [("Content-Type", "application/json")] + headers, body: try render(row))
        case .objects(let ids, let status):
            if minimal { return HTTPResponse(status: status, headers: [("Preference-Applied", "return=minimal")]) }
            var body: [UInt8] = [UInt8(ascii: "[")]
            for (index, id) in ids.enumerated() {
                if index > 0 { body.append(UInt8(ascii: ",")) }
                body += try render(try savedRow(id))
            }
            body.append(UInt8(ascii: "]"))
            return HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: body)
        }
    }

    // MARK: - System

    /// The model's diagram, each configuration labelled with the type of the store holding it
    /// (not its location, which only an admin token sees in `/`); hidden entities left out.
    func diagram(_ format: String) -> HTTPResponse {
        var stores: [String: String] = [:]
        for store in reads.storeSummaries {
            let name =
                switch store.type {
                case .sqlite: "SQLite"
                case .postgresql: "PostgreSQL"
                case .inMemory: "in memory"
                }
            stores[store.configuration ?? ObjectModel.defaultConfiguration] = name + " store"
        }
        let hidden = Set(model.entities.map(\.name).filter { access[$0] == .hidden })
        let diagram = ModelDiagram(model: model, stores: stores, hidden: hidden)
        let (type, text) =
            switch format {
            case "mmd": ("text/vnd.mermaid; charset=utf-8", diagram.mermaid)
            case "dot": ("text/vnd.graphviz; charset=utf-8", diagram.dot)
            default: ("image/svg+xml", diagram.svg)
            }
        return HTTPResponse(status: 200, headers: [("Content-Type", type)], body: Array(text.utf8))
    }

    /// The service index; without `detailed`, stores are listed without their location and
    /// server version (what only an `admin` token sees when tokens are in force).
    func indexDocument(detailed: Bool = true) -> JSONValue {
        let stores = reads.storeSummaries
        var entities: [JSONValue] = []
        for entity in model.entities where access[entity.name] != .hidden {
            let store = stores.first { $0.identifier == prototypeByEntity[entity.name]?.storeIdentifier }
            entities.append(
                .object([
                    "name": .string(entity.name), "path": .string("/\(model.resourcePath(of: entity.name))"),
                    "abstract": .bool(entity.isAbstract), "parent": entity.parent.map { .string($0) } ?? .null,
                    "configuration": .string(store?.configuration ?? ObjectModel.defaultConfiguration),
                    "store": store.map { .string($0.identifier) } ?? .null,
                ]))
        }
        let storeList: [JSONValue] = stores.map { store in
            .object([
                "id": .string(store.identifier), "type": .string(store.type.rawValue),
                "configuration": .string(store.configuration ?? ObjectModel.defaultConfiguration),
                "url": detailed ? store.location.map { .string($0) } ?? .null : .null,
                "serverVersion": detailed ? store.serverVersion.map { .string($0) } ?? .null : .null,
                "entities": .array(store.entityNames.filter { access[$0] != .hidden }.map { .string($0) }),
            ])
        }
        return .object([
            "model": .object([
                "name": .string(model.name), "version": model.version.map { .string($0) } ?? .null,
                "hash": .string(model.versionHash),
            ]),
            "entities": .array(entities), "stores": .array(storeList),
        ])
    }
}
