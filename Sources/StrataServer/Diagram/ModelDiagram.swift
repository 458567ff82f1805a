import Strata

/// A picture of a model: one group per configuration (labelled with the store that holds it),
/// a card per entity (attributes with their types and optionality, relationships with their
/// cardinality and delete rule, abstract and parent marks), relationship edges with crow's-foot
/// ends, inheritance edges, and the fetched properties that reach across stores as dashed edges.
///
/// Three renderings of the same picture: ``svg`` (drawn here, no layout engine needed; dark mode
/// through `prefers-color-scheme`; each card links to its entity's docs), ``mermaid`` (an
/// `erDiagram` for Markdown renderers) and ``dot`` (for Graphviz). The server answers them at
/// `/_model/diagram.svg`, `.mmd` and `.dot`; `strata diagram` prints them.
public struct ModelDiagram: Sendable {
    /// A configuration and the entities drawn in its box.
    struct Group: Sendable {
        let name: String
        let store: String?
        let entities: [EntityDescription]
    }

    /// A relationship drawn once for it and its inverse.
    struct Edge: Sendable {
        let from: String
        let to: String
        /// The relationship from `from` to `to`, and its inverse when there is one.
        let forward: RelationshipDescription
        let inverse: RelationshipDescription?
    }

    let model: ObjectModel
    let groups: [Group]
    let edges: [Edge]
    let docsLink: @Sendable (String) -> String
    /// Entities left out, and every relationship and fetched property leading to them.
    let hidden: Set<String>

    /// A diagram of `model`.
    /// - Parameters:
    ///   - stores: a label per configuration name for the store that holds it (its type and
    ///     file, or PostgreSQL host and database); configurations without one are labelled with
    ///     their name only.
    ///   - hidden: entities left out (a server's hidden entities).
    ///   - docsLink: the link of an entity's card.
    public init(
        model: ObjectModel, stores: [String: String] = [:], hidden: Set<String> = [],
        docsLink: @escaping @Sendable (String) -> String = { "/docs#/\($0)" }
    ) {
        self.model = model
        self.docsLink = docsLink
        self.hidden = hidden
        let shown = model.entities.filter { !hidden.contains($0.name) }
        var placed: Set<String> = []
        var groups: [Group] = []
        for configuration in model.configurations where configuration.name != ObjectModel.defaultConfiguration {
            let members = Set(configuration.entities)
            let entities = shown.filter { members.contains($0.name) && !placed.contains($0.name) }
            placed.formUnion(entities.map(\.name))
            groups.append(Group(name: configuration.name, store: stores[configuration.name], entities: entities))
        }
        let rest = shown.filter { !placed.contains($0.name) }
        if !rest.isEmpty || groups.isEmpty {
            let name = ObjectModel.defaultConfiguration
            groups.append(Group(name: name, store: stores[name], entities: rest))
        }
        self.groups = groups
        let names = Set(shown.map(\.name))
        var edges: [Edge] = []
        var drawn: Set<String> = []
        for entity in shown {
            for relationship in entity.relationships where names.contains(relationship.destination) {
                let key = entity.name + "." + relationship.name
                guard !drawn.contains(key) else { continue }
                drawn.insert(key)
                let inverse = relationship.inverse.flatMap { model.relationship($0, of: relationship.destination) }
                if let inverse { drawn.insert(relationship.destination + "." + inverse.name) }
                edges.append(
                    Edge(from: entity.name, to: relationship.destination, forward: relationship, inverse: inverse))
            }
        }
        self.edges = edges
    }

    /// The entities drawn, in group order.
    var entities: [EntityDescription] { groups.flatMap(\.entities) }

    /// The group label: the configuration and its store.
    static func label(_ group: Group) -> String {
        group.store.map { "\(group.name) — \($0)" } ?? group.name
    }

    /// One attribute line: `name: type`, with `?` when optional and `= default` when it has one.
    static func line(_ attribute: AttributeDescription) -> String {
        var text = attribute.name + ": " + attribute.type.rawValue + (attribute.isOptional ? "?" : "")
        if attribute.derivation != nil { text += " (derived)" }
        return text
    }

    /// One relationship line: `name → Destination [0..*] cascade`.
    static func line(_ relationship: RelationshipDescription) -> String {
        var text = relationship.name + " → " + relationship.destination + " " + cardinality(relationship)
        if relationship.isOrdered { text += " ordered" }
        if relationship.deleteRule != .nullify { text += " " + relationship.deleteRule.rawValue }
        return text
    }

