import Strata

extension OpenAPIBuilder {
    // MARK: - Entity paths

    /// `/books`, `/books/{id}` and one path per relationship and fetched property.
    mutating func entityPaths(_ entity: EntityDescription) -> [(key: String, value: OpenAPINode)] {
        let name = entity.name
        let path = "/" + model.resourcePath(of: name)
        let noun = Self.identifier(name, capitalized: true)
        let tags: OpenAPINode = [.string(name)]
        var result = collectionPaths(entity, path: path, noun: noun, tags: tags)
        result.append((path + "/{id}", objectPath(entity, noun: noun, tags: tags)))
        for relationship in model.relationships(of: name) {
            let operation = relationshipOperation(relationship, of: name, noun: noun, tags: tags)
            result.append(
                (path + "/{id}/" + relationship.name, ["parameters": Self.objectParameters, "get": operation]))
        }
        for fetched in model.fetchedProperties(of: name) {
            let operation = fetchedPropertyOperation(fetched, of: name, noun: noun, tags: tags)
            result.append((path + "/{id}/" + fetched.name, ["parameters": Self.objectParameters, "get": operation]))
        }
        return result
    }

    /// The parameters of every path below one object: its id.
    private static var objectParameters: OpenAPINode { [["$ref": "#/components/parameters/Id"]] }

    /// `/books` (list, and create unless abstract) and `/books/_bulk`.
    private mutating func collectionPaths(
        _ entity: EntityDescription, path: String, noun: String, tags: OpenAPINode
    ) -> [(key: String, value: OpenAPINode)] {
        let name = entity.name
        let plural = Self.pascalCase(model.resourcePath(of: name))
        var result: [(key: String, value: OpenAPINode)] = []
        let list = OpenAPINode.members([
            ("operationId", .string(operationID("list", plural))),
            ("summary", .string("List \(name) objects")),
            ("description", .string(listDescription(entity))),
            ("tags", tags),
            (
                "parameters",
                .array(
                    filterParameters(entity) + [orderParameter(entity), whereParameter(entity)]
                        + facetParameters(entity) + aggregateParameters(entity) + queryParameters(entity)
                        + Self.pagingParameters())
            ),
            (
                "responses",
                responses([("200", listResponse(entity, "A page of \(name) objects.")), ("400", nil), ("503", nil)])
            ),
        ])
        let batch = batchChangeOperations(entity, plural: plural, tags: tags)
        if entity.isAbstract {
            // Every object is one of its subentities, created at their paths: POST here is 405.
            result.append((path, .object([("get", list)] + batch)))
        } else {
            let create = createOperation(entity, noun: noun, tags: tags)
            result.append((path, .object([("get", list), ("post", create)] + batch)))
            result.append((path + "/_bulk", ["post": bulkCreateOperation(entity, plural: plural, tags: tags)]))
        }
        return result
    }

