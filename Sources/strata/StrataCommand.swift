import Foundation
import Strata
import StrataCLI

/// Dispatches `strata` subcommands. Each returns the process exit status; errors are printed as one
/// line on stderr, never as a stack trace.
enum StrataCommand {
    /// A subcommand: its name, its usage in the command list, and what runs it.
    struct Subcommand: Sendable {
        var name: String
        var synopsis: String
        var summary: String
        var run: @Sendable ([String]) -> Int32
    }

    /// Every subcommand, in the order `strata help` lists them.
    static let subcommands: [Subcommand] = [
        Subcommand(
            name: "model", synopsis: "model [--model PATH ...]",
            summary: "validate a model: its entities, configurations and hashes", run: ModelCommand.run),
        Subcommand(
            name: "serve", synopsis: "serve [options]",
            summary: "serve the model as a REST API", run: ServeCommand.run),
        Subcommand(
            name: "health", synopsis: "health [--port N]",
            summary: "the container health check: exit 0 when /live answers 200",
            run: HealthCommand.run),
        Subcommand(
            name: "openapi", synopsis: "openapi [--format FORMAT]",
            summary: "print the OpenAPI document of the REST API", run: OpenAPICommand.run),
        Subcommand(
            name: "diagram", synopsis: "diagram [--format FORMAT]",
            summary: "print a diagram of the model: svg, mmd (Mermaid) or dot",
            run: DiagramCommand.run),
        Subcommand(
            name: "inspect", synopsis: "inspect PATH [--model PATH]",
            summary: "a store's metadata and row counts; dry-run a migration",
            run: InspectCommand.run),
        Subcommand(
            name: "migrate", synopsis: "migrate [options]",
            summary: "migrate store files to the model, all together or none",
            run: MigrateCommand.run),
        Subcommand(
            name: "split", synopsis: "split --from OLD --to CONFIG=PATH ...",
            summary: "move a single-file store into one store per configuration",
            run: SplitCommand.run),
        Subcommand(
            name: "import", synopsis: "import --from STORE --data-dir DIR",
            summary: "bring a store Core Data wrote into Strata stores",
            run: ImportCommand.run),
        Subcommand(
            name: "export", synopsis: "export --data-dir DIR --to OUT",
            summary: "write the stores' objects as a store Core Data opens",
            run: ExportCommand.run),
        Subcommand(
            name: "replicate", synopsis: "replicate --from URL --data-dir DIR",
            summary: "a local copy of a server that follows its changes",
            run: ReplicateCommand.run),
        Subcommand(
            name: "generate", synopsis: "generate swift --model M --output DIR",
            summary: "typed Swift for a model: a struct per entity", run: GenerateCommand.run),
    ]

    static var usage: String {
        let width = subcommands.map(\.synopsis.count).max() ?? 0
        let lines = subcommands.map {
            "  " + $0.synopsis.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.summary
        }
        return """
            usage: strata <command> [options]

            commands:
            \(lines.joined(separator: "\n"))
              help\(String(repeating: " ", count: width - 2))show this text

            Without --model, every command uses the embedded example model (a library catalogue).
            Every command takes --help. The benchmark is an executable of its own: strata-bench.
            """
    }

    static func run(_ arguments: [String]) -> Int32 {
        guard let command = arguments.first else {
            print(usage)
            return 0
        }
        let rest = Array(arguments.dropFirst())
        if ["help", "--help", "-h"].contains(command) {
            print(usage)
            return 0
        }
        if let subcommand = subcommands.first(where: { $0.name == command }) { return subcommand.run(rest) }
        if command == "bench" {
            printError(
                "strata: the benchmark is an executable of its own, strata-bench: swift build -c release "
                    + "--product strata-bench, then .build/release/strata-bench --help")
            return CommandLineError.usageStatus
        }
        printError("strata: unknown command '\(command)'\n\n\(usage)")
        return CommandLineError.usageStatus
    }
}

/// `strata model`: validates a model and describes it.
enum ModelCommand {
    struct Settings {
        var models: [String] = []
        var strict = false
    }

    static let interface = CommandInterface<Settings>(
        name: "strata model", synopsis: "[--model PATH ...] [--strict]",
        abstract: """
            Validates the model (JSON, .xcdatamodel or .xcdatamodeld) and prints its entities, then
            its warnings: what loads with a caveat (a relationship without an inverse, a transient
            property, a default Core Data reads leniently, ...), as Core Data itself only warns.
            Exits 0 when the model loads; with --strict, warnings make it exit 1.
            """,
        options: [
            .model { $0.models.append($1) },
            .flag("--strict", help: "exit 1 when the model has warnings") { $0.strict = $1 },
        ])

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: describe)
    }

    static func describe(_ settings: Settings) -> Int32 {
        let model: ObjectModel
        do {
            model = try loadModel(settings.models)
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
        if settings.strict && !model.warnings.isEmpty {
            printError(
                "strata model: --strict: the model has \(model.warnings.count) warning\(model.warnings.count == 1 ? "" : "s")"
            )
            return 1
        }
        return 0
    }
}
