import Foundation
import Strata
import StrataCLI

/// `strata import`: brings a store that Apple's Core Data wrote into Strata stores.
enum ImportCommand {
    struct Settings {
        var models: [String] = []
        var mappings: [String] = []
        var from: String?
        var dataDirectory: String?
        var targets: [String: URL] = [:]
        var options = CoreDataImportOptions()
        var progress = ProgressMode.auto
    }

    static let interface = CommandInterface<Settings>(
        name: "strata import",
        synopsis: "--model PATH --from STORE [--data-dir DIR | --to CONFIG=PATH ...] [options]",
        abstract: """
            Reads an SQLite store that Core Data wrote (with its -wal and -shm, from a private copy: the
            store's files are left byte for byte as they are) and writes its objects into Strata stores:
            one per configuration of the model (<DIR>/<configuration>.sqlite, as strata serve names
            them), or one store with --to Default=PATH (or a model without configurations). Primary
            keys, versions (Z_OPT), every attribute, to-one, to-many, many-to-many and ordered
            relationships and inheritance are kept. The model version that wrote the store is found by
            Core Data's entity version hashes, and the objects are migrated to the current version.
            """,
        options: [
            .model(
                environment: false,
                help: "the model: an .xcdatamodeld (every version: the store may be older than the current one), "
                    + ".xcdatamodel or JSON", default: nil
            ) { $0.models.append($1) },
            .value("--from", "STORE", help: "the Core Data .sqlite file") { $0.from = $1.text },
            .value("--data-dir", "DIR", help: "write <DIR>/<configuration>.sqlite (or <DIR>/default.sqlite)") {
                $0.dataDirectory = $1.text
            },
            .target(help: "the new store of a configuration; Default=PATH for one store") { $0.targets[$1] = $2 },
            .skip(help: "create that configuration's store empty (caches that are rebuilt)") {
                $0.options.skip.insert($1)
            },
            .value(
                "--source-version", "NAME", help: "the model version that wrote the store, when the hashes cannot tell"
            ) { $0.options.sourceVersion = $1.text },
            .value(
                "--mapping", "PATH", repeatable: true,
                help: "a Core Data mapping model (.xcmappingmodel) run instead of the inferred migration for the step "
                    + "between the two versions it names; those beside or inside the model are found on their own"
            ) { $0.mappings.append($1.text) },
            .chunkSize { $0.options.chunkSize = $1 },
            .durability { $0.options.durability = $1 },
            .progress { $0.progress = $1 },
        ],
        discussion: """
            It can be interrupted at any point (even kill -9): run it again and it continues where it
            stopped. Every entity and join table is verified against the Core Data store (row count and
            checksum), and the new stores against the staging store. Then serve them with
            strata serve --model PATH --data-dir DIR --no-migrate.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: importStore)
    }

    static func importStore(_ settings: Settings) -> Int32 {
        guard let from = settings.from else { return interface.fail("--from STORE is required") }
        guard !settings.models.isEmpty else {
            return interface.fail("--model PATH is required (the .xcdatamodeld the app ships)")
        }
        let model: ObjectModel
        let versions: [ObjectModel]
        var options = settings.options
        do {
            model = try loadModel(settings.models)
            versions = try coreDataVersions(settings.models)
            options.mappingModels = try loadMappingModels(settings.mappings, models: settings.models)
        } catch {
            printError("strata import: \(error)")
            return 1
        }
        var targets = settings.targets
        if let directory = settings.dataDirectory {
            guard targets.isEmpty else { return interface.fail("give --data-dir or --to, not both") }
            targets = defaultTargets(model, folder: URL(fileURLWithPath: directory))
        }
        guard !targets.isEmpty else {
            return interface.fail("give --data-dir DIR, or a --to CONFIG=PATH for every configuration")
        }
        let reporter = settings.progress.reporter(command: "import")
        let source = URL(fileURLWithPath: from)
        let report: CoreDataImportReport
        do {
            report = try CoreDataImporter.importStore(
                at: source, model: model, versions: versions, targets: targets, options: options
            ) { step in
                reporter.report(
                    phase: step.phase.rawValue, place: step.table ?? "", copied: step.copiedRows, total: step.totalRows)
            }
        } catch {
            reporter.end()
            printError("strata import: \(error)")
            return 1
        }
        reporter.end()
        return printReport(report, source: source)
    }

    /// `<folder>/<configuration>.sqlite` for each configuration, or `<folder>/default.sqlite`.
    static func defaultTargets(_ model: ObjectModel, folder: URL) -> [String: URL] {
        var targets: [String: URL] = [:]
        if model.configurations.isEmpty {
            targets[ObjectModel.defaultConfiguration] = folder.appendingPathComponent("default.sqlite")
        }
        for configuration in model.configurations {
            targets[configuration.name] = folder.appendingPathComponent("\(configuration.name.lowercased()).sqlite")
        }
        return targets
    }

    static func printReport(_ report: CoreDataImportReport, source: URL) -> Int32 {
        let places = report.targets.map { "\($0.configuration)=\($0.url.path)" }.joined(separator: ", ")
        if report.outcome == .alreadyImported {
            print("already imported: \(places) hold store \(report.sourceIdentifier) of \(source.path); nothing to do")
            return 0
        }
        print(
            "imported \(source.path) (Core Data store \(report.sourceIdentifier)) in \(String(format: "%.2f", report.seconds)) s\(report.outcome == .resumed ? " (resumed)" : "")"
        )
        print("  written by model version \(report.sourceVersion): \(report.versionReason)")
        if report.sourceVersion != report.targetVersion {
            print("  migrated to \(report.targetVersion)")
        }
        for check in report.checks { print("    \(check.name)  \(check.rows) rows  checksum \(check.checksum)") }
        for target in report.targets {
            print(
                "  \(target.configuration)  \(target.url.path)\(target.storeIdentifier.isEmpty ? "" : "  uuid \(target.storeIdentifier)")\(target.skipped ? "  (skipped: created empty)" : "")"
            )
        }
        for warning in report.warnings { print("  warning: \(warning)") }
        print("verified: every entity's and join table's row count and checksum match the Core Data store")
        return 0
    }
}
