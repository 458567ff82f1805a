import Strata

/// Which access the served document declares.
public struct OpenAPIAccess: Sendable, Equatable {
    /// Bearer tokens are in force: the document declares the scheme, every operation needs it
    /// (with its 401 and 403 answers) except `/live`, `/ready` and, unless `privateDocument`, the
    /// document itself.
    public var bearer: Bool
    /// The document itself needs a token.
    public var privateDocument: Bool
    /// Entities served read-only (only their GET operations) or hidden (absent); others as usual.
    public var entities: [String: EntityAccess]
    /// The server's request limits, for the maxima a schema states (`limit`, a batch's size).
    public var limits = RequestLimits()
    /// The server records history (`strata serve --history`, the default): the document has
    /// `GET /_changes` and the `Strata-History-Token` header.
    public var history = true

    /// Anonymous access: no security scheme.
    public static let anonymous = OpenAPIAccess(bearer: false, privateDocument: false)

    public init(bearer: Bool, privateDocument: Bool, entities: [String: EntityAccess] = [:]) {
        self.bearer = bearer
        self.privateDocument = privateDocument
        self.entities = entities
    }
}

extension OpenAPIBuilder {
    /// `document` without hidden entities (their paths, sub-resources leading to them, schemas and
    /// tags) and with only the reads of read-only ones.
    static func restricted(_ document: OpenAPINode, _ access: [String: EntityAccess], model: ObjectModel)
        -> OpenAPINode
    {
        let hidden = Set(access.filter { $0.value == .hidden }.keys)
        let readOnly = Set(access.filter { $0.value == .readOnly }.keys)
        guard !hidden.isEmpty || !readOnly.isEmpty else { return document }
        var byResource: [String: String] = [:]
        for entity in model.entityNames { byResource[model.resourcePath(of: entity)] = entity }
        var paths: [(key: String, value: OpenAPINode)] = []
        for (path, item) in document["paths"]?.members ?? [] {
            let segments = path.split(separator: "/").map(String.init)
            guard let first = segments.first, let entity = byResource[first] else {
                paths.append((path, item))
                continue
            }
            if hidden.contains(entity) { continue }
            if segments.count == 3 {
                let name = segments[2]
                let destination =
                    model.relationship(name, of: entity)?.destination
                    ?? model.fetchedProperties(of: entity).first { $0.name == name }?.entity
                if let destination, hidden.contains(destination) { continue }
                paths.append((path, item))
                continue
            }
            if readOnly.contains(entity) {
                let writes: Set<String> = ["post", "patch", "put", "delete"]
                paths.append((path, .object(item.members.filter { !writes.contains($0.key) })))
            } else {
                paths.append((path, item))
            }
        }
        let builder = OpenAPIBuilder(model: model)
        var removed: Set<String> = []
        for entity in hidden {
            let name = builder.schemaName(entity)
            removed.formUnion([name, name + "Create", name + "Patch", name + "List", name + "Group"])
        }
        var components = document["components"] ?? .object([])
        let schemas = (components["schemas"]?.members ?? []).filter { !removed.contains($0.key) }
        components = components.setting("schemas", .object(schemas))
        var result = document.setting("paths", .object(paths)).setting("components", components)
        if case .array(let tags)? = document["tags"] {
            result = result.setting(
                "tags",
                .array(
                    tags.filter { tag in
                        guard case .string(let name)? = tag["name"] else { return true }
                        return !hidden.contains(name)
                    }))
        }
        return result
    }

    /// `document` with the `Idempotency-Key` header on every write, and the 409 and 422 it can
    /// bring.
    static func idempotent(_ document: OpenAPINode) -> OpenAPINode {
        let writes: Set<String> = ["post", "patch", "put", "delete"]
        var paths: [(key: String, value: OpenAPINode)] = []
        for (path, item) in document["paths"]?.members ?? [] {
            var members: [(key: String, value: OpenAPINode)] = []
            for (method, operation) in item.members {
                guard writes.contains(method) else {
                    members.append((method, operation))
                    continue
                }
                var parameters: [OpenAPINode] = []
                if case .array(let given)? = operation["parameters"] { parameters = given }
                parameters.append(["$ref": "#/components/parameters/IdempotencyKey"])
                var responses = operation["responses"] ?? .object([])
                if responses["409"] == nil {
                    responses = responses.setting("409", ["$ref": "#/components/responses/Conflict"])
                }
                if responses["422"] == nil {
                    responses = responses.setting("422", ["$ref": "#/components/responses/UnprocessableContent"])
                }
                members.append(
                    (method, operation.setting("parameters", .array(parameters)).setting("responses", responses)))
            }
            paths.append((path, .object(members)))
        }
        return document.setting("paths", .object(paths))
    }

    /// `document` with the bearer scheme of `access` declared, or as it is for anonymous access.
    static func secured(_ document: OpenAPINode, _ access: OpenAPIAccess) -> OpenAPINode {
        guard access.bearer else { return document }
        var open: Set<String> = ["/live", "/ready"]
        if !access.privateDocument { open.formUnion(["/openapi.json", "/openapi.yaml"]) }
        let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch"]
        let problem: OpenAPINode = ["application/problem+json": ["schema": ["$ref": "#/components/schemas/Problem"]]]
        let unauthorized: OpenAPINode = [
            "description": "No bearer token, or one the server does not know.",
            "headers": [
                "WWW-Authenticate": ["description": "`Bearer realm=\"strata\"`", "schema": ["type": "string"]]
            ],
            "content": problem,
        ]
        let forbidden: OpenAPINode = [
            "description": "The token's scopes do not include what the operation needs.",
            "content": problem,
        ]
        var paths: [(key: String, value: OpenAPINode)] = []
        for (path, item) in document["paths"]?.members ?? [] {
            var members: [(key: String, value: OpenAPINode)] = []
            for (method, operation) in item.members {
                guard methods.contains(method) else {
                    members.append((method, operation))
                    continue
                }
                if open.contains(path) {
                    members.append((method, operation.setting("security", .array([]))))
                    continue
                }
                let scope = path == "/metrics" ? "admin" : (method == "get" || method == "head") ? "read" : "write"
                var operation = operation
                var responses = operation["responses"] ?? .object([])
                responses = responses.setting("401", ["$ref": "#/components/responses/Unauthorized"])
                responses = responses.setting("403", ["$ref": "#/components/responses/Forbidden"])
                operation = operation.setting("responses", responses)
                let description = operation["description"].flatMap { node -> String? in
                    if case .string(let text) = node { return text }
                    return nil
                }
                operation = operation.setting(
                    "description",
                    .string((description.map { $0 + "\n\n" } ?? "") + "Needs a token with scope `\(scope)`."))
                members.append((method, operation))
            }
            paths.append((path, .object(members)))
        }
        var components = document["components"] ?? .object([])
        var responses = components["responses"] ?? .object([])
        responses = responses.setting("Unauthorized", unauthorized).setting("Forbidden", forbidden)
        components = components.setting("responses", responses)
        components = components.setting(
            "securitySchemes",
            [
                "bearerAuth": [
                    "type": "http", "scheme": "bearer",
                    "description":
                        "A token the server was given with --token or its tokens file; scopes read, write (includes read) and admin.",
                ]
            ])
        return document.setting("paths", .object(paths)).setting("security", [["bearerAuth": []]])
            .setting("components", components)
    }
}
