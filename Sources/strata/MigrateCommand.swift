import Foundation
import Strata
import StrataCLI
import StrataServer

/// `strata migrate`: migrates stores (SQLite files, PostgreSQL schemas) to the model without serving them.
enum MigrateCommand {
    struct Settings {
        var models: [String] = []
        var history: [String] = []
        var mappings: [String] = []
        var options = ServerOptions()
        var dryRun = false
    }

    static let interface = CommandInterface<Settings>(
        name: "strata migrate",
        synopsis:
            "[--model PATH ...] [--history PATH ...] [--mapping PATH ...] [--data-dir DIR] [--store CONFIG=PATH ...] [--dry-run]",
        abstract: """
            Migrates the stores of the model's configurations to the model (a lightweight migration:
            added, removed and renamed entities and properties, optional/required with a default,
            relationships and indexes, to-one/to-many, numeric type changes) or the one a Core Data
            mapping model gives, all of them together or none. A change that depends on the data (a
            to-many becoming to-one, a value converted to another type, required with no default) is
            checked first: when objects do not fit, the migration is refused, naming them, before
            anything is written. Store files that do not exist yet are left alone; stores that already fit
            the model are not touched. A store may be a PostgreSQL schema (--store CONFIG=postgresql://…).
            """,
        options: [
            .model(
                help: "the model to migrate to: JSON, .xcdatamodel or .xcdatamodeld; an .xcdatamodeld also gives "
                    + "its versions as the history"
            ) { $0.models.append($1) },
            .value(
                "--history", "PATH", repeatable: true,
                help: "an earlier model version, oldest first. Without it a store is migrated in one step from the "
                    + "model it recorded"
            ) { $0.history.append($1.text) },
            .value(
                "--mapping", "PATH", repeatable: true,
                help: "a Core Data mapping model (.xcmappingmodel) run instead of the inferred migration for the step "
                    + "between the two versions it names; those beside or inside the model are found on their own"
            ) { $0.mappings.append($1.text) },
            .value(
                "--data-dir", "DIR", default: "./data",
                help: "folder of the default stores <DIR>/<configuration>.sqlite"
            ) { $0.options.dataDirectory = $1.text },
            .storeFile(postgreSQL: true) { $0.options.stores[$1] = $2 },
            .flag("--dry-run", help: "print what would change and change nothing") { $0.dryRun = $1 },
        ])

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: migrate)
    }

    static func migrate(_ settings: Settings) -> Int32 {
        var options = settings.options
        let model: ObjectModel
        let mappings: [MappingModel]
        do {
            model = try loadModel(settings.models)
            options.modelHistory = try loadModelHistory(models: settings.models, history: settings.history)
            mappings = try loadMappingModels(settings.mappings, models: settings.models)
            options.mappingModels = mappings
        } catch {
            printError("strata migrate: \(error)")
            return 1
        }
        if let mistake = ServeCommand.mismatch(options, model) { return interface.fail(mistake) }
        options.migrate = true
        // A PostgreSQL store is looked for on its server (a schema holding none is refused).
        let descriptions = options.storeDescriptions(for: model).filter { description in
            description.type == .postgresql
                || (description.url.map { FileManager.default.fileExists(atPath: $0.path) } ?? false)
        }
        guard !descriptions.isEmpty else {
            print(
                "no store files to migrate (looked for \(options.storeDescriptions(for: model).compactMap(\.url?.path).joined(separator: ", ")))"
            )
            return 0
        }
        return migrate(
            descriptions, model: model, history: options.modelHistory, mappings: mappings, dryRun: settings.dryRun)
    }

    /// Inspects each store, then migrates them all unless one cannot be or it is a dry run.
    static func migrate(
        _ descriptions: [StoreDescription], model: ObjectModel, history: [ObjectModel], mappings: [MappingModel],
        dryRun: Bool
    ) -> Int32 {
        var needed = false
        var refused = false
        for description in descriptions {
            let url = description.url!
            do {
                let inspection = try StoreInspector.inspect(url, model: model, history: history, mappings: mappings)
                if inspection.isCompatible == true {
                    print(
                        "\(StoreSummary.location(of: url)): already fits model \(model.name) version \(model.version ?? "-")"
                    )
                } else if let reason = inspection.incompatibility {
                    print("\(StoreSummary.location(of: url)): cannot be used with the model: \(reason)")
                    refused = true
                } else if let plan = inspection.plan {
                    needed = needed || plan.isPossible
                    refused = refused || !plan.isPossible
                    print("\(StoreSummary.location(of: url)): \(plan.isPossible ? "migration" : "cannot be migrated"):")
                    for line in plan.summary.split(separator: "\n") { print("  \(line)") }
                }
            } catch {
                printError("strata migrate: \(error)")
                return 1
            }
        }
        if refused {
            printError("strata migrate: nothing was changed")
            return 1
        }
        if dryRun || !needed {
            if dryRun { print("dry run: nothing was changed") }
            return 0
        }
        let coordinator = StoreCoordinator(model: model)
        do {
            try coordinator.addStores(descriptions)
        } catch {
            printError("strata migrate: \(error); nothing was changed")
            return 1
        }
        for store in coordinator.stores { coordinator.remove(store) }
        print(
            "migrated \(descriptions.count) store\(descriptions.count == 1 ? "" : "s") to model \(model.name) version \(model.version ?? "-")"
        )
        return 0
    }
}