    /// `/books/{id}`: read, change, replace and delete one object.
    private mutating func objectPath(_ entity: EntityDescription, noun: String, tags: OpenAPINode) -> OpenAPINode {
        let name = entity.name
        let schema = schemaName(name)
        let read = OpenAPINode.members([
            ("operationId", .string(operationID("get", noun))),
            ("summary", .string("Read \(Self.article(name)) \(name)")),
            ("description", .string("The \(name) with this id. `If-None-Match` with its current `ETag` answers 304.")),
            ("tags", tags),
            ("parameters", [["$ref": "#/components/parameters/IfNoneMatch"]]),
            (
                "responses",
                responses([
                    ("200", objectResponse(schema, "The \(name).")), ("304", nil), ("400", nil), ("404", nil),
                    ("503", nil),
                ])
            ),
        ])
        let writeErrors: [(String, OpenAPINode?)] = [
            ("400", nil), ("404", nil), ("409", nil), ("412", nil), ("413", nil), ("415", nil), ("422", nil),
            ("503", nil),
        ]
        let patchBody: OpenAPINode = ["schema": ref(schema + "Patch")]
        let update = OpenAPINode.members([
            ("operationId", .string(operationID("update", noun))),
            ("summary", .string("Change \(Self.article(name)) \(name) (JSON Merge Patch)")),
            (
                "description",
                .string(
                    "Sets the members given (RFC 7396: null clears one) and keeps the others. With `If-Match`, only "
                        + "if the \(name) is still at that version (else 412). `Prefer: return=minimal` answers "
                        + "with no body.")
            ),
            ("tags", tags),
            ("parameters", [["$ref": "#/components/parameters/IfMatch"]]),
            (
                "requestBody",
                [
                    "required": true,
                    "content": ["application/json": patchBody, "application/merge-patch+json": patchBody],
                ]
            ),
            ("responses", responses([("200", objectResponse(schema, "The changed \(name)."))] + writeErrors)),
        ])
        let replace = OpenAPINode.members([
            ("operationId", .string(operationID("replace", noun))),
            ("summary", .string("Replace \(Self.article(name)) \(name)")),
            (
                "description",
                .string(
                    "Sets every member: those left out take their defaults (null, or an empty list). With `If-Match`, "
                        + "only if the \(name) is still at that version (else 412). `Prefer: return=minimal` "
                        + "answers with no body.")
            ),
            ("tags", tags),
            ("parameters", [["$ref": "#/components/parameters/IfMatch"]]),
            ("requestBody", ["required": true, "content": ["application/json": ["schema": ref(schema + "Create")]]]),
            ("responses", responses([("200", objectResponse(schema, "The replaced \(name)."))] + writeErrors)),
        ])
        let delete = OpenAPINode.members([
            ("operationId", .string(operationID("delete", noun))),
            ("summary", .string("Delete \(Self.article(name)) \(name)")),
            ("description", .string(deleteDescription(entity))),
            ("tags", tags),
            ("parameters", [["$ref": "#/components/parameters/IfMatch"]]),
            (
                "responses",
                responses([
                    ("204", ["description": .string("The \(name) is deleted.")]), ("400", nil), ("404", nil),
                    ("409", nil),
                    ("412", nil), ("422", nil), ("503", nil),
                ])
            ),
        ])
        return ["parameters": Self.objectParameters, "get": read, "patch": update, "put": replace, "delete": delete]
    }

    /// `GET /books/{id}/author` or `/books/{id}/tags`: the objects one relationship holds.
    private mutating func relationshipOperation(
        _ relationship: RelationshipDescription, of name: String, noun: String, tags: OpenAPINode
    ) -> OpenAPINode {
        let property = Self.identifier(relationship.name, capitalized: true)
        let about = relationship.documentation.map { "\n\n" + $0 } ?? ""
        if relationship.isToMany {
            let destination = model.entity(named: relationship.destination)
            return .members([
                ("operationId", .string(operationID("list", noun + property))),
                ("summary", .string("List the \(relationship.name) of \(Self.article(name)) \(name)")),
                (
                    "description",
                    .string(
                        "The \(relationship.destination) objects in the to-many relationship `\(relationship.name)`"
                            + (relationship.isOrdered ? ", in order" : "") + ", a page at a time." + about)
                ),
                ("tags", tags),
                ("parameters", .array(Self.pagingParameters())),
                (
                    "responses",
                    responses([
                        (
                            "200",
                            destination.map { listResponse($0, "A page of \(relationship.destination) objects.") }
                        ),
                        ("400", nil), ("404", nil), ("503", nil),
                    ])
                ),
            ])
        } else {
            return .members([
                ("operationId", .string(operationID("get", noun + property))),
                ("summary", .string("Read the \(relationship.name) of \(Self.article(name)) \(name)")),
                (
                    "description",
                    .string(
                        "The \(relationship.destination) in the to-one relationship `\(relationship.name)`; "
                            + "204 (no body) when there is none; 404 when the \(name) does not exist." + about)
                ),
                ("tags", tags),
                (
                    "responses",
                    responses([
                        (
                            "200",
                            objectResponse(schemaName(relationship.destination), "The \(relationship.destination).")
                        ),
                        ("204", ["description": .string("The \(name) has no \(relationship.name).")]),
                        ("400", nil), ("404", nil), ("503", nil),
                    ])
                ),
            ])
        }
    }

