import Foundation
import Strata
import StrataCLI

/// `strata inspect`: a store's metadata and contents, and whether it fits a model.
enum InspectCommand {
    struct Settings {
        var path = ""
        var models: [String] = []
        var history: [String] = []
        var sourceVersion: String?
    }

    static let interface = CommandInterface<Settings>(
        name: "strata inspect", synopsis: "PATH [--model PATH ...] [--history PATH ...] [--source-version NAME]",
        abstract: """
            Prints what an SQLite store records about itself (UUID, configuration, model version and
            entity hashes, objects per entity) without changing a byte of it. With --model it also says
            whether the store opens with that model and, if not, what a migration would do (a dry run)
            or why it cannot be migrated.

            A store that Core Data wrote is recognised too: its UUID, framework version, entities with
            their Z_ENT numbers and objects, join tables, and, with --model (an .xcdatamodeld), which
            version of the model wrote it (by Core Data's entity version hashes) and why.
            """,
        options: [
            .model(
                environment: false, help: "a model to check against: JSON, .xcdatamodel or .xcdatamodeld", default: nil
            ) { $0.models.append($1) },
            .history { $0.history.append($1) },
            .value(
                "--source-version", "NAME",
                help: "for a Core Data store: the model version that wrote it, when the hashes cannot tell "
                    + "(checked against the store's hashes)"
            ) { $0.sourceVersion = $1.text },
        ],
        arguments: .init(count: 1...1, mismatch: "give one store file") { $0.path = $1[0] },
        discussion: """
            Exit status: 0 the store fits the model (or no model was given), 3 it needs a migration that
            can be inferred, 2 it cannot be used with the model, 1 the file cannot be read.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: inspect)
    }

    static func inspect(_ settings: Settings) -> Int32 {
        let models = settings.models
        var model: ObjectModel?
        var history: [ObjectModel] = []
        let url = URL(fileURLWithPath: settings.path)
        if CoreDataStoreFile.recognizes(url) {
            do {
                let file = try CoreDataStoreFile(url: url)
                return CoreDataInspection.run(file, modelPaths: models, sourceVersion: settings.sourceVersion)
            } catch {
                printError("strata inspect: \(error)")
                return 1
            }
        }
        do {
            if !models.isEmpty {
                model = try loadModel(models)
                history = try loadModelHistory(models: models, history: settings.history)
            }
        } catch {
            printError("strata inspect: \(error)")
            return 1
        }
        let inspection: StoreInspection
        do {
            inspection = try StoreInspector.inspect(url, model: model, history: history)
        } catch {
            printError("strata inspect: \(error)")
            return 1
        }
        let metadata = inspection.metadata
        print("store \(url.path)")
        print("  uuid           \(metadata.identifier)")
        print("  configuration  \(metadata.configuration ?? ObjectModel.defaultConfiguration)")
        print(
            "  model          \(inspection.recordedModelName ?? "(not recorded)") version \(metadata.modelVersion ?? "-")"
        )
        print("  format         \(inspection.format ?? "-")")
        if let state = inspection.splitState {
            print("  split          \(state) (from store \(inspection.splitSource ?? "?"))")
        }
        print("  entities:")
        let width = metadata.entityHashes.keys.map(\.count).max() ?? 0
        for entity in metadata.entityHashes.keys.sorted() {
            let padded = entity + String(repeating: " ", count: width - entity.count)
            print(
                "    \(padded)  hash \(metadata.entityHashes[entity]!.prefix(16))  \(inspection.rowCounts[entity] ?? 0) objects"
            )
        }
        for entity in inspection.rowCounts.keys.sorted() where metadata.entityHashes[entity] == nil {
            print("    \(entity)  (not in the recorded hashes)  \(inspection.rowCounts[entity]!) objects")
        }
        if !inspection.joinTableRows.isEmpty {
            print("  join tables:")
            for (table, rows) in inspection.joinTableRows.sorted(by: { $0.key < $1.key }) {
                print("    \(table)  \(rows) pairs")
            }
        }
        guard let model else { return 0 }
        let name = "model \(model.name) version \(model.version ?? "-")"
        if inspection.isCompatible == true {
            print("compatible with \(name): yes")
            return 0
        }
        if let reason = inspection.incompatibility {
            print("compatible with \(name): no; \(reason)")
            return 2
        }
        guard let plan = inspection.plan else { return 0 }
        if plan.isPossible {
            print("compatible with \(name): no; a lightweight migration would:")
        } else {
            print("compatible with \(name): no, and it cannot be migrated:")
        }
        for line in plan.summary.split(separator: "\n") { print("  \(line)") }
        return plan.isPossible ? 3 : 2
    }
}