    /// `[0..1]`, `[1]`, `[0..*]`, `[1..*]` or `[2..5]`.
    static func cardinality(_ relationship: RelationshipDescription) -> String {
        guard relationship.isToMany else { return relationship.isOptional ? "[0..1]" : "[1]" }
        let low = relationship.minCount ?? (relationship.isOptional ? 0 : 1)
        let high = relationship.maxCount.map(String.init) ?? "*"
        return "[\(low)..\(high)]"
    }

    /// The fetched properties drawn as dashed edges: (entity, property) pairs whose target is drawn.
    var fetchedEdges: [(from: String, property: FetchedPropertyDescription)] {
        let names = Set(entities.map(\.name))
        return entities.flatMap { entity in
            entity.fetchedProperties.filter { names.contains($0.entity) }.map { (entity.name, $0) }
        }
    }

    /// An entity's relationships and fetched properties that lead to entities drawn.
    func shownRelationships(_ entity: EntityDescription) -> [RelationshipDescription] {
        entity.relationships.filter { !hidden.contains($0.destination) }
    }

    func shownFetchedProperties(_ entity: EntityDescription) -> [FetchedPropertyDescription] {
        entity.fetchedProperties.filter { !hidden.contains($0.entity) }
    }

    /// The group an entity is drawn in.
    func group(of entity: String) -> String? {
        groups.first { $0.entities.contains { $0.name == entity } }?.name
    }

    // MARK: - Mermaid

    /// A Mermaid `erDiagram`: Mermaid has no boxes for groups, so each entity names its
    /// configuration in a comment, and fetched properties and inheritance are dashed
    /// (non-identifying) relationships.
    public var mermaid: String {
        var out = "erDiagram\n"
        for group in groups {
            out += "    %% configuration \(Self.label(group))\n"
            for entity in group.entities {
                out += "    \(Self.mermaidName(entity.name)) {\n"
                for attribute in entity.attributes {
                    var comment: [String] = []
                    if attribute.isOptional { comment.append("optional") }
                    if attribute.derivation != nil { comment.append("derived") }
                    out += "        \(attribute.type.rawValue) \(Self.mermaidName(attribute.name))"
                    out += comment.isEmpty ? "\n" : " \"\(comment.joined(separator: ", "))\"\n"
                }
                out += "    }\n"
            }
        }
        for edge in edges {
            let left = edge.inverse.map { Self.mermaidEnd($0, left: true) } ?? "}o"
            let right = Self.mermaidEnd(edge.forward, left: false)
            let names = [edge.forward.name] + (edge.inverse.map { [$0.name] } ?? [])
            out +=
                "    \(Self.mermaidName(edge.from)) \(left)--\(right) \(Self.mermaidName(edge.to)) : "
                + "\"\(names.joined(separator: " / "))\"\n"
        }
        for entity in entities {
            if let parent = entity.parent, entities.contains(where: { $0.name == parent }) {
                out += "    \(Self.mermaidName(entity.name)) |o..|| \(Self.mermaidName(parent)) : \"extends\"\n"
            }
        }
        for (from, property) in fetchedEdges {
            out +=
                "    \(Self.mermaidName(from)) }o..o{ \(Self.mermaidName(property.entity)) : "
                + "\"\(property.name) (fetched)\"\n"
        }
        return out
    }

    /// The Mermaid end of a relationship: `|o`/`o|` zero or one, `||` one, `}o`/`o{` many.
    static func mermaidEnd(_ relationship: RelationshipDescription, left: Bool) -> String {
        switch (relationship.isToMany, relationship.isOptional) {
        case (true, true): left ? "}o" : "o{"
        case (true, false): left ? "}|" : "|{"
        case (false, true): left ? "|o" : "o|"
        case (false, false): "||"
        }
    }

    /// A name Mermaid takes as an identifier.
    static func mermaidName(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" ? $0 : "_" })
    }

    // MARK: - Graphviz

