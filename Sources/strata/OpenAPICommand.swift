import Foundation
import Strata
import StrataServer

/// `strata openapi`: prints the OpenAPI document of the REST API `strata serve` derives from the
/// model, the same one the server answers at `/openapi.yaml` and `/openapi.json`.
enum OpenAPICommand {
    static let usage = """
        usage: strata openapi [--model PATH ...] [--format yaml|json] [--bearer [--private-openapi]]

        Prints the OpenAPI 3.0.3 document of the REST API that `strata serve` derives from the model.

          --model PATH       model file: JSON, .xcdatamodel or .xcdatamodeld; repeatable
                             (STRATA_MODEL, comma-separated; default: the embedded example model)
          --format FORMAT    yaml (the default) or json
          --bearer           the document of a server with tokens (strata serve --token): the bearer
                             scheme declared, 401 and 403 on every operation but /live and /ready
          --private-openapi  with --bearer: the document itself needs a token too
          --help             this text
        """

    static func run(_ arguments: [String]) -> Int32 {
        var paths: [String] = []
        var format = "yaml"
        var access = OpenAPIAccess.anonymous
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
            case "--bearer": access.bearer = true
            case "--private-openapi": access.privateDocument = true
            case "--model", "--format":
                if value == nil {
                    guard index + 1 < arguments.count else {
                        printError("strata openapi: \(name) needs a value")
                        return 64
                    }
                    index += 1
                    value = arguments[index]
                }
                if name == "--model" {
                    paths.append(value!)
                } else {
                    guard value == "yaml" || value == "json" else {
                        printError("strata openapi: --format is yaml or json, not '\(value!)'")
                        return 64
                    }
                    format = value!
                }
            default:
                printError("strata openapi: unknown option '\(arguments[index])'; see strata openapi --help")
                return 64
            }
            index += 1
        }
        let model: ObjectModel
        do {
            model = try loadModel(paths)
        } catch {
            printError("strata openapi: \(error)")
            return 1
        }
        if access.privateDocument && !access.bearer {
            printError("strata openapi: --private-openapi goes with --bearer")
            return 64
        }
        let text =
            format == "json"
            ? OpenAPIGenerator.json(for: model, access: access) : OpenAPIGenerator.yaml(for: model, access: access)
        FileHandle.standardOutput.write(Data(text.utf8))
        return 0
    }
}
