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
        var version: String?
        /// `Entity=predicate`, in the order given.
        var filters: [(entity: String, format: String)] = []
    }

    static let interface = CommandInterface<Settings>(
        name: "strata export",
        synopsis:
            "[--model PATH] [--data-dir DIR | --store CONFIG=PATH ...] --to OUT.sqlite [--version NAME] [--where ENTITY=PREDICATE ...] [--force]",
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
            .value(
                "--version", "NAME",
                help: "write the store for this older version of the .xcdatamodeld (one an app still ships) rather "
                    + "than the current one"
            ) { $0.version = $1.text },
            .value(
                "--where", "ENTITY=PREDICATE", repeatable: true,
                help: "export only the objects of ENTITY (and of its subentities) that match PREDICATE, in Core Data's "
                    + "predicate format"
            ) { settings, value in
                guard let equals = value.text.firstIndex(of: "="), equals != value.text.startIndex else {
                    throw value.invalid("takes ENTITY=PREDICATE")
                }
                settings.filters.append(
                    (String(value.text[..<equals]), String(value.text[value.text.index(after: equals)...])))
            },
            .flag("--force", help: "replace OUT when it exists") { $0.force = $1 },
        ],
        discussion: """
            Primary keys are kept (renumbered only where stores of several configurations hold the same
            key in one hierarchy). Transformable values are written as NSKeyedArchiver archives (values
            held as {"$binary": base64} as those bytes); Binary values over 100 KiB of attributes that
            allow external storage as files in .<OUT name>_SUPPORT/_EXTERNAL_DATA/ beside OUT. No
            Z_MODELCACHE table (Core Data's compressed archive of the model) is written.

            With --version, objects are mapped onto that version by entity, attribute and relationship
            name (or renaming identifier) where the type is the same; objects of entities it lacks are
            left out, attributes it lacks are dropped, its attributes the data lacks are empty (or
            their default value). An attribute or to-one it requires that the data lacks refuses the
            export. With --where, relationships to objects left out are cleared, as Core Data's nullify
            rule clears them; a required one refuses the export, naming the object. A refused export
            writes nothing.
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
        var options = CoreDataExportOptions(overwrite: settings.force)
        do {
            options.version = try version(settings)
            options.filters = try filters(settings.filters, model: model)
        } catch {
            printError("strata export: \(error)")
            return 1
        }
        let all = settings.options.storeDescriptions(for: model)
        // An export reads every object of an entity in one fetch: a serving time budget would stop
        // it on a large store.
        let descriptions = all.filter { $0.url.map { FileManager.default.fileExists(atPath: $0.path) } ?? false }
            .map { description in
                var description = description
                description.options.queryBudget = nil
                return description
            }
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
                model: model, coordinator: coordinator, to: target, options: options)
            let written = options.version ?? model
            print(
                "exported \(report.objects.values.reduce(0, +)) objects and \(report.joinRows) many-to-many links "
                    + "to \(target.path) (Core Data store \(report.storeIdentifier), model \(written.name) version "
                    + "\(written.version ?? "-")) in \(String(format: "%.2f", report.seconds)) s")
            for (entity, count) in report.objects.sorted(by: { $0.key < $1.key }) { print("  \(entity)  \(count)") }
            if report.externalFiles > 0 {
                print("  \(report.externalFiles) values in \(CoreDataExporter.externalDataFolder(of: target).path)")
            }
            if !report.entitiesLeftOut.isEmpty {
                print(
                    "  left out (not in version \(written.name)): \(report.entitiesLeftOut.sorted().joined(separator: ", "))"
                )
            }
            return 0
        } catch {
            printError("strata export: \(error)")
            return 1
        }
    }

    /// The version `--version` names, among those of the `.xcdatamodeld` given.
    static func version(_ settings: Settings) throws -> ObjectModel? {
        guard let name = settings.version else { return nil }
        let versions = try coreDataVersions(settings.models)
        guard let found = versions.first(where: { $0.name == name }) else {
            throw CommandLineError(
                "--version: the model has no version '\(name)' (it has \(versions.map { "'\($0.name)'" }.joined(separator: ", ")))"
            )
        }
        return found
    }

    /// The predicates of `--where`, by entity; two for one entity must both match.
    static func filters(_ items: [(entity: String, format: String)], model: ObjectModel) throws -> [String:
        FetchPredicate]
    {
        var filters: [String: FetchPredicate] = [:]
        for (entity, format) in items {
            guard model.entity(named: entity) != nil else {
                throw CommandLineError(
                    "--where: the model has no entity '\(entity)' (it has \(model.entityNames.sorted().joined(separator: ", ")))"
                )
            }
            let predicate: FetchPredicate
            do {
                predicate = try FetchPredicate(format: format)
            } catch {
                throw CommandLineError("--where \(entity): \(error)")
            }
            filters[entity] = filters[entity].map { .and([$0, predicate]) } ?? predicate
        }
        return filters
    }
}
