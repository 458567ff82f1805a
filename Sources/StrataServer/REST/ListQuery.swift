import Foundation
import Strata

/// The query parameters of a list request: filters, `where`, `order`, `limit`, `after`/`offset`
/// and `count`.
struct ListQuery {
    var predicates: [FetchPredicate] = []
    var order: [SortKey] = []
    var limit = 50
    var offset = 0
    var countExact = false

    static let defaultLimit = 50
    static let reserved: Set<String> = ["where", "order", "limit", "after", "offset", "count"]

    /// Parses `query` for `entity`.
    /// - Throws: a 400 ``Problem`` naming the parameter.
    init(
        _ query: [(name: String, value: String)], entity: String, model: ObjectModel,
        limits: RequestLimits = RequestLimits(), objectID: (String, Int64) -> ObjectID?
    )
        throws(Problem)
    {
        var seen: Set<String> = []
        var cursorPosition = 0
        var skip = 0
        // A named query (a fetch request template) takes its variables from the parameters of
        // the same names.
        // `query=<name>`: a value without a dot names a query; `query=eq.x` filters an attribute
        // named `query`.
        var variables: Set<String> = []
        let named = query.first { $0.name == "query" && !$0.value.contains(".") }?.value
        if let named {
            let (predicate, used) = try Self.template(
                named, entity: entity, model: model, query: query, objectID: objectID)
            if let predicate { predicates.append(predicate) }
            variables = used
        }
        for (name, value) in query {
            if (named != nil && name == "query") || variables.contains(name) {
                guard seen.insert(name).inserted else { throw Problem.badRequest("'\(name)' is given more than once") }
                continue
            }
            if Self.reserved.contains(name) {
                guard seen.insert(name).inserted else { throw Problem.badRequest("'\(name)' is given more than once") }
            }
            switch name {
            case "where":
                guard value.count <= limits.whereLength else {
                    throw Problem.badRequest(
                        "where is \(value.count) characters long; at most \(limits.whereLength) are accepted",
                        errors: [.init(field: "where", code: "tooLong", message: "longer than \(limits.whereLength)")])
                }
                do {
                    predicates.append(try FetchPredicate(format: value))
                } catch {
                    throw Problem.badRequest(
                        "where: \(error)", errors: [.init(field: "where", code: "invalid", message: "\(error)")])
                }
            case "order":
                let parts = value.split(separator: ",", omittingEmptySubsequences: false)
                guard parts.count <= limits.orderKeys else {
                    throw Problem.badRequest(
                        "order has \(parts.count) sort keys; at most \(limits.orderKeys) are accepted",
                        errors: [.init(field: "order", code: "tooMany", message: "more than \(limits.orderKeys) keys")]
                    )
                }
                for part in parts {
                    var pieces = part.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                    var ascending = true
                    if pieces.count == 2, pieces[1] == "desc" || pieces[1] == "asc" {
                        ascending = pieces[1] == "asc"
                        pieces.removeLast()
                    }
                    if pieces.count == 1, pieces[0] == ObjectCodec.idKey {
                        order.append(SortKey(SortKey.objectKey, ascending: ascending))
                        continue
                    }
                    guard pieces.count == 1, model.attribute(pieces[0], of: entity) != nil else {
                        throw Problem.badRequest(
                            "order: '\(part)' is not an attribute of \(entity) or _id (optionally followed by .asc or .desc)",
                            errors: [.init(field: "order", code: "invalid", message: "unknown sort key '\(part)'")])
                    }
                    order.append(SortKey(pieces[0], ascending: ascending))
                }
            case "limit":
                guard let number = Int(value), (1...limits.pageSize).contains(number) else {
                    throw Problem.badRequest(
                        "limit must be an integer from 1 to \(limits.pageSize), not '\(value)'",
                        errors: [.init(field: "limit", code: "invalid", message: "bad limit")])
                }
                limit = number
            case "offset":
                guard let number = Int(value), number >= 0 else {
                    throw Problem.badRequest(
                        "offset must be a non-negative integer, not '\(value)'",
                        errors: [.init(field: "offset", code: "invalid", message: "bad offset")])
                }
                skip = number
            case "after":
                guard let position = Self.decodeCursor(value) else {
                    throw Problem.badRequest(
                        "after: '\(value)' is not a cursor this server issued",
                        errors: [.init(field: "after", code: "invalid", message: "bad cursor")])
                }
                cursorPosition = position
            case "count":
                guard value == "exact" else { throw Problem.badRequest("count takes only 'exact'") }
                countExact = true
            default:
                predicates.append(try Self.filter(name, value, entity: entity, model: model, objectID: objectID))
            }
        }
        guard predicates.count <= limits.filters else {
            throw Problem.badRequest(
                "the request has \(predicates.count) filters; at most \(limits.filters) are accepted (combine them in one where=)"
            )
        }
        // With both, `offset` skips that many more items past the cursor's position (a huge sum is
        // a position past every item: an empty page).
        let (sum, overflow) = cursorPosition.addingReportingOverflow(skip)
        offset = overflow ? Int.max : sum
    }

