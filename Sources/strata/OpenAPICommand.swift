import Foundation
import Strata
import StrataCLI
import StrataServer

/// `strata openapi`: prints the OpenAPI document of the REST API `strata serve` derives from the
/// model, the same one the server answers at `/openapi.yaml` and `/openapi.json`.
enum OpenAPICommand {
    struct Settings {
        var models: [String] = []
        var format = "yaml"
        var access = OpenAPIAccess.anonymous
    }

    static let interface = CommandInterface<Settings>(
        name: "strata openapi",
        synopsis: "[--model PATH ...] [--format yaml|json] [--bearer [--private-openapi]] [--no-history]",
        abstract: "Prints the OpenAPI 3.0.3 document of the REST API that `strata serve` derives from the model.",
        options: [
            .model { $0.models.append($1) },
            .value("--format", "FORMAT", default: "yaml", help: "yaml or json") {
                $0.format = try $1.choice(["yaml", "json"])
            },
            .flag(
                "--bearer",
                help: "the document of a server with tokens (strata serve --token): the bearer scheme declared, 401 "
                    + "and 403 on every operation but /live and /ready"
            ) { $0.access.bearer = $1 },
            .flag("--private-openapi", help: "with --bearer: the document itself needs a token too") {
                $0.access.privateDocument = $1
            },
            .flag(
                "--history", inverse: "--no-history", default: "on",
                help: "the document of a server that records history (strata serve --history, its default): "
                    + "GET /_changes and the Strata-History-Token header"
            ) { $0.access.history = $1 },
        ])

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: document)
    }

    static func document(_ settings: Settings) -> Int32 {
        let model: ObjectModel
        do {
            model = try loadModel(settings.models)
        } catch {
            printError("strata openapi: \(error)")
            return 1
        }
        if settings.access.privateDocument && !settings.access.bearer {
            return interface.fail("--private-openapi goes with --bearer")
        }
        let text =
            settings.format == "json"
            ? OpenAPIGenerator.json(for: model, access: settings.access)
            : OpenAPIGenerator.yaml(for: model, access: settings.access)
        FileHandle.standardOutput.write(Data(text.utf8))
        return 0
    }
}
