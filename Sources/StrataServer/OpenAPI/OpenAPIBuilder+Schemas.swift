import Foundation
import Strata

/// Which of an entity's three JSON shapes a property schema is for.
enum SchemaMode {
    /// What the server answers: every property, null when unset.
    case read
    /// A new object (`POST`) or a full replacement (`PUT`): required where the model requires.
    case create
    /// A JSON Merge Patch: every member optional.
    case patch
}

extension OpenAPIBuilder {
    /// A decimal as the server writes it (`Decimal`'s description, as `NSDecimalNumber` prints):
    /// plain digits, no exponent, up to 165 of them (38 significant digits times 10^127).
    static let decimalOutputPattern = #"^-?[0-9]+(\.[0-9]+)?$"#
    /// The characters ICU's `\s` matches (Unicode White_Space), spelled out: ECMA-262 and Python,
    /// which read a schema's `pattern`, each have a `\s` of their own (ECMA adds U+FEFF and leaves
    /// out U+0085; Python adds U+001C to U+001F).
    static let icuWhiteSpace = #"\t\n\u000B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"#

    /// A model's regular expression (ICU's syntax, as Core Data's) as a schema `pattern`: `\s` and
    /// `\S` spelled out as ICU reads them; the rest as written.
    static func schemaPattern(icu pattern: String) -> String {
        var out = ""
        var inClass = false
        var characters = pattern.makeIterator()
        while let character = characters.next() {
            switch character {
            case "\\":
                guard let escaped = characters.next() else {
                    out.append(character)
                    break
                }
                switch (escaped, inClass) {
                case ("s", false): out += "[" + icuWhiteSpace + "]"
                case ("s", true): out += icuWhiteSpace
                case ("S", false): out += "[^" + icuWhiteSpace + "]"
                default: out += "\\" + String(escaped)
                }
            case "[" where !inClass:
                inClass = true
                out.append(character)
            case "]" where inClass:
                inClass = false
                out.append(character)
            default:
                out.append(character)
            }
        }
        return out
    }

    /// Standard base64 with padding, as the server decodes binary attributes.
    static let base64Pattern = #"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"#

    // MARK: - Entities

    /// The read schema: `_id`, `_version`, every attribute and relationship, all required.
    func readSchema(_ entity: EntityDescription) -> OpenAPINode {
        var properties: [(key: String, value: OpenAPINode)] = [
            (
                ObjectCodec.idKey,
                [
                    "type": "integer", "format": "int64", "minimum": 1,
                    "description": "The object's id, assigned by the server.",
                ]
            ),
            (
                ObjectCodec.versionKey,
                [
                    "type": "integer", "format": "int64",
                    "description":
                        "The object's version, raised by every save; its entity tag (`ETag: \"3\"`) for `If-Match`.",
                ]
            ),
        ]
        for attribute in model.attributes(of: entity.name) {
            properties.append((attribute.name, attributeSchema(attribute, mode: .read)))
        }
        for relationship in model.relationships(of: entity.name) {
            properties.append((relationship.name, relationshipSchema(relationship, mode: .read)))
        }
        var description = entity.documentation.map { $0 + "\n\n" } ?? ""
        description += "A \(entity.name) as the server answers it: every attribute (null when unset), "
        description += "to-one relationships as the related id or null, to-many relationships as arrays of ids."
        if entity.isAbstract { description += " \(entity.name) is abstract: every object is one of its subentities." }
        return .members([
            ("type", "object"), ("description", .string(description)),
            ("required", .array(properties.map { .string($0.key) })), ("properties", .object(properties)),
        ])
    }

