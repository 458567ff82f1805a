import Strata

/// The OpenAPI 3.0.3 document of the REST API that `strata serve` derives from a model
/// (DESIGN.md §4): one read, create and patch schema and one list envelope per entity, every
/// route with its parameters, headers and every status the server can answer, and the system
/// paths. It is what the server serves at `/openapi.json` and `/openapi.yaml` and what
/// `strata openapi` prints.
///
/// The output is deterministic: the same model always gives the same bytes. Paths follow the
/// entities' declaration order and properties their attributes' order; component names are
/// sorted.
public enum OpenAPIGenerator {
    /// The document as a JSON value.
    public static func document(for model: ObjectModel, access: OpenAPIAccess = .anonymous) -> JSONValue {
        OpenAPIBuilder.served(model, access).json
    }

    /// The document as indented JSON text, ending in a newline.
    public static func json(for model: ObjectModel, access: OpenAPIAccess = .anonymous) -> String {
        OpenAPIBuilder.served(model, access).prettyJSON
    }

    /// The document as YAML text, ending in a newline.
    public static func yaml(for model: ObjectModel, access: OpenAPIAccess = .anonymous) -> String {
        OpenAPIYAML.text(OpenAPIBuilder.served(model, access))
    }
}

extension OpenAPIBuilder {
    /// The document a server with `access` serves.
    static func served(_ model: ObjectModel, _ access: OpenAPIAccess) -> OpenAPINode {
        let document = restricted(document(for: model, limits: access.limits), access.entities, model: model)
        return secured(idempotent(historical(document, access, model: model)), access)
    }
}

/// Builds the document for one model: keeps operation ids and component names unique.
struct OpenAPIBuilder {
    let model: ObjectModel
    /// The maxima the schemas state.
    var limits = RequestLimits()
    /// Operation ids handed out so far.
    var operationIDs: Set<String> = []
    /// Component schema name of each entity's read schema, and the names taken.
    private(set) var schemaNames: [String: String] = [:]
    private var takenSchemaNames: Set<String> = []

    init(model: ObjectModel) {
        self.model = model
        takenSchemaNames = Set(
            (Self.problemSchemas + Self.batchSchemas(RequestLimits()) + Self.systemSchemas).map(\.key)
                + Self.changeSchemaNames)
        // `/_changes`, added when the server records history, keeps its name.
        operationIDs = ["getChanges"]
        for entity in model.entities {
            let base = Self.identifier(entity.name, capitalized: true)
            var name = base
            var counter = 2
            // An entity's five schemas (`Book`, `BookCreate`, `BookPatch`, `BookList`, `BookGroup`)
            // take their names together, after the shared ones.
            while ["", "Create", "Patch", "List", "Group"].contains(where: { takenSchemaNames.contains(name + $0) }) {
                name = base + "Entity" + (counter == 2 ? "" : String(counter))
                counter += 1
            }
            for suffix in ["", "Create", "Patch", "List", "Group"] { takenSchemaNames.insert(name + suffix) }
            schemaNames[entity.name] = name
        }
    }

    /// The component name of the read schema of `entity` (`Book`); the others add `Create`,
    /// `Patch` and `List`.
    func schemaName(_ entity: String) -> String { schemaNames[entity] ?? Self.identifier(entity, capitalized: true) }

    /// A `$ref` to a component schema.
    func ref(_ name: String) -> OpenAPINode { ["$ref": .string("#/components/schemas/\(name)")] }

    /// "an" before a name that starts with a vowel, else "a".
    static func article(_ name: String) -> String {
        "AEIOUaeiou".contains(name.first ?? "x") ? "an" : "a"
    }

    /// `text` reduced to letters, digits and `_`, with the first letter uppercased or not.
    static func identifier(_ text: String, capitalized: Bool) -> String {
        var result = String(
            text.unicodeScalars.filter {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
            })
        if result.isEmpty { result = "Item" }
        let first = String(result.prefix(1))
        return (capitalized ? first.uppercased() : first.lowercased()) + result.dropFirst()
    }

    /// `search-logs` → `SearchLogs`: a resource path as a capitalized identifier.
    static func pascalCase(_ path: String) -> String {
        let words = path.split(whereSeparator: { !($0.isASCII && ($0.isLetter || $0.isNumber)) })
        return words.map { identifier(String($0), capitalized: true) }.joined()
    }

