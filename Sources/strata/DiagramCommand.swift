import Foundation
import Strata
import StrataCLI
import StrataServer

/// `strata diagram`: prints the model's diagram, the same picture the server answers at
/// `/_model/diagram.svg`, `.mmd` and `.dot` (here without stores: each box names its configuration).
enum DiagramCommand {
    struct Settings {
        var models: [String] = []
        var format = "svg"
    }

    static let interface = CommandInterface<Settings>(
        name: "strata diagram", synopsis: "[--model PATH ...] [--format svg|mmd|dot]",
        abstract: """
            Prints a diagram of the model: a box per configuration, a card per entity (attributes with
            types and optionality, relationships with cardinality and delete rule), crow's-foot
            relationship edges, dashed fetched properties.
            """,
        options: [
            .model { $0.models.append($1) },
            .value("--format", "FORMAT", default: "svg", help: "svg, mmd (a Mermaid erDiagram) or dot (Graphviz)") {
                $0.format = try $1.choice(["svg", "mmd", "dot"])
            },
        ])

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: draw)
    }

    static func draw(_ settings: Settings) -> Int32 {
        let model: ObjectModel
        do {
            model = try loadModel(settings.models)
        } catch {
            printError("strata diagram: \(error)")
            return 1
        }
        let diagram = ModelDiagram(model: model)
        let text =
            switch settings.format {
            case "mmd": diagram.mermaid
            case "dot": diagram.dot
            default: diagram.svg
            }
        FileHandle.standardOutput.write(Data(text.utf8))
        return 0
    }
}
