import Foundation
import Strata
import StrataCLI
import StrataServer

/// `strata serve`'s option table: every option, its environment twin, its help and its parser.
extension ServeCommand {
    static let options: [CommandOption<ServerOptions>] =
        listening + [modelOption] + storeOptions + requestLimits + connectionLimits + performance + access

    /// Where the server listens and where its stores live.
    static let listening: [CommandOption<ServerOptions>] = [
        .value(
            "--host", "ADDRESS", environment: "STRATA_HOST", default: "127.0.0.1",
            help: "address to listen on; any other than loopback needs tokens or --allow-anonymous"
        ) { $0.host = $1.text },
        .value("--port", "PORT", environment: "STRATA_PORT", default: "8080", help: "port, 0 for any free one") {
            $0.port = UInt16(try $1.integer(0...65535, "a number from 0 to 65535"))
        },
        .value(
            "--data-dir", "DIR", environment: "STRATA_DATA_DIR", default: "./data",
            help: "folder of the default SQLite stores, <DIR>/<configuration>.sqlite"
        ) { $0.dataDirectory = $1.text },
    ]

    /// `--model`, as the other commands that serve or migrate take it.
    static let modelOption = CommandOption<ServerOptions>.value(
        "--model", "PATH", environment: "STRATA_MODEL", items: .commaSeparated, repeatable: true,
        commandLineReplacesEnvironment: true, default: "the embedded example model",
        help: "model file: JSON, .xcdatamodel or .xcdatamodeld"
    ) { $0.models.append($1.text) }

    /// The stores and how they write.
    static let storeOptions: [CommandOption<ServerOptions>] = [
        .value(
            "--store", "CONFIG=SPEC", environment: "STRATA_STORE", items: .split(storeList), repeatable: true,
            help: "store of a configuration: sqlite:PATH, sqlite:PATH?durability=normal, memory:, or a PostgreSQL "
                + "URI (postgresql://user@host:5432/db, several hosts as postgresql://user@h1:5432,h2:5432/db, optional "
                + "?schema=NAME); Default=SPEC puts every entity in "
                + "one store"
        ) { options, value in
            let text = value.text
            guard let equals = text.firstIndex(of: "="),
                let spec = StoreSpec(String(text[text.index(after: equals)...]))
            else {
                throw value.invalid(
                    "takes CONFIG=sqlite:PATH, CONFIG=memory: or CONFIG=postgresql://…",
                    shown: PostgreSQLStore.redacted(text),
                    note: text.contains("postgres")
                        ? " (several hosts: postgresql://user@a:5432,b:5433/db or postgresql:///db?host=a,b&port=5432,5433)"
                        : "")
            }
            options.stores[String(text[..<equals])] = spec
        },
        .value(
            "--durability", "MODE", environment: "STRATA_DURABILITY", default: "full",
            help: "full: an acknowledged write survives power loss; normal: it survives a crash of the process, "
                + "and power loss may lose the last writes (never corrupts); for every SQLite store"
        ) { $0.durability = try $1.choice(StoreOptions.Durability.self, ["full", "normal"]) },
        .flag(
            "--migrate", inverse: "--no-migrate", environment: "STRATA_MIGRATE", default: "on",
            help: "migrate stores written with an older model when loading them, all together or none; an "
                + ".xcdatamodeld model's versions are the steps"
        ) { $0.migrate = $1 },
        .flag(
            "--history", inverse: "--no-history", environment: "STRATA_HISTORY", default: "on",
            help: "record every commit's persistent history (who, when, which objects, deletes' tombstones) in "
                + "the same transaction as the data, in each store"
        ) { $0.history = $1 },
        .value(
            "--history-retention", "DURATION", environment: "STRATA_HISTORY_RETENTION", default: "7d",
            help: "how long history is kept: 7d, 12h, 30m, 3600s (or 3600); older transactions are pruned in the "
                + "background, every minute and at start, and /_changes?since= a pruned token is 410; 0 or off keeps "
                + "history whatever its age"
        ) { options, value in
            guard let seconds = ServerOptions.seconds(inDuration: value.text) else {
                throw value.invalid("takes a duration: 7d, 12h, 30m, 3600s, a number of seconds, or 0 or off")
            }
            options.historyRetention = seconds > 0 ? seconds : nil
        },
        .value(
            "--history-max-changes", "N", environment: "STRATA_HISTORY_MAX_CHANGES", default: "1000000",
            help: "the most history changes (one per object a commit touched) each store keeps, the newest "
                + "transactions', pruned with the retention; 0 or off for no cap"
        ) { options, value in
            if value.text.lowercased() == "off" {
                options.historyMaxChanges = nil
                return
            }
            let count = try value.integer(0...Int.max, "a number of changes, or 0 or off")
            options.historyMaxChanges = count > 0 ? count : nil
        },
    ]

