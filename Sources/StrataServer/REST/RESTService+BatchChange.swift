import Foundation
import Strata
import StrataHTTP

/// The preferences (RFC 7240 `Prefer`) a batch change takes, PostgREST's names.
struct BatchChangePreferences {
    /// `return=representation`: the changed objects in `items`.
    var representation = false
    /// `return=minimal`: 204 and no body.
    var minimal = false
    /// `max-affected=N`: refuse (412) and change nothing when more objects match.
    var maxAffected: Int?
    /// What was honoured, for `Preference-Applied`.
    var applied: [String] = []

    /// Reads `header`. Unknown preferences are ignored, unless `handling=strict` is among them.
    /// - Throws: a 400 ``Problem`` for a `max-affected` that is not a non-negative integer, or
    ///   with `handling=strict` for a preference this request does not take.
    init(_ header: String?) throws(Problem) {
        guard let header else { return }
        var unknown: [String] = []
        var strict = false
        for item in header.split(separator: ",") {
            let text = item.trimmingCharacters(in: .whitespaces)
            let parts = text.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            switch (parts.first?.lowercased() ?? "", parts.count == 2 ? parts[1] : "") {
            case ("return", "representation"):
                representation = true
                applied.append("return=representation")
            case ("return", "minimal"):
                minimal = true
                applied.append("return=minimal")
            case ("max-affected", let value):
                guard let limit = Int(value), limit >= 0 else {
                    throw Problem.badRequest("Prefer: max-affected takes a non-negative integer, not '\(value)'")
                }
                maxAffected = limit
                applied.append("max-affected=\(limit)")
            case ("handling", "strict"): strict = true
            case ("handling", "lenient"), ("", _): continue
            default: unknown.append(text)
            }
        }
        if strict, !unknown.isEmpty {
            throw Problem.badRequest(
                "Prefer: handling=strict, and these preferences are not taken here: " + unknown.joined(separator: ", "))
        }
        if representation && minimal {
            throw Problem.badRequest("Prefer: return=representation and return=minimal cannot both be asked for")
        }
    }
}

extension RESTService {
    /// The query parameters a batch change refuses: those that shape a list, not choose objects.
    static let batchChangeRefused: Set<String> = ListQuery.reserved.subtracting(["where"]).union([
        ListFacets.parameter, "select",
    ])

