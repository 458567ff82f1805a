import Foundation
import Strata
import StrataServer
import StrataTestSupport
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The model's diagram in its three formats: golden files for the example model, the SVG read
/// back as XML, and the server's routes.
@Suite struct DiagramTests {
    static let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/Diagrams")

    /// A model with an abstract parent, subentities and three configurations.
    static let zoo = #"""
        {"name": "Zoo", "entities": [
          {"name": "Animal", "abstract": true, "attributes": [{"name": "name", "type": "string", "optional": false}],
           "relationships": [{"name": "keeper", "destination": "Keeper", "inverse": "animals"}]},
          {"name": "Dog", "parent": "Animal", "attributes": [{"name": "breed", "type": "string"}]},
          {"name": "Cat", "parent": "Animal", "attributes": [{"name": "lives", "type": "integer16", "default": 9}]},
          {"name": "Keeper", "attributes": [{"name": "name", "type": "string", "optional": false}],
           "relationships": [{"name": "animals", "destination": "Animal", "toMany": true, "inverse": "keeper",
                              "deleteRule": "deny"}],
           "fetchedProperties": [{"name": "visits", "entity": "Visit", "predicate": "keeper == $FETCH_SOURCE.name"}]},
          {"name": "Visit", "attributes": [{"name": "keeper", "type": "string"}, {"name": "at", "type": "date"}]}
          ,{"name": "Species", "attributes": [{"name": "latin", "type": "string"}]}
        ],
        "configurations": [{"name": "Animals", "entities": ["Animal", "Dog", "Cat", "Keeper"]},
                           {"name": "Reference", "entities": ["Species"]}, {"name": "Log", "entities": ["Visit"]}]}
        """#

    /// Compares `text` with the golden file `name`; `STRATA_UPDATE_GOLDEN=1` rewrites the file.
    static func expectGolden(_ text: String, _ name: String) throws {
        let url = golden.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["STRATA_UPDATE_GOLDEN"] == "1" {
            try Data(text.utf8).write(to: url)
        }
        let expected = try String(contentsOf: url, encoding: .utf8)
        #expect(text == expected, "\(name) differs from its golden file; STRATA_UPDATE_GOLDEN=1 rewrites it")
    }

    @Test func theExampleModelsDiagramsMatchTheirGoldenFiles() throws {
        let diagram = ModelDiagram(model: try ObjectModel.example)
        try Self.expectGolden(diagram.svg, "library.svg")
        try Self.expectGolden(diagram.mermaid, "library.mmd")
        try Self.expectGolden(diagram.dot, "library.dot")
    }

    /// Reads an SVG document back: each configuration group and the entity cards inside it.
    final class Groups: NSObject, XMLParserDelegate {
        var stack: [String?] = []
        var entitiesByGroup: [String: [String]] = [:]
        var outside: [String] = []
        var markersUsed: Set<String> = []

        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            if name == "g", let group = attributes["data-configuration"] {
                stack.append(group)
            } else {
                stack.append(nil)
            }
            if name == "g", let entity = attributes["data-entity"] {
                if let group = stack.compactMap({ $0 }).last {
                    entitiesByGroup[group, default: []].append(entity)
                } else {
                    outside.append(entity)
                }
            }
            for key in ["marker-start", "marker-end"] {
                if let value = attributes[key] { markersUsed.insert(value) }
            }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            stack.removeLast()
        }
    }

    static func groups(_ svg: String) throws -> Groups {
        let parser = XMLParser(data: Data(svg.utf8))
        let reader = Groups()
        parser.delegate = reader
        #expect(parser.parse(), "the SVG is not well-formed XML: \(String(describing: parser.parserError))")
        return reader
    }

    @Test(arguments: ["library", "zoo"])
    func everyEntityIsDrawnInItsConfigurationsBox(model name: String) throws {
        let model = name == "zoo" ? try ObjectModel.load(json: Array(Self.zoo.utf8)) : try ObjectModel.example
        let diagram = ModelDiagram(model: model, stores: ["Catalog": "SQLite store"])
        let reader = try Self.groups(diagram.svg)
        #expect(reader.outside.isEmpty)
        var expected: [String: [String]] = [:]
        for configuration in model.configurations { expected[configuration.name] = configuration.entities }
        #expect(reader.entitiesByGroup.mapValues { $0.sorted() } == expected.mapValues { $0.sorted() })
        if name == "zoo" {
            // Crow's feet for Keeper.animals (to-many), a ring for the optional keeper, a hollow
            // triangle for each subentity, an arrow for the fetched property.
            #expect(
                reader.markersUsed.isSuperset(of: [
                    "url(#many-optional)", "url(#one-optional)", "url(#parent)", "url(#arrow)",
                ]))
            #expect(diagram.svg.contains("abstract"))
            #expect(diagram.mermaid.contains("Dog |o..|| Animal : \"extends\""))
            #expect(diagram.mermaid.contains("Animal }o--o| Keeper : \"keeper / animals\""))
            #expect(diagram.dot.contains("\"Keeper\" -> \"Visit\" [dir=forward, style=dashed"))
            #expect(diagram.dot.contains("subgraph \"cluster_Reference\""))
        } else {
            #expect(diagram.svg.contains("Catalog — SQLite store"))
        }
    }

    @Test func theServerAnswersTheDiagramsAndLeavesHiddenEntitiesOut() throws {
        let fixture = try ServerFixture { $0.entityAccess = ["SearchLog": .hidden] }
        let svg = try fixture.client.send("GET", "/_model/diagram.svg")
        #expect(svg.status == 200)
        #expect(svg.header("Content-Type") == "image/svg+xml")
        let reader = try Self.groups(svg.text)
        #expect(reader.entitiesByGroup["Catalog"]?.sorted() == ["Author", "Book", "Tag"])
        #expect(!svg.text.contains("SearchLog"))
        #expect(svg.text.contains("Catalog — SQLite store"))
        let mermaid = try fixture.client.send("GET", "/_model/diagram.mmd")
        #expect(mermaid.status == 200 && mermaid.text.hasPrefix("erDiagram\n"))
        let dot = try fixture.client.send("GET", "/_model/diagram.dot")
        #expect(dot.status == 200 && dot.text.hasPrefix("digraph \"Library\" {"))
        #expect(try fixture.client.send("GET", "/_model/diagram.png").status == 404)
    }
}
