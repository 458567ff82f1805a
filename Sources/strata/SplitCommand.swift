import Foundation
import Strata
import StrataCLI

/// `strata split`: moves a single-file store into one store per configuration.
enum SplitCommand {
    struct Settings {
        var models: [String] = []
        var from: String?
        var targets: [String: URL] = [:]
        var options = SplitOptions()
        var progress = ProgressMode.auto
    }

    static let interface = CommandInterface<Settings>(
        name: "strata split", synopsis: "--model PATH --from OLD --to CONFIG=PATH ... [--skip CONFIG ...] [options]",
        abstract: """
            Moves a single-file store (every entity in one file, as an older version of an app kept it)
            into one store per configuration of the model, in one pass. Object keys, versions and
            relationships are kept; each new store gets a new UUID. The source is only read.
            """,
        options: [
            .model(help: "the model the source was written with: JSON, .xcdatamodel or .xcdatamodeld") {
                $0.models.append($1)
            },
            .value("--from", "PATH", help: "the single-file store") { $0.from = $1.text },
            .target(help: "the new store of a configuration; one for every configuration") {
                $0.targets[$1] = $2
            },
            .skip(help: "create that configuration's store empty (logs and caches that are rebuilt)") {
                $0.options.skip.insert($1)
            },
            .chunkSize { $0.options.chunkSize = $1 },
            .durability { $0.options.durability = $1 },
            .progress { $0.progress = $1 },
        ],
        discussion: """
            It can be interrupted at any point (even kill -9): run it again and it continues where it
            stopped. At the end each entity's row count and SHA-256 checksum are compared with the source.
            Running it again after it finished says so and changes nothing.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: split)
    }

    static func split(_ settings: Settings) -> Int32 {
        guard let from = settings.from else { return interface.fail("--from PATH is required") }
        guard !settings.targets.isEmpty else {
            return interface.fail("give a --to CONFIG=PATH for every configuration")
        }
        let model: ObjectModel
        do {
            model = try loadModel(settings.models)
        } catch {
            printError("strata split: \(error)")
            return 1
        }
        let reporter = settings.progress.reporter(command: "split")
        let source = URL(fileURLWithPath: from)
        let report: SplitReport
        do {
            report = try StoreSplitter.split(
                model: model, source: source, targets: settings.targets, options: settings.options,
                progress: reporter.report)
        } catch {
            reporter.end()
            printError("strata split: \(error)")
            return 1
        }
        reporter.end()
        if report.outcome == .alreadySplit {
            print(
                "already split: \(report.targets.map { "\($0.configuration)=\($0.url.path)" }.joined(separator: ", ")) are complete splits of \(source.path) (store \(report.sourceIdentifier)); nothing to do"
            )
            return 0
        }
        let seconds = (report.seconds * 100).rounded() / 100
        print(
            "split \(source.path) (store \(report.sourceIdentifier)): \(report.rowsCopied) rows copied in \(seconds) s\(report.outcome == .resumed ? " (resumed)" : "")"
        )
        for target in report.targets {
            print(
                "  \(target.configuration)  \(target.url.path)  uuid \(target.storeIdentifier)\(target.skipped ? "  (skipped: created empty)" : "")"
            )
            for check in target.checks { print("    \(check.name)  \(check.rows) rows  checksum \(check.checksum)") }
        }
        print("verified: every entity's row count and checksum match the source")
        return 0
    }
}