    /// `verb` + `noun` as an operation id, made unique with a number if it is taken.
    mutating func operationID(_ verb: String, _ noun: String) -> String {
        let base = verb + noun
        var candidate = base
        var counter = 2
        while operationIDs.contains(candidate) {
            candidate = base + String(counter)
            counter += 1
        }
        operationIDs.insert(candidate)
        return candidate
    }

    /// The whole document for `model`.
    static func document(for model: ObjectModel, limits: RequestLimits = RequestLimits()) -> OpenAPINode {
        var builder = OpenAPIBuilder(model: model)
        builder.limits = limits
        return builder.build()
    }

    /// The whole document.
    mutating func build() -> OpenAPINode {
        var paths: [(key: String, value: OpenAPINode)] = []
        var schemas: [(key: String, value: OpenAPINode)] = []
        for entity in model.entities {
            paths += entityPaths(entity)
            let name = schemaName(entity.name)
            schemas.append((name, readSchema(entity)))
            schemas.append((name + "Create", writeSchema(entity, mode: .create)))
            schemas.append((name + "Patch", writeSchema(entity, mode: .patch)))
            schemas.append((name + "List", listSchema(entity)))
            schemas.append((name + "Group", groupSchema(entity)))
        }
        paths += systemPaths()
        paths += diagramPaths()
        paths += exportPaths()
        let resources = model.entities.map { model.resourcePath(of: $0.name) }
        schemas += Self.problemSchemas + Self.batchSchemas(limits, resources: resources) + Self.systemSchemas
        var tags: [OpenAPINode] = model.entities.map { entity in
            .members([
                ("name", .string(entity.name)),
                (
                    "description",
                    .string(
                        entity.documentation
                            ?? "\(entity.name) objects at `/\(model.resourcePath(of: entity.name))`.")
                ),
            ])
        }
        tags.append(["name": "Batch", "description": "Several writes in one transaction."])
        tags.append(["name": "System", "description": "The service index, health, metrics and this document."])
        return .members([
            ("openapi", "3.0.3"),
            (
                "info",
                .members([
                    ("title", .string("\(model.name) API")),
                    ("version", .string(model.version ?? "0")),
                    ("description", .string(infoDescription)),
                ])
            ),
            ("servers", [["url": "/", "description": "The server that answers this document."]]),
            ("tags", .array(tags)),
            ("paths", .object(paths)),
            (
                "components",
                .members([
                    ("schemas", .object(schemas.sorted { $0.key < $1.key })),
                    ("parameters", .object(sharedParameters.sorted { $0.key < $1.key })),
                    ("headers", .object(Self.sharedHeaders.sorted { $0.key < $1.key })),
                    ("responses", .object(Self.sharedResponses.sorted { $0.key < $1.key })),
                ])
            ),
        ])
    }

    /// The introduction: the conventions every path follows.
    var infoDescription: String {
        """
        The REST API that `strata serve` derives from the \(model.name) model (model hash \(model.versionHash)).

        Every entity is a collection (`GET` to list, `POST` to create one object, `POST …/_bulk` to create an \
        array of them, all or none) with \
        objects under it (`GET`, `PATCH` as a JSON Merge Patch, `PUT` to replace, `DELETE`), and every \
        relationship and fetched property is a sub-resource of an object. An object is \
        `{"_id": 42, "_version": 3, ...attributes, "author": 7, "tags": [1, 2]}` (`_id` and `_version` are the server's own members in every entity, so they never collide with an attribute named `id` or `version`): every attribute is present \
        (null when unset), a to-one relationship is the related id or null, a to-many relationship an array of \
        ids, set the same way on write.

        `ETag` is an object's version (`"3"`); send it back in `If-Match` to change an object only if nobody \
        else has (412 otherwise), or in `If-None-Match` to read it only if it changed (304 otherwise).

        Lists answer `{"items": [...], "next": ..., "total": ...}`, 50 items by default (`limit`, up to 1000); \
        `next` is the path of the following page, with an `after` cursor that holds the last item's sort values \
        and id, so pages do not shift when objects are added before them. `offset` skips items (past the \
        cursor when both are given), and `count=exact` fills in `total`.

        Errors are RFC 9457 problems (`application/problem+json`), with `errors` naming each failing field. \
        A request body larger than the server's limit (1 MiB by default) gets 413, and every path but `/live` \
        answers 503 until the stores are loaded.
        """
    }
}
