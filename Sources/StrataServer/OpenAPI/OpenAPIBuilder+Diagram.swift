import Strata

extension OpenAPIBuilder {
    /// `/_model/diagram.svg`, `.mmd` and `.dot`: the model's diagram (see ``ModelDiagram``).
    mutating func diagramPaths() -> [(key: String, value: OpenAPINode)] {
        let formats: [(suffix: String, noun: String, type: String, about: String)] = [
            ("svg", "DiagramSvg", "image/svg+xml", "An SVG picture (dark mode through `prefers-color-scheme`)"),
            ("mmd", "DiagramMermaid", "text/vnd.mermaid", "A Mermaid `erDiagram`"),
            ("dot", "DiagramGraphviz", "text/vnd.graphviz", "A Graphviz `digraph`"),
        ]
        return formats.map { format in
            let operation = OpenAPINode.members([
                ("operationId", .string(operationID("get", format.noun))),
                ("summary", .string("The model's diagram (\(format.suffix))")),
                (
                    "description",
                    .string(
                        "\(format.about) of the model: a box per configuration labelled with its store's type, a "
                            + "card per entity, relationships with crow's-foot ends, fetched properties dashed.")
                ),
                ("tags", ["System"]),
                (
                    "responses",
                    responses([
                        (
                            "200",
                            [
                                "description": "The diagram.",
                                "content": [format.type: ["schema": ["type": "string"]]],
                            ]
                        ), ("503", nil),
                    ])
                ),
            ])
            return ("/_model/diagram.\(format.suffix)", ["get": operation])
        }
    }
}