    /// The create schema (`POST`, `PUT`) or the patch schema (`PATCH`).
    func writeSchema(_ entity: EntityDescription, mode: SchemaMode) -> OpenAPINode {
        var properties: [(key: String, value: OpenAPINode)] = []
        var required: [OpenAPINode] = []
        for attribute in model.attributes(of: entity.name) where !model.isDerived(attribute.name, of: entity.name) {
            properties.append((attribute.name, attributeSchema(attribute, mode: mode)))
            if mode == .create, !attribute.isOptional, attribute.defaultValue == nil {
                required.append(.string(attribute.name))
            }
        }
        for relationship in model.relationships(of: entity.name) {
            properties.append((relationship.name, relationshipSchema(relationship, mode: mode)))
            if mode == .create, Self.isRequired(relationship) { required.append(.string(relationship.name)) }
        }
        let description =
            mode == .create
            ? "The members of a new \(entity.name), or of a full replacement (`PUT`): members left out take their "
                + "defaults (null, or an empty list). `_id`, `_version` and derived attributes are the server's."
            : "A JSON Merge Patch (RFC 7396) of a \(entity.name): members given are set (null clears an optional one), "
                + "members left out keep their values."
        return .members([
            ("type", "object"), ("description", .string(description)),
            ("required", required.isEmpty ? nil : .array(required)), ("properties", .object(properties)),
            ("additionalProperties", false),
        ])
    }

    /// Whether the model refuses to save an object without this relationship.
    static func isRequired(_ relationship: RelationshipDescription) -> Bool {
        // A to-many value is a list, never null: only a minimum count makes it required.
        if relationship.isToMany { return !relationship.isOptional && (relationship.minCount ?? 0) > 0 }
        return !relationship.isOptional
    }

    /// The list envelope of an entity.
    func listSchema(_ entity: EntityDescription) -> OpenAPINode {
        [
            "type": "object",
            "description": .string("A page of \(entity.name) objects."),
            "required": ["items", "next", "total"],
            "properties": [
                "facets": [
                    "type": "object",
                    "description":
                        "With `facet=`: per name asked for, the value counts over every object the filters match.",
                    "additionalProperties": [
                        "type": "object", "required": ["values", "truncated"],
                        "properties": [
                            "values": [
                                "type": "array", "maxItems": .integer(Int64(ListFacets.maxValues)),
                                "items": [
                                    "type": "object", "required": ["value", "count"],
                                    "properties": [
                                        "value": [
                                            "description":
                                                "The attribute's value as the items show it, the related id, or null."
                                        ],
                                        "count": ["type": "integer", "format": "int64", "minimum": 1],
                                    ],
                                ],
                            ],
                            "truncated": [
                                "type": "boolean",
                                "description": "Whether more values exist than are listed.",
                            ],
                        ],
                    ],
                ],
                "items": [
                    "type": "array",
                    "description": "The objects; with `select`, the groups.",
                    "items": ["anyOf": [ref(schemaName(entity.name)), ref(schemaName(entity.name) + "Group")]],
                ],
                "next": [
                    "type": "string", "nullable": true,
                    "description":
                        "The path and query of the next page (with an `after` cursor), or null on the last page.",
                ],
                "total": [
                    "type": "integer", "format": "int64", "minimum": 0, "nullable": true,
                    "description": "How many objects match, with `count=exact`; else null.",
                ],
            ],
        ]
    }

    // MARK: - Properties

    /// The schema of one attribute in `mode`.
    func attributeSchema(_ attribute: AttributeDescription, mode: SchemaMode) -> OpenAPINode {
        var notes: [String] = []
        // The server answers null for an attribute with no value; an attribute that is required but
        // has no default can still be null in rows stored before it became required.
        let nullable = mode == .read ? (attribute.isOptional || attribute.defaultValue == nil) : attribute.isOptional
        var schema = typeSchema(attribute, mode: mode, nullable: nullable, notes: &notes)
        if nullable, schema["type"] != nil { schema.set("nullable", true) }
        if mode == .create, let value = attribute.defaultValue {
            schema.set("default", OpenAPIBuilder.node(value.json))
        }
        var description = attribute.documentation ?? ""
        if let derivation = attribute.derivation, Derivation(derivation) != nil, mode == .read {
            notes.append("Derived: computed on every save from `\(derivation)`; it cannot be set.")
            schema.set("readOnly", true)
        }
        if !notes.isEmpty {
            description += (description.isEmpty ? "" : "\n\n") + notes.joined(separator: " ")
        }
        if !description.isEmpty { schema = OpenAPIBuilder.prepend("description", .string(description), to: schema) }
        return schema
    }

