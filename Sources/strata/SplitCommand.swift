import Foundation
import Strata

#if canImport(Glibc)
    import Glibc
#endif

/// `--name value` and `--name=value` options, and flags, as the store commands take them.
struct CommandArguments {
    /// Options in order, as (name, value); flags have a nil value.
    var options: [(name: String, value: String?)] = []
    /// Arguments that are not options.
    var positional: [String] = []

    /// Parses `arguments`; `valued` options take a value, `flags` take none.
    init(_ arguments: [String], valued: Set<String>, flags: Set<String>, command: String) throws(CommandError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-"), argument != "-" else {
                positional.append(argument)
                continue
            }
            var name = argument
            var value: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            }
            if flags.contains(name) {
                options.append((name, value))
            } else if valued.contains(name) {
                if value == nil {
                    guard index < arguments.count else { throw CommandError("\(name) needs a value") }
                    value = arguments[index]
                    index += 1
                }
                options.append((name, value))
            } else {
                throw CommandError("unknown option '\(argument)'; see strata \(command) --help")
            }
        }
    }

    /// Every value of option `name`.
    func values(_ name: String) -> [String] { options.filter { $0.name == name }.compactMap(\.value) }

    /// The last value of option `name`.
    func value(_ name: String) -> String? { values(name).last }

    /// Whether flag `name` was given.
    func has(_ name: String) -> Bool { options.contains { $0.name == name } }
}