    /// `GET /books/{id}/<fetched property>`: the objects its predicate matches.
    private mutating func fetchedPropertyOperation(
        _ fetched: FetchedPropertyDescription, of name: String, noun: String, tags: OpenAPINode
    ) -> OpenAPINode {
        let property = Self.identifier(fetched.name, capitalized: true)
        let about = fetched.documentation.map { "\n\n" + $0 } ?? ""
        return OpenAPINode.members([
            ("operationId", .string(operationID("list", noun + property))),
            ("summary", .string("List the \(fetched.name) of \(Self.article(name)) \(name)")),
            (
                "description",
                .string(
                    "The fetched property `\(fetched.name)`: the \(fetched.entity) objects matching "
                        + "`\(fetched.predicate)` (`$FETCH_SOURCE` is this \(name)), a page at a time; they may "
                        + "live in another store." + about)
            ),
            ("tags", tags),
            ("parameters", .array(Self.pagingParameters())),
            (
                "responses",
                responses([
                    (
                        "200",
                        model.entity(named: fetched.entity).map {
                            listResponse($0, "A page of \(fetched.entity) objects.")
                        }
                    ),
                    ("400", nil), ("404", nil), ("503", nil),
                ])
            ),
        ])
    }

    /// `POST /books`: one object, with links from the created object to what can be done with it.
    private mutating func createOperation(_ entity: EntityDescription, noun: String, tags: OpenAPINode) -> OpenAPINode {
        let name = entity.name
        let schema = schemaName(name)
        let path = "/" + model.resourcePath(of: name)
        let body: OpenAPINode = [
            "required": true, "content": ["application/json": ["schema": ref(schema + "Create")]],
        ]
        var description =
            "Creates one \(name) and answers with its `Location` and `ETag`; `POST \(path)/_bulk` creates several. "
            + "`Prefer: return=minimal` answers with no body."
        description += uniquenessNote(entity)
        let statuses = createStatuses(entity, description: &description) {
            [
                "description": .string("The created \(name), with its id and version."),
                "headers": [
                    "Location": ["description": "The path of the created object.", "schema": ["type": "string"]],
                    "ETag": ["$ref": "#/components/headers/ETag"],
                ],
                "content": ["application/json": ["schema": ref(schema)]],
                "links": createdLinks(entity, itemPath: path + "/{id}"),
            ]
        }
        return .members([
            ("operationId", .string(operationID("create", noun))),
            ("summary", .string("Create \(Self.article(name)) \(name)")),
            ("description", .string(description)),
            ("tags", tags),
            ("requestBody", body),
            ("responses", responses(statuses)),
        ])
    }

    /// `POST /books/_bulk`: an array of objects, all or none.
    private mutating func bulkCreateOperation(_ entity: EntityDescription, plural: String, tags: OpenAPINode)
        -> OpenAPINode
    {
        let name = entity.name
        let schema = schemaName(name)
        var description =
            "Creates several \(name) objects from an array, all or none: a failing item is named by `index` in "
            + "the problem. `Prefer: return=minimal` answers with no body."
        description += uniquenessNote(entity)
        let statuses = createStatuses(entity, description: &description) {
            [
                "description": .string("The created \(name) objects, in the order given, with ids and versions."),
                "content": ["application/json": ["schema": ["type": "array", "items": ref(schema)]]],
            ]
        }
        return .members([
            ("operationId", .string(operationID("bulkCreate", plural))),
            ("summary", .string("Create several \(name) objects")),
            ("description", .string(description)),
            ("tags", tags),
            (
                "requestBody",
                [
                    "required": true,
                    "content": [
                        "application/json": [
                            "schema": ["type": "array", "minItems": 1, "items": ref(schema + "Create")]
                        ]
                    ],
                ]
            ),
            ("responses", responses(statuses)),
        ])
    }