    /// The type, format and (when writing) the model's rules that JSON Schema can state; `notes`
    /// collects the rules it cannot, for the description.
    private func typeSchema(
        _ attribute: AttributeDescription, mode: SchemaMode, nullable: Bool, notes: inout [String]
    ) -> OpenAPINode {
        let writing = mode != .read
        switch attribute.type {
        case .string:
            var schema: OpenAPINode = ["type": "string"]
            if writing {
                schema.set("minLength", attribute.minLength.map { .integer(Int64($0)) })
                schema.set("maxLength", attribute.maxLength.map { .integer(Int64($0)) })
                schema.set("pattern", attribute.regex.map { .string("^(?:\(Self.schemaPattern(icu: $0)))$") })
                if attribute.minLength != nil || attribute.maxLength != nil {
                    notes.append("Lengths count characters (extended grapheme clusters).")
                }
            }
            return schema
        case .integer16, .integer32, .integer64:
            let range = attribute.type.integerRange!
            var schema: OpenAPINode = ["type": "integer", "format": attribute.type == .integer64 ? "int64" : "int32"]
            if attribute.type == .integer16 || writing {
                schema.set("minimum", .integer(range.lowerBound))
                schema.set("maximum", .integer(range.upperBound))
            }
            if writing {
                if let bound = Self.number(attribute.minValue), bound > Double(range.lowerBound) {
                    schema.set("minimum", Self.numberNode(attribute.minValue!))
                }
                if let bound = Self.number(attribute.maxValue), bound < Double(range.upperBound) {
                    schema.set("maximum", Self.numberNode(attribute.maxValue!))
                }
            }
            return schema
        case .double, .float:
            var schema: OpenAPINode = ["type": "number", "format": attribute.type == .double ? "double" : "float"]
            if writing {
                if let value = attribute.minValue, Self.number(value) != nil {
                    schema.set("minimum", Self.numberNode(value))
                }
                if let value = attribute.maxValue, Self.number(value) != nil {
                    schema.set("maximum", Self.numberNode(value))
                }
            }
            return schema
        case .decimal:
            return decimalSchema(attribute, writing: writing, nullable: nullable, notes: &notes)
        case .boolean:
            return ["type": "boolean"]
        case .date:
            if writing {
                notes.append("An RFC 3339 date-time; the server keeps microseconds and answers in UTC.")
                if let value = attribute.minValue { notes.append("Not before \(Self.plain(value)).") }
                if let value = attribute.maxValue { notes.append("Not after \(Self.plain(value)).") }
            }
            return ["type": "string", "format": "date-time"]
        case .binary:
            if writing {
                notes.append("Base64 with padding.")
                if let length = attribute.minLength { notes.append("At least \(length) bytes.") }
                if let length = attribute.maxLength { notes.append("At most \(length) bytes.") }
            }
            var schema: OpenAPINode = ["type": "string", "format": "byte"]
            if writing { schema.set("pattern", .string(Self.base64Pattern)) }
            return schema
        case .uuid:
            return ["type": "string", "format": "uuid"]
        case .uri:
            return ["type": "string", "format": "uri"]
        case .json:
            if let elements = attribute.elements { return compositeSchema(elements, mode: mode) }
            if writing, !attribute.isOptional {
                // Any JSON value but null.
                return [
                    "anyOf": [
                        ["type": "object"], ["type": "array", "items": [:]], ["type": "string"], ["type": "number"],
                        ["type": "boolean"],
                    ]
                ]
            }
            return ["description": "Any JSON value."]
        }
    }

    /// A composite: an object with one property per element. A value written replaces the whole
    /// composite, so it needs the required elements and a missing optional one is null (elements'
    /// defaults apply to a new object only). The server answers every element of a value written
    /// over HTTP; one a library user stored may leave optional elements out, so only the required
    /// ones are required when reading too.
    private func compositeSchema(_ elements: [AttributeDescription], mode: SchemaMode) -> OpenAPINode {
        let elementMode: SchemaMode = mode == .read ? .read : .patch
        var properties = OpenAPINode.object([])
        var required: [OpenAPINode] = []
        for element in elements {
            properties.set(element.name, attributeSchema(element, mode: elementMode))
            if !element.isOptional { required.append(.string(element.name)) }
        }
        var schema: OpenAPINode = ["type": "object", "properties": properties]
        if !required.isEmpty { schema.set("required", .array(required)) }
        schema.set("additionalProperties", false)
        return schema
    }

