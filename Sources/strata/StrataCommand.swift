import Foundation
import Strata

/// Dispatches `strata` subcommands. Each returns the process exit status; errors are printed as one
/// line on stderr, never as a stack trace.
enum StrataCommand {
    static let usage = """
        usage: strata <command> [options]

        commands:
          model [--model PATH ...]   validate a model and print its entities, configurations and hashes
          serve [options]            serve the model as a REST API (strata serve --help)
          health [--port N]          exit 0 when the local server's /live answers 200 (the container health check)
          openapi [--format FORMAT]  print the OpenAPI document of the REST API (strata openapi --help)
          diagram [--format FORMAT]  print a diagram of the model: svg, mmd (Mermaid) or dot (strata diagram --help)
          inspect PATH [--model PATH]  print a store's metadata and row counts; dry-run a migration (strata inspect --help)
          migrate [options]          migrate store files to the model, all together or none (strata migrate --help)
          split --from OLD --to CONFIG=PATH ...  move a single-file store into one store per configuration (strata split --help)
          import --from STORE --data-dir DIR     bring a store Core Data wrote into Strata stores (strata import --help)
          bench [--duration S]       measure the performance targets against same-run baselines (needs wrk)
          help                       show this text

        Without --model, every command uses the embedded example model (a library catalogue).
        """

    static func run(_ arguments: [String]) -> Int32 {
        guard let command = arguments.first else {
            print(usage)
            return 0
        }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "help", "--help", "-h":
            print(usage)
            return 0
        case "model": return ModelCommand.run(rest)
        case "serve": return ServeCommand.run(rest)
        case "health": return HealthCommand.run(rest)
        case "inspect": return InspectCommand.run(rest)
        case "migrate": return MigrateCommand.run(rest)
        case "split": return SplitCommand.run(rest)
        case "import": return ImportCommand.run(rest)
        case "bench": return BenchCommand.run(rest)
        case "openapi": return OpenAPICommand.run(rest)
        case "diagram": return DiagramCommand.run(rest)
        default:
            printError("strata: unknown command '\(command)'\n\n\(usage)")
            return 64
        }
    }
}

/// Prints a line on stderr.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Reads `--model PATH` options (repeatable, with `STRATA_MODEL` as a fallback) and loads the model.
func loadModel(_ paths: [String], useEnvironment: Bool = true) throws(ModelError) -> ObjectModel {
    var paths = paths
    if paths.isEmpty, useEnvironment, let fromEnvironment = ProcessInfo.processInfo.environment["STRATA_MODEL"],
        !fromEnvironment.isEmpty
    {
        paths = fromEnvironment.split(separator: ",").map(String.init)
    }
    if paths.isEmpty { return try ObjectModel.example }
    return try ObjectModel.load(contentsOf: paths.map { URL(fileURLWithPath: $0) })
}

/// `strata model`: validates a model and describes it.
enum ModelCommand {
    static func run(_ arguments: [String]) -> Int32 {
        var paths: [String] = []
        var strict = false
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--strict":
                strict = true
                index += 1
            case "--model":
                guard index + 1 < arguments.count else {
                    printError("strata model: --model needs a path")
                    return 64
                }
                paths.append(arguments[index + 1])
                index += 2
            case "--help", "-h":
                print(
                    """
                    usage: strata model [--model PATH ...] [--strict]

                    Validates the model (JSON, .xcdatamodel or .xcdatamodeld) and prints its entities, then
                    its warnings: what loads with a caveat (a relationship without an inverse, a transient
                    property, a default Core Data reads leniently, ...), as Core Data itself only warns.
                    Exits 0 when the model loads; with --strict, warnings make it exit 1.
                    """)
                return 0
            default:
                printError("strata model: unknown option '\(arguments[index])'")
                return 64
            }
        }
        let model: ObjectModel
        do {
            model = try loadModel(paths)
        } catch {
            printError("strata model: \(error)")
            return 1
        }
        print("model \(model.name) version \(model.version ?? "-") hash \(model.versionHash)")
        for entity in model.entities {
            let configurations = model.configurations(containing: entity.name)
            print(
                "  \(entity.name)\(entity.isAbstract ? " (abstract)" : "")  /\(model.resourcePath(of: entity.name))  "
                    + "configurations: \(configurations.isEmpty ? ObjectModel.defaultConfiguration : configurations.joined(separator: ", "))  "
                    + "attributes: \(model.attributes(of: entity.name).count)  relationships: \(model.relationships(of: entity.name).count)"
            )
        }
        for template in model.fetchRequestTemplates {
            print(
                "  fetch request \(template.name): \(template.entity) where \(template.predicate.isEmpty ? "TRUEPREDICATE" : template.predicate)"
            )
        }
        if !model.warnings.isEmpty {
            print("warnings (\(model.warnings.count)):")
            for warning in model.warnings { print("  \(warning)") }
        }
        if strict && !model.warnings.isEmpty {
            printError(
                "strata model: --strict: the model has \(model.warnings.count) warning\(model.warnings.count == 1 ? "" : "s")"
            )
            return 1
        }
        return 0
    }
}
