import Foundation
import Strata
import StrataServer

#if canImport(Glibc)
    import Glibc
#endif

/// `strata serve`: the REST server over the model's stores.
enum ServeCommand {
    static let usage = """
        usage: strata serve [options]

        Serves every entity of the model as a REST resource. Each option has an environment twin.

          --host ADDRESS          address to listen on (STRATA_HOST, default 127.0.0.1); any other than
                                  loopback needs tokens or --allow-anonymous
          --port PORT             port, 0 for any free one (STRATA_PORT, default 8080)
          --data-dir DIR          folder of the default SQLite stores (STRATA_DATA_DIR, default ./data)
          --model PATH            model file: JSON, .xcdatamodel or .xcdatamodeld; repeatable
                                  (STRATA_MODEL, comma-separated; default: the embedded example model)
          --store CONFIG=SPEC     store of a configuration: sqlite:PATH, sqlite:PATH?durability=normal,
                                  memory:, or a PostgreSQL URI (postgresql://user@host:5432/db, optional
                                  &schema=NAME); repeatable (STRATA_STORE, comma-separated); Default=SPEC
                                  puts every entity in one store
          --max-body-bytes N      larger request bodies get 413 (STRATA_MAX_BODY_BYTES, default 1048576)
          --max-target-bytes N    longer request targets (path and query) get 414 (STRATA_MAX_TARGET_BYTES,
                                  default 32768)
          --max-header-bytes N    larger request headers get 431 (STRATA_MAX_HEADER_BYTES, default 16384)
          --query-budget SECONDS  the longest one fetch may run before the store stops it and the request
                                  gets 503 (STRATA_QUERY_BUDGET, default 5)
          --rate-limit N[/BURST]  requests per second per client (its token, else its IP address), with
                                  bursts of BURST (default 2×N); over it, 429 with Retry-After
                                  (STRATA_RATE_LIMIT; default none); /live and /ready are not counted
          --idempotency-hours H   how long the answer to a write sent with an Idempotency-Key is kept,
                                  per token, in <data-dir>/_idempotency.sqlite (STRATA_IDEMPOTENCY_HOURS,
                                  default 24; 0 ignores the header)
          --max-connections-per-ip N
                                  simultaneous connections from one address; a request on one more
                                  is answered 429 and its connection closed
                                  (STRATA_MAX_CONNECTIONS_PER_IP, default 256, 0 for none)
          --idle-timeout SECONDS  a connection silent this long is closed (STRATA_IDLE_TIMEOUT, default 30)
          --assets-dir DIR        a folder with swagger-ui/ (as scripts/fetch-assets writes it) to serve at
                                  /docs instead of the Swagger UI embedded in the binary (STRATA_ASSETS_DIR;
                                  '' for none: /docs is then a plain page)
          --limit NAME=N          a bound on a request's shape, answered 400 (repeatable, or comma-separated;
                                  STRATA_LIMITS): page-size (1000), order-keys (32), filters (64),
                                  where-length (4096), batch (100), json-depth (32), json-elements (200000)
          --request-timeout SECONDS
                                  the longest a request may take to arrive and its response to be
                                  read, handler time apart: 408, or the connection closed
                                  (STRATA_REQUEST_TIMEOUT, default 60, 0 for none)
          --max-connections N     simultaneous connections (STRATA_MAX_CONNECTIONS, default 1024)
          --read-cache N          rendered objects per entity kept for reads by id (STRATA_READ_CACHE,
                                  default 10000, 0 for none)
          --sqlite-mmap MIB       how much of each SQLite store file its readers map into memory, so a read
                                  of a page the kernel caches is no system call and no copy
                                  (STRATA_SQLITE_MMAP, default 256, 0 for none: every read a pread)
          --log-format FORMAT     text or json access-log lines on stderr (STRATA_LOG_FORMAT, default text)
          --durability MODE       full (default): an acknowledged write survives power loss; normal: it
                                  survives a crash of the process, and power loss may lose the last
                                  writes (never corrupts); for every SQLite store (STRATA_DURABILITY)
          --migrate, --no-migrate migrate stores written with an older model when loading them, all
                                  together or none (STRATA_MIGRATE=true|false, default on); an
                                  .xcdatamodeld model's versions are the steps
          --token NAME:SCOPES:SECRET
                                  a bearer token; scopes read, write (includes read), admin (/metrics,
                                  store locations in /), comma-separated; the secret at least 16
                                  characters or sha256:HEX; repeatable. With any token, entity routes
                                  need one (401, 403); /live and /ready stay open
          --tokens-file PATH      one token per line, # for comments; re-read on SIGHUP
                                  (STRATA_TOKENS_FILE)
          --allow-anonymous       serve an address other than loopback without tokens
                                  (STRATA_ALLOW_ANONYMOUS=1); without it such a server refuses to start
          --private-openapi       the OpenAPI document needs a read token too (STRATA_PRIVATE_OPENAPI=1)
          --entity-access ENTITY=ACCESS
                                  serve an entity (and its subentities) read-only (writes get 405) or
                                  hidden (404, absent from / and the OpenAPI document), or read-write
                                  over what the model says; repeatable (STRATA_ENTITY_ACCESS,
                                  comma-separated)
          --tls-cert PATH         serve HTTPS with this PEM certificate chain (STRATA_TLS_CERT), and
          --tls-key PATH          this PEM private key (STRATA_TLS_KEY); both re-read on SIGHUP
          --cors-origin ORIGIN    a web origin (https://app.example.org) whose pages may call the server
                                  from a browser; repeatable (STRATA_CORS_ORIGINS, comma-separated); *
                                  for any, only without tokens
          --help                  this text

        The default stores are <data-dir>/<configuration>.sqlite, one per configuration of the model.
        Saves across stores are all or nothing, also across a crash: on start-up (while /ready
        answers 503) the server finishes any that a crash interrupted, and logs what it finished.
        SIGTERM or SIGINT stops accepting, finishes requests in flight, closes the stores and exits 0.
        """