    /// A decimal: text (exact), or when writing a JSON integer too; `notes` gets the bounds a
    /// pattern cannot state.
    private func decimalSchema(
        _ attribute: AttributeDescription, writing: Bool, nullable: Bool, notes: inout [String]
    ) -> OpenAPINode {
        guard writing else {
            notes.append(
                "An exact decimal number, written as a string of plain digits: no exponent, "
                    + "no trailing zeros after the point.")
            return ["type": "string", "pattern": .string(Self.decimalOutputPattern)]
        }
        let text: OpenAPINode = ["type": "string", "pattern": .string(AttributeValue.decimalPattern)]
        notes.append(
            "An exact decimal number, written as a string such as \"9.99\" or \"1.5e-3\", with "
                + "\(AttributeValue.decimalLimit) (what NSDecimalNumber holds); a JSON integer is accepted too.")
        if let value = attribute.minValue { notes.append("At least \(Self.plain(value)).") }
        if let value = attribute.maxValue { notes.append("At most \(Self.plain(value)).") }
        // A bound of 0 is a sign, which a pattern states exactly; other bounds hold for the
        // integer form only, and the description says them for the text.
        let minimum = Self.number(attribute.minValue)
        let maximum = Self.number(attribute.maxValue)
        var textForm = text
        switch (minimum == 0, maximum == 0) {
        case (true, true): textForm.set("pattern", .string(AttributeValue.zeroDecimalPattern))
        case (true, false): textForm.set("pattern", .string(AttributeValue.nonNegativeDecimalPattern))
        case (false, true): textForm.set("pattern", .string(AttributeValue.nonPositiveDecimalPattern))
        case (false, false): break
        }
        var integerForm: OpenAPINode = ["type": "integer", "format": "int64"]
        if minimum != nil { integerForm.set("minimum", Self.numberNode(attribute.minValue!)) }
        if maximum != nil { integerForm.set("maximum", Self.numberNode(attribute.maxValue!)) }
        // OpenAPI 3.0 allows `nullable` only beside `type`: the text form carries it.
        return ["anyOf": [nullable ? textForm.setting("nullable", true) : textForm, integerForm]]
    }

    /// The schema of a relationship: a related id (to-one) or an array of ids (to-many).
    func relationshipSchema(_ relationship: RelationshipDescription, mode: SchemaMode) -> OpenAPINode {
        var description = relationship.documentation.map { $0 + "\n\n" } ?? ""
        let id: OpenAPINode = ["type": "integer", "format": "int64", "minimum": 1]
        if relationship.isToMany {
            description += "The ids of the related \(relationship.destination) objects"
            description += relationship.isOrdered ? ", in order." : "."
            let emptyOrMin = relationship.isOptional && (relationship.minCount ?? 0) > 1
            if emptyOrMin, mode != .read { description += " Empty, or at least \(relationship.minCount!)." }
            var schema: OpenAPINode = ["description": .string(description), "type": "array", "items": id]
            if mode != .read {
                // An optional relationship may be empty whatever its minCount (as in Core Data), and a
                // required one holds at least its minCount, which may be none.
                let minimum = relationship.isOptional ? nil : relationship.minCount.flatMap { $0 > 0 ? $0 : nil }
                schema.set("minItems", minimum.map { .integer(Int64($0)) })
                schema.set("maxItems", relationship.maxCount.map { .integer(Int64($0)) })
            }
            return schema
        }
        description += "The id of the related \(relationship.destination)"
        description += relationship.isOptional || mode == .read ? ", or null." : "."
        var schema = OpenAPIBuilder.prepend("description", .string(description), to: id)
        if mode == .read || relationship.isOptional { schema.set("nullable", true) }
        return schema
    }

    // MARK: - Shared schemas

