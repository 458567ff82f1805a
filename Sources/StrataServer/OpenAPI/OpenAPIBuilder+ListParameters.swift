import Strata

/// The query parameters of a list: filters, order, named queries, `where` and paging.
extension OpenAPIBuilder {
    /// The query parameter names a list reserves for itself.
    static let reservedQueryNames: Set<String> = [
        "where", "order", "limit", "after", "offset", "count", ListFacets.parameter, ListAggregates.parameter,
        ListAggregates.havingParameter,
    ]

    /// One `attr=op.value` query parameter per attribute and to-one relationship.
    func filterParameters(_ entity: EntityDescription) -> [OpenAPINode] {
        var parameters: [OpenAPINode] = [
            .members([
                ("name", .string(ObjectCodec.idKey)),
                ("in", "query"),
                (
                    "description",
                    .string("Filter on the objects' own ids: `eq.7`, `neq.7` or `in.(1,2)`, with `not.` to negate.")
                ),
                ("required", false),
                (
                    "schema",
                    ["type": "string", "pattern": .string(FilterSyntax.idPattern(null: false))]
                ),
                ("example", "in.(1,2)"),
            ])
        ]
        // The server refuses exactly the values these patterns do not match (``FilterSyntax``).
        for attribute in model.attributes(of: entity.name) where !Self.reservedQueryNames.contains(attribute.name) {
            let example: String =
                switch attribute.type {
                case .string: "ilike.*a*"
                case .uri: "like.https://*"
                case .integer16, .integer32, .integer64: "gte.1"
                case .double, .float: "lt.2.5"
                case .decimal: "gte.10.00"
                case .boolean: "is.true"
                case .date: "gt.2024-01-01T00:00:00Z"
                case .uuid: "eq.123e4567-e89b-12d3-a456-426614174000"
                case .binary, .json: "not.is.null"
                }
            let about = attribute.documentation.map { " " + $0 } ?? ""
            parameters.append(
                .members([
                    ("name", .string(attribute.name)),
                    ("in", "query"),
                    (
                        "description",
                        .string(
                            "Filter on \(attribute.name): "
                                + "\(FilterSyntax.describe(attribute.type, searchable: attribute.isSearchable)); "
                                + "e.g. `\(example)`.\(about)")
                    ),
                    ("required", false),
                    (
                        "schema",
                        [
                            "type": "string",
                            "pattern": .string(
                                FilterSyntax.pattern(attribute.type, searchable: attribute.isSearchable)),
                        ]
                    ),
                    ("example", .string(example)),
                ]))
        }
        for relationship in model.relationships(of: entity.name)
        where !relationship.isToMany && !Self.reservedQueryNames.contains(relationship.name) {
            parameters.append(
                .members([
                    ("name", .string(relationship.name)),
                    ("in", "query"),
                    (
                        "description",
                        .string(
                            "Filter on the related \(relationship.destination) id: `eq.7`, `neq.7`, `in.(1,2)` "
                                + "(`null` may be an item), `is.null`, with `not.` to negate; an id no object has "
                                + "matches nothing.")
                    ),
                    ("required", false),
                    ("schema", ["type": "string", "pattern": .string(FilterSyntax.idPattern(null: true))]),
                    ("example", "eq.1"),
                ]))
        }
        return parameters
    }

    /// `order=year.desc,title`: attributes, each optionally `.asc` or `.desc`.
    func orderParameter(_ entity: EntityDescription) -> OpenAPINode {
        var names = model.attributes(of: entity.name).map(\.name) + [ObjectCodec.idKey]
        if FilterSyntax.ranks(entity.name, model: model) { names.append(FilterSyntax.rankName) }
        let alternatives = names.map(Self.regexEscaped).joined(separator: "|")
        // With `select`, aggregates too (see ``ListAggregates``).
        let key = "(" + alternatives + "|" + aggregatePattern(entity) + #")(\.(asc|desc))?"#
        return .members([
            ("name", "order"),
            ("in", "query"),
            (
                "description",
                .string(
                    "Sort keys, comma-separated: attributes or `_id`, each optionally followed by `.asc` (the "
                        + "default) or `.desc`, e.g. `\(names.first.map { $0 + ".desc" } ?? "")`; with `select`, "
                        + "grouped columns and aggregates (`count().desc`) instead; at most "
                        + "\(limits.orderKeys) keys."
                        + (FilterSyntax.ranks(entity.name, model: model)
                            ? " `rank` sorts by relevance to the text search filters (fts, plfts, phfts, wfts), the "
                                + "most relevant first (`rank.asc` reverses it); without one every object ranks 0."
                            : ""))
            ),
            ("required", false),
            (
                "schema",
                names.isEmpty
                    ? ["type": "string"]
                    : [
                        "type": "string",
                        "pattern": .string("^" + key + "(," + key + "){0,\(limits.orderKeys - 1)}$"),
                    ]
            ),
        ])
    }

