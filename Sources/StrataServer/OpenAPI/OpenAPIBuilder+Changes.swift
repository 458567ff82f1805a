import Strata

/// `GET /_changes` and the `Strata-History-Token` header, in the document of a server that
/// records history (``OpenAPIAccess/history``).
extension OpenAPIBuilder {
    /// The component names the feed's schemas take (an entity of the same name takes another).
    static let changeSchemaNames = ["Change", "ChangePage"]

    /// `document` with `/_changes`, its schemas and the `Strata-History-Token` header on the
    /// successful responses of every entity operation, `/_batch` and `/_changes`, when `access`
    /// says the server records history; else `document` as it is.
    static func historical(_ document: OpenAPINode, _ access: OpenAPIAccess, model: ObjectModel) -> OpenAPINode {
        guard access.history else { return document }
        let visible = model.entityNames.filter { access.entities[$0] != .hidden }
        let system: Set<String> = ["/", "/live", "/ready", "/metrics", "/openapi.json", "/openapi.yaml"]
        var paths: [(key: String, value: OpenAPINode)] = []
        for (path, item) in document["paths"]?.members ?? [] {
            if system.contains(path) || path.hasPrefix("/_model/") {
                paths.append((path, item))
            } else {
                let described = path == "/_export" ? withExportHistory(item) : item
                paths.append((path, .object(described.members.map { ($0.key, withHistoryToken($0.value)) })))
            }
            if path == "/_batch" { paths.append(("/_changes", ["get": withHistoryToken(changesOperation(visible))])) }
        }
        if !paths.contains(where: { $0.key == "/_changes" }) {
            paths.append(("/_changes", ["get": withHistoryToken(changesOperation(visible))]))
        }
        var components = document["components"] ?? .object([])
        let schemas =
            (components["schemas"]?.members ?? []).map { name, schema in
                guard name == "Problem", let properties = schema["properties"] else { return (name, schema) }
                let oldest: OpenAPINode = [
                    "type": "string", "description": "With 410: the oldest history token still kept.",
                ]
                return (name, schema.setting("properties", properties.setting("oldest", oldest)))
            } + changeSchemas(visible)
        components = components.setting("schemas", .object(schemas.sorted { $0.key < $1.key }))
        let headers = (components["headers"]?.members ?? []) + [("StrataHistoryToken", historyTokenHeader)]
        components = components.setting("headers", .object(headers.sorted { $0.key < $1.key }))
        let responses = (components["responses"]?.members ?? []) + changeResponses
        components = components.setting("responses", .object(responses.sorted { $0.key < $1.key }))
        var result = document.setting("paths", .object(paths)).setting("components", components)
        if case .array(var tags)? = document["tags"] {
            let index = tags.firstIndex { $0["name"] == "System" } ?? tags.endIndex
            tags.insert(
                [
                    "name": "History",
                    "description":
                        "The stores' persistent history: every committed change, in commit order, to follow from a token.",
                ], at: index)
            result = result.setting("tags", .array(tags))
        }
        return result
    }

    /// The `Strata-History-Token` response header.
    static let historyTokenHeader: OpenAPINode = [
        "description": .string(
            "The history token of the state this response shows or produced: follow `/_changes?since=` it to see "
                + "every change committed after it, and none before."),
        "schema": ["type": "string"],
    ]

    /// `operation` with `Strata-History-Token` on each of its successful (2xx) responses.
    static func withHistoryToken(_ operation: OpenAPINode) -> OpenAPINode {
        guard let responses = operation["responses"] else { return operation }
        let header: OpenAPINode = ["$ref": "#/components/headers/StrataHistoryToken"]
        let updated: [(key: String, value: OpenAPINode)] = responses.members.map { status, response in
            guard status.hasPrefix("2"), response["$ref"] == nil else { return (status, response) }
            let headers = (response["headers"]?.members ?? []) + [("Strata-History-Token", header)]
            return (status, response.setting("headers", .object(headers)))
        }
        return operation.setting("responses", .object(updated))
    }