    /// `Problem` and `FieldError`: every error response.
    static var problemSchemas: [(key: String, value: OpenAPINode)] {
        [
            (
                "Problem",
                [
                    "type": "object",
                    "description":
                        "An RFC 9457 problem, sent as `application/problem+json` with every error status.",
                    "required": ["type", "title", "status", "detail"],
                    "properties": [
                        "type": [
                            "type": "string", "format": "uri",
                            "description": "A stable URI naming the kind of problem.",
                        ],
                        "title": ["type": "string", "description": "A short summary of the kind of problem."],
                        "status": [
                            "type": "integer", "format": "int32", "minimum": 100, "maximum": 599,
                            "description": "The HTTP status.",
                        ],
                        "detail": ["type": "string", "description": "What went wrong in this case, for people."],
                        "errors": [
                            "type": "array", "items": ["$ref": "#/components/schemas/FieldError"],
                            "description": "The failing fields, for validation and query problems.",
                        ],
                        "operation": [
                            "type": "integer", "format": "int32", "minimum": 0,
                            "description": "In a batch: the index of the operation that failed.",
                        ],
                        "index": [
                            "type": "integer", "format": "int32", "minimum": 0,
                            "description": "When creating an array of objects: the index of the item that failed.",
                        ],
                        "currentVersion": [
                            "type": "integer", "format": "int64",
                            "description": "With 412: the object's current version.",
                        ],
                        "objects": [
                            "type": "array",
                            "description": .string(
                                "With 409: stored objects (not the request's own) that the change would leave "
                                    + "breaking a rule of the model, each with the failing relationship."),
                            "items": [
                                "type": "object", "required": ["entity", "id", "field", "code", "message"],
                                "properties": [
                                    "entity": ["type": "string"], "id": ["type": "integer", "format": "int64"],
                                    "field": ["type": "string"], "code": ["type": "string"],
                                    "message": ["type": "string"],
                                ],
                            ],
                        ],
                    ],
                ]
            ),
            (
                "FieldError",
                [
                    "type": "object",
                    "description": "One failing field of a request body, an object or a query parameter.",
                    "required": ["field", "code", "message"],
                    "properties": [
                        "field": ["type": "string", "description": "The attribute, relationship or query parameter."],
                        "code": [
                            "type": "string",
                            "description": .string(
                                "A stable code: required, type, unknown, invalid, min, max, minLength, maxLength, regex, "
                                    + "minCount, maxCount, deny, unique, readOnly or notFound."),
                        ],
                        "message": ["type": "string", "description": "A sentence for people."],
                    ],
                ]
            ),
        ]
    }

    /// `POST /_batch` request and response schemas; `resources` are the entities' resource paths
    /// (`books`), whose collections and objects are what an operation's `path` may name.
    static func batchSchemas(_ limits: RequestLimits, resources: [String] = []) -> [(key: String, value: OpenAPINode)] {
        // A collection or an object id (decimal, as `Int64(_:)` reads it, so `+7` too; an id no
        // object has is a 404), with the one trailing slash routes allow: the paths a batch takes.
        // Which method fits which (POST a collection, the others an object) is a rule between two
        // members, which the batch answers with 422.
        let path = "^/(?:" + resources.map(regexEscaped).joined(separator: "|") + ")(?:/\\+?[0-9]+)?/?$"
        return [
            (
                "BatchRequest",
                [
                    "type": "object",
                    "description": "Operations run in order in one transaction: all are saved, or none.",
                    "required": ["operations"],
                    "properties": [
                        "operations": [
                            "type": "array", "minItems": 1, "maxItems": .integer(Int64(limits.batchOperations)),
                            "items": ["$ref": "#/components/schemas/BatchOperation"],
                        ]
                    ],
                    "additionalProperties": false,
                ]
            ),
            (
                "BatchOperation",
                [
                    "type": "object",
                    "description": .string(
                        "One request of a batch. In a body, `{\"$ref\": n}` stands for the id of the object created "
                            + "by operation n of the same batch."),
                    "required": ["method", "path"],
                    "properties": [
                        "method": ["type": "string", "enum": ["GET", "POST", "PATCH", "PUT", "DELETE"]],
                        "path": [
                            "type": "string", "pattern": .string(path),
                            "description":
                                "A collection (`POST`) or object path (`GET`, `PATCH`, `PUT`, `DELETE`), without a query string; `PATCH` and `DELETE` of a collection also take its filters after `?`.",
                        ],
                        "headers": [
                            "type": "object", "additionalProperties": ["type": "string"],
                            "description": "Request headers, such as `If-Match`.",
                        ],
                        "body": ["description": "The JSON body of a `POST`, `PATCH` or `PUT`."],
                    ],
                    "additionalProperties": false,
                ]
            ),
            (
                "BatchResponse",
                [
                    "type": "object",
                    "description": "The result of every operation, in order.",
                    "required": ["results"],
                    "properties": [
                        "results": ["type": "array", "items": ["$ref": "#/components/schemas/BatchResult"]]
                    ],
                ]
            ),
            (
                "BatchResult",
                [
                    "type": "object",
                    "description": "What one operation would have answered on its own.",
                    "required": ["status", "headers", "body"],
                    "properties": [
                        "status": ["type": "integer", "format": "int32"],
                        "headers": ["type": "object", "additionalProperties": ["type": "string"]],
                        "body": ["description": "The JSON body, or null when there is none."],
                    ],
                ]
            ),
        ]
    }

