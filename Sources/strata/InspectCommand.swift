import Foundation
import Strata

/// `strata inspect`: a store's metadata and contents, and whether it fits a model.
enum InspectCommand {
    static let usage = """
        usage: strata inspect PATH [--model PATH ...] [--history PATH ...] [--source-version NAME]

        Prints what an SQLite store records about itself (UUID, configuration, model version and
        entity hashes, objects per entity) without changing a byte of it. With --model it also says
        whether the store opens with that model and, if not, what a migration would do (a dry run)
        or why it cannot be migrated.

        A store that Core Data wrote is recognised too: its UUID, framework version, entities with
        their Z_ENT numbers and objects, join tables, and, with --model (an .xcdatamodeld), which
        version of the model wrote it (by Core Data's entity version hashes) and why.

          --model PATH      a model to check against: JSON, .xcdatamodel or .xcdatamodeld; repeatable
          --history PATH    an earlier model version, oldest first, for a multi-step migration;
                            repeatable (an .xcdatamodeld model gives its versions by itself)
          --source-version NAME
                            for a Core Data store: the model version that wrote it, when the
                            hashes cannot tell (checked against the store's hashes)
          --help            this text

        Exit status: 0 the store fits the model (or no model was given), 3 it needs a migration that
        can be inferred, 2 it cannot be used with the model, 1 the file cannot be read.
        """

    static func run(_ arguments: [String]) -> Int32 {
        let parsed: CommandArguments
        do {
            parsed = try CommandArguments(
                arguments, valued: ["--model", "--history", "--source-version"], flags: ["--help", "-h"],
                command: "inspect")
        } catch {
            printError("strata inspect: \(error.message)")
            return 64
        }
        if parsed.has("--help") || parsed.has("-h") {
            print(usage)
            return 0
        }
        guard parsed.positional.count == 1 else {
            printError("strata inspect: give one store file; see strata inspect --help")
            return 64
        }
        let models = parsed.values("--model")
        var model: ObjectModel?
        var history: [ObjectModel] = []
        let url = URL(fileURLWithPath: parsed.positional[0])
        if CoreDataStoreFile.recognizes(url) {
            do {
                let file = try CoreDataStoreFile(url: url)
                return CoreDataInspection.run(
                    file, modelPaths: models, sourceVersion: parsed.values("--source-version").last)
            } catch {
                printError("strata inspect: \(error)")
                return 1
            }
        }
        do {
            if !models.isEmpty {
                model = try loadModel(models, useEnvironment: false)
                history = try loadModelHistory(models: models, history: parsed.values("--history"))
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
