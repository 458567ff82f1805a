import Foundation
import Strata

/// Turns managed objects into their REST JSON form and request bodies into changes:
/// `{"id": 42, "version": 3, …attributes, "author": 7, "tags": [1, 2]}`.
struct ObjectCodec {
    let model: ObjectModel

    /// One member of an entity's JSON form.
    enum Member {
        case id, version
        case attribute(String)
        case toOne(String)
        case toMany(String)
    }

    /// Each entity's members in key order, each with its `"key":` bytes, for rendering stored rows
    /// straight to bytes.
    let members: [String: [(key: [UInt8], member: Member)]]

    init(model: ObjectModel) {
        self.model = model
        var members: [String: [(key: [UInt8], member: Member)]] = [:]
        for entity in model.entityNames {
            var list: [(String, Member)] = [("id", .id), ("version", .version)]
            list += model.attributes(of: entity).map { ($0.name, .attribute($0.name)) }
            list += model.relationships(of: entity).map { ($0.name, $0.isToMany ? .toMany($0.name) : .toOne($0.name)) }
            members[entity] = list.sorted { $0.0 < $1.0 }.map { name, member in
                var key: [UInt8] = []
                JSONValue.writeString(name, to: &key)
                key.append(UInt8(ascii: ":"))
                return (key, member)
            }
        }
        self.members = members
    }

    /// The JSON form of a stored row (the same bytes ``render(_:)`` gives for the object), with the
    /// contents of its to-many relationships.
    func render(row: StoreRow, toMany: [String: [ObjectID]]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(512)
        func writeKey(_ id: ObjectID?) {
            if let pk = id?.primaryKey { JSONValue.writeInteger(pk, to: &out) } else { out += Array("null".utf8) }
        }
        for (index, (key, member)) in (members[row.id.entityName] ?? []).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += key
            switch member {
            case .id: writeKey(row.id)
            case .version: JSONValue.writeInteger(row.version, to: &out)
            case .attribute(let name): row[attribute: name].json.write(to: &out)
            case .toOne(let name): writeKey(row.toOne[name] ?? nil)
            case .toMany(let name):
                out.append(UInt8(ascii: "["))
                for (position, id) in (toMany[name] ?? []).enumerated() {
                    if position > 0 { out.append(UInt8(ascii: ",")) }
                    writeKey(id)
                }
                out.append(UInt8(ascii: "]"))
            }
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The JSON form of an object: id, version, every attribute (null when nil), every to-one as an
    /// id or null, every to-many as an array of ids.
    func render(_ object: ManagedObject) throws(ContextError) -> JSONValue {
        var members: [String: JSONValue] = [:]
        members["id"] = object.objectID.primaryKey.map { .integer($0) } ?? .null
        members["version"] = .integer(object.version)
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
    /// - Throws: a 422 ``Problem`` listing every bad field.
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
            if name == "id" {
                if case .integer(let id) = value, id == pathID { continue }
                fail(
                    name, "readOnly",
                    "id is assigned by the server" + (pathID.map { " and must be \($0) if given" } ?? ""))
                continue
            }
            if name == "version" {
                if case .integer = value { continue }
                fail(name, "type", "version must be an integer (it is read-only; use If-Match to check it)")
                continue
            }
            if let attribute = model.attribute(name, of: entity) {
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
            for attribute in model.attributes(of: entity) where body[attribute.name] == nil {
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
        if !errors.isEmpty { throw Problem.validation("the request body does not fit \(entity)", errors) }
    }

    static func describe(_ type: AttributeType) -> String {
        switch type {
        case .string: "a string"
        case .integer16: "an integer from -32768 to 32767"
        case .integer32: "an integer from -2147483648 to 2147483647"
        case .integer64: "a 64-bit integer"
        case .double, .float: "a number"
        case .decimal: "a decimal number written as a string"
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
