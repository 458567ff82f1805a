import Foundation
import Strata
import StrataServer

/// `strata migrate`: migrates store files to the model without serving them.
enum MigrateCommand {
    static let usage = """
        usage: strata migrate [--model PATH ...] [--history PATH ...] [--data-dir DIR] [--store CONFIG=PATH ...] [--dry-run]

        Migrates the stores of the model's configurations to the model (a lightweight migration:
        added, removed and renamed entities and properties, optional/required with a default,
        relationships and indexes), all of them together or none. Stores that do not exist yet are
        left alone; stores that already fit the model are not touched.

          --model PATH         the model to migrate to: JSON, .xcdatamodel or .xcdatamodeld; repeatable
                               (STRATA_MODEL; default: the embedded example model). An .xcdatamodeld
                               also gives its versions as the history.
          --history PATH       an earlier model version, oldest first; repeatable. Without it a store
                               is migrated in one step from the model it recorded.
          --data-dir DIR       folder of the default stores <DIR>/<configuration>.sqlite (default ./data)
          --store CONFIG=PATH  the store of a configuration (PATH or sqlite:PATH); repeatable;
                               Default=PATH is one store holding every entity
          --dry-run            print what would change and change nothing
          --help               this text
        """

    static func run(_ arguments: [String]) -> Int32 {
        let parsed: CommandArguments
        do {
            parsed = try CommandArguments(
                arguments, valued: ["--model", "--history", "--data-dir", "--store"],
                flags: ["--dry-run", "--help", "-h"], command: "migrate")
        } catch {
            printError("strata migrate: \(error.message)")
            return 64
        }
        if parsed.has("--help") || parsed.has("-h") {
            print(usage)
            return 0
        }
        guard parsed.positional.isEmpty else {
            printError("strata migrate: unexpected argument '\(parsed.positional[0])'; see strata migrate --help")
            return 64
        }
        var options = ServerOptions()
        options.dataDirectory = parsed.value("--data-dir") ?? options.dataDirectory
        for item in parsed.values("--store") {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                printError("strata migrate: --store takes CONFIG=PATH, not '\(item)'")
                return 64
            }
            let path = String(item[item.index(after: equals)...])
            guard let spec = path.hasPrefix("sqlite:") ? StoreSpec(path) : StoreSpec(sqlite: path),
                spec.type == .sqlite,
                !(spec.path ?? "").isEmpty
            else {
                printError("strata migrate: --store takes CONFIG=PATH, not '\(item)'")
                return 64
            }
            options.stores[String(item[..<equals])] = spec
        }
        let modelPaths = parsed.values("--model")
        let model: ObjectModel
        do {
            model = try loadModel(modelPaths)
            options.modelHistory = try loadModelHistory(models: modelPaths, history: parsed.values("--history"))
        } catch {
            printError("strata migrate: \(error)")
            return 1
        }
        for configuration in options.stores.keys where configuration != ObjectModel.defaultConfiguration {
            guard model.configurations.contains(where: { $0.name == configuration }) else {
                printError(
                    "strata migrate: --store names configuration '\(configuration)', which the model does not have (it has: \(model.configurations.map(\.name).joined(separator: ", ")))"
                )
                return 64
            }
        }
        options.migrate = true
        let descriptions = options.storeDescriptions(for: model).filter { description in
            description.url.map { FileManager.default.fileExists(atPath: $0.path) } ?? false
        }
        guard !descriptions.isEmpty else {
            print(
                "no store files to migrate (looked for \(options.storeDescriptions(for: model).compactMap(\.url?.path).joined(separator: ", ")))"
            )
            return 0
        }
        var needed = false
        var refused = false
        for description in descriptions {
            let url = description.url!
            do {
                let inspection = try StoreInspector.inspect(url, model: model, history: options.modelHistory)
                if inspection.isCompatible == true {
                    print("\(url.path): already fits model \(model.name) version \(model.version ?? "-")")
                } else if let reason = inspection.incompatibility {
                    print("\(url.path): cannot be used with the model: \(reason)")
                    refused = true
                } else if let plan = inspection.plan {
                    needed = needed || plan.isPossible
                    refused = refused || !plan.isPossible
                    print("\(url.path): \(plan.isPossible ? "migration" : "cannot be migrated"):")
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
        if parsed.has("--dry-run") || !needed {
            if parsed.has("--dry-run") { print("dry run: nothing was changed") }
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