    /// The fetch request for these parameters.
    func request(_ entity: String) -> FetchRequest {
        FetchRequest(
            entityName: entity,
            predicate: predicates.isEmpty ? nil : (predicates.count == 1 ? predicates[0] : .and(predicates)),
            sortDescriptors: order, fetchLimit: limit, fetchOffset: offset)
    }

    /// A cursor for the page starting at `offset`: `o` and the offset in decimal, base64url without
    /// padding.
    static func cursor(_ offset: Int) -> String { base64URL(Data("o\(offset)".utf8)) }

    /// The offset of a cursor, for exactly the strings ``cursorPattern`` matches: the canonical
    /// encoding (as ``cursor(_:)`` writes it) of `o` and 1 to 16 decimal digits.
    static func decodeCursor(_ text: String) -> Int? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), data.first == UInt8(ascii: "o"),
            (2...17).contains(data.count), data.dropFirst().allSatisfy({ (0x30...0x39).contains($0) }),
            let offset = Int(String(decoding: data.dropFirst(), as: UTF8.self)),
            base64URL(data) == text
        else { return nil }
        return offset
    }

    /// `data` in base64url without padding.
    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The regular expression (ECMA-262, as OpenAPI's `pattern`) of every cursor ``decodeCursor(_:)``
    /// takes, so that a client generator or a schema-driven tester sends only cursors this server
    /// accepts: the base64url of `o` (`bz`) and the digits, three bytes to four characters.
    static let cursorPattern: String = {
        let triple = "(?:[MN][DTjz]|O[DT])[AEIMQUYcgk][w-z0-5]"  // three digits
        let pair = "(?:[MN][DTjz]|O[DT])[AEIMQUYcgk]"  // two digits, the last group
        let single = "(?:[MN][AQgw]|O[AQ])"  // one digit, the last group
        // `o` and one digit, or `o`, two digits, then up to 4 triples and a last pair or digit.
        return "^bz[AEIMQUYcgk](?:[w-z0-5](?:\(triple)){0,4}(?:\(pair)|\(single))?)?$"
    }()

    /// A filter `attr=[not.]op.value`.
    static func filter(
        _ name: String, _ raw: String, entity: String, model: ObjectModel, objectID: (String, Int64) -> ObjectID?
    )
        throws(Problem) -> FetchPredicate
    {
        func bad(_ message: String) -> Problem {
            Problem.badRequest("\(name): \(message)", errors: [.init(field: name, code: "invalid", message: message)])
        }
        if name == ObjectCodec.idKey { return try idFilter(raw, entity: entity, objectID: objectID) }
        let attribute = model.attribute(name, of: entity)
        let relationship = model.relationship(name, of: entity).flatMap { $0.isToMany ? nil : $0 }
        guard attribute != nil || relationship != nil else {
            throw Problem.badRequest(
                "unknown query parameter '\(name)': not a filterable attribute or to-one relationship of \(entity)",
                errors: [.init(field: name, code: "unknown", message: "unknown filter")])
        }
        var text = Substring(raw)
        var negate = false
        if text.hasPrefix("not.") {
            negate = true
            text = text.dropFirst(4)
        }
        guard let dot = text.firstIndex(of: ".") else { throw bad("expected op.value, e.g. eq.42") }
        let op = String(text[..<dot])
        let operand = String(text[text.index(after: dot)...])
        func value(_ literal: String) throws(Problem) -> PredicateTerm {
            if let relationship {
                if literal == "null" { return .object(nil) }
                guard let pk = Int64(literal), let id = objectID(relationship.destination, pk) else {
                    throw bad("'\(literal)' is not a \(relationship.destination) id")
                }
                return .object(id)
            }
            guard let converted = convert(literal, attribute!.type) else {
                throw bad("'\(literal)' is not \(ObjectCodec.describe(attribute!.type))")
            }
            return .constant(converted)
        }
        let path = PredicateTerm.keyPath(name)
        let predicate: FetchPredicate
        switch op {
        case "eq": predicate = .comparison(Comparison(path, .equal, try value(operand)))
        case "neq": predicate = .comparison(Comparison(path, .notEqual, try value(operand)))
        case "gt": predicate = .comparison(Comparison(path, .greater, try value(operand)))
        case "gte": predicate = .comparison(Comparison(path, .greaterOrEqual, try value(operand)))
        case "lt": predicate = .comparison(Comparison(path, .less, try value(operand)))
        case "lte": predicate = .comparison(Comparison(path, .lessOrEqual, try value(operand)))
        case "like", "ilike":
            guard attribute?.type == .string || attribute?.type == .uri else {
                throw bad("\(op) applies to text attributes")
            }
            predicate = .comparison(
                Comparison(path, .like, .constant(.string(operand)), options: op == "ilike" ? .caseInsensitive : []))
        case "in":
            guard operand.hasPrefix("("), operand.hasSuffix(")") else { throw bad("in takes a list: in.(a,b)") }
            let inner = operand.dropFirst().dropLast()
            var items: [PredicateTerm] = []
            if !inner.isEmpty {
                for item in inner.split(separator: ",", omittingEmptySubsequences: false) {
                    items.append(try value(String(item)))
                }
            }
            predicate = .comparison(Comparison(path, .in, .list(items)))
        case "is":
            switch operand {
            case "null":
                predicate = .comparison(Comparison(path, .equal, relationship != nil ? .object(nil) : .constant(.null)))
            case "true", "false":
                guard attribute?.type == .boolean else { throw bad("is.\(operand) applies to boolean attributes") }
                predicate = .comparison(Comparison(path, .equal, .constant(.boolean(operand == "true"))))
            default: throw bad("is takes null, true or false")
            }
        default:
            throw bad(
                "unknown operator '\(op)' (use eq, neq, gt, gte, lt, lte, like, ilike, in, is, with an optional not. before)"
            )
        }
        return negate ? .not(predicate) : predicate
    }

    /// Converts query text to a value of `type`.
    static func convert(_ text: String, _ type: AttributeType) -> AttributeValue? {
        if text == "null" { return .null }
        switch type {
        case .string: return .string(text)
        case .integer16, .integer32, .integer64:
            guard let value = Int64(text), type.integerRange!.contains(value) else { return nil }
            return .integer(value)
        case .double, .float: return Double(text).flatMap { $0.isFinite ? .double($0) : nil }
        case .decimal: return AttributeValue.parseDecimal(text).map { .decimal($0) }
        case .boolean: return text == "true" ? .boolean(true) : (text == "false" ? .boolean(false) : nil)
        case .date: return AttributeValue.parseDate(text).map { .date($0) }
        case .uuid: return UUID(uuidString: text).map { .uuid($0) }
        case .uri: return AttributeValue.isURI(text) ? .uri(text) : nil
        case .binary: return Data(base64Encoded: text).map { .binary($0) }
        case .json: return (try? JSONValue.parse(text)).map { .json($0) }
        }
    }

    /// A filter on the objects' own ids: `_id=[not.]eq.5`, `_id=[not.]neq.5`, `_id=[not.]in.(1,2)`.
    static func idFilter(_ raw: String, entity: String, objectID: (String, Int64) -> ObjectID?) throws(Problem)
        -> FetchPredicate
    {
        let name = ObjectCodec.idKey
        func bad(_ message: String) -> Problem {
            Problem.badRequest("\(name): \(message)", errors: [.init(field: name, code: "invalid", message: message)])
        }
        var text = Substring(raw)
        let negate = text.hasPrefix("not.")
        if negate { text = text.dropFirst(4) }
        func id(_ literal: Substring) throws(Problem) -> PredicateTerm {
            guard let pk = Int64(literal), let id = objectID(entity, pk) else {
                throw bad("'\(literal)' is not an id (ids are integers)")
            }
            return .object(id)
        }
        let predicate: FetchPredicate
        if text.hasPrefix("eq.") {
            predicate = .comparison(Comparison(.keyPath("SELF"), .equal, try id(text.dropFirst(3))))
        } else if text.hasPrefix("neq.") {
            predicate = .comparison(Comparison(.keyPath("SELF"), .notEqual, try id(text.dropFirst(4))))
        } else if text.hasPrefix("in.("), text.hasSuffix(")") {
            var ids: [PredicateTerm] = []
            for part in text.dropFirst(4).dropLast().split(separator: ",") { ids.append(try id(part)) }
            predicate = .comparison(Comparison(.keyPath("SELF"), .in, .list(ids)))
        } else {
            throw bad("'\(raw)' must be eq.ID, neq.ID or in.(ID,…), optionally after not.")
        }
        return negate ? .not(predicate) : predicate
    }

    /// The predicate of the fetch request template `name` of `entity`, its variables taken from
    /// the query parameters of the same names (converted to the type of what each is compared
    /// with), and the names it used.
    static func template(
        _ name: String, entity: String, model: ObjectModel, query: [(name: String, value: String)],
        objectID: (String, Int64) -> ObjectID?
    ) throws(Problem) -> (FetchPredicate?, Set<String>) {
        let names = model.fetchRequestTemplates.filter { model.entity(entity, isKindOf: $0.entity) }.map(\.name)
        guard let template = model.fetchRequestTemplate(named: name), names.contains(name) else {
            throw Problem.badRequest(
                "query: '\(name)' is not a named query of \(entity)"
                    + (names.isEmpty ? " (it has none)" : " (it has: \(names.joined(separator: ", ")))"),
                errors: [.init(field: "query", code: "invalid", message: "unknown query '\(name)'")])
        }
        let text = template.predicate.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return (nil, []) }
        let parsed: FetchPredicate
        do {
            parsed = try FetchPredicate(format: text)
        } catch {
            throw Problem.badRequest(
                "query: the named query '\(name)' cannot be used: its predicate does not parse (\(error))",
                errors: [.init(field: "query", code: "invalid", message: "unusable query '\(name)'")])
        }
        var terms: [String: PredicateTerm] = [:]
        let compared = comparedKeyPaths(parsed)
        for variable in parsed.variableNames {
            guard let raw = query.first(where: { $0.name == variable })?.value else {
                throw Problem.badRequest(
                    "query '\(name)' needs the parameter '\(variable)' ($\(variable) in \(template.predicate))",
                    errors: [.init(field: variable, code: "required", message: "missing variable")])
            }
            terms[variable] = try variableTerm(
                raw, variable, keyPath: compared[variable], entity: entity, model: model, objectID: objectID)
        }
        do {
            return (try parsed.substituting(terms), Set(parsed.variableNames))
        } catch {
            throw Problem.badRequest("query '\(name)': \(error)")
        }
    }

    /// For each variable, the key path it is compared with.
    private static func comparedKeyPaths(_ predicate: FetchPredicate) -> [String: String] {
        switch predicate {
        case .always, .never: return [:]
        case .and(let items), .or(let items):
            return items.reduce(into: [:]) { $0.merge(comparedKeyPaths($1)) { first, _ in first } }
        case .not(let item): return comparedKeyPaths(item)
        case .comparison(let comparison):
            var result: [String: String] = [:]
            func variables(_ term: PredicateTerm) -> [String] {
                switch term {
                case .variable(let name): [name]
                case .list(let items): items.flatMap(variables)
                default: []
                }
            }
            if case .keyPath(let path) = comparison.lhs {
                for name in variables(comparison.rhs) { result[name] = path }
            }
            if case .keyPath(let path) = comparison.rhs {
                for name in variables(comparison.lhs) { result[name] = path }
            }
            return result
        }
    }

    /// A variable's value from query text: typed by the attribute (or to-one relationship) at the
    /// end of `keyPath`, a string when there is none.
    private static func variableTerm(
        _ raw: String, _ variable: String, keyPath: String?, entity: String, model: ObjectModel,
        objectID: (String, Int64) -> ObjectID?
    ) throws(Problem) -> PredicateTerm {
        func bad(_ message: String) -> Problem {
            Problem.badRequest(
                "\(variable): \(message)", errors: [.init(field: variable, code: "invalid", message: message)])
        }
        var current = entity
        let parts = (keyPath ?? "").split(separator: ".").map(String.init).filter { $0 != "SELF" }
        for part in parts.dropLast() {
            guard let relationship = model.relationship(part, of: current) else { break }
            current = relationship.destination
        }
        if let last = parts.last, let relationship = model.relationship(last, of: current), !relationship.isToMany {
            if raw == "null" { return .object(nil) }
            guard let pk = Int64(raw), let id = objectID(relationship.destination, pk) else {
                throw bad("'\(raw)' is not a \(relationship.destination) id")
            }
            return .object(id)
        }
        if let last = parts.last, let attribute = model.attribute(last, of: current) {
            guard let value = convert(raw, attribute.type) else {
                throw bad("'\(raw)' is not \(ObjectCodec.describe(attribute.type))")
            }
            return .constant(value)
        }
        return .constant(.string(raw))
    }
}