    /// `^,*((A|B)(,+(A|B))*,*)?$`: names of `entities` separated by commas (empty items are
    /// skipped, so an empty list names no entity), as the server reads `entities=`.
    static func entityListPattern(_ entities: [String]) -> String {
        let names =
            "("
            + entities.map { name in
                name.map { $0.isLetter || $0.isNumber || $0 == "_" ? String($0) : "\\" + String($0) }.joined()
            }.joined(separator: "|") + ")"
        return "^,*(" + names + "(,+" + names + ")*,*)?$"
    }

    /// The feed's own error responses.
    static var changeResponses: [(key: String, value: OpenAPINode)] {
        let problem: OpenAPINode = ["application/problem+json": ["schema": ["$ref": "#/components/schemas/Problem"]]]
        return [
            (
                "HistoryExpired",
                [
                    "description": .string(
                        "History Expired: the history after `since` is no longer kept (see --history-retention). "
                            + "Read the objects again, then follow the feed from the token of that read (its "
                            + "Strata-History-Token), or from `oldest`, the oldest token still kept."),
                    "content": problem,
                ]
            ),
            (
                "NoHistory",
                ["description": "The server records no history (strata serve --no-history).", "content": problem]
            ),
        ]
    }

    /// `GET /_changes`.
    static func changesOperation(_ visible: [String]) -> OpenAPINode {
        return .members([
            ("operationId", "getChanges"),
            ("summary", "Follow every committed change"),
            ("description", .string(changesDescription)),
            ("tags", ["History"]),
            ("parameters", .array(changesParameters(visible))),
            (
                "responses",
                .members([
                    (
                        "200",
                        [
                            "description": .string(
                                "The changes after `since`, in commit order, and `next`, where the following page "
                                    + "starts. As `text/event-stream` (asked for with `Accept: text/event-stream`): "
                                    + "one event per change, `event: change` and `data:` the change as JSON, the last "
                                    + "of each transaction with `id:` its token (so a reconnection with "
                                    + "`Last-Event-ID` resumes after a whole transaction), and comment lines (`:`) as "
                                    + "heartbeats while nothing commits."),
                            "content": [
                                "application/json": ["schema": ["$ref": "#/components/schemas/ChangePage"]],
                                "text/event-stream": [
                                    "schema": [
                                        "type": "string",
                                        "description": "Server-sent events, one per change, without end.",
                                    ]
                                ],
                            ],
                            "links": [
                                "next": [
                                    "operationRef": "#/paths/~1_changes/get",
                                    "parameters": ["since": "$response.body#/next"],
                                    "description": "The following page.",
                                ]
                            ],
                        ]
                    ),
                    ("400", ["$ref": "#/components/responses/BadRequest"]),
                    ("404", ["$ref": "#/components/responses/NoHistory"]),
                    ("410", ["$ref": "#/components/responses/HistoryExpired"]),
                    ("503", ["$ref": "#/components/responses/ServiceUnavailable"]),
                ])
            ),
        ])
    }

    /// What `GET /_changes` does.
    static let changesDescription =
        "The stores' persistent history: every committed insert, update (with the names of the properties it "
        + "set) and delete (with a tombstone of the attributes the model preserves), in commit order, after "
        + "`since`. Each change carries `token`, the token right after its transaction: give it back as `since` "
        + "(or `next`, the token after the page) to resume exactly there, across restarts and across the servers "
        + "over one database. Every read and write answers with a `Strata-History-Token` header: list the "
        + "objects, then follow the feed from that token, and nothing is missed. History older than the "
        + "server's retention is pruned; a `since` from before it is 410 (History Expired): read the objects "
        + "again and follow from the token of that read. Hidden entities never appear."