    /// A create operation's statuses, its 201 answering `created` (abstract entities have none).
    private func createStatuses(
        _ entity: EntityDescription, description: inout String, created: () -> OpenAPINode
    ) -> [(String, OpenAPINode?)] {
        return [("201", created()), ("400", nil), ("409", nil), ("413", nil), ("415", nil), ("422", nil), ("503", nil)]
    }

    /// " Unique together: …" for the description of a create operation, or "".
    private func uniquenessNote(_ entity: EntityDescription) -> String {
        let uniqueness = entity.uniqueness.filter { !$0.isEmpty }
        guard !uniqueness.isEmpty else { return "" }
        return " Unique together: " + uniqueness.map { $0.joined(separator: " + ") }.joined(separator: "; ") + " (409)."
    }

    /// OpenAPI links from a created object to the operations on it and its relationships, by
    /// `operationRef` (the id from the body, the version from the `ETag` for the writes), so that
    /// stateful testing and clients that read links can follow what was just created.
    private func createdLinks(_ entity: EntityDescription, itemPath: String) -> OpenAPINode {
        func pointer(_ path: String, _ method: String) -> OpenAPINode {
            var escaped = ""
            for character in path {
                switch character {
                case "~": escaped += "~0"
                case "/": escaped += "~1"
                default: escaped.append(character)
                }
            }
            return .string("#/paths/" + escaped + "/" + method)
        }
        let id: OpenAPINode = ["id": "$response.body#/_id"]
        let versioned: OpenAPINode = ["id": "$response.body#/_id", "If-Match": "$response.header.ETag"]
        var links: [(key: String, value: OpenAPINode)] = [
            ("Read", ["operationRef": pointer(itemPath, "get"), "parameters": id]),
            ("Update", ["operationRef": pointer(itemPath, "patch"), "parameters": versioned]),
            ("Replace", ["operationRef": pointer(itemPath, "put"), "parameters": versioned]),
            ("Delete", ["operationRef": pointer(itemPath, "delete"), "parameters": versioned]),
        ]
        for relationship in model.relationships(of: entity.name) {
            links.append(
                (
                    Self.identifier(relationship.name, capitalized: true),
                    ["operationRef": pointer(itemPath + "/" + relationship.name, "get"), "parameters": id]
                ))
        }
        return .object(links)
    }

    private func listDescription(_ entity: EntityDescription) -> String {
        var text = entity.documentation.map { $0 + "\n\n" } ?? ""
        text += "A page of \(entity.name) objects"
        let family = model.entityAndSubentities(of: entity.name)
        if family.count > 1 { text += " (including its subentities, with their own members)" }
        text +=
            ". Each filter parameter is `op.value`: `eq`, `neq`, `gt`, `gte`, `lt`, `lte`, `like` and `ilike` (text "
            + "attributes; `*` and `?` are wildcards), `in.(a,b)`, `is.null`, and for Booleans `is.true` and "
            + "`is.false`; `not.` before any of them negates it (`year=not.is.null`). Binary attributes take `eq`, "
            + "`neq`, `in` and `is.null`, JSON ones only `is.null`; each parameter's pattern states the values "
            + "its type takes (a value no store can hold, such as `pages=gt.99999` on a 16-bit integer, compares "
            + "as what it is). A to-one relationship filters "
            + "by the related id. All filters apply together, with `where`, a predicate format string for the rest "
            + "(`AND`, `OR`, `NOT`, `BEGINSWITH`, `CONTAINS[c]`, `IN`, key paths such as `author.name`)."
        return text
    }

