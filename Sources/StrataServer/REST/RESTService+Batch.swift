import Strata
import StrataHTTP

extension RESTService {

    /// `POST /_batch`: several writes (and reads) in one child context, saved all or nothing.
    /// A later operation may refer to an object created earlier as `{"$ref": index}`.
    /// - Parameter claim: the `Idempotency-Key` the request holds: the commit keeps its receipt.
    func batch(_ request: HTTPRequest, claim: IdempotencyClaim? = nil) throws(Problem) -> HTTPResponse {
        let document = try body(request)
        guard let members = document.objectValue, let operations = members["operations"]?.arrayValue else {
            throw Problem.badRequest(
                "the body must be {\"operations\": [{\"method\", \"path\", \"headers\", \"body\"}, …]}")
        }
        if let unknown = members.keys.first(where: { $0 != "operations" }) {
            throw Problem.badRequest("unknown member '\(unknown)' in the batch")
        }
        guard !operations.isEmpty, operations.count <= limits.batchOperations else {
            throw Problem.badRequest(
                "a batch holds 1 to \(limits.batchOperations) operations, not \(operations.count)")
        }
        let child = root.newChildContext()
        var expectations: [ObjectID: Int64] = [:]
        var refs: [ObjectID?] = []
        var outcomes: [(WriteOutcome?, HTTPRequest, HTTPResponse?)] = []
        for (index, operation) in operations.enumerated() {
            do throws(Problem) {
                let (outcome, sub, immediate) = try perform(
                    operation, child, refs: refs, expectations: &expectations)
                if case .object(let id, _, true)? = outcome { refs.append(id) } else { refs.append(nil) }
                outcomes.append((outcome, sub, immediate))
            } catch {
                var problem = error
                problem.extra["operation"] = .integer(Int64(index))
                problem.detail = "operation \(index): \(problem.detail)"
                throw problem
            }
        }
        if claim != nil {
            var objects: [ObjectID] = []
            let notes = outcomes.map { (outcome, sub, immediate) -> JSONValue in
                if let immediate { return .object(["immediate": Self.result(immediate)]) }
                return Self.note(outcome!, minimal: Self.wantsMinimal(sub), objects: &objects)
            }
            let note = JSONValue.object(["results": .array(notes)])
            if let receipt = Self.receipt(claim, note: note, objects: objects) { child.keepReceipt(receipt) }
        }
        let saved: [ObjectID: StoreRow]
        let keeping = outcomes.flatMap { $0.0?.kept(model) ?? [] }
        do {
            saved = try root.commit(child, expecting: expectations, keeping: keeping)
        } catch {
            // Saved by an earlier attempt of the same request: its answer.
            if let claim, let replayed = savedAlready(error, claim) { return replayed }
            var problem = Self.problem(error, keeping: Set(keeping))
            problem.detail = "the batch was not saved: \(problem.detail)"
            throw problem
        }
        var results: [JSONValue] = []
        for (outcome, sub, immediate) in outcomes {
            let response: HTTPResponse
            if let immediate {
                response = immediate
            } else {
                response = try render(outcome!, sub, created: child, saved: saved)
            }
            results.append(Self.result(response))
        }
        return json(200, .object(["results": .array(results)]), headers: savedTokenHeader(child))
    }

    /// One operation's response as a batch's `results` show it.
    static func result(_ response: HTTPResponse) -> JSONValue {
        var headers: [String: JSONValue] = [:]
        for (name, value) in response.headers where name != "Content-Type" { headers[name] = .string(value) }
        let body = response.body.isEmpty ? JSONValue.null : ((try? JSONValue.parse(response.body)) ?? .null)
        return .object(["status": .integer(Int64(response.status)), "headers": .object(headers), "body": body])
    }

    /// Runs one batch operation in `child`.
    private func perform(
        _ operation: JSONValue, _ child: ObjectContext, refs: [ObjectID?], expectations: inout [ObjectID: Int64]
    ) throws(Problem)
        -> (WriteOutcome?, HTTPRequest, HTTPResponse?)
    {
        guard let members = operation.objectValue, let method = members["method"]?.stringValue?.uppercased(),
            let path = members["path"]?.stringValue
        else {
            throw Problem.badRequest("each operation needs a \"method\" and a \"path\"")
        }
        if let unknown = members.keys.first(where: { !["method", "path", "headers", "body"].contains($0) }) {
            throw Problem.badRequest("unknown member '\(unknown)' in an operation")
        }
        var headers: [String: String] = [:]
        if let given = members["headers"] {
            guard let object = given.objectValue, object.values.allSatisfy({ $0.stringValue != nil }) else {
                throw Problem.badRequest("\"headers\" must be an object of strings")
            }
            for (name, value) in object { headers[name.lowercased()] = value.stringValue! }
        }
        // An operation's body is JSON, whatever its headers say: one a write needs and lacks is a
        // 400 that says so, not a 415 for a Content-Type the batch itself never sends.
        let body = members["body"].map { Array($0.jsonText.utf8) } ?? []
        headers["content-type"] = "application/json"
        // By UTF-8 bytes, as routes are parsed: a `?` followed by a combining mark is one Character
        // that is not "?", and the path still has a query string (only a batch change takes one).
        let split = Self.splitQuery(path)
        let query = split.query
        // As the document's pattern states: a path starts with `/` (routing reads `x/books` as `/books`).
        if path.utf8.first != UInt8(ascii: "/") { throw Problem.badRequest("a batch path starts with /") }
        let sub = HTTPRequest(method: method, path: split.path, query: query ?? [], headers: headers, body: body)
        let route = Route(path: split.path, resources: resources)
        if query != nil,
            !(["PATCH", "DELETE"].contains(method) && { if case .collection = route { true } else { false } }())
        {
            throw Problem.badRequest("batch paths take no query string, except PATCH and DELETE of a collection")
        }
        if method != "GET", isReadOnly(route) {
            throw Problem.methodNotAllowed(method, allowed: allowed(route))
        }
        // A batch PATCH of a collection whose entity has no attribute to set, as outside a batch.
        if method == "PATCH", case .collection = route, !allowed(route).contains(method) {
            throw Problem.methodNotAllowed(method, allowed: allowed(route))
        }
        if method == "POST", createsAbstract(route) { throw abstractCreate(method, route) }
        switch (method, route) {
        case ("POST", .collection(let entity)):
            let outcome = try create(entity, sub, child, refs: refs)
            if case .objects = outcome { throw Problem.badRequest("a batch creates one object per operation") }
            return (outcome, sub, nil)
        case ("PATCH", .item(let entity, let id)), ("PUT", .item(let entity, let id)),
            ("DELETE", .item(let entity, let id)):
            return (try change(entity, id, sub, child, refs: refs, expectations: &expectations), sub, nil)
        case ("PATCH", .collection(let entity)), ("DELETE", .collection(let entity)):
            return (nil, sub, try batchChange(entity, sub, in: child))
        case ("GET", .item(let entity, let id)):
            let objectID = try objectID(entity, id, in: child)
            return (.object(objectID, status: 200, location: false), sub, nil)
        case (_, .unknown): throw Problem.notFound("no resource at \(path)")
        case (_, .batch): throw Problem.badRequest("a batch cannot contain a batch")
        default:
            // The path's own methods (GET on `/`, say) are no answer here: what a batch can hold is
            // narrower than what the path allows.
            throw Problem(
                422, "Unprocessable Content",
                "\(method) \(path) cannot be a batch operation; a batch holds POST on a collection "
                    + "and GET, PATCH, PUT or DELETE on one object, or PATCH or DELETE on a collection with filters")
        }
    }
}