    /// The parameters of `GET /_changes`.
    static func changesParameters(_ visible: [String]) -> [OpenAPINode] {
        [
            [
                "name": "since", "in": "query", "required": false,
                "description": .string(
                    "A history token, as `next`, a change's `token` or a `Strata-History-Token` header gave it: the "
                        + "changes after it. Omitted: from the oldest change kept."),
                "schema": ["type": "string"],
            ],
            [
                "name": "limit", "in": "query", "required": false,
                "description": "The most transactions in the page (their changes come whole).",
                "schema": [
                    "type": "integer", "format": "int32", "minimum": 1,
                    "maximum": .integer(Int64(RESTService.changesPageLimit)),
                    "default": .integer(Int64(RESTService.changesDefaultLimit)),
                ],
            ],
            [
                "name": "entities", "in": "query", "required": false,
                "description": .string(
                    "Only the changes of these entities (comma-separated; subentities come with their parents); "
                        + "omitted: every entity."),
                "schema": ["type": "string", "pattern": .string(entityListPattern(visible))],
            ],
            [
                "name": "include", "in": "query", "required": false,
                "description": .string(
                    "`object`: each change also carries `object`, the object's current state (null when it was "
                        + "deleted since), so no second request is needed."),
                "schema": ["type": "string", "enum": ["object"]],
            ],
            [
                "name": "wait", "in": "query", "required": false,
                "description": .string(
                    "Seconds to wait, when nothing was committed after `since`, for something to be (a long poll); "
                        + "the answer comes as soon as it is, or empty when the time is up. Omitted or 0: answer at "
                        + "once."),
                "schema": ["type": "integer", "format": "int32", "minimum": 0, "maximum": 60],
            ],
            [
                "name": "Last-Event-ID", "in": "header", "required": false,
                "description": .string(
                    "The same as `since`, for an event stream that reconnects: its last event's `id:` is a token."),
                "schema": ["type": "string"],
            ],
        ]
    }

    /// `Change` and `ChangePage`.
    static func changeSchemas(_ visible: [String]) -> [(key: String, value: OpenAPINode)] {
        let object: OpenAPINode = ["type": "object", "additionalProperties": true]
        return [
            (
                "Change",
                [
                    "type": "object",
                    "description": "One object's change in a committed transaction.",
                    "required": ["token", "entity", "_id", "op", "_version", "author", "at"],
                    "properties": .members([
                        (
                            "token",
                            [
                                "type": "string",
                                "description": "The history token right after this change's transaction.",
                            ]
                        ),
                        (
                            "entity",
                            [
                                "type": "string", "enum": .array(visible.map { .string($0) }),
                                "description": "Its entity.",
                            ]
                        ),
                        ("_id", ["type": "integer", "format": "int64", "description": "The object's id."]),
                        (
                            "op",
                            [
                                "type": "string", "enum": ["insert", "update", "delete"],
                                "description": "What happened to it.",
                            ]
                        ),
                        (
                            "_version",
                            [
                                "type": "integer", "format": "int64",
                                "description": "Its version after the change (for a delete, the version deleted).",
                            ]
                        ),
                        (
                            "changed",
                            [
                                "type": "array", "items": ["type": "string"],
                                "description": "For an update: the attributes and relationships it set, by name.",
                            ]
                        ),
                        (
                            "tombstone",
                            object.setting(
                                "description",
                                "For a delete: the attributes the model preserves after deletion, as they were.")
                        ),
                        (
                            "author",
                            [
                                "type": "string", "nullable": true,
                                "description": "The transaction's author, if the writer named one.",
                            ]
                        ),
                        ("at", ["type": "string", "format": "date-time", "description": "When it was committed."]),
                        (
                            "object",
                            object.setting("nullable", true).setting(
                                "description",
                                "With `include=object`: the object as it is now, null when it was deleted since.")
                        ),
                    ]),
                ]
            ),
            (
                "ChangePage",
                [
                    "type": "object",
                    "description": "A page of the feed.",
                    "required": ["changes", "next"],
                    "properties": [
                        "changes": ["type": "array", "items": ["$ref": "#/components/schemas/Change"]],
                        "next": [
                            "type": "string",
                            "description": .string(
                                "The token to ask for the following page with (`since`); the same as `since` when "
                                    + "nothing followed."),
                        ],
                    ],
                ]
            ),
        ]
    }
}
