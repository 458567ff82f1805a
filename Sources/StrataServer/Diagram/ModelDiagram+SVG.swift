import Strata

extension ModelDiagram {
    /// A laid-out card: its entity, lines and rectangle.
    private struct Card {
        let entity: EntityDescription
        let lines: [(text: String, style: String)]
        var x = 0
        var y = 0
        let width: Int
        let height: Int
        var centerX: Int { x + width / 2 }
        var centerY: Int { y + height / 2 }
    }

    private static let lineHeight = 16
    private static let headHeight = 24
    private static let gap = 28
    /// Room between cards for an edge's two ends and its label.
    private static let columnGap = 90
    private static let rowGap = 56
    private static let padding = 18
    private static let titleHeight = 26

    /// The diagram as a standalone SVG document: configuration boxes laid out left to right,
    /// each holding its entity cards in a grid; straight edges between card borders with
    /// crow's-foot ends (a ring for optional, a bar for one), a hollow triangle to a parent, a
    /// dashed arrow for a fetched property. Integer coordinates, so the output is stable.
    public var svg: String {
        var cards: [String: Card] = [:]
        var boxes: [(group: Group, index: Int, x: Int, y: Int, width: Int, height: Int)] = []
        var cursorX = Self.gap
        var tallest = 0
        for (index, group) in groups.enumerated() {
            var laid = group.entities.map(card)
            let columns = max(1, Int(Double(laid.count).squareRoot().rounded(.up)))
            let rows = max(1, (laid.count + columns - 1) / columns)
            var widths = [Int](repeating: 0, count: columns)
            var heights = [Int](repeating: 0, count: rows)
            for (position, card) in laid.enumerated() {
                widths[position % columns] = max(widths[position % columns], card.width)
                heights[position / columns] = max(heights[position / columns], card.height)
            }
            let titleWidth = Self.textWidth(Self.label(group), bold: true) + 2 * Self.padding
            let innerWidth = widths.reduce(0, +) + Self.columnGap * (columns - 1)
            let width = max(innerWidth + 2 * Self.padding, titleWidth, 160)
            let height = Self.titleHeight + heights.reduce(0, +) + Self.rowGap * (rows - 1) + 2 * Self.padding
            for position in laid.indices {
                let column = position % columns
                let row = position / columns
                laid[position].x = cursorX + Self.padding + widths[..<column].reduce(0, +) + Self.columnGap * column
                laid[position].y =
                    Self.gap + Self.titleHeight + Self.padding + heights[..<row].reduce(0, +) + Self.rowGap * row
                cards[laid[position].entity.name] = laid[position]
            }
            boxes.append((group, index, cursorX, Self.gap, width, height))
            cursorX += width + Self.columnGap
            tallest = max(tallest, height)
        }
        let totalWidth = cursorX - Self.gap
        let totalHeight = tallest + 2 * Self.gap
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" \
            width="\(totalWidth)" height="\(totalHeight)" viewBox="0 0 \(totalWidth) \(totalHeight)" \
            role="img" aria-label="\(Self.xmlEscaped("Model " + model.name))">
            <title>\(Self.xmlEscaped("Model " + model.name + ": entities by configuration"))</title>
            <style>\(Self.style)</style>
            \(Self.markers)
            <rect class="background" width="\(totalWidth)" height="\(totalHeight)"/>

            """
        for box in boxes {
            out +=
                "<g class=\"configuration\" data-configuration=\"\(Self.xmlEscaped(box.group.name))\">\n"
                + "<rect class=\"group g\(box.index % Self.tints.count)\" x=\"\(box.x)\" y=\"\(box.y)\" "
                + "width=\"\(box.width)\" height=\"\(box.height)\" rx=\"10\"/>\n"
                + "<text class=\"group-title\" x=\"\(box.x + Self.padding)\" y=\"\(box.y + 22)\">"
                + Self.xmlEscaped(Self.label(box.group)) + "</text>\n"
            for entity in box.group.entities {
                if let card = cards[entity.name] { out += render(card) }
            }
            out += "</g>\n"
        }
        out += "<g class=\"edges\">\n"
        for edge in edges {
            guard let from = cards[edge.from], let to = cards[edge.to] else { continue }
            let start = edge.inverse.map(Self.markerName) ?? "many-optional"
            let label = ([edge.forward.name] + (edge.inverse.map { [$0.name] } ?? [])).joined(separator: " / ")
            out += Self.line(
                from, to, classes: "edge", start: start, end: Self.markerName(edge.forward), label: label)
        }
        for entity in entities {
            if let parent = entity.parent, let from = cards[entity.name], let to = cards[parent] {
                out += Self.line(from, to, classes: "edge inherit", start: nil, end: "parent", label: "extends")
            }
        }
        for (from, property) in fetchedEdges {
            guard let source = cards[from], let target = cards[property.entity] else { continue }
            out += Self.line(
                source, target, classes: "edge fetched", start: nil, end: "arrow", label: property.name + " (fetched)")
        }
        out += "</g>\n</svg>\n"
        return out
    }

    private func card(_ entity: EntityDescription) -> Card {
        var lines: [(text: String, style: String)] = entity.attributes.map { (Self.line($0), "attribute") }
        lines += shownRelationships(entity).map { (Self.line($0), "relationship") }
        lines += shownFetchedProperties(entity).map {
            ($0.name + " ⇢ " + $0.entity + " (fetched)", "fetched-property")
        }
        let subtitle = Self.subtitle(entity)
        let widest = max(
            Self.textWidth(entity.name, bold: true), subtitle.map { Self.textWidth($0, bold: false) } ?? 0,
            lines.map { Self.textWidth($0.text, bold: false) }.max() ?? 0)
        let head = Self.headHeight + (subtitle == nil ? 0 : 14)
        return Card(
            entity: entity, lines: lines, width: max(130, widest + 20),
            height: head + max(1, lines.count) * Self.lineHeight + 8)
    }

    private func render(_ card: Card) -> String {
        let entity = card.entity
        let head = Self.headHeight + (Self.subtitle(entity) == nil ? 0 : 14)
        var out =
            "<a href=\"\(Self.xmlEscaped(docsLink(entity.name)))\">"
            + "<g class=\"entity\(entity.isAbstract ? " abstract" : "")\" data-entity=\"\(Self.xmlEscaped(entity.name))\">\n"
            + "<rect class=\"card\" x=\"\(card.x)\" y=\"\(card.y)\" width=\"\(card.width)\" height=\"\(card.height)\" rx=\"6\"/>\n"
            + "<path class=\"card-head\" d=\"M\(card.x + 1),\(card.y + head) V\(card.y + 6) "
            + "Q\(card.x + 1),\(card.y + 1) \(card.x + 6),\(card.y + 1) H\(card.x + card.width - 6) "
            + "Q\(card.x + card.width - 1),\(card.y + 1) \(card.x + card.width - 1),\(card.y + 6) "
            + "V\(card.y + head) Z\"/>\n"
            + "<text class=\"title\" x=\"\(card.x + 10)\" y=\"\(card.y + 17)\">\(Self.xmlEscaped(entity.name))</text>\n"
        if let subtitle = Self.subtitle(entity) {
            out +=
                "<text class=\"subtitle\" x=\"\(card.x + 10)\" y=\"\(card.y + 32)\">\(Self.xmlEscaped(subtitle))</text>\n"
        }
        for (index, line) in card.lines.enumerated() {
            out +=
                "<text class=\"\(line.style)\" x=\"\(card.x + 10)\" y=\"\(card.y + head + 16 + index * Self.lineHeight)\">"
                + Self.xmlEscaped(line.text) + "</text>\n"
        }
        return out + "</g></a>\n"
    }

    /// A straight edge between two cards' borders (a loop for an entity to itself), with its
    /// end markers and a label at the middle.
    private static func line(
        _ from: Card, _ to: Card, classes: String, start: String?, end: String, label: String
    ) -> String {
        let markers = (start.map { " marker-start=\"url(#\($0))\"" } ?? "") + " marker-end=\"url(#\(end))\""
        if from.entity.name == to.entity.name {
            let x = from.x + from.width
            let y = from.y + 10
            return
                "<path class=\"\(classes)\" d=\"M\(x),\(y) C\(x + 50),\(y - 10) \(x + 50),\(y + 50) \(x),\(y + 40)\"\(markers)/>\n"
                + "<text class=\"edge-label\" x=\"\(x + 42)\" y=\"\(y + 24)\">\(xmlEscaped(label))</text>\n"
        }
        let (x1, y1) = border(of: from, toward: (to.centerX, to.centerY))
        let (x2, y2) = border(of: to, toward: (from.centerX, from.centerY))
        return "<path class=\"\(classes)\" d=\"M\(x1),\(y1) L\(x2),\(y2)\"\(markers)/>\n"
            + "<text class=\"edge-label\" x=\"\((x1 + x2) / 2)\" y=\"\((y1 + y2) / 2 - 4)\" text-anchor=\"middle\">"
            + xmlEscaped(label) + "</text>\n"
    }

    /// Where the line from a card's centre toward `point` leaves the card.
    private static func border(of card: Card, toward point: (Int, Int)) -> (Int, Int) {
        let dx = Double(point.0 - card.centerX)
        let dy = Double(point.1 - card.centerY)
        guard dx != 0 || dy != 0 else { return (card.centerX, card.centerY) }
        let halfWidth = Double(card.width) / 2
        let halfHeight = Double(card.height) / 2
        let scale = min(dx == 0 ? .infinity : halfWidth / abs(dx), dy == 0 ? .infinity : halfHeight / abs(dy))
        return (card.centerX + Int((dx * scale).rounded()), card.centerY + Int((dy * scale).rounded()))
    }

    /// The marker for the end a relationship points at.
    static func markerName(_ relationship: RelationshipDescription) -> String {
        (relationship.isToMany ? "many" : "one") + (relationship.isOptional ? "-optional" : "")
    }

    /// An estimate of a line's width at 12 px: no fonts are measured here.
    private static func textWidth(_ text: String, bold: Bool) -> Int {
        Int((Double(text.count) * (bold ? 7.4 : 6.6)).rounded(.up))
    }

    private static let markers = """
        <defs>
        <marker id="many-optional" viewBox="0 0 24 20" refX="24" refY="10" markerWidth="24" markerHeight="20" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path class="marker" d="M24,2 L12,10 L24,18 M12,10 H24"/><circle class="marker ring" cx="6" cy="10" r="4"/></marker>
        <marker id="many" viewBox="0 0 24 20" refX="24" refY="10" markerWidth="24" markerHeight="20" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path class="marker" d="M24,2 L12,10 L24,18 M12,10 H24 M8,3 V17"/></marker>
        <marker id="one-optional" viewBox="0 0 24 20" refX="24" refY="10" markerWidth="24" markerHeight="20" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path class="marker" d="M18,3 V17"/><circle class="marker ring" cx="8" cy="10" r="4"/></marker>
        <marker id="one" viewBox="0 0 24 20" refX="24" refY="10" markerWidth="24" markerHeight="20" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path class="marker" d="M18,3 V17 M12,3 V17"/></marker>
        <marker id="parent" viewBox="0 0 16 16" refX="16" refY="8" markerWidth="16" markerHeight="16" markerUnits="userSpaceOnUse" orient="auto"><path class="marker hollow" d="M0,1 L16,8 L0,15 Z"/></marker>
        <marker id="arrow" viewBox="0 0 12 12" refX="12" refY="6" markerWidth="12" markerHeight="12" markerUnits="userSpaceOnUse" orient="auto"><path class="marker" d="M0,1 L12,6 L0,11"/></marker>
        </defs>
        """

    private static var style: String {
        var css = """
            svg{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:12px}\
            .background{fill:#fbfcfd}.group{stroke-width:1.5}.group-title{font-weight:600;font-size:13px;fill:#24303f}\
            .card{fill:#fff;stroke:#8795a8}.card-head{fill:#e3e9f0}.entity text{fill:#1d2430}\
            .title{font-weight:600}.subtitle{font-style:italic;fill:#5b6677;font-size:11px}\
            .relationship{fill:#2d4f7c!important}.fetched-property{font-style:italic;fill:#6b5a2d!important}\
            .abstract .card{stroke-dasharray:4 3}a:hover .card{stroke:#2f6fd6;stroke-width:2}\
            .edge{stroke:#5b6677;fill:none;stroke-width:1.3}.fetched{stroke-dasharray:6 4;stroke:#8a6d1f}\
            .inherit{stroke:#7a5aa8}.marker{stroke:#5b6677;fill:none;stroke-width:1.3}.ring{fill:#fbfcfd}\
            .hollow{fill:#fbfcfd;stroke:#7a5aa8}\
            .edge-label{font-size:10px;fill:#3c4656;paint-order:stroke;stroke:#fbfcfd;stroke-width:3px}
            """
        for (index, tint) in tints.enumerated() { css += ".g\(index){fill:\(tint.light);stroke:\(tint.edge)}" }
        css += """
            @media (prefers-color-scheme:dark){.background{fill:#11151b}.group-title{fill:#d7dee8}\
            .card{fill:#1b222c;stroke:#5d6b80}.card-head{fill:#263140}.entity text{fill:#dde4ee}\
            .subtitle{fill:#9aa6b8}.relationship{fill:#8fb6ee!important}.fetched-property{fill:#d8c07a!important}\
            .edge,.marker{stroke:#9aa6b8}.ring,.hollow{fill:#11151b}.fetched{stroke:#c9a94a}\
            .edge-label{fill:#c8d0dc;stroke:#11151b}
            """
        for (index, tint) in tints.enumerated() { css += ".g\(index){fill:\(tint.dark)}" }
        return css + "}"
    }
}