    /// Bounds on one request.
    static let requestLimits: [CommandOption<ServerOptions>] = [
        .value(
            "--max-body-bytes", "N", environment: "STRATA_MAX_BODY_BYTES", default: "1048576",
            help: "larger request bodies get 413"
        ) { $0.maxBodyBytes = try $1.integer(1...Int.max, "a positive number") },
        .value(
            "--max-target-bytes", "N", environment: "STRATA_MAX_TARGET_BYTES", default: "32768",
            help: "longer request targets (path and query) get 414"
        ) { $0.maxTargetBytes = try $1.integer(256...1 << 20, "a number from 256 to 1048576") },
        .value(
            "--max-header-bytes", "N", environment: "STRATA_MAX_HEADER_BYTES", default: "16384",
            help: "larger request headers get 431"
        ) { $0.maxHeaderBytes = try $1.integer(256...1 << 20, "a number from 256 to 1048576") },
        .value(
            "--query-budget", "SECONDS", environment: "STRATA_QUERY_BUDGET", default: "5",
            help: "the longest one fetch may run before the store stops it and the request gets 503"
        ) { $0.queryBudget = try $1.number(0...3600, above: true, "a number of seconds from 0 to 3600") },
        .value(
            "--limit", "NAME=N", environment: "STRATA_LIMITS", items: .commaSeparated, repeatable: true,
            help: "a bound on a request's shape, answered 400: page-size (1000), order-keys (32), filters (64), "
                + "where-length (4096), batch (100), json-depth (32), json-elements (200000); several may be "
                + "given comma-separated"
        ) { options, value in
            for item in value.text.split(separator: ",") {
                do throws(ServeError) {
                    try options.limits.set(String(item))
                } catch {
                    throw value.error(error.message)
                }
            }
        },
        .value(
            "--request-timeout", "SECONDS", environment: "STRATA_REQUEST_TIMEOUT", default: "60",
            help: "the longest a request may take to arrive and its response to be read, handler time apart: "
                + "408, or the connection closed; 0 for none"
        ) { $0.requestTimeoutSeconds = try $1.integer(0...1_000_000, "a number of seconds (0 for no limit)") },
        .value(
            "--rate-limit", "N[/BURST]", environment: "STRATA_RATE_LIMIT", default: "none",
            help: "requests per second per client (its token, else its IP address), with bursts of BURST "
                + "(default 2×N); over it, 429 with Retry-After; /live and /ready are not counted"
        ) { options, value in
            let parts = value.text.split(separator: "/", maxSplits: 1).map { Double($0) }
            guard let rate = parts.first ?? nil, rate > 0, parts.count == 1 || (parts[1] ?? 0) >= 1 else {
                throw value.invalid("takes requests per second, optionally /BURST (50 or 50/200)")
            }
            options.rateLimit = rate
            options.rateBurst = parts.count == 2 ? parts[1]! : 2 * rate
        },
    ]

    /// Bounds on connections.
    static let connectionLimits: [CommandOption<ServerOptions>] = [
        .value(
            "--max-connections", "N", environment: "STRATA_MAX_CONNECTIONS", default: "1024",
            help: "simultaneous connections"
        ) { $0.maxConnections = try $1.integer(1...Int.max, "a positive number") },
        .value(
            "--max-connections-per-ip", "N", environment: "STRATA_MAX_CONNECTIONS_PER_IP", default: "256",
            help: "simultaneous connections from one address; a request on one more is answered 429 and its "
                + "connection closed; 0 for none"
        ) { $0.maxConnectionsPerIP = try $1.integer(0...1_000_000, "a number") },
        .value(
            "--idle-timeout", "SECONDS", environment: "STRATA_IDLE_TIMEOUT", default: "30",
            help: "a connection silent this long is closed"
        ) { $0.idleTimeoutSeconds = try $1.integer(1...1_000_000, "a positive number") },
    ]