    private func deleteDescription(_ entity: EntityDescription) -> String {
        var text = "Deletes the \(entity.name). With `If-Match`, only if it is still at that version (else 412)."
        for relationship in model.relationships(of: entity.name) {
            switch relationship.deleteRule {
            case .cascade: text += " Its \(relationship.name) are deleted too."
            case .deny: text += " Refused with 409 while `\(relationship.name)` holds objects."
            case .nullify, .noAction: break
            }
        }
        return text
    }

    /// `text` with the regular-expression metacharacters escaped.
    static func regexEscaped(_ text: String) -> String {
        var out = ""
        for character in text {
            if "\\^$.|?*+()[]{}/-".contains(character) { out.append("\\") }
            out.append(character)
        }
        return out
    }

    /// `If-Match` and `If-None-Match` as the server reads them (``RESTService/entityTags(_:)``):
    /// `*`, or tags separated by commas, each quoted (`"3"`, `W/"3"`) or a bare version (`3`), where
    /// empty items between commas are skipped but an item of only blanks is refused.
    static let entityTagsPattern: String = {
        let tag = #"[ \t]*((W/)?"[+-]?[0-9]{1,18}"|[+-]?[0-9]{1,18})[ \t]*"#
        return #"^[ \t]*\*[ \t]*$|^[ \t]*,*"# + tag + "(,+" + tag + #")*,*[ \t]*$"#
    }()

    /// Parameters every entity shares.
    var sharedParameters: [(key: String, value: OpenAPINode)] {
        let entityTags = Self.entityTagsPattern
        return [
            (
                "Id",
                [
                    "name": "id", "in": "path", "required": true, "description": "The object's id.",
                    "schema": ["type": "integer", "format": "int64", "minimum": 1],
                ]
            ),
            (
                "Limit",
                [
                    "name": "limit", "in": "query", "required": false, "description": "The most items in the page.",
                    "schema": [
                        "type": "integer", "format": "int32", "minimum": 1,
                        "maximum": .integer(Int64(limits.pageSize)),
                        "default": .integer(Int64(ListQuery.defaultLimit)),
                    ],
                ]
            ),
            (
                "After",
                [
                    "name": "after", "in": "query", "required": false,
                    "description":
                        .string(
                            "A cursor from a `next` link: the page after the last item of the page that gave it, found "
                                + "by that item's sort values and id, so pages do not shift when objects are added or "
                                + "removed before them (with `offset`, that many items further on)."),
                    "schema": ["type": "string", "pattern": .string(ListQuery.cursorPattern)],
                ]
            ),
            (
                "Offset",
                [
                    "name": "offset", "in": "query", "required": false,
                    "description": "How many items to skip (past the cursor's position when `after` is given too).",
                    "schema": ["type": "integer", "format": "int64", "minimum": 0],
                ]
            ),
            (
                "Count",
                [
                    "name": "count", "in": "query", "required": false,
                    "description": "`exact` fills in `total`, the number of matching items.",
                    "schema": ["type": "string", "enum": ["exact"]],
                ]
            ),
            (
                "IdempotencyKey",
                [
                    "name": "Idempotency-Key", "in": "header", "required": false,
                    "description": .string(
                        "Any 1 to 255 visible ASCII characters naming this write: a retry with the same key and the "
                            + "same request gets the first answer again (with `Idempotent-Replayed: true`) and changes "
                            + "nothing; the same key for another request is 422; while the first still runs, 409. "
                            + "Kept per token for 24 hours, across restarts."),
                    "schema": ["type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"],
                ]
            ),
            (
                "IfMatch",
                [
                    "name": "If-Match", "in": "header", "required": false,
                    "description": .string(
                        "Entity tags (`\"3\"`, comma-separated; a bare `3` is read as `\"3\"`) or `*`: change the object only if its version is one "
                            + "of them, else 412."),
                    "schema": ["type": "string", "pattern": .string(entityTags)],
                ]
            ),
            (
                "IfNoneMatch",
                [
                    "name": "If-None-Match", "in": "header", "required": false,
                    "description": .string(
                        "Entity tags (`\"3\"`, comma-separated; a bare `3` is read as `\"3\"`) or `*`: 304 with no body if the object's version is "
                            + "one of them."),
                    "schema": ["type": "string", "pattern": .string(entityTags)],
                ]
            ),
        ]
    }

