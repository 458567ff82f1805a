import Foundation
import Strata
import StrataServer

/// `strata diagram`: prints the model's diagram, the same picture the server answers at
/// `/_model/diagram.svg`, `.mmd` and `.dot` (here without stores: each box names its configuration).
enum DiagramCommand {
    static let usage = """
        usage: strata diagram [--model PATH ...] [--format svg|mmd|dot]

        Prints a diagram of the model: a box per configuration, a card per entity (attributes with
        types and optionality, relationships with cardinality and delete rule), crow's-foot
        relationship edges, dashed fetched properties.

          --model PATH     model file: JSON, .xcdatamodel or .xcdatamodeld; repeatable
                           (STRATA_MODEL, comma-separated; default: the embedded example model)
          --format FORMAT  svg (the default), mmd (a Mermaid erDiagram) or dot (Graphviz)
          --help           this text
        """

    static func run(_ arguments: [String]) -> Int32 {
        var paths: [String] = []
        var format = "svg"
        var index = 0
        while index < arguments.count {
            var name = arguments[index]
            var value: String?
            if name.hasPrefix("--"), let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            switch name {
            case "--help", "-h":
                print(usage)
                return 0
            case "--model", "--format":
                if value == nil {
                    guard index + 1 < arguments.count else {
                        printError("strata diagram: \(name) needs a value")
                        return 64
                    }
                    index += 1
                    value = arguments[index]
                }
                if name == "--model" {
                    paths.append(value!)
                } else {
                    guard ["svg", "mmd", "dot"].contains(value!) else {
                        printError("strata diagram: --format is svg, mmd or dot, not '\(value!)'")
                        return 64
                    }
                    format = value!
                }
            default:
                printError("strata diagram: unknown option '\(arguments[index])'; see strata diagram --help")
                return 64
            }
            index += 1
        }
        let model: ObjectModel
        do {
            model = try loadModel(paths)
        } catch {
            printError("strata diagram: \(error)")
            return 1
        }
        let diagram = ModelDiagram(model: model)
        let text =
            switch format {
            case "mmd": diagram.mermaid
            case "dot": diagram.dot
            default: diagram.svg
            }
        FileHandle.standardOutput.write(Data(text.utf8))
        return 0
    }
}
