import Foundation
import Strata

/// Turns managed objects into their REST JSON form and request bodies into changes:
/// `{"_id": 42, "_version": 3, …attributes, "author": 7, "tags": [1, 2]}`.
///
/// The server's own members are `_id` and `_version` in every entity of every model: Core Data
/// property names start with a lowercase letter and the JSON format refuses a leading `_`, so they
/// can never collide with an attribute (real models have attributes named `id` and `version`).
struct ObjectCodec {
    /// The member holding the object's primary key.
    static let idKey = "_id"
    /// The member holding the object's version (its entity tag).
    static let versionKey = "_version"

    let model: ObjectModel

    /// One member of an entity's JSON form.
    enum Member {
        case id, version
        /// An attribute, with its position in the entity's layout.
        case attribute(String, position: Int)
        case toOne(String)
        case toMany(String)
    }

    /// How one entity renders: its members in key order, and every member's `,"key":null` bytes
    /// laid end to end in memory of its own (`{` instead of the comma for the first), so that a
    /// member is one copy of bytes: its separator and key, and its `null` too when it has no value.
    final class Plan: @unchecked Sendable {
        let layout: AttributeLayout?
        let members: [Member]
        /// Every member's bytes; never written after `init` (hence `@unchecked Sendable`).
        let bytes: UnsafeMutableBufferPointer<UInt8>
        /// Where each member's bytes end (after its `null`); the next member's start there.
        let ends: [Int]

        init(_ members: [(String, Member)], layout: AttributeLayout?) {
            self.layout = layout
            let sorted = members.sorted { $0.0 < $1.0 }
            self.members = sorted.map(\.1)
            var laid: [UInt8] = []
            var ends: [Int] = []
            for (name, _) in sorted {
                laid.append(laid.isEmpty ? UInt8(ascii: "{") : UInt8(ascii: ","))
                JSONValue.writeString(name, to: &laid)
                laid.append(UInt8(ascii: ":"))
                laid += ObjectCodec.null
                ends.append(laid.count)
            }
            bytes = .allocate(capacity: max(1, laid.count))
            _ = bytes.initialize(from: laid)
            self.ends = ends
        }

        deinit { bytes.deallocate() }

        /// Member `index`'s separator and key, with `null` after it when `null` is set.
        @inline(__always)
        func key(_ index: Int, null: Bool = false) -> UnsafeBufferPointer<UInt8> {
            let start = index == 0 ? 0 : ends[index - 1]
            let end = null ? ends[index] : ends[index] - ObjectCodec.null.count
            return UnsafeBufferPointer(rebasing: bytes[start..<end])
        }
    }

    /// Each entity's ``Plan``.
    let plans: [String: Plan]

    init(model: ObjectModel) {
        self.model = model
        var plans: [String: Plan] = [:]
        for entity in model.entityNames {
            var list: [(String, Member)] = [(Self.idKey, .id), (Self.versionKey, .version)]
            list += model.attributes(of: entity).enumerated().map { ($1.name, .attribute($1.name, position: $0)) }
            list += model.relationships(of: entity).map { ($0.name, $0.isToMany ? .toMany($0.name) : .toOne($0.name)) }
            plans[entity] = Plan(list, layout: model.attributeLayout(of: entity))
        }
        self.plans = plans
    }