    // MARK: - Responses

    /// Responses by status, in order: nil takes the shared response of that status.
    func responses(_ statuses: [(String, OpenAPINode?)]) -> OpenAPINode {
        .object(
            statuses.compactMap { status, node in
                if let node { return (status, node) }
                guard let shared = Self.sharedResponseNames[status] else { return nil }
                return (status, ["$ref": .string("#/components/responses/\(shared)")])
            })
    }

    /// A JSON object response with its `ETag`.
    func objectResponse(_ schema: String, _ description: String) -> OpenAPINode {
        [
            "description": .string(description),
            "headers": ["ETag": ["$ref": "#/components/headers/ETag"]],
            "content": ["application/json": ["schema": ref(schema)]],
        ]
    }

    /// A list envelope response.
    func listResponse(_ entity: EntityDescription, _ description: String) -> OpenAPINode {
        [
            "description": .string(description),
            "content": ["application/json": ["schema": ref(schemaName(entity.name) + "List")]],
        ]
    }

    static let sharedResponseNames: [String: String] = [
        "304": "NotModified", "400": "BadRequest", "404": "NotFound", "405": "MethodNotAllowed", "409": "Conflict",
        "412": "PreconditionFailed", "413": "ContentTooLarge", "415": "UnsupportedMediaType",
        "422": "UnprocessableContent", "503": "ServiceUnavailable",
    ]

    static var sharedHeaders: [(key: String, value: OpenAPINode)] {
        [
            (
                "ETag",
                [
                    "description": "The object's version as an entity tag, e.g. `\"3\"`.",
                    "required": true,
                    "schema": ["type": "string"],
                ]
            )
        ]
    }

    static var sharedResponses: [(key: String, value: OpenAPINode)] {
        func problem(_ description: String) -> OpenAPINode {
            [
                "description": .string(description),
                "content": ["application/problem+json": ["schema": ["$ref": "#/components/schemas/Problem"]]],
            ]
        }
        return [
            (
                "NotModified",
                [
                    "description": "The object still has a version named in `If-None-Match`; no body.",
                    "headers": ["ETag": ["$ref": "#/components/headers/ETag"]],
                ]
            ),
            (
                "BadRequest",
                problem("A malformed request: a query parameter, header or JSON body the server cannot read.")
            ),
            ("NotFound", problem("No such object, or no related object.")),
            (
                "MethodNotAllowed",
                problem("A batch operation's method does not apply to its path; `operation` names it.")
                    .setting(
                        "headers",
                        ["Allow": ["description": "The methods the path accepts.", "schema": ["type": "string"]]])
            ),
            (
                "Conflict",
                problem(
                    "A uniqueness constraint or a deny delete rule refuses the change, the body refers to a related object that does not exist (or was deleted meanwhile), or the change would leave another stored object without a required relationship (or with too few or too many related objects)."
                )
            ),
            (
                "PreconditionFailed",
                problem("`If-Match` names a version the object no longer has; `currentVersion` gives its version.")
            ),
            ("ContentTooLarge", problem("The request body is larger than the server accepts.")),
            ("UnsupportedMediaType", problem("The body is not sent as `application/json`.")),
            ("UnprocessableContent", problem("The body does not fit the model; `errors` names each failing field.")),
            ("ServiceUnavailable", problem("The stores are still loading.")),
        ]
    }

    // MARK: - System paths