    /// Caches, memory maps, logs and idempotency.
    static let performance: [CommandOption<ServerOptions>] = [
        .value(
            "--read-cache", "N", environment: "STRATA_READ_CACHE", default: "10000",
            help: "rendered objects per entity kept for reads by id; 0 for none"
        ) { $0.readCacheObjects = try $1.integer(0...100_000_000, "a number of objects from 0 to 100000000") },
        .value(
            "--sqlite-mmap", "MIB", environment: "STRATA_SQLITE_MMAP", default: "256",
            help: "how much of each SQLite store file its readers map into memory, so a read of a page the kernel "
                + "caches is no system call and no copy; 0 for none: every read a pread"
        ) { $0.sqliteMemoryMapBytes = try $1.integer(0...1 << 20, "a number of MiB from 0 to 1048576") << 20 },
        .value(
            "--idempotency-hours", "H", environment: "STRATA_IDEMPOTENCY_HOURS", default: "24",
            help: "how long the answer to a write sent with an Idempotency-Key is kept, per token, in "
                + "<data-dir>/_idempotency.sqlite, or with a PostgreSQL store in its database, shared by every server "
                + "over it; 0 ignores the header"
        ) { $0.idempotencyHours = try $1.number(0...24 * 365, "a number of hours from 0 to 8760") },
        .value(
            "--log-format", "FORMAT", environment: "STRATA_LOG_FORMAT", default: "text",
            help: "text or json access-log lines on stderr"
        ) { $0.logFormat = try $1.choice(AccessLogFormat.self, AccessLogFormat.allCases.map(\.rawValue)) },
        .value(
            "--assets-dir", "DIR", environment: "STRATA_ASSETS_DIR",
            help: "a folder with swagger-ui/ (as scripts/fetch-assets writes it) to serve at /docs instead of the "
                + "Swagger UI embedded in the binary; '' for none: /docs is then a plain page"
        ) { $0.assetsDirectory = $1.text },
    ]

    /// Who may do what, and over which transport.
    static let access: [CommandOption<ServerOptions>] = [
        .value(
            "--token", "NAME:SCOPES:SECRET", repeatable: true,
            help: "a bearer token; scopes read, write (includes read), admin (/metrics, store locations in /), "
                + "comma-separated; the secret at least 16 characters or sha256:HEX. With any token, entity "
                + "routes need one (401, 403); /live and /ready stay open"
        ) { $0.tokens.append($1.text) },
        .value(
            "--tokens-file", "PATH", environment: "STRATA_TOKENS_FILE",
            help: "one token per line, # for comments; re-read on SIGHUP"
        ) { $0.tokensFile = $1.text },
        .flag(
            "--allow-anonymous", environment: "STRATA_ALLOW_ANONYMOUS",
            help: "serve an address other than loopback without tokens; without it such a server refuses to start"
        ) { $0.allowAnonymous = $1 },
        .flag(
            "--private-openapi", environment: "STRATA_PRIVATE_OPENAPI",
            help: "the OpenAPI document needs a read token too"
        ) { $0.privateOpenAPI = $1 },
        .value(
            "--entity-access", "ENTITY=ACCESS", environment: "STRATA_ENTITY_ACCESS", items: .commaSeparated,
            repeatable: true,
            help: "serve an entity (and its subentities) read-only (writes get 405) or hidden (404, absent from / "
                + "and the OpenAPI document), or read-write over what the model says"
        ) { options, value in
            let parts = value.text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let access = EntityAccess(rawValue: parts[1]) else {
                throw value.invalid("takes ENTITY=read-only, ENTITY=hidden or ENTITY=read-write")
            }
            options.entityAccess[parts[0]] = access
        },
        .value(
            "--tls-cert", "PATH", environment: "STRATA_TLS_CERT",
            help: "serve HTTPS with this PEM certificate chain and the --tls-key; both re-read on SIGHUP"
        ) { $0.tlsCertificate = $1.text },
        .value("--tls-key", "PATH", environment: "STRATA_TLS_KEY", help: "the PEM private key of --tls-cert") {
            $0.tlsKey = $1.text
        },
        .value(
            "--cors-origin", "ORIGIN", environment: "STRATA_CORS_ORIGINS", items: .commaSeparated, repeatable: true,
            help: "a web origin (https://app.example.org) whose pages may call the server from a browser; * for "
                + "any, only without tokens"
        ) { $0.corsOrigins.append($1.text.trimmingCharacters(in: .whitespaces)) },
    ]

    /// `STRATA_STORE`'s comma-separated `CONFIG=SPEC` items. A comma starts a new item only when a
    /// `NAME=` follows it, so a libpq URI listing several hosts (`postgresql:///db?host=a,b`) stays
    /// whole.
    @Sendable static func storeList(_ value: String) -> [String] {
        var items: [String] = []
        for piece in value.split(separator: ",", omittingEmptySubsequences: false) {
            let name = piece.prefix { $0 != "=" }
            let startsItem =
                name.count < piece.count && !name.isEmpty
                && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } && !name.contains(":")
            if startsItem || items.isEmpty {
                items.append(String(piece))
            } else {
                items[items.count - 1] += "," + piece
            }
        }
        return items.filter { !$0.isEmpty }
    }
}