    /// `facet=year&facet=author`: value counts of the filtered objects, per attribute or to-one
    /// relationship (see ``ListFacets``); absent when the entity has nothing to facet.
    func facetParameters(_ entity: EntityDescription) -> [OpenAPINode] {
        let names = ListFacets.facetableNames(entity.name, model: model)
        guard !names.isEmpty else { return [] }
        let alternatives = names.map(Self.regexEscaped).joined(separator: "|")
        return [
            .members([
                ("name", .string(ListFacets.parameter)),
                ("in", "query"),
                (
                    "description",
                    .string(
                        "Adds `facets` to the answer: for each named attribute or to-one relationship (by related "
                            + "id), how many of the objects the filters match (all of them, not only the page) "
                            + "have each value, the most frequent first, ties by value (null first), at most "
                            + "\(ListFacets.maxValues) values, `truncated` saying whether there are more. Up to "
                            + "\(ListFacets.maxFacets) distinct names, e.g. `facet=\(names[0])`.")
                ),
                ("required", false),
                ("style", "form"),
                ("explode", true),
                (
                    "schema",
                    [
                        "type": "array", "maxItems": .integer(Int64(ListFacets.maxFacets)), "uniqueItems": true,
                        "items": ["type": "string", "pattern": .string("^(" + alternatives + ")$")],
                    ]
                ),
            ])
        ]
    }

    /// `query=<name>` for the model's fetch request templates of `entity`, and a parameter per
    /// variable they use (unless an attribute or a filter already has that name).
    func queryParameters(_ entity: EntityDescription) -> [OpenAPINode] {
        let templates = model.fetchRequestTemplates.filter {
            model.entity(entity.name, isKindOf: $0.entity)
                && ($0.predicate.allSatisfy(\.isWhitespace) || (try? FetchPredicate(format: $0.predicate)) != nil)
        }
        let taken = Set(
            model.attributes(of: entity.name).map(\.name) + model.relationships(of: entity.name).map(\.name))
        guard !templates.isEmpty, !taken.contains("query") else { return [] }
        var parameters: [OpenAPINode] = [
            .members([
                ("name", "query"),
                ("in", "query"),
                (
                    "description",
                    .string(
                        "A named query of the model (a Core Data fetch request template), applied with the other filters: "
                            + templates.map {
                                "`\($0.name)` (\($0.predicate.isEmpty ? "every object" : "`\($0.predicate)`"))"
                            }
                            .joined(separator: ", ") + ". Its `$VARIABLES` are the parameters of the same names.")
                ),
                ("required", false),
                ("schema", ["type": "string", "enum": .array(templates.map { .string($0.name) })]),
            ])
        ]
        var seen = taken.union(Self.reservedQueryNames)
        for template in templates {
            guard let predicate = try? FetchPredicate(format: template.predicate) else { continue }
            for variable in predicate.variableNames where seen.insert(variable).inserted {
                parameters.append(
                    .members([
                        ("name", .string(variable)),
                        ("in", "query"),
                        ("description", .string("The value of `$\(variable)` for `query=\(template.name)`.")),
                        ("required", false),
                        ("schema", ["type": "string"]),
                    ]))
            }
        }
        return parameters
    }

    /// `where=<predicate format string>`.
    func whereParameter(_ entity: EntityDescription) -> OpenAPINode {
        let composite = model.attributes(of: entity.name).first { $0.isComposite }
        let elements = composite.flatMap { attribute in
            attribute.compositeLeaves.first.map { leaf in
                " A composite's elements are read by key path, e.g. `\(([attribute.name] + leaf.path).joined(separator: "."))`."
            }
        }
        return .members([
            ("name", "where"),
            ("in", "query"),
            (
                "description",
                .string(
                    "A predicate format string, as Core Data writes them: comparisons, `BEGINSWITH`, `ENDSWITH`, "
                        + "`CONTAINS`, `LIKE`, `MATCHES`, `IN`, `BETWEEN`, `AND`, `OR`, `NOT`, `[c]` and `[d]`, "
                        + "key paths through to-one relationships, `ANY` and `ALL` over to-many ones, `nil`. "
                        + "No control characters: a string literal writes one as an escape (`\\n`)."
                        + (elements ?? ""))
            ),
            ("required", false),
            // A grammar no pattern states; the pattern says what the server refuses before parsing.
            ("schema", ["type": "string", "pattern": .string(FilterSyntax.wherePattern)]),
            ("example", model.attributes(of: entity.name).first.map { .string("\($0.name) != nil") }),
        ])
    }

    /// `limit`, `after`, `offset` and `count`.
    static func pagingParameters() -> [OpenAPINode] {
        let names = ["Limit", "After", "Offset", "Count"]
        return names.map { ["$ref": .string("#/components/parameters/\($0)")] }
    }
}