    /// `/_batch`, `/`, `/live`, `/ready`, `/metrics`, `/openapi.json` and `/openapi.yaml`.
    mutating func systemPaths() -> [(key: String, value: OpenAPINode)] {
        let system: OpenAPINode = ["System"]
        func status(_ value: String) -> OpenAPINode {
            [
                "description": .string("The service is \(value)."),
                "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Status"]]],
            ]
        }
        let batch = batchOperation()
        func get(_ id: String, _ summary: String, _ description: String, _ responses: OpenAPINode) -> OpenAPINode {
            [
                "get": .members([
                    ("operationId", .string(id)), ("summary", .string(summary)), ("description", .string(description)),
                    ("tags", system), ("responses", responses),
                ])
            ]
        }
        let text: (String, String) -> OpenAPINode = { type, description in
            ["description": .string(description), "content": [type: ["schema": ["type": "string"]]]]
        }
        return [
            ("/_batch", ["post": batch]),
            (
                "/",
                get(
                    operationID("get", "Index"), "The service index",
                    "The model, its entities and their paths, and the stores.",
                    responses([
                        (
                            "200",
                            [
                                "description": "The index.",
                                "content": [
                                    "application/json": ["schema": ["$ref": "#/components/schemas/ServiceIndex"]]
                                ],
                            ]
                        ), ("503", nil),
                    ]))
            ),
            (
                "/live",
                get(
                    operationID("get", "Live"), "Liveness", "200 as soon as the server listens.",
                    responses([("200", status("live"))]))
            ),
            (
                "/ready",
                get(
                    operationID("get", "Ready"), "Readiness", "200 once every store is loaded, 503 before.",
                    responses([("200", status("ready")), ("503", nil)]))
            ),
            (
                "/metrics",
                get(
                    operationID("get", "Metrics"), "Prometheus metrics",
                    "Request counts by route, method and status, a latency histogram, saves and file sizes per store.",
                    responses([
                        ("200", text("text/plain", "The Prometheus text exposition (version 0.0.4).")), ("503", nil),
                    ]))
            ),
            (
                "/openapi.json",
                get(
                    operationID("get", "OpenApiJson"), "This document, as JSON", "The OpenAPI document of this API.",
                    responses([
                        (
                            "200",
                            [
                                "description": "The document.",
                                "content": ["application/json": ["schema": ["type": "object"]]],
                            ]
                        ), ("503", nil),
                    ]))
            ),
            (
                "/openapi.yaml",
                get(
                    operationID("get", "OpenApiYaml"), "This document, as YAML", "The OpenAPI document of this API.",
                    responses([
                        ("200", ["description": "The document, as YAML text.", "content": ["application/yaml": [:]]]),
                        ("503", nil),
                    ]))
            ),
        ]
    }

    /// `POST /_batch`: several operations in one transaction.
    private mutating func batchOperation() -> OpenAPINode {
        return OpenAPINode.members([
            ("operationId", .string(operationID("batch", ""))),
            ("summary", "Run several operations in one transaction"),
            (
                "description",
                .string(
                    "Runs the operations in order in one child context and saves them all or none: the answer is every "
                        + "operation's result, or the first failing operation's problem with its index in "
                        + "`operation`. A body may refer to an object created by an earlier operation as "
                        + "`{\"$ref\": n}`.")
            ),
            ("tags", ["Batch"]),
            (
                "requestBody",
                [
                    "required": true,
                    "content": ["application/json": ["schema": ["$ref": "#/components/schemas/BatchRequest"]]],
                ]
            ),
            (
                "responses",
                responses([
                    (
                        "200",
                        [
                            "description": "Every operation succeeded and the batch is saved.",
                            "content": ["application/json": ["schema": ["$ref": "#/components/schemas/BatchResponse"]]],
                        ]
                    ),
                    ("400", nil), ("404", nil), ("405", nil), ("409", nil), ("412", nil), ("413", nil), ("415", nil),
                    ("422", nil), ("503", nil),
                ])
            ),
        ])
    }
}
