import Foundation
import StrataCLI

/// The command line both `strata generate swift` and `strata-codegen` run: `--model PATH`
/// `--output DIR` `[--access public|internal]` `[--runtime-module NAME]`.
public enum CodegenCommand {
    /// The parsed command line.
    public struct Settings: Sendable {
        /// The model file.
        public var model: String?
        /// The folder the generated file goes into.
        public var output: String?
        /// The generator's options.
        public var options = SwiftGenerator.Options()

        /// Settings with nothing given.
        public init() {}
    }

    /// The option table, under the command name `name`.
    public static func interface(name: String) -> CommandInterface<Settings> {
        CommandInterface<Settings>(
            name: name, synopsis: "--model PATH --output DIR [--access public|internal]",
            abstract: """
                Generates typed Swift for a model (JSON, .xcdatamodel, or .xcdatamodeld in its current
                version): for every entity a struct viewing the context's objects, with typed properties,
                relationship helpers, fetched properties and fetch request templates. Writes one file,
                DIR/<model file name without extension>+Generated.swift, and leaves it untouched when
                its contents are already the same.
                """,
            options: [
                .value("--model", "PATH", help: "the model file: JSON, .xcdatamodel or .xcdatamodeld") {
                    $0.model = $1.text
                },
                .value("--output", "DIR", help: "the folder to write the generated file into") { $0.output = $1.text },
                .value(
                    "--access", "LEVEL", default: "public",
                    help: "public (the model can live in a module of its own) or internal"
                ) {
                    $0.options.access = try $1.choice(SwiftGenerator.AccessLevel.self, ["public", "internal"])
                },
                .value(
                    "--runtime-module", "NAME", default: "Strata",
                    help: "the module the generated code imports for its runtime"
                ) { $0.options.runtimeModule = $1.text },
            ])
    }

    /// Parses `arguments` and generates; returns the exit status (64 for a usage mistake, 1 when
    /// the model does not load or the file cannot be written).
    public static func run(_ arguments: [String], name: String) -> Int32 {
        let interface = interface(name: name)
        return interface.run(arguments, environment: [:], defaults: Settings()) { settings in
            guard let model = settings.model else { return interface.fail("--model is required") }
            guard let output = settings.output else { return interface.fail("--output is required") }
            do {
                let file = try SwiftGenerator.generate(modelAt: model, into: output, options: settings.options)
                print("\(name): wrote \(file.path)")
                return 0
            } catch {
                printError("\(name): \(error)")
                return 1
            }
        }
    }
}