    /// `PATCH /books?<filters>` (a JSON merge patch of attributes, set on every object the filters
    /// match) and `DELETE /books?<filters>`: one batch change in the stores (see
    /// ``BatchUpdateRequest`` and ``BatchDeleteRequest``), all or nothing, answered with the count
    /// of matched objects (`{"count": N}`), the objects too with `Prefer: return=representation`
    /// (an update's as it saved them, a delete's as they were, to-many lists empty), or 204 with
    /// `Prefer: return=minimal`.
    /// With `claim` (an `Idempotency-Key`), the change keeps a receipt naming the matched objects.
    func batchChange(_ entity: String, _ request: HTTPRequest, claim: IdempotencyClaim? = nil) throws(Problem)
        -> HTTPResponse
    {
        let predicate = try batchPredicate(entity, request)
        let preferences = try BatchChangePreferences(request.header("prefer"))
        let note = JSONValue.object([
            "batchChange": .object([
                "delete": .bool(request.method == "DELETE"), "representation": .bool(preferences.representation),
                "minimal": .bool(preferences.minimal),
                "applied": .string(preferences.applied.joined(separator: ", ")),
            ])
        ])
        let receipt = Self.receipt(claim, note: note, objects: [])
        let child = root.newChildContext()
        let start = changeFeed?.knownToken
        let type: BatchResultType = preferences.representation ? .objects : .count
        let values = request.method == "DELETE" ? [:] : try batchValues(entity, request)
        let result: BatchResult
        do {
            if request.method == "DELETE" {
                var fetch = FetchRequest(entityName: entity, predicate: predicate)
                fetch.affectedStores = homeStores[entity]
                var delete = BatchDeleteRequest(fetchRequest: fetch, resultType: type)
                delete.maxAffected = preferences.maxAffected
                delete.receipt = receipt
                result = try child.execute(delete)
            } else {
                var update = BatchUpdateRequest(
                    entityName: entity, predicate: predicate, propertiesToUpdate: values,
                    resultType: type)
                update.affectedStores = homeStores[entity]
                update.maxAffected = preferences.maxAffected
                update.receipt = receipt
                result = try child.execute(update)
            }
        } catch {
            if let claim, let replayed = savedAlready(error, claim) { return replayed }
            // A delete that would leave a stored object without a required relationship conflicts
            // with the stored state (409); an update's values that break a rule do not fit (422).
            throw request.method == "DELETE" ? Self.problem(error, keeping: []) : Problem(error)
        }
        var headers = savedTokenHeader(child, since: start)
        if !preferences.applied.isEmpty {
            headers.append(("Preference-Applied", preferences.applied.joined(separator: ", ")))
        }
        if preferences.minimal { return HTTPResponse(status: 204, headers: headers) }
        var body = Array(#"{"count":"#.utf8)
        JSONValue.writeInteger(Int64(result.count), to: &body)
        if preferences.representation {
            body += Array(#","items":["#.utf8)
            for (index, row) in result.objects.enumerated() {
                if index > 0 { body.append(UInt8(ascii: ",")) }
                body += request.method == "DELETE" ? codec.render(row: row, toMany: [:]) : try render(row)
            }
            body.append(UInt8(ascii: "]"))
        }
        body.append(UInt8(ascii: "}"))
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")] + headers, body: body)
    }

    /// A batch change inside `POST /_batch`: made in the batch's child context object by object, so
    /// that it sees the earlier operations' changes and commits with the others, all or nothing
    /// (validation and delete rules apply when the batch commits). Answers `{"count": N}`.
    func batchChange(_ entity: String, _ request: HTTPRequest, in child: ObjectContext) throws(Problem)
        -> HTTPResponse
    {
        let predicate = try batchPredicate(entity, request)
        let preferences = try BatchChangePreferences(request.header("prefer"))
        var fetch = FetchRequest(entityName: entity, predicate: predicate)
        fetch.affectedStores = homeStores[entity]
        let values = request.method == "DELETE" ? [:] : try batchValues(entity, request)
        do {
            let objects = try child.fetch(fetch)
            if let limit = preferences.maxAffected, objects.count > limit {
                throw ContextError(
                    .tooManyAffected,
                    "the request matches \(objects.count) \(entity) objects, more than the \(limit) allowed; nothing was changed"
                )
            }
            if request.method == "DELETE" {
                for object in objects { try child.delete(object) }
            } else {
                for object in objects { for (name, value) in values { try object.setValue(value, forKey: name) } }
            }
            return json(200, .object(["count": .integer(Int64(objects.count))]))
        } catch {
            throw Problem.from(error)
        }
    }

    /// The predicate of a batch change's filters (`attr=op.value`, `where=`, `query=`).
    /// - Throws: a 400 ``Problem`` for a parameter that is no filter, or for no filter at all.
    func batchPredicate(_ entity: String, _ request: HTTPRequest) throws(Problem) -> FetchPredicate {
        let path = "/" + model.resourcePath(of: entity)
        if let refused = request.query.first(where: { Self.batchChangeRefused.contains($0.name) }) {
            throw Problem.badRequest(
                "\(request.method) \(path) takes filters only (attr=op.value, where=, query=), not '\(refused.name)'",
                errors: [.init(field: refused.name, code: "invalid", message: "not a filter")])
        }
        let query = try ListQuery(
            request.query, entity: entity, model: model, limits: limits,
            objectID: { prototypeByEntity[$0]?.withPrimaryKey($1) })
        guard !query.predicates.isEmpty else {
            throw Problem.badRequest(
                "\(request.method) \(path) needs a filter that chooses the objects (attr=op.value, where=…); "
                    + "to \(request.method == "DELETE" ? "delete" : "change") every object on purpose, send where=TRUEPREDICATE",
                errors: [.init(field: "where", code: "required", message: "a filter is required")])
        }
        return query.predicates.count == 1 ? query.predicates[0] : .and(query.predicates)
    }

    /// The attribute values of a batch update's body: a JSON object of attributes (not derived,
    /// not relationships, not `_id` or `_version`), each converted to its type.
    /// - Throws: a 400/415 ``Problem`` for a body that is not a JSON object, 422 listing every
    ///   member it cannot set.
    func batchValues(_ entity: String, _ request: HTTPRequest) throws(Problem) -> [String: AttributeValue] {
        let document = try body(request)
        guard let members = document.objectValue else {
            throw Problem.badRequest("the body must be a JSON object of attributes, not \(document.typeName)")
        }
        guard !members.isEmpty else { throw Problem.badRequest("the body sets no attribute") }
        var values: [String: AttributeValue] = [:]
        var errors: [Problem.FieldError] = []
        for (name, value) in members.sorted(by: { $0.key < $1.key }) {
            guard let attribute = model.attribute(name, of: entity) else {
                let relationship = model.relationship(name, of: entity) != nil
                errors.append(
                    .init(
                        field: name, code: relationship ? "unsupported" : "unknown",
                        message: relationship
                            ? "\(name) is a relationship: a batch update sets attributes only (change it per object with PATCH /\(model.resourcePath(of: entity))/{id})"
                            : "\(entity) has no attribute '\(name)' (a batch update sets attributes only)"))
                continue
            }
            if model.isDerived(name, of: entity) {
                errors.append(.init(field: name, code: "readOnly", message: "\(name) is derived and cannot be set"))
                continue
            }
            if attribute.isComposite, !value.isNull {
                do throws(CompositeValueError) {
                    values[name] = .json(try attribute.checkedComposite(value))
                } catch {
                    errors.append(.init(field: error.path, code: "type", message: error.message))
                }
                continue
            }
            guard let converted = AttributeValue(json: value, as: attribute.type) else {
                errors.append(
                    .init(
                        field: name, code: "type",
                        message:
                            "\(name) must be \(ObjectCodec.describe(attribute.type)), not \(value.typeName) \(ObjectCodec.preview(value))"
                    ))
                continue
            }
            values[name] = converted
        }
        if !errors.isEmpty { throw Problem.validation("the request body does not fit \(entity)", errors) }
        return values
    }

    /// A batch operation's path and its query string's arguments (percent-decoded, `+` a space), or
    /// nil when it has none.
    static func splitQuery(_ target: String) -> (path: String, query: [(name: String, value: String)]?) {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (target, nil) }
        let path = String(decoding: target.utf8[..<mark], as: UTF8.self)
        let text = String(decoding: target.utf8[target.utf8.index(after: mark)...], as: UTF8.self)
        func decoded(_ part: Substring) -> String {
            let spaced = part.replacingOccurrences(of: "+", with: " ")
            return spaced.removingPercentEncoding ?? spaced
        }
        var query: [(name: String, value: String)] = []
        for item in text.split(separator: "&") {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            query.append((decoded(pair[0]), pair.count > 1 ? decoded(pair[1]) : ""))
        }
        return (path, query)
    }
}