    /// The JSON form of a stored row (the same bytes ``render(_:)`` gives for the object), with the
    /// contents of its to-many relationships.
    func render(row: StoreRow, toMany: [String: [ObjectID]]) -> [UInt8] {
        guard let plan = plans[row.id.entityName] else { return Array("{}".utf8) }
        var out: [UInt8] = []
        out.reserveCapacity(plan.bytes.count + 256)
        let positional = plan.layout.map { row.attributes.follows($0) } ?? false
        // Written in place, with no local function capturing `out`: a captured variable is boxed,
        // and every access to it was checked for exclusivity at run time.
        for index in plan.members.indices {
            switch plan.members[index] {
            case .id:
                out.append(contentsOf: plan.key(index))
                Self.writeKey(row.id, to: &out)
            case .version:
                out.append(contentsOf: plan.key(index))
                JSONValue.writeInteger(row.version, to: &out)
            case .attribute(let name, let position):
                switch positional ? row.attributes[position: position] : row.attributes[name] {
                case .none, .null?: out.append(contentsOf: plan.key(index, null: true))
                case let value?:
                    out.append(contentsOf: plan.key(index))
                    Self.write(value, to: &out)
                }
            case .toOne(let name):
                if let pk = row.toOne[name]??.primaryKey {
                    out.append(contentsOf: plan.key(index))
                    JSONValue.writeInteger(pk, to: &out)
                } else {
                    out.append(contentsOf: plan.key(index, null: true))
                }
            case .toMany(let name):
                out.append(contentsOf: plan.key(index))
                out.append(UInt8(ascii: "["))
                if let ids = toMany[name] {
                    for position in ids.indices {
                        if position > 0 { out.append(UInt8(ascii: ",")) }
                        Self.writeKey(ids[position], to: &out)
                    }
                }
                out.append(UInt8(ascii: "]"))
            }
        }
        // The first member's bytes opened the object (every entity has `_id` and `_version`).
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// An object's primary key, or null.
    private static func writeKey(_ id: ObjectID?, to out: inout [UInt8]) {
        if let pk = id?.primaryKey { JSONValue.writeInteger(pk, to: &out) } else { out += null }
    }

    private static let null = Array("null".utf8)

    /// Writes an attribute value's JSON form: the common kinds directly, the rest through `json`.
    static func write(_ value: AttributeValue, to out: inout [UInt8]) {
        switch value {
        case .null: out += null
        case .string(let text), .uri(let text): JSONValue.writeString(text, to: &out)
        case .integer(let number): JSONValue.writeInteger(number, to: &out)
        case .boolean(let flag): out += flag ? Array("true".utf8) : Array("false".utf8)
        default: value.json.write(to: &out)
        }
    }

    /// The JSON form of an object: `_id`, `_version`, every attribute (null when nil), every to-one
    /// as an id or null, every to-many as an array of ids.
    func render(_ object: ManagedObject) throws(ContextError) -> JSONValue {
        var members: [String: JSONValue] = [:]
        members[Self.idKey] = object.objectID.primaryKey.map { .integer($0) } ?? .null
        members[Self.versionKey] = .integer(object.version)
        for attribute in model.attributes(of: object.entityName) {
            members[attribute.name] = try object.value(forKey: attribute.name).json
        }
        for relationship in model.relationships(of: object.entityName) {
            if relationship.isToMany {
                members[relationship.name] = .array(
                    try object.objectIDs(forKey: relationship.name).map { id in
                        id.primaryKey.map { .integer($0) } ?? .null
                    })
            } else {
                members[relationship.name] =
                    try object.objectID(forKey: relationship.name)?.primaryKey.map { .integer($0) } ?? .null
            }
        }
        return .object(members)
    }

    /// The ETag of an object: its version, quoted.
    static func etag(_ version: Int64) -> String { "\"\(version)\"" }

    /// Applies a JSON object to `object`: every member must be an attribute or relationship of its
    /// entity, with a value of the right type. With `replace`, members left out are reset (attributes
    /// to their defaults, relationships emptied).
    /// - Parameter resolve: turns a related id (or `{"$ref": n}` in a batch) into an object.
    /// - Throws: a 422 ``Problem`` listing every bad field, or a 409 one when the only problem is
    ///   related objects that do not exist.
    func apply(
        _ body: [String: JSONValue], to object: ManagedObject, replace: Bool, pathID: Int64?,
        resolve: (String, JSONValue) throws(Problem) -> ManagedObject
    ) throws(Problem) {
        let entity = object.entityName
        var errors: [Problem.FieldError] = []
        func fail(_ field: String, _ code: String, _ message: String) {
            errors.append(Problem.FieldError(field: field, code: code, message: message))
        }
        for (name, value) in body.sorted(by: { $0.key < $1.key }) {
            if name == Self.idKey {
                if case .integer(let id) = value, id == pathID { continue }
                fail(
                    name, "readOnly",
                    "_id is assigned by the server" + (pathID.map { " and must be \($0) if given" } ?? ""))
                continue
            }
            if name == Self.versionKey {
                if case .integer = value { continue }
                fail(name, "type", "_version must be an integer (it is read-only; use If-Match to check it)")
                continue
            }
            if let attribute = model.attribute(name, of: entity) {
                if model.isDerived(name, of: entity) {
                    // Read-only: computed on every save (a PUT may echo what it read).
                    if replace || value == .null { continue }
                    fail(name, "readOnly", "\(name) is derived (\(attribute.derivation ?? "")) and cannot be set")
                    continue
                }
                if attribute.isComposite, !value.isNull {
                    if let problem = Self.setComposite(value, attribute, on: object) {
                        fail(problem.field, "type", problem.message)
                    }
                    continue
                }
                guard let converted = AttributeValue(json: value, as: attribute.type) else {
                    fail(
                        name, "type",
                        "\(name) must be \(Self.describe(attribute.type)), not \(value.typeName) \(Self.preview(value))"
                    )
                    continue
                }
                do {
                    try object.setValue(converted, forKey: name)
                } catch {
                    fail(name, "type", error.message)
                }
            } else if let relationship = model.relationship(name, of: entity) {
                do {
                    if relationship.isToMany {
                        guard let items = value.arrayValue else {
                            fail(name, "type", "\(name) must be an array of \(relationship.destination) ids")
                            continue
                        }
                        var targets: [ManagedObject] = []
                        for item in items { targets.append(try resolve(relationship.destination, item)) }
                        try object.setObjects(targets, forKey: name)
                    } else if value.isNull {
                        try object.setObject(nil, forKey: name)
                    } else {
                        try object.setObject(try resolve(relationship.destination, value), forKey: name)
                    }
                } catch let problem as Problem {
                    fail(name, problem.status == 404 ? "notFound" : "type", problem.detail)
                } catch let error as ContextError {
                    fail(name, "type", error.message)
                } catch {
                    fail(name, "type", "\(error)")
                }
            } else if model.fetchedProperties(of: entity).contains(where: { $0.name == name }) {
                fail(name, "readOnly", "\(name) is a fetched property and cannot be set")
            } else {
                fail(name, "unknown", "\(entity) has no field '\(name)'")
            }
        }
        if replace {
            for attribute in model.attributes(of: entity)
            where body[attribute.name] == nil && !model.isDerived(attribute.name, of: entity) {
                try? object.setValue(attribute.defaultValue ?? .null, forKey: attribute.name)
            }
            for relationship in model.relationships(of: entity) where body[relationship.name] == nil {
                if relationship.isToMany {
                    try? object.setObjects([], forKey: relationship.name)
                } else {
                    try? object.setObject(nil, forKey: relationship.name)
                }
            }
        }
        if !errors.isEmpty {
            // A body that fits but names related objects that do not exist conflicts with the
            // stored state, as a foreign-key violation does (409, also when a concurrent delete
            // is found at the commit); anything else is a body that does not fit (422).
            if errors.allSatisfy({ $0.code == "notFound" }) {
                throw Problem.conflict("the request body refers to objects that do not exist", errors: errors)
            }
            throw Problem.validation("the request body does not fit \(entity)", errors)
        }
    }

    /// Sets a composite attribute to `value` checked element by element; what does not fit (the
    /// field is the element's key path when an element does not), or nil.
    private static func setComposite(_ value: JSONValue, _ attribute: AttributeDescription, on object: ManagedObject)
        -> (field: String, message: String)?
    {
        let checked: JSONValue
        do throws(CompositeValueError) {
            checked = try attribute.checkedComposite(value)
        } catch {
            return (error.path, error.message)
        }
        do {
            try object.setValue(.json(checked), forKey: attribute.name)
        } catch {
            return (attribute.name, error.message)
        }
        return nil
    }

    static func describe(_ type: AttributeType) -> String {
        switch type {
        case .string: "a string"
        case .integer16: "an integer from -32768 to 32767"
        case .integer32: "an integer from -2147483648 to 2147483647"
        case .integer64: "a 64-bit integer"
        case .double, .float: "a number"
        case .decimal: "a decimal number written as a string, with \(AttributeValue.decimalLimit)"
        case .boolean: "true or false"
        case .date: "an RFC 3339 date-time string"
        case .binary: "base64 text"
        case .uuid: "a UUID string"
        case .uri: "an absolute URI string"
        case .json: "any JSON value"
        }
    }

    static func preview(_ value: JSONValue) -> String {
        let text = value.jsonText
        return text.count > 40 ? String(text.prefix(40)) + "…" : text
    }
}
