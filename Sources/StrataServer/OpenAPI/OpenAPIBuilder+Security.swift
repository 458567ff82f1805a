import Strata

/// Which access the served document declares.
public struct OpenAPIAccess: Sendable, Equatable {
    /// Bearer tokens are in force: the document declares the scheme, every operation needs it
    /// (with its 401 and 403 answers) except `/live`, `/ready` and, unless `privateDocument`, the
    /// document itself.
    public var bearer: Bool
    /// The document itself needs a token.
    public var privateDocument: Bool

    /// Anonymous access: no security scheme.
    public static let anonymous = OpenAPIAccess(bearer: false, privateDocument: false)

    public init(bearer: Bool, privateDocument: Bool) {
        self.bearer = bearer
        self.privateDocument = privateDocument
    }
}

extension OpenAPIBuilder {
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