/// A mistake on a command line, printed as one line.
struct CommandError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Loads the model versions a migration steps through: each `--history` file in order (a
/// `.xcdatamodeld` gives all its versions), else the versions of a `.xcdatamodeld` model.
func loadModelHistory(models: [String], history: [String]) throws(ModelError) -> [ObjectModel] {
    var result: [ObjectModel] = []
    let paths = history.isEmpty ? models.filter { $0.lowercased().hasSuffix(".xcdatamodeld") } : history
    for path in paths {
        let url = URL(fileURLWithPath: path)
        if url.pathExtension.lowercased() == "xcdatamodeld" {
            result += try ObjectModel.loadCoreDataModelVersions(at: url)
        } else {
            result.append(try ObjectModel.load(contentsOf: url))
        }
    }
    return result
}

/// `strata split`: moves a single-file store into one store per configuration.
enum SplitCommand {
    static let usage = """
        usage: strata split --model PATH --from OLD --to CONFIG=PATH ... [--skip CONFIG ...] [options]

        Moves a single-file store (every entity in one file, as an older version of an app kept it)
        into one store per configuration of the model, in one pass. Object keys, versions and
        relationships are kept; each new store gets a new UUID. The source is only read.

          --model PATH         the model the source was written with: JSON, .xcdatamodel or
                               .xcdatamodeld; repeatable (STRATA_MODEL; default: the example model)
          --from PATH          the single-file store
          --to CONFIG=PATH     the new store of a configuration; one for every configuration
          --skip CONFIG        create that configuration's store empty (logs and caches that are rebuilt)
          --chunk-size N       rows per transaction (default 10000)
          --durability MODE    full (default) or normal SQLite synchronous mode while writing
          --progress MODE      auto (a bar on a terminal, lines otherwise), bar, lines or none
          --help               this text

        It can be interrupted at any point (even kill -9): run it again and it continues where it
        stopped. At the end each entity's row count and SHA-256 checksum are compared with the source.
        Running it again after it finished says so and changes nothing.
        """

    static func run(_ arguments: [String]) -> Int32 {
        let parsed: CommandArguments
        do {
            parsed = try CommandArguments(
                arguments,
                valued: ["--model", "--from", "--to", "--skip", "--chunk-size", "--durability", "--progress"],
                flags: ["--help", "-h"], command: "split")
        } catch {
            printError("strata split: \(error.message)")
            return 64
        }
        if parsed.has("--help") || parsed.has("-h") {
            print(usage)
            return 0
        }
        guard parsed.positional.isEmpty else {
            printError("strata split: unexpected argument '\(parsed.positional[0])'; see strata split --help")
            return 64
        }
        guard let from = parsed.value("--from") else {
            printError("strata split: --from PATH is required")
            return 64
        }
        var targets: [String: URL] = [:]
        for item in parsed.values("--to") {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex,
                item.index(after: equals) != item.endIndex
            else {
                printError("strata split: --to takes CONFIG=PATH, not '\(item)'")
                return 64
            }
            var path = String(item[item.index(after: equals)...])
            if path.hasPrefix("sqlite:") { path.removeFirst("sqlite:".count) }
            targets[String(item[..<equals])] = URL(fileURLWithPath: path)
        }
        guard !targets.isEmpty else {
            printError("strata split: give a --to CONFIG=PATH for every configuration")
            return 64
        }
        var options = SplitOptions(skip: Set(parsed.values("--skip")))
        if let text = parsed.value("--chunk-size") {
            guard let size = Int(text), size > 0 else {
                printError("strata split: --chunk-size must be a positive number, not '\(text)'")
                return 64
            }
            options.chunkSize = size
        }
        if let text = parsed.value("--durability") {
            guard let durability = StoreOptions.Durability(rawValue: text) else {
                printError("strata split: --durability is full or normal, not '\(text)'")
                return 64
            }
            options.durability = durability
        }
        let mode = parsed.value("--progress") ?? "auto"
        guard ["auto", "bar", "lines", "none"].contains(mode) else {
            printError("strata split: --progress is auto, bar, lines or none, not '\(mode)'")
            return 64
        }
        let model: ObjectModel
        do {
            model = try loadModel(parsed.values("--model"))
        } catch {
            printError("strata split: \(error)")
            return 1
        }
        let bar = mode == "bar" || (mode == "auto" && isatty(STDERR_FILENO) == 1)
        let reporter = ProgressReporter(bar: bar, quiet: mode == "none")
        let source = URL(fileURLWithPath: from)
        let report: SplitReport
        do {
            report = try StoreSplitter.split(
                model: model, source: source, targets: targets, options: options, progress: reporter.report)
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

/// Prints split progress on stderr: a bar that redraws itself on a terminal, plain lines otherwise.
final class ProgressReporter {
    let bar: Bool
    let quiet: Bool
    /// The command, at the start of each plain line.
    let command: String
    private var lastLine = ""
    private var drawn = false

    init(bar: Bool, quiet: Bool, command: String = "split") {
        self.bar = bar
        self.quiet = quiet
        self.command = command
    }

    func report(_ progress: SplitProgress) {
        report(
            phase: progress.phase.rawValue,
            place: [progress.configuration, progress.table].compactMap { $0 }.joined(separator: " "),
            copied: progress.copiedRows, total: progress.totalRows)
    }

    func report(phase: String, place: String, copied: Int, total: Int) {
        guard !quiet else { return }
        let fraction = total == 0 ? 1 : Double(copied) / Double(total)
        let percent = Int((fraction * 100).rounded(.down))
        let counts = "\(copied)/\(total) rows"
        if bar {
            let width = 30
            let filled = min(width, Int(fraction * Double(width)))
            let line =
                "\r[\(String(repeating: "#", count: filled))\(String(repeating: "-", count: width - filled))] \(String(percent).leftPadded(3))% \(counts) \(phase) \(place)"
            FileHandle.standardError.write(Data((line + "\u{1B}[K").utf8))
            drawn = true
        } else {
            let line = "\(command): \(percent)% (\(counts)) \(phase) \(place)"
            guard line != lastLine else { return }
            lastLine = line
            printError(line)
        }
    }

    /// Ends the bar's line.
    func end() {
        if drawn { FileHandle.standardError.write(Data("\n".utf8)) }
        drawn = false
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