    /// A Graphviz `digraph`: a filled cluster per configuration, an HTML-table node per entity
    /// (with its docs link), crow's-foot arrows, dashed fetched properties, hollow-arrow parents.
    public var dot: String {
        var out = "digraph \"\(Self.dotEscaped(model.name))\" {\n"
        out += "    graph [rankdir=LR, fontname=\"Helvetica\", fontsize=12, compound=true];\n"
        out += "    node [shape=plaintext, fontname=\"Helvetica\", fontsize=11];\n"
        out += "    edge [fontname=\"Helvetica\", fontsize=10, dir=both];\n"
        for (index, group) in groups.enumerated() {
            let tint = Self.tints[index % Self.tints.count]
            out += "    subgraph \"cluster_\(Self.dotEscaped(group.name))\" {\n"
            out += "        label=\"\(Self.dotEscaped(Self.label(group)))\";\n"
            out += "        style=\"rounded,filled\"; fillcolor=\"\(tint.light)\"; color=\"\(tint.edge)\";\n"
            for entity in group.entities {
                out +=
                    "        \"\(Self.dotEscaped(entity.name))\" [URL=\"\(Self.dotEscaped(docsLink(entity.name)))\", "
                out += "label=<\(dotTable(entity))>];\n"
            }
            out += "    }\n"
        }
        for edge in edges {
            let tail = edge.inverse.map(Self.dotArrow) ?? "crowodot"
            let names = [edge.forward.name] + (edge.inverse.map { [$0.name] } ?? [])
            out +=
                "    \"\(Self.dotEscaped(edge.from))\" -> \"\(Self.dotEscaped(edge.to))\" [arrowtail=\(tail), "
                + "arrowhead=\(Self.dotArrow(edge.forward)), label=\"\(Self.dotEscaped(names.joined(separator: " / ")))\"];\n"
        }
        for entity in entities {
            if let parent = entity.parent, entities.contains(where: { $0.name == parent }) {
                out +=
                    "    \"\(Self.dotEscaped(entity.name))\" -> \"\(Self.dotEscaped(parent))\" "
                    + "[dir=forward, arrowhead=empty, label=\"extends\"];\n"
            }
        }
        for (from, property) in fetchedEdges {
            out +=
                "    \"\(Self.dotEscaped(from))\" -> \"\(Self.dotEscaped(property.entity))\" [dir=forward, "
                + "style=dashed, arrowhead=vee, label=\"\(Self.dotEscaped(property.name + " (fetched)"))\"];\n"
        }
        out += "}\n"
        return out
    }

    private func dotTable(_ entity: EntityDescription) -> String {
        var rows = "<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"4\" bgcolor=\"white\">"
        var title = "<b>\(Self.xmlEscaped(entity.name))</b>"
        if let subtitle = Self.subtitle(entity) { title += "<br/><i>\(Self.xmlEscaped(subtitle))</i>" }
        rows += "<tr><td bgcolor=\"#dfe6ee\">\(title)</td></tr>"
        for attribute in entity.attributes {
            rows += "<tr><td align=\"left\">\(Self.xmlEscaped(Self.line(attribute)))</td></tr>"
        }
        for relationship in shownRelationships(entity) {
            rows += "<tr><td align=\"left\">\(Self.xmlEscaped(Self.line(relationship)))</td></tr>"
        }
        for fetched in shownFetchedProperties(entity) {
            rows += "<tr><td align=\"left\"><i>\(Self.xmlEscaped(fetched.name + " ⇢ " + fetched.entity))</i></td></tr>"
        }
        return rows + "</table>"
    }

    /// Graphviz's arrow for the end a relationship points at.
    static func dotArrow(_ relationship: RelationshipDescription) -> String {
        switch (relationship.isToMany, relationship.isOptional) {
        case (true, true): "crowodot"
        case (true, false): "crowtee"
        case (false, true): "teeodot"
        case (false, false): "teetee"
        }
    }

    /// "abstract · extends Parent", or nil.
    static func subtitle(_ entity: EntityDescription) -> String? {
        var marks: [String] = []
        if entity.isAbstract { marks.append("abstract") }
        if let parent = entity.parent { marks.append("extends " + parent) }
        return marks.isEmpty ? nil : marks.joined(separator: " · ")
    }

    static func dotEscaped(_ text: String) -> String {
        text.reduce(into: "") { out, character in
            switch character {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
    }

    static func xmlEscaped(_ text: String) -> String {
        text.reduce(into: "") { out, character in
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
    }

    /// Group tints: the light fill, the border, and the dark-mode fill.
    static let tints: [(light: String, edge: String, dark: String)] = [
        ("#e8f0fe", "#7aa2e3", "#1c2a44"), ("#e9f7ef", "#6cbf8a", "#183326"), ("#fdf0e6", "#e0a060", "#3a2616"),
        ("#f4ecfb", "#a98bd6", "#2c2140"), ("#fdeef1", "#e08a9b", "#3d1d25"), ("#eef6f8", "#6fb0c0", "#173038"),
    ]
}
