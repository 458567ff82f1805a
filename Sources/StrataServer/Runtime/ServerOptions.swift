import Foundation
import Strata

/// Where one configuration's store lives.
public struct StoreSpec: Sendable, Hashable {
    /// SQLite or memory.
    public var type: StoreType
    /// The SQLite file (relative paths are relative to the working directory).
    public var path: String?
    /// This store's durability, when it differs from the server's `--durability`.
    public var durability: StoreOptions.Durability?

    /// Parses `sqlite:PATH`, `sqlite:PATH?durability=full|normal`, `memory:`, or a PostgreSQL
    /// connection URI (`postgresql://…` or `postgres://…`, kept in ``path``; one that lists several
    /// hosts in its authority, `postgresql://h1:5432,h2:5433/db`, with them moved into its query).
    public init?(_ text: String) {
        if text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") {
            // Several hosts in the authority are moved into the query, which URL can hold.
            guard let url = PostgreSQLStore.connectionURL(text) else { return nil }
            type = .postgresql
            path = url.absoluteString
        } else if text == "memory:" || text == "memory" {
            type = .inMemory
            path = nil
        } else if text.hasPrefix("sqlite:"), text.count > "sqlite:".count {
            type = .sqlite
            var rest = String(text.dropFirst("sqlite:".count))
            if let question = rest.lastIndex(of: "?") {
                let query = rest[rest.index(after: question)...]
                guard query.hasPrefix("durability="),
                    let durability = StoreOptions.Durability(rawValue: String(query.dropFirst("durability=".count)))
                else { return nil }
                self.durability = durability
                rest = String(rest[..<question])
            }
            guard !rest.isEmpty else { return nil }
            path = rest
        } else {
            return nil
        }
    }

    /// A spec for an SQLite file.
    public init(sqlite path: String) {
        type = .sqlite
        self.path = path
    }
}

/// Everything `strata serve` can be told.
public struct ServerOptions: Sendable {
    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port (0: any free port).
    public var port: UInt16 = 8080
    /// Where default SQLite stores go.
    public var dataDirectory = "data"
    /// Model files; empty: the embedded example model.
    public var models: [String] = []
    /// Store per configuration name (`Default`: one store for every entity).
    public var stores: [String: StoreSpec] = [:]
    /// Request bodies larger than this are refused with 413.
    public var maxBodyBytes = 1 << 20
    /// The longest one fetch may run, in seconds (each store enforces it; 503 past it).
    public var queryBudget = 5.0
    /// Longer request targets (path and query) are refused with 414.
    public var maxTargetBytes = 32768
    /// Larger request headers are refused with 431.
    public var maxHeaderBytes = 16384
    /// Simultaneous connections from one IP address (0: no limit of its own).
    public var maxConnectionsPerIP = 256
    /// Seconds a connection may stay idle (no bytes either way) before it is closed.
    public var idleTimeoutSeconds = 30
    /// Seconds a request may take from its request line to its response's last byte, apart from
    /// the time its handler runs (408, or the connection closed); 0: no limit.
    public var requestTimeoutSeconds = 60
    /// How many rendered objects per entity the server keeps for reads by id (0 keeps none): each
    /// costs its JSON's size and about a hundred bytes more.
    public var readCacheObjects = 10_000
    /// Simultaneous connections.
    public var maxConnections = 1024
    /// How access-log lines are written.
    public var logFormat = AccessLogFormat.text
    /// SQLite durability.
    public var durability = StoreOptions.Durability.full
    /// How much of each SQLite store file its readers map into memory (``StoreOptions/memoryMapBytes``).
    public var sqliteMemoryMapBytes = StoreOptions.defaultMemoryMapBytes
    /// Migrate stores written with an older model when they are loaded (all together or none).
    public var migrate = true
    /// Earlier model versions, oldest first, that a migration steps through.
    public var modelHistory: [ObjectModel] = []
    /// Mapping models a migration runs for the steps they describe (``StoreOptions/mappingModels``).
    public var mappingModels: [MappingModel] = []
    /// Bearer tokens, each `NAME:SCOPE[,SCOPE]:SECRET` (see ``AccessToken``).
    public var tokens: [String] = []
    /// A file of more tokens, one per line, re-read by ``StrataServerInstance/reloadTokens()``.
    public var tokensFile: String?
    /// Serve a non-loopback address without any token.
    public var allowAnonymous = false
    /// The OpenAPI document needs a `read` token too.
    public var privateOpenAPI = false
    /// How long answers to requests with an `Idempotency-Key` are kept, in hours; 0: the header
    /// is ignored.
    public var idempotencyHours = 24.0
    /// Requests per second each client (bearer token, else IP address) may send; 0: no limit.
    public var rateLimit = 0.0
    /// How many requests a client may send at once above the rate; 0: twice the rate.
    public var rateBurst = 0.0
    /// Entities served read-only or hidden, over what the model says (subentities follow).
    public var entityAccess: [String: EntityAccess] = [:]
    /// The PEM certificate chain and private key to serve HTTPS with (both, or neither).
    public var tlsCertificate: String?
    public var tlsKey: String?
    /// A folder holding `swagger-ui/` (as scripts/fetch-assets writes it) to serve at `/docs` in
    /// place of the Swagger UI build embedded in the binary; nil: the embedded one; empty: none,
    /// and `/docs` is a plain page.
    public var assetsDirectory: String?
    /// The bounds on a request's shape (`--limit NAME=N`).
    public var limits = RequestLimits()
    /// Origins whose pages may call the server from a browser (`*`: any, anonymous access only).
    public var corsOrigins: [String] = []

