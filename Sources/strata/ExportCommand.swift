import Foundation
import Strata
import StrataCLI
import StrataServer

/// `strata export`: writes the objects of Strata stores into one store in Core Data's own format.
enum ExportCommand {
    struct Settings {
        var models: [String] = []
        var options = ServerOptions()
        var to: String?
        var force = false
    }

    static let interface = CommandInterface<Settings>(
        name: "strata export",
        synopsis: "[--model PATH] [--data-dir DIR | --store CONFIG=PATH ...] --to OUT.sqlite [--force]",
        abstract: """
            Reads every object of the model's stores and writes them into one SQLite file in the format
            Core Data writes for the model's current version, for an app to open as it is (a store it
            ships pre-populated, say): Z_PRIMARYKEY with Core Data's entity numbers, Z_METADATA with
            Core Data's entity version hashes, one table per inheritance hierarchy with Core Data's
            column names and types, join tables, ordering columns and indexes, values encoded as Core
            Data encodes them. The file is in rollback-journal mode (one file, no -wal), built under a
            temporary name beside OUT and renamed into place when complete.
            """,
        options: [
            .model(help: "the model: an .xcdatamodeld (its current version), .xcdatamodel or JSON") {
                $0.models.append($1)
            },
            .value(
                "--data-dir", "DIR", default: "./data",
                help: "folder of the stores <DIR>/<configuration>.sqlite, as strata serve names them"
            ) { $0.options.dataDirectory = $1.text },
            .storeFile { $0.options.stores[$1] = $2 },
            .value("--to", "OUT", help: "the Core Data .sqlite file to write") { $0.to = $1.text },
            .flag("--force", help: "replace OUT when it exists") { $0.force = $1 },
        ],
        discussion: """
            Primary keys are kept (renumbered only where stores of several configurations hold the same
            key in one hierarchy). No Z_MODELCACHE table (Core Data's compressed archive of the model) is
            written.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: export)
    }

    static func export(_ settings: Settings) -> Int32 {
        guard let to = settings.to else { return interface.fail("--to OUT.sqlite is required") }
        let target = URL(fileURLWithPath: to)
        if FileManager.default.fileExists(atPath: target.path), !settings.force {
            printError("strata export: \(target.path) already exists; remove it, or give --force to replace it")
            return 1
        }
        let model: ObjectModel
        do {
            model = try loadModel(settings.models)
        } catch {
            printError("strata export: \(error)")
            return 1
        }
        if let mistake = ServeCommand.mismatch(settings.options, model) { return interface.fail(mistake) }
        let all = settings.options.storeDescriptions(for: model)
        let descriptions = all.filter { $0.url.map { FileManager.default.fileExists(atPath: $0.path) } ?? false }
        guard !descriptions.isEmpty else {
            printError(
                "strata export: no store files to read (looked for \(all.compactMap(\.url?.path).joined(separator: ", ")))"
            )
            return 1
        }
        let coordinator = StoreCoordinator(model: model)
        defer { for store in coordinator.stores { coordinator.remove(store) } }
        do {
            try coordinator.addStores(descriptions)
            let report = try CoreDataExporter.export(
                model: model, coordinator: coordinator, to: target,
                options: CoreDataExportOptions(overwrite: settings.force))
            print(
                "exported \(report.objects.values.reduce(0, +)) objects and \(report.joinRows) many-to-many links "
                    + "to \(target.path) (Core Data store \(report.storeIdentifier), model \(model.name) version "
                    + "\(model.version ?? "-")) in \(String(format: "%.2f", report.seconds)) s")
            for (entity, count) in report.objects.sorted(by: { $0.key < $1.key }) { print("  \(entity)  \(count)") }
            return 0
        } catch {
            printError("strata export: \(error)")
            return 1
        }
    }
}
