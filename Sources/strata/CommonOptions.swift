import Foundation
import Strata
import StrataCLI
import StrataServer

#if canImport(Glibc)
    import Glibc
#endif

/// The options several commands share, declared once.
extension CommandOption {
    /// `--model PATH`, repeatable, with `STRATA_MODEL` (comma-separated) as its twin unless
    /// `environment` is false.
    static func model(
        environment: Bool = true, help: String = "model file: JSON, .xcdatamodel or .xcdatamodeld",
        default defaultText: String? = "the embedded example model",
        append: @escaping @Sendable (inout Settings, String) -> Void
    ) -> Self {
        .value(
            "--model", "PATH", environment: environment ? "STRATA_MODEL" : nil, items: .commaSeparated,
            repeatable: true, commandLineReplacesEnvironment: true, default: defaultText, help: help
        ) { append(&$0, $1.text) }
    }

    /// `--history PATH`: an earlier model version, repeatable.
    static func history(append: @escaping @Sendable (inout Settings, String) -> Void) -> Self {
        .value(
            "--history", "PATH", repeatable: true,
            help: "an earlier model version, oldest first, to tell the store's version and place mapping models; "
                + "an .xcdatamodeld model gives its versions by itself"
        ) { append(&$0, $1.text) }
    }

    /// `--to CONFIG=PATH` (or `CONFIG=sqlite:PATH`): a new store of a configuration.
    static func target(help: String, set: @escaping @Sendable (inout Settings, String, URL) -> Void) -> Self {
        .value("--to", "CONFIG=PATH", repeatable: true, help: help) { settings, value in
            let item = value.text
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex,
                item.index(after: equals) != item.endIndex
            else { throw value.invalid("takes CONFIG=PATH") }
            var path = String(item[item.index(after: equals)...])
            if path.hasPrefix("sqlite:") { path.removeFirst("sqlite:".count) }
            set(&settings, String(item[..<equals]), URL(fileURLWithPath: path))
        }
    }

    /// `--store CONFIG=PATH` (or `CONFIG=sqlite:PATH`): the existing SQLite store of a configuration.
    /// With `postgreSQL`, a PostgreSQL connection URI (`postgresql://…`) is taken as well.
    static func storeFile(
        postgreSQL: Bool = false, set: @escaping @Sendable (inout Settings, String, StoreSpec) -> Void
    ) -> Self {
        .value(
            "--store", "CONFIG=PATH", repeatable: true,
            help: "the store of a configuration (PATH or sqlite:PATH\(postgreSQL ? ", or a postgresql:// URI" : "")); "
                + "Default=PATH is one store holding every entity"
        ) { settings, value in
            let item = value.text
            let shown = PostgreSQLStore.redacted(item)
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                throw value.invalid("takes CONFIG=PATH", shown: shown)
            }
            let path = String(item[item.index(after: equals)...])
            let uri = postgreSQL && (path.hasPrefix("postgresql://") || path.hasPrefix("postgres://"))
            guard let spec = path.hasPrefix("sqlite:") || uri ? StoreSpec(path) : StoreSpec(sqlite: path),
                spec.type == .sqlite || uri, !(spec.path ?? "").isEmpty
            else { throw value.invalid("takes CONFIG=PATH", shown: shown) }
            set(&settings, String(item[..<equals]), spec)
        }
    }

    /// `--skip CONFIG`: a configuration whose store is created empty.
    static func skip(help: String, insert: @escaping @Sendable (inout Settings, String) -> Void) -> Self {
        .value("--skip", "CONFIG", repeatable: true, help: help) { insert(&$0, $1.text) }
    }

    /// `--chunk-size N`: rows per transaction.
    static func chunkSize(set: @escaping @Sendable (inout Settings, Int) -> Void) -> Self {
        .value("--chunk-size", "N", default: "10000", help: "rows per transaction") {
            set(&$0, try $1.integer(1...Int.max, "a positive number"))
        }
    }

    /// `--durability MODE` of the stores a copy writes.
    static func durability(set: @escaping @Sendable (inout Settings, StoreOptions.Durability) -> Void) -> Self {
        .value("--durability", "MODE", default: "full", help: "full or normal SQLite synchronous mode while writing") {
            set(&$0, try $1.choice(StoreOptions.Durability.self, ["full", "normal"]))
        }
    }

    /// `--progress MODE`.
    static func progress(set: @escaping @Sendable (inout Settings, ProgressMode) -> Void) -> Self {
        .value(
            "--progress", "MODE", default: "auto",
            help: "auto (a bar on a terminal, lines otherwise), bar, lines or none"
        ) { set(&$0, try $1.choice(ProgressMode.self, ["auto", "bar", "lines", "none"])) }
    }
}

/// How a long copy reports its progress on stderr.
enum ProgressMode: String, Sendable {
    case auto, bar, lines, none

    /// A reporter for `command` in this mode.
    func reporter(command: String) -> ProgressReporter {
        ProgressReporter(
            bar: self == .bar || (self == .auto && isatty(STDERR_FILENO) == 1), quiet: self == .none, command: command)
    }
}

/// Loads the model of `--model` paths: the embedded example model when there are none.
func loadModel(_ paths: [String]) throws(ModelError) -> ObjectModel {
    if paths.isEmpty { return try ObjectModel.example }
    return try ObjectModel.load(contentsOf: paths.map { URL(fileURLWithPath: $0) })
}

/// Loads the mapping models a migration runs: each `--mapping` folder, then every
/// `.xcmappingmodel` found beside or inside each model given (see ``MappingModel/discover(near:)``).
func loadMappingModels(_ paths: [String], models: [String]) throws(ModelError) -> [MappingModel] {
    var urls = paths.map { URL(fileURLWithPath: $0).standardizedFileURL }
    for model in models {
        for url in MappingModel.discover(near: URL(fileURLWithPath: model)) where !urls.contains(url) {
            urls.append(url)
        }
    }
    var result: [MappingModel] = []
    for url in urls { result.append(try MappingModel.load(contentsOf: url)) }
    return result
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
