import Foundation
import Strata

#if canImport(Glibc)
    import Glibc
#endif

/// `strata import`: brings a store that Apple's Core Data wrote into Strata stores.
enum ImportCommand {
    static let usage = """
        usage: strata import --model PATH --from STORE [--data-dir DIR | --to CONFIG=PATH ...] [options]

        Reads an SQLite store that Core Data wrote (with its -wal and -shm, from a private copy: the
        store's files are left byte for byte as they are) and writes its objects into Strata stores:
        one per configuration of the model (<DIR>/<configuration>.sqlite, as strata serve names
        them), or one store with --to Default=PATH (or a model without configurations). Primary
        keys, versions (Z_OPT), every attribute, to-one, to-many, many-to-many and ordered
        relationships and inheritance are kept. The model version that wrote the store is found by
        Core Data's entity version hashes, and the objects are migrated to the current version.

          --model PATH          the model: an .xcdatamodeld (every version: the store may be older
                                than the current one), .xcdatamodel or JSON; repeatable
          --from STORE          the Core Data .sqlite file
          --data-dir DIR        write <DIR>/<configuration>.sqlite (or <DIR>/default.sqlite)
          --to CONFIG=PATH      the new store of a configuration; Default=PATH for one store
          --skip CONFIG         create that configuration's store empty (caches that are rebuilt)
          --source-version NAME the model version that wrote the store, when the hashes cannot tell
          --chunk-size N        rows per transaction (default 10000)
          --durability MODE     full (default) or normal SQLite synchronous mode while writing
          --progress MODE       auto (a bar on a terminal, lines otherwise), bar, lines or none
          --help                this text

        It can be interrupted at any point (even kill -9): run it again and it continues where it
        stopped. Every entity and join table is verified against the Core Data store (row count and
        checksum), and the new stores against the staging store. Then serve them with
        strata serve --model PATH --data-dir DIR --no-migrate.
        """

    static func run(_ arguments: [String]) -> Int32 {
        let parsed: CommandArguments
        do {
            parsed = try CommandArguments(
                arguments,
                valued: [
                    "--model", "--from", "--to", "--data-dir", "--skip", "--source-version", "--chunk-size",
                    "--durability", "--progress",
                ], flags: ["--help", "-h"], command: "import")
        } catch {
            printError("strata import: \(error.message)")
            return 64
        }
        if parsed.has("--help") || parsed.has("-h") {
            print(usage)
            return 0
        }
        guard parsed.positional.isEmpty else {
            printError("strata import: unexpected argument '\(parsed.positional[0])'; see strata import --help")
            return 64
        }
        guard let from = parsed.value("--from") else {
            printError("strata import: --from STORE is required")
            return 64
        }
        let modelPaths = parsed.values("--model")
        guard !modelPaths.isEmpty else {
            printError("strata import: --model PATH is required (the .xcdatamodeld the app ships)")
            return 64
        }
        let model: ObjectModel
        let versions: [ObjectModel]
        do {
            model = try loadModel(modelPaths, useEnvironment: false)
            versions = try coreDataVersions(modelPaths)
        } catch {
            printError("strata import: \(error)")
            return 1
        }
        var targets: [String: URL] = [:]
        for item in parsed.values("--to") {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex,
                item.index(after: equals) != item.endIndex
            else {
                printError("strata import: --to takes CONFIG=PATH, not '\(item)'")
                return 64
            }
            var path = String(item[item.index(after: equals)...])
            if path.hasPrefix("sqlite:") { path.removeFirst("sqlite:".count) }
            targets[String(item[..<equals])] = URL(fileURLWithPath: path)
        }
        if let directory = parsed.value("--data-dir") {
            guard targets.isEmpty else {
                printError("strata import: give --data-dir or --to, not both")
                return 64
            }
            let folder = URL(fileURLWithPath: directory)
            if model.configurations.isEmpty {
                targets[ObjectModel.defaultConfiguration] = folder.appendingPathComponent("default.sqlite")
            }
            for configuration in model.configurations {
                targets[configuration.name] = folder.appendingPathComponent("\(configuration.name.lowercased()).sqlite")
            }
        }
        guard !targets.isEmpty else {
            printError("strata import: give --data-dir DIR, or a --to CONFIG=PATH for every configuration")
            return 64
        }
        var options = CoreDataImportOptions(
            sourceVersion: parsed.value("--source-version"), skip: Set(parsed.values("--skip")))
        if let text = parsed.value("--chunk-size") {
            guard let size = Int(text), size > 0 else {
                printError("strata import: --chunk-size must be a positive number, not '\(text)'")
                return 64
            }
            options.chunkSize = size
        }
        if let text = parsed.value("--durability") {
            guard let durability = StoreOptions.Durability(rawValue: text) else {
                printError("strata import: --durability is full or normal, not '\(text)'")
                return 64
            }
            options.durability = durability
        }
        let mode = parsed.value("--progress") ?? "auto"
        guard ["auto", "bar", "lines", "none"].contains(mode) else {
            printError("strata import: --progress is auto, bar, lines or none, not '\(mode)'")
            return 64
        }
        let reporter = ProgressReporter(
            bar: mode == "bar" || (mode == "auto" && isatty(STDERR_FILENO) == 1), quiet: mode == "none",
            command: "import")
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
