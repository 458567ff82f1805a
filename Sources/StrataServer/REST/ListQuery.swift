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
    /// With a keyset cursor that fits this request's order: the rows after the cursor's row, in
    /// one or two segments read in turn (see ``keyset(after:order:entity:model:objectID:)``);
    /// `offset` is then only the `offset` parameter.
    var keyset: [FetchPredicate] = []
    /// The position of the page's first item, as far as the cursor and `offset` tell (the cursor
    /// keeps it for a keyset that no longer fits).
    var position = 0

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
        var anchorText: String?
        // A named query (a fetch request template) takes its variables from the parameters of
        // the same names.
        // `query=<name>`: a value without a dot names a query; `query=eq.x` filters an attribute
        // named `query`. The dot is looked for by UTF-8 byte, as the filter's operator is split
        // off: in `eq.\u{301}x` a dot and a combining mark are one Character that is not ".".
        var variables: Set<String> = []
        let named = query.first { $0.name == "query" && !$0.value.utf8.contains(UInt8(ascii: ".")) }?.value
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
            case "where": predicates.append(try Self.wherePredicate(value, limits: limits))
            case "order": order += try Self.sortKeys(value, entity: entity, model: model, limits: limits)
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
                anchorText = value.firstIndex(of: ".").map { String(value[value.index(after: $0)...]) }
            case ListFacets.parameter: continue  // read by ``ListFacets``
            case ListAggregates.havingParameter:
                throw Problem.badRequest(
                    "having filters groups: it applies only with select=… naming an aggregate",
                    errors: [.init(field: "having", code: "invalid", message: "having without select")])
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
        position = offset
        // A keyset that fits the order replaces the cursor's position: the page starts right after
        // the cursor's row wherever it now is. One that does not fit (another `order`, a value of
        // another type) leaves the position, so every cursor the pattern matches is taken.
        if let anchorText, let anchor = Self.decodeAnchor(anchorText),
            let segments = Self.keyset(after: anchor, order: order, entity: entity, model: model, objectID: objectID)
        {
            keyset = segments
            offset = skip
        }
    }

    /// The predicate of `where=`.
    /// - Throws: a 400 ``Problem`` for one too long or malformed.
    static func wherePredicate(_ value: String, limits: RequestLimits) throws(Problem) -> FetchPredicate {
        guard value.count <= limits.whereLength else {
            throw Problem.badRequest(
                "where is \(value.count) characters long; at most \(limits.whereLength) are accepted",
                errors: [.init(field: "where", code: "tooLong", message: "longer than \(limits.whereLength)")])
        }
        // As the document's pattern states (``FilterSyntax/wherePattern``): a control character
        // has no place in a predicate's text; a string literal writes one as an escape (`\n`).
        if let control = value.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            let hex = String(control.value, radix: 16, uppercase: true)
            let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            throw Problem.badRequest(
                "where: control character \(code) is not accepted (a string literal writes one as an escape)",
                errors: [.init(field: "where", code: "invalid", message: "control character")])
        }
        do {
            return try FetchPredicate(format: value)
        } catch {
            throw Problem.badRequest(
                "where: \(error)", errors: [.init(field: "where", code: "invalid", message: "\(error)")])
        }
    }

    /// The sort keys of `order=`: attributes of `entity` or `_id`, each optionally followed by
    /// `.asc` or `.desc`.
    /// - Throws: a 400 ``Problem`` for too many keys or one that is not a sort key.
    static func sortKeys(_ value: String, entity: String, model: ObjectModel, limits: RequestLimits) throws(Problem)
        -> [SortKey]
    {
        let parts = value.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= limits.orderKeys else {
            throw Problem.badRequest(
                "order has \(parts.count) sort keys; at most \(limits.orderKeys) are accepted",
                errors: [.init(field: "order", code: "tooMany", message: "more than \(limits.orderKeys) keys")]
            )
        }
        var keys: [SortKey] = []
        for part in parts {
            var pieces = part.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            var ascending = true
            if pieces.count == 2, pieces[1] == "desc" || pieces[1] == "asc" {
                ascending = pieces[1] == "asc"
                pieces.removeLast()
            }
            if pieces.count == 1, pieces[0] == ObjectCodec.idKey {
                keys.append(SortKey(SortKey.objectKey, ascending: ascending))
                continue
            }
            if let key = FilterSyntax.rankKey(part, entity: entity, model: model) {
                keys.append(key)
                continue
            }
            guard pieces.count == 1, model.attribute(pieces[0], of: entity) != nil else {
                throw Problem.badRequest(
                    "order: '\(part)' is not an attribute of \(entity) or _id (optionally followed by .asc or .desc)",
                    errors: [.init(field: "order", code: "invalid", message: "unknown sort key '\(part)'")])
            }
            keys.append(SortKey(pieces[0], ascending: ascending))
        }
        return keys
    }

    /// The fetch request for these parameters, with one keyset segment (or none: every match).
    func request(_ entity: String, segment: FetchPredicate? = nil) -> FetchRequest {
        let all = predicates + (segment.map { [$0] } ?? [])
        return FetchRequest(
            entityName: entity, predicate: all.isEmpty ? nil : (all.count == 1 ? all[0] : .and(all)),
            sortDescriptors: order, fetchLimit: limit, fetchOffset: offset)
    }

    /// A cursor for the page starting at `offset`: `o` and the offset in decimal, base64url without
    /// padding; with `anchor` (the last row's sort values and id), `.` and the anchor as JSON in
    /// base64url, when it is short enough.
    static func cursor(_ offset: Int, anchor: [JSONValue]? = nil) -> String {
        let position = base64URL("o\(offset)".utf8)
        guard let anchor else { return position }
        let json = JSONValue.array(anchor).jsonText
        guard json.utf8.count <= maxAnchorBytes else { return position }
        return position + "." + base64URL(json.utf8)
    }

    /// The longest anchor a cursor carries (longer sort values page by position).
    static let maxAnchorBytes = 1_024
    /// The longest anchor text a cursor may hold: the base64url of ``maxAnchorBytes``.
    static let maxAnchorText = (maxAnchorBytes * 4 + 2) / 3

    /// The anchor of a cursor: the JSON array its text encodes, or nil when it is not one.
    static func decodeAnchor(_ text: String) -> [JSONValue]? {
        guard let bytes = base64URLDecoded(text), let value = try? JSONValue.parse(bytes, maxDepth: 2)
        else { return nil }
        return value.arrayValue
    }

    /// The last row's anchor in `order`: each sort key's value and the row's id, or nil when a
    /// key cannot be a keyset (see ``keyset(after:order:entity:model:objectID:)``).
    static func anchor(of row: StoreRow, order: [SortKey], entity: String, model: ObjectModel) -> [JSONValue]? {
        var values: [JSONValue] = []
        for key in order {
            if key.key == SortKey.objectKey {
                values.append(.integer(row.id.primaryKey ?? 0))
                continue
            }
            guard keysetAttribute(key, entity: entity, model: model) != nil else { return nil }
            let value = row[attribute: key.key]
            if case .double(let number) = value, number.isNaN { return nil }
            values.append(value.json)
        }
        guard let pk = row.id.primaryKey else { return nil }
        return values + [.integer(pk)]
    }

    /// The attribute types a keyset compares exactly as the stores sort them.
    static let keysetTypes: Set<AttributeType> = [
        .string, .integer16, .integer32, .integer64, .double, .float, .boolean, .date, .uuid, .uri,
    ]

    /// The attribute a sort key orders by, when a keyset can carry it: one of ``keysetTypes``,
    /// compared case-sensitively.
    private static func keysetAttribute(_ key: SortKey, entity: String, model: ObjectModel) -> AttributeDescription? {
        guard !key.caseInsensitive, let attribute = model.attribute(key.key, of: entity),
            keysetTypes.contains(attribute.type)
        else { return nil }
        return attribute
    }

    /// The rows after `anchor` in `order` (ties broken by id as every store sorts them): for each key,
    /// the rows past the anchor's value, or equal to it and past it on the next keys. The first
    /// key splits this into segments read in turn, each one an index on it seeks to (see the
    /// end). Nil when the anchor does not fit.
    static func keyset(
        after anchor: [JSONValue], order: [SortKey], entity: String, model: ObjectModel,
        objectID: (String, Int64) -> ObjectID?
    ) -> [FetchPredicate]? {
        guard anchor.count == order.count + 1, case .integer(let pk) = anchor.last, let last = objectID(entity, pk)
        else { return nil }
        var keys: [(path: String, ascending: Bool, value: PredicateTerm, optional: Bool)] = []
        for (key, json) in zip(order, anchor) {
            if key.key == SortKey.objectKey {
                guard case .integer(let id) = json, let object = objectID(entity, id) else { return nil }
                keys.append(("SELF", key.ascending, .object(object), false))
                continue
            }
            guard let attribute = keysetAttribute(key, entity: entity, model: model) else { return nil }
            if json.isNull {
                keys.append((key.key, key.ascending, .constant(.null), true))
                continue
            }
            guard let value = AttributeValue(json: json, as: attribute.type) else { return nil }
            if case .double(let number) = value, number.isNaN { return nil }
            keys.append((key.key, key.ascending, .constant(value), attribute.isOptional))
        }
        // Ties by id, in the last key's direction (``FetchRequest/tiesAscending``).
        keys.append(("SELF", order.last?.ascending ?? true, .object(last), false))
        func compare(_ path: String, _ op: ComparisonOperator, _ value: PredicateTerm) -> FetchPredicate {
            .comparison(Comparison(.keyPath(path), op, value))
        }
        func isNull(_ path: String, _ null: Bool) -> FetchPredicate {
            compare(path, null ? .equal : .notEqual, .constant(.null))
        }
        // From the last key back to the second: after(i) = past(i) OR (equal(i) AND after(i + 1)).
        var rest: FetchPredicate = .never
        for (index, key) in keys.enumerated().reversed() where index > 0 {
            let isLast = index == keys.count - 1
            let nullAnchor: Bool = { if case .constant(.null) = key.value { true } else { false } }()
            let past: FetchPredicate
            let equal: FetchPredicate
            if nullAnchor {
                // Nulls sort first: ascending, every non-null value is past; descending, none is.
                past = key.ascending ? isNull(key.path, false) : .never
                equal = isNull(key.path, true)
            } else {
                let beyond = compare(key.path, key.ascending ? .greater : .less, key.value)
                past = !key.ascending && key.optional ? .or([beyond, isNull(key.path, true)]) : beyond
                equal = compare(key.path, .equal, key.value)
            }
            rest = isLast ? past : .or([past, .and([equal, rest])])
        }
        // The first key gives the segments, in page order, each an equality or a range an index
        // on it seeks to: the rest of the anchor's value (`year = 1999 AND …`, with the id as an
        // index on `year` holds it after the value), then the values past it, then (descending)
        // the nulls. One predicate with an OR made SQLite skip the anchor's equal values one by
        // one (page 1,000 of a million books at 0.30× of page 1), or sort every later row.
        let first = keys[0]
        if keys.count == 1 { return [compare(first.path, first.ascending ? .greater : .less, first.value)] }
        if case .constant(.null) = first.value {
            // Ascending, the rest of the nulls and then every non-null; descending, the nulls only.
            let nulls = FetchPredicate.and([isNull(first.path, true), rest])
            return first.ascending ? [nulls, isNull(first.path, false)] : [nulls]
        }
        let equal = FetchPredicate.and([compare(first.path, .equal, first.value), rest])
        let beyond = compare(first.path, first.ascending ? .greater : .less, first.value)
        // Descending, the nulls come after every value.
        return !first.ascending && first.optional ? [equal, beyond, isNull(first.path, true)] : [equal, beyond]
    }

    /// The offset of a cursor, for exactly the strings ``cursorPattern`` matches: the canonical
    /// encoding (as ``cursor(_:)`` writes it) of `o` and 1 to 16 decimal digits.
    static func decodeCursor(_ cursor: String) -> Int? {
        var text = Substring(cursor)
        if let dot = cursor.firstIndex(of: ".") {
            let anchor = cursor[cursor.index(after: dot)...]
            guard (1...maxAnchorText).contains(anchor.utf8.count),
                anchor.utf8.allSatisfy({ Self.base64URLBytes.contains($0) })
            else { return nil }
            text = cursor[..<dot]
        }
        guard let data = base64URLDecoded(text), data.first == UInt8(ascii: "o"),
            (2...17).contains(data.count), data.dropFirst().allSatisfy({ (0x30...0x39).contains($0) }),
            let offset = Int(String(decoding: data.dropFirst(), as: UTF8.self)),
            base64URL(data) == String(text)
        else { return nil }
        return offset
    }

    /// The bytes of base64url text.
    static let base64URLBytes = Set(base64URLAlphabet)

    /// `data` in base64url without padding.
    private static func base64URL<Bytes: Collection<UInt8>>(_ data: Bytes) -> String {
        let alphabet = base64URLAlphabet
        var out: [UInt8] = []
        out.reserveCapacity((data.count * 4 + 2) / 3)
        var iterator = data.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            let bits = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            out.append(alphabet[Int(bits >> 18 & 63)])
            out.append(alphabet[Int(bits >> 12 & 63)])
            if second != nil { out.append(alphabet[Int(bits >> 6 & 63)]) }
            if third != nil { out.append(alphabet[Int(bits & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of base64url text, by hand (Foundation's string replacing was most of a cursor's
    /// cost); nil for anything else, and for a length no encoding has.
    private static func base64URLDecoded<Text: StringProtocol>(_ text: Text) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(byte - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(byte - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(values.count, index + 4)]
            var bits: UInt32 = 0
            for (offset, value) in chunk.enumerated() { bits |= UInt32(value) << (18 - 6 * UInt32(offset)) }
            out.append(UInt8(bits >> 16 & 0xFF))
            if chunk.count > 2 { out.append(UInt8(bits >> 8 & 0xFF)) }
            if chunk.count > 3 { out.append(UInt8(bits & 0xFF)) }
            index += 4
        }
        return out
    }

    private static let base64URLAlphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The regular expression (ECMA-262, as OpenAPI's `pattern`) of every cursor ``decodeCursor(_:)``
    /// takes, so that a client generator or a schema-driven tester sends only cursors this server
    /// accepts: the base64url of `o` (`bz`) and the digits, three bytes to four characters.
    static let cursorPattern: String = {
        let triple = "(?:[MN][DTjz]|O[DT])[AEIMQUYcgk][w-z0-5]"  // three digits
        let pair = "(?:[MN][DTjz]|O[DT])[AEIMQUYcgk]"  // two digits, the last group
        let single = "(?:[MN][AQgw]|O[AQ])"  // one digit, the last group
        // `o` and one digit, or `o`, two digits, then up to 4 triples and a last pair or digit.
        // Then, for a keyset cursor, `.` and the anchor's base64url.
        return "^bz[AEIMQUYcgk](?:[w-z0-5](?:\(triple)){0,4}(?:\(pair)|\(single))?)?"
            + "(?:\\.[A-Za-z0-9_-]{1,\(maxAnchorText)})?$"
    }()

    /// Converts a named query's variable from query text to a value of `type`.
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
        case .always, .never, .textSearch: return [:]
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