    /// `STRATA_STORE`'s comma-separated `CONFIG=SPEC` items. A comma starts a new item only when a
    /// `NAME=` follows it, so a libpq URI listing several hosts (`postgresql:///db?host=a,b`) stays
    /// whole.
    static func storeList(_ value: String) -> [String] {
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

    /// Parses options from the environment, then the command line (which wins).
    static func parse(_ arguments: [String], environment: [String: String]) throws(ServeError) -> (
        ServerOptions, [String]
    ) {
        var options = ServerOptions()
        var models: [String] = []
        var pairs: [(String, String)] = []
        let twins: [(String, String)] = [
            ("STRATA_HOST", "--host"), ("STRATA_PORT", "--port"), ("STRATA_DATA_DIR", "--data-dir"),
            ("STRATA_MAX_BODY_BYTES", "--max-body-bytes"), ("STRATA_MAX_CONNECTIONS", "--max-connections"),
            ("STRATA_MAX_TARGET_BYTES", "--max-target-bytes"), ("STRATA_QUERY_BUDGET", "--query-budget"),
            ("STRATA_RATE_LIMIT", "--rate-limit"), ("STRATA_IDEMPOTENCY_HOURS", "--idempotency-hours"),
            ("STRATA_TLS_CERT", "--tls-cert"), ("STRATA_MAX_CONNECTIONS_PER_IP", "--max-connections-per-ip"),
            ("STRATA_IDLE_TIMEOUT", "--idle-timeout"), ("STRATA_REQUEST_TIMEOUT", "--request-timeout"),
            ("STRATA_READ_CACHE", "--read-cache"), ("STRATA_SQLITE_MMAP", "--sqlite-mmap"),
            ("STRATA_ASSETS_DIR", "--assets-dir"), ("STRATA_LIMITS", "--limit"),
            ("STRATA_TLS_KEY", "--tls-key"),
            ("STRATA_MAX_HEADER_BYTES", "--max-header-bytes"),
            ("STRATA_LOG_FORMAT", "--log-format"), ("STRATA_DURABILITY", "--durability"),
            ("STRATA_MIGRATE", "--migrate"), ("STRATA_TOKENS_FILE", "--tokens-file"),
            ("STRATA_ALLOW_ANONYMOUS", "--allow-anonymous"), ("STRATA_PRIVATE_OPENAPI", "--private-openapi"),
        ]
        for (variable, option) in twins {
            if let value = environment[variable], !value.isEmpty { pairs.append((option, value)) }
        }
        if let value = environment["STRATA_MODEL"], !value.isEmpty {
            for item in value.split(separator: ",") { pairs.append(("--model", String(item))) }
        }
        if let value = environment["STRATA_ENTITY_ACCESS"], !value.isEmpty {
            for item in value.split(separator: ",") { pairs.append(("--entity-access", String(item))) }
        }
        if let value = environment["STRATA_CORS_ORIGINS"], !value.isEmpty {
            for item in value.split(separator: ",") { pairs.append(("--cors-origin", String(item))) }
        }
        if let value = environment["STRATA_STORE"], !value.isEmpty {
            for item in storeList(value) { pairs.append(("--store", item)) }
        }
        var commandLineModels: [String] = []
        var commandLineStores: [(String, String)] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--help" || argument == "-h" { throw ServeError("help") }
            var name = argument
            var value: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            }
            if name == "--migrate" || name == "--no-migrate" {
                pairs.append(("--migrate", name == "--no-migrate" ? "false" : value ?? "true"))
                index += 1
                continue
            }
            if name == "--allow-anonymous" || name == "--private-openapi" {
                pairs.append((name, value ?? "true"))
                index += 1
                continue
            }
            let known = [
                "--host", "--port", "--data-dir", "--model", "--store", "--max-body-bytes", "--max-connections",
                "--log-format", "--durability", "--token", "--tokens-file", "--max-target-bytes", "--max-header-bytes",
                "--query-budget", "--cors-origin", "--entity-access", "--rate-limit",
                "--idempotency-hours", "--tls-cert", "--tls-key", "--max-connections-per-ip", "--idle-timeout",
                "--request-timeout", "--assets-dir", "--limit", "--read-cache", "--sqlite-mmap",
            ]
            guard known.contains(name) else {
                throw ServeError("unknown option '\(argument)'; see strata serve --help")
            }
            if value == nil {
                guard index + 1 < arguments.count else { throw ServeError("\(name) needs a value") }
                value = arguments[index + 1]
                index += 1
            }
            index += 1
            if name == "--model" {
                commandLineModels.append(value!)
            } else if name == "--store" {
                commandLineStores.append((name, value!))
            } else {
                pairs.append((name, value!))
            }
        }
        // Command-line models and stores replace the environment's.
        if !commandLineModels.isEmpty { pairs.removeAll { $0.0 == "--model" } }
        pairs += commandLineModels.map { ("--model", $0) } + commandLineStores
        for (name, value) in pairs {
            switch name {
            case "--host": options.host = value
            case "--port":
                guard let port = UInt16(value) else {
                    throw ServeError("--port must be a number from 0 to 65535, not '\(value)'")
                }
                options.port = port
            case "--data-dir": options.dataDirectory = value
            case "--model": models.append(value)
            case "--store":
                guard let equals = value.firstIndex(of: "="),
                    let spec = StoreSpec(String(value[value.index(after: equals)...]))
                else {
                    throw ServeError(
                        "--store takes CONFIG=sqlite:PATH, CONFIG=memory: or CONFIG=postgresql://…, not '\(PostgreSQLStore.redacted(value))'"
                            + (value.contains("postgres")
                                ? " (several hosts go in the query: postgresql:///db?host=a,b&port=5432,5433)" : ""))
                }
                options.stores[String(value[..<equals])] = spec
            case "--max-body-bytes":
                guard let bytes = Int(value), bytes > 0 else {
                    throw ServeError("--max-body-bytes must be a positive number, not '\(value)'")
                }
                options.maxBodyBytes = bytes
            case "--max-target-bytes", "--max-header-bytes":
                guard let bytes = Int(value), bytes >= 256, bytes <= 1 << 20 else {
                    throw ServeError("\(name) must be a number from 256 to 1048576, not '\(value)'")
                }
                if name == "--max-target-bytes" {
                    options.maxTargetBytes = bytes
                } else {
                    options.maxHeaderBytes = bytes
                }
            case "--query-budget":
                guard let seconds = Double(value), seconds > 0, seconds <= 3600 else {
                    throw ServeError("--query-budget must be a number of seconds from 0 to 3600, not '\(value)'")
                }
                options.queryBudget = seconds
            case "--max-connections":
                guard let count = Int(value), count > 0 else {
                    throw ServeError("--max-connections must be a positive number, not '\(value)'")
                }
                options.maxConnections = count
            case "--log-format":
                guard let format = AccessLogFormat(rawValue: value) else {
                    throw ServeError("--log-format is text or json, not '\(value)'")
                }
                options.logFormat = format
            case "--durability":
                guard let durability = StoreOptions.Durability(rawValue: value) else {
                    throw ServeError("--durability is full or normal, not '\(value)'")
                }
                options.durability = durability
            case "--migrate", "--allow-anonymous", "--private-openapi":
                guard let flag = ["true": true, "1": true, "yes": true, "false": false, "0": false, "no": false][value]
                else {
                    throw ServeError("\(name) is true or false, not '\(value)'")
                }
                switch name {
                case "--migrate": options.migrate = flag
                case "--allow-anonymous": options.allowAnonymous = flag
                default: options.privateOpenAPI = flag
                }
            case "--token": options.tokens.append(value)
            case "--idempotency-hours":
                guard let hours = Double(value), hours >= 0, hours <= 24 * 365 else {
                    throw ServeError("--idempotency-hours must be a number of hours from 0 to 8760, not '\(value)'")
                }
                options.idempotencyHours = hours
            case "--read-cache":
                guard let count = Int(value), count >= 0, count <= 100_000_000 else {
                    throw ServeError("--read-cache must be a number of objects from 0 to 100000000, not '\(value)'")
                }
                options.readCacheObjects = count
            case "--sqlite-mmap":
                guard let mebibytes = Int(value), mebibytes >= 0, mebibytes <= 1 << 20 else {
                    throw ServeError("--sqlite-mmap must be a number of MiB from 0 to 1048576, not '\(value)'")
                }
                options.sqliteMemoryMapBytes = mebibytes << 20
            case "--request-timeout":
                guard let number = Int(value), number >= 0, number <= 1_000_000 else {
                    throw ServeError("--request-timeout must be a number of seconds (0 for no limit), not '\(value)'")
                }
                options.requestTimeoutSeconds = number
            case "--max-connections-per-ip", "--idle-timeout":
                guard let number = Int(value), number >= 0, number <= 1_000_000, name != "--idle-timeout" || number > 0
                else {
                    throw ServeError(
                        "\(name) must be a \(name == "--idle-timeout" ? "positive " : "")number, not '\(value)'")
                }
                if name == "--idle-timeout" {
                    options.idleTimeoutSeconds = number
                } else {
                    options.maxConnectionsPerIP = number
                }
            case "--tls-cert": options.tlsCertificate = value
            case "--tls-key": options.tlsKey = value
            case "--assets-dir": options.assetsDirectory = value
            case "--limit":
                for item in value.split(separator: ",") { try options.limits.set(String(item)) }
            case "--rate-limit":
                let parts = value.split(separator: "/", maxSplits: 1).map { Double($0) }
                guard let rate = parts.first ?? nil, rate > 0, parts.count == 1 || (parts[1] ?? 0) >= 1 else {
                    throw ServeError(
                        "--rate-limit takes requests per second, optionally /BURST (50 or 50/200), not '\(value)'")
                }
                options.rateLimit = rate
                options.rateBurst = parts.count == 2 ? parts[1]! : 2 * rate
            case "--entity-access":
                let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let access = EntityAccess(rawValue: parts[1]) else {
                    throw ServeError(
                        "--entity-access takes ENTITY=read-only, ENTITY=hidden or ENTITY=read-write, not '\(value)'")
                }
                options.entityAccess[parts[0]] = access
            case "--cors-origin": options.corsOrigins.append(value.trimmingCharacters(in: .whitespaces))
            case "--tokens-file": options.tokensFile = value
            default: break
            }
        }
        options.models = models
        return (options, models)
    }

    static func run(_ arguments: [String]) -> Int32 {
        var options: ServerOptions
        do {
            (options, _) = try parse(arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            if error.message == "help" {
                print(usage)
                return 0
            }
            printError("strata serve: \(error.message)")
            return 64
        }
        let model: ObjectModel
        do {
            model = try loadModel(options.models, useEnvironment: false)
            options.modelHistory = try loadModelHistory(models: options.models, history: [])
        } catch {
            printError("strata serve: \(error)")
            return 1
        }
        for (configuration, _) in options.stores where configuration != ObjectModel.defaultConfiguration {
            guard model.configurations.contains(where: { $0.name == configuration }) else {
                printError(
                    "strata serve: --store names configuration '\(configuration)', which the model does not have (it has: \(model.configurations.map(\.name).joined(separator: ", ")))"
                )
                return 64
            }
        }
        for entity in options.entityAccess.keys.sorted() where model.entity(named: entity) == nil {
            printError(
                "strata serve: --entity-access names entity '\(entity)', which the model does not have (it has: \(model.entityNames.joined(separator: ", ")))"
            )
            return 64
        }
        let server = StrataServerInstance(model: model, options: options)
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        do {
            try server.start()
        } catch {
            printError("strata serve: \(error.message)")
            return 1
        }
        // Who may use the server before where it listens: the listening line is the last word of
        // start-up, which scripts and tests wait for.
        if let reason = server.accessSummary { printError("strata serve: \(reason)") }
        printError(
            "strata serve: \(model.name) on \(server.isTLS ? "https" : "http")://\(options.host):\(server.port) (stores: \(options.storeDescriptions(for: model).map { "\($0.configuration ?? ObjectModel.defaultConfiguration)=\($0.url?.path ?? "memory")" }.joined(separator: ", ")))"
        )
        let stopped = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        signal(SIGHUP, SIG_IGN)
        let hangUp = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangUp.setEventHandler {
            do throws(ServeError) {
                let count = try server.reloadTokens()
                printError("strata serve: SIGHUP: \(count) token\(count == 1 ? "" : "s") in force")
            } catch {
                printError("strata serve: SIGHUP: \(error.message); the tokens in force stay")
            }
            guard server.isTLS else { return }
            do throws(ServeError) {
                try server.reloadTLS()
                printError("strata serve: SIGHUP: TLS certificate and key read again")
            } catch {
                printError("strata serve: SIGHUP: \(error.message); the certificate in force stays")
            }
        }
        hangUp.resume()
        sources.append(hangUp)
        for signalNumber in [SIGTERM, SIGINT] {
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stopped.signal() }
            source.resume()
            sources.append(source)
        }
        stopped.wait()
        printError("strata serve: stopping: finishing requests in flight and closing the stores")
        server.stop()
        for source in sources { source.cancel() }
        return 0
    }
}