    /// Whether the stores record persistent history (``StoreOptions/recordsHistory``).
    public var history = true
    /// Seconds history is kept: older transactions are pruned in the background (see
    /// ``HistoryRetention``); nil keeps them whatever their age.
    public var historyRetention: Double? = 7 * 24 * 3600
    /// How many history changes each store keeps at most, the newest transactions' (a transaction
    /// goes whole); nil: no cap.
    public var historyMaxChanges: Int? = 1_000_000
    /// Seconds between the background pruner's rounds (it runs one when the server starts).
    public var historyPruneInterval = 60.0

    /// Default options.
    public init() {}

    /// The store of every configuration: SQLite files `<data-dir>/<configuration>.sqlite` unless
    /// `stores` says otherwise; `Default` replaces them all with one store.
    public func storeDescriptions(for model: ObjectModel) -> [StoreDescription] {
        let options = StoreOptions(
            durability: durability, migrate: migrate, modelHistory: modelHistory, queryBudget: queryBudget,
            memoryMapBytes: sqliteMemoryMapBytes, recordsHistory: history, mappingModels: mappingModels)
        func description(_ configuration: String?, _ spec: StoreSpec) -> StoreDescription {
            var options = options
            if let durability = spec.durability { options.durability = durability }
            return StoreDescription(
                type: spec.type, configuration: configuration,
                url: spec.path.map { spec.type == .postgresql ? URL(string: $0)! : URL(fileURLWithPath: $0) },
                options: options)
        }
        if let all = stores[ObjectModel.defaultConfiguration] { return [description(nil, all)] }
        let names = model.configurations.map(\.name)
        if names.isEmpty {
            return [description(nil, StoreSpec(sqlite: "\(dataDirectory)/default.sqlite"))]
        }
        return names.map { name in
            description(name, stores[name] ?? StoreSpec(sqlite: "\(dataDirectory)/\(name.lowercased()).sqlite"))
        }
    }
}

extension ServerOptions {
    /// The seconds of a duration as `--history-retention` takes it: a number followed by `d`
    /// (days), `h`, `m` or `s`, or a plain number of seconds (`7d`, `12h`, `30m`, `3600s`, `3600`,
    /// `1.5h`); `off` is 0. Nil for anything else, or a negative or unbounded value.
    public static func seconds(inDuration text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed == "off" { return 0 }
        let units: [Character: Double] = ["d": 86400, "h": 3600, "m": 60, "s": 1]
        var number = Substring(trimmed)
        var unit = 1.0
        if let last = trimmed.last, let scale = units[last] {
            number = number.dropLast()
            unit = scale
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let value = Double(number), value.isFinite, value >= 0, value * unit <= 100 * 365 * 86400
        else { return nil }
        return value * unit
    }
}