    /// `GET /` and the health answers.
    static var systemSchemas: [(key: String, value: OpenAPINode)] {
        let nullableString: OpenAPINode = ["type": "string", "nullable": true]
        return [
            (
                "ServiceIndex",
                [
                    "type": "object",
                    "description": "The model, its entities with their paths, and the stores that hold them.",
                    "required": ["model", "entities", "stores"],
                    "properties": [
                        "model": [
                            "type": "object", "required": ["name", "version", "hash"],
                            "properties": [
                                "name": ["type": "string"], "version": nullableString, "hash": ["type": "string"],
                            ],
                        ],
                        "entities": [
                            "type": "array",
                            "items": [
                                "type": "object",
                                "required": ["name", "path", "abstract", "parent", "configuration", "store"],
                                "properties": [
                                    "name": ["type": "string"], "path": ["type": "string"],
                                    "abstract": ["type": "boolean"], "parent": nullableString,
                                    "configuration": ["type": "string"], "store": nullableString,
                                ],
                            ],
                        ],
                        "stores": [
                            "type": "array",
                            "items": [
                                "type": "object", "required": ["id", "type", "configuration", "url", "entities"],
                                "properties": [
                                    "id": ["type": "string"],
                                    "type": [
                                        "type": "string",
                                        "enum": .array(StoreType.allCases.map { .string($0.rawValue) }),
                                    ],
                                    "configuration": ["type": "string"], "url": nullableString,
                                    "serverVersion": nullableString,
                                    "entities": ["type": "array", "items": ["type": "string"]],
                                ],
                            ],
                        ],
                    ],
                ]
            ),
            (
                "Status",
                [
                    "type": "object", "description": "A health answer.", "required": ["status"],
                    "properties": ["status": ["type": "string", "enum": ["live", "ready"]]],
                ]
            ),
        ]
    }

    // MARK: - Values

    /// A JSON value (a default) as a node.
    static func node(_ value: JSONValue) -> OpenAPINode {
        switch value {
        case .null: .null
        case .bool(let bool): .bool(bool)
        case .integer(let int): .integer(int)
        case .double(let double): .double(double)
        case .string(let string): .string(string)
        case .array(let items): .array(items.map(node))
        case .object(let members): .object(members.keys.sorted().map { ($0, node(members[$0]!)) })
        }
    }

    /// A bound as people write it: strings without their quotes.
    static func plain(_ value: AttributeValue) -> String {
        value.json.stringValue ?? value.json.jsonText
    }

    /// A numeric bound as a Double, for comparisons.
    static func number(_ value: AttributeValue?) -> Double? {
        switch value {
        case .integer(let int): Double(int)
        case .double(let double): double
        case .decimal(let decimal): Double(truncating: decimal as NSDecimalNumber)
        default: nil
        }
    }

    /// A numeric bound as a node (integers stay exact).
    static func numberNode(_ value: AttributeValue) -> OpenAPINode {
        switch value {
        case .integer(let int): .integer(int)
        case .double(let double): .double(double)
        case .decimal(let decimal):
            if let int = Int64(exactly: NSDecimalNumber(decimal: decimal).doubleValue),
                Decimal(int) == decimal
            {
                .integer(int)
            } else {
                .double(Double(truncating: decimal as NSDecimalNumber))
            }
        default: .null
        }
    }

    /// `node` with `key` first (the description reads best before the type).
    static func prepend(_ key: String, _ value: OpenAPINode, to node: OpenAPINode) -> OpenAPINode {
        .object([(key, value)] + node.members.filter { $0.key != key })
    }
}
