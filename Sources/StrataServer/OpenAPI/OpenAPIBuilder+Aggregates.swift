import Strata

/// The `select` and `having` parameters of a list (see ``ListAggregates``), with patterns that
/// admit what the server takes: each aggregate only on the attributes its function fits.
extension OpenAPIBuilder {
    /// The aggregate expressions of `entity` as a regular expression (no anchors): `count()`,
    /// `col.count()` on any attribute or to-one relationship, `sum`/`avg` on numbers, `min`/`max`
    /// on numbers (and, unless `numbersOnly`, dates and strings).
    func aggregatePattern(_ entity: EntityDescription, numbersOnly: Bool = false) -> String {
        let attributes = model.attributes(of: entity.name).filter { !$0.isComposite }
        let toOne = model.relationships(of: entity.name).filter { !$0.isToMany }.map(\.name)
        func names(_ list: [String]) -> String { "(" + list.map(Self.regexEscaped).joined(separator: "|") + ")" }
        var alternatives = [#"count\(\)"#]
        let countable = attributes.map(\.name) + toOne
        if !countable.isEmpty { alternatives.append(names(countable) + #"\.count\(\)"#) }
        let numeric = attributes.filter { $0.type.isNumeric }.map(\.name)
        if !numeric.isEmpty { alternatives.append(names(numeric) + #"\.(sum|avg|min|max)\(\)"#) }
        let ordered = attributes.filter { $0.type == .date || $0.type == .string }.map(\.name)
        if !numbersOnly && !ordered.isEmpty { alternatives.append(names(ordered) + #"\.(min|max)\(\)"#) }
        return "(" + alternatives.joined(separator: "|") + ")"
    }

    /// The number of a `having` comparison, as the server reads it (``ListAggregates/number(_:)``).
    static let havingNumber = #"-?[0-9]{1,18}(\.[0-9]{1,18})?"#

    /// `select=` and `having=`.
    func aggregateParameters(_ entity: EntityDescription) -> [OpenAPINode] {
        let plain = ListFacets.facetableNames(entity.name, model: model).map(Self.regexEscaped)
        let alias = "([A-Za-z_][A-Za-z0-9_]{0,63}:)?"
        let aggregate = alias + aggregatePattern(entity)
        let item =
            plain.isEmpty
            ? aggregate : alias + "(" + plain.joined(separator: "|") + "|" + aggregatePattern(entity) + ")"
        let leading =
            plain.isEmpty
            ? "" : "(" + alias + "(" + plain.joined(separator: "|") + "),){0,\(ListAggregates.maxLeading)}"
        let select = "^" + leading + aggregate + "(," + item + "){0,\(ListAggregates.maxTrailing)}$"
        let comparison =
            aggregatePattern(entity, numbersOnly: true) + #"\.(eq|neq|gt|gte|lt|lte)\."# + Self.havingNumber
        let example = plain.first.map { "\($0),count()" } ?? "count()"
        return [
            .members([
                ("name", .string(ListAggregates.parameter)),
                ("in", "query"),
                (
                    "description",
                    .string(
                        "Groups instead of objects (PostgREST's aggregate functions): a comma-separated list of "
                            + "plain columns (attributes or to-one relationships, the grouping) and aggregates: "
                            + "`count()` (the objects of a group), `col.count()` (those with a value), `col.sum()` "
                            + "and `col.avg()` (numbers), `col.min()` and `col.max()` (numbers, dates, strings); "
                            + "`alias:` before an item names its member (else a plain column keeps its name and an "
                            + "aggregate takes its function's: `count`, `sum`, …; two members of one name are a "
                            + "400). At least one aggregate; at most \(ListAggregates.maxLeading) plain columns "
                            + "before the first aggregate and \(ListAggregates.maxTrailing) items after it. The "
                            + "filters and `where` choose the objects before grouping; `order` sorts the groups by "
                            + "grouped columns and aggregates (`order=count().desc`), `having` filters them, "
                            + "`limit`/`offset`/`after` page them and `count=exact` counts them. Each item of the "
                            + "answer is one group: `{\"year\": 1969, \"count\": 2}`, values as objects show them "
                            + "(a decimal sum or average as a string, an average of numbers as a number), e.g. `\(example)`."
                    )
                ),
                ("required", false),
                ("schema", ["type": "string", "pattern": .string(select)]),
                ("example", .string(example)),
            ]),
            .members([
                ("name", .string(ListAggregates.havingParameter)),
                ("in", "query"),
                (
                    "description",
                    .string(
                        "With `select`: keeps the groups whose aggregates pass every comma-separated comparison "
                            + "`aggregate.op.number` (`eq`, `neq`, `gt`, `gte`, `lt`, `lte`), e.g. "
                            + "`count().gt.5`; the aggregate need not be selected. At most "
                            + "\(ListAggregates.maxConditions) comparisons.")
                ),
                ("required", false),
                (
                    "schema",
                    [
                        "type": "string",
                        "pattern": .string(
                            "^" + comparison + "(," + comparison + "){0,\(ListAggregates.maxConditions - 1)}$"),
                    ]
                ),
                ("example", "count().gt.5"),
            ]),
        ]
    }

    /// The schema of one group of a list with `select`: its members are the selected names, each a
    /// string, number, Boolean or null.
    func groupSchema(_ entity: EntityDescription) -> OpenAPINode {
        [
            "type": "object",
            "description": .string(
                "With `select`: one group of \(entity.name) objects, a member per selected column or aggregate."),
            "minProperties": 1,
            "additionalProperties": [
                "anyOf": [
                    ["type": "string", "nullable": true], ["type": "number", "nullable": true],
                    ["type": "boolean", "nullable": true],
                ]
            ],
        ]
    }
}
