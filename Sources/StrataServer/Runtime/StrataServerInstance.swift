import Foundation
import Strata
import StrataHTTP

/// A running `strata serve`: the HTTP server, the stores and the REST service.
///
/// ``start()`` listens first and answers `/live` at once; `/ready` and the entity routes answer
/// 503 until every store is loaded. Every request passes the server's stages (`RequestPipeline`:
/// access log, CORS, limits, authentication, rate limit, readiness, idempotency) on its way to
/// the ``RESTService``.
public final class StrataServerInstance: Sendable {
    /// The model served.
    public let model: ObjectModel
    /// The options it runs with.
    public let options: ServerOptions
    private let http: HTTPServer
    private let service = Locked<RESTService?>(nil)
    private let coordinator: Locked<StoreCoordinator?> = Locked(nil)
    private let metrics = Metrics()
    private let log: @Sendable (String) -> Void
    /// The writer of the default log (stderr), written off the request path; nil for a log the
    /// caller gave.
    private let buffered: BufferedLog?
    /// Who may do what, or why the tokens given cannot be used.
    private let access: Result<AccessControl, ServeError>
    /// Which web pages may call it, or why the origins given cannot be used.
    private let cors: Result<CORSPolicy, ServeError>
    /// The answers to requests with an `Idempotency-Key`, once the server runs.
    private let ledger = Locked<IdempotencyLedger?>(nil)
    /// Forgets expired history in the background, once the stores are loaded.
    private let pruner = Locked<HistoryPruner?>(nil)

    /// Prepares a server for `model`.
    /// - Parameter log: receives one access-log line per request, on the thread that answers it;
    ///   by default stderr, written by a thread of its own (see ``BufferedLog``).
    public init(model: ObjectModel, options: ServerOptions, log: (@Sendable (String) -> Void)? = nil) {
        self.model = model
        self.options = options
        let buffered = log == nil ? BufferedLog() : nil
        self.buffered = buffered
        self.log = log ?? { line in buffered?.write(line) }
        do throws(ServeError) {
            access = .success(
                try AccessControl(
                    tokens: options.tokens, file: options.tokensFile, privateOpenAPI: options.privateOpenAPI))
        } catch {
            access = .failure(error)
        }
        let control = try? access.get()
        do throws(ServeError) {
            cors = .success(try CORSPolicy(origins: options.corsOrigins, tokensInForce: control?.isEnabled ?? false))
        } catch {
            cors = .failure(error)
        }
        let service = self.service
        let pipeline = RequestPipeline(
            accessLog: AccessLogStage(format: options.logFormat, buffered: buffered, write: self.log),
            cors: CORSStage(policy: try? cors.get()), limits: LimitsStage(options: options),
            authentication: AuthenticationStage(control: control),
            rateLimit: RateLimitStage(rate: options.rateLimit, burst: options.rateBurst),
            readiness: ReadinessStage(service: service), idempotency: IdempotencyStage(ledger: self.ledger))
        http = HTTPServer(
            configuration: Self.httpConfiguration(options),
            handler: { request in pipeline.respond(request) },
            tooLarge: { request in pipeline.respond(request) },
            dispatch: { request in
                // Until the stores load every answer is a constant.
                service.withLock({ $0 })?.dispatch(for: request) ?? .inline
            },
            deferred: { request, responder in pipeline.respond(request, through: responder) })
    }

    /// What the HTTP server is told of `options`: where to listen, and its limits.
    static func httpConfiguration(_ options: ServerOptions) -> HTTPServerConfiguration {
        var configuration = HTTPServerConfiguration()
        configuration.host = options.host
        configuration.port = options.port
        configuration.maxBodyBytes = options.maxBodyBytes
        configuration.tls = options.tlsCertificate != nil || options.tlsKey != nil
        configuration.maxTargetBytes = options.maxTargetBytes
        configuration.maxHeaderBytes = options.maxHeaderBytes
        configuration.maxConnections = options.maxConnections
        configuration.perIPConnectionLimit = options.maxConnectionsPerIP
        configuration.connectionTimeoutSeconds = options.idleTimeoutSeconds
        configuration.requestTimeoutSeconds = options.requestTimeoutSeconds
        return configuration
    }

    /// The port the server listens on.
    public var port: UInt16 { http.port }

    /// The REST service, once the stores are loaded.
    public var restService: RESTService? { service.withLock { $0 } }

    /// Opens the idempotency ledger (for `--idempotency-hours` above 0): in the first PostgreSQL
    /// store by configuration name when there is one, shared by every server over that database so
    /// a retry may reach any of them; else `_idempotency.sqlite` in the data directory.
    private func openLedger(_ coordinator: StoreCoordinator) throws(ServeError) {
        guard options.idempotencyHours > 0 else { return }
        let lifetime = options.idempotencyHours * 3600
        let shared = coordinator.stores.compactMap { $0 as? PostgreSQLStore }
            .min { ($0.configuration ?? "") < ($1.configuration ?? "") }
        if let shared {
            do {
                let opened = try IdempotencyLedger(sharedIn: shared, lifetime: lifetime)
                ledger.withLock { $0 = opened }
            } catch {
                throw ServeError("cannot keep idempotency keys in \(shared.displayURL): \(error)")
            }
            return
        }
        let path = options.dataDirectory + "/_idempotency.sqlite"
        do {
            try FileManager.default.createDirectory(atPath: options.dataDirectory, withIntermediateDirectories: true)
            let opened = try IdempotencyLedger(path: path, lifetime: lifetime)
            ledger.withLock { $0 = opened }
        } catch {
            throw ServeError("cannot keep idempotency keys in \(path): \(error)")
        }
    }

    /// Starts listening, then loads the stores.
    /// - Throws: ``ServeError`` for a port that cannot be bound or a store that cannot be loaded.
    public func start() throws(ServeError) {
        // What start-up says (warnings, recovery, the reason it failed) is out before it returns.
        defer { buffered?.flush() }
        let control = try access.get()
        _ = try cors.get()
        if !control.isEnabled, !options.allowAnonymous, !Self.isLoopback(options.host) {
            throw ServeError(
                "refusing to serve \(options.host) without access tokens, which would let anyone who reaches the port change everything: give tokens (--token NAME:read,write:SECRET or STRATA_TOKENS_FILE), or allow anonymous access (--allow-anonymous or STRATA_ALLOW_ANONYMOUS=1)"
            )
        }
        if options.tlsCertificate != nil || options.tlsKey != nil { try reloadTLS() }
        for warning in model.warnings { log("strata: model warning: \(warning)") }
        var openAPIAccess = OpenAPIAccess(
            bearer: control.isEnabled, privateDocument: options.privateOpenAPI,
            entities: model.resolvedAccess(overrides: options.entityAccess))
        openAPIAccess.limits = options.limits
        openAPIAccess.history = options.history
        do {
            try http.start()
        } catch {
            throw ServeError("cannot listen on \(options.host):\(options.port): \(error.message)")
        }
        let container: PersistentContainer
        do {
            container = try PersistentContainer(model: model, stores: options.storeDescriptions(for: model))
        } catch {
            http.stop()
            throw ServeError(error.description)
        }
        do {
            try openLedger(container.coordinator)
        } catch {
            http.stop()
            for store in container.coordinator.stores { container.coordinator.remove(store) }
            throw error
        }
        let docs: APIDocs
        if options.assetsDirectory == "" {
            docs = APIDocs()
        } else if let directory = options.assetsDirectory {
            do {
                docs = try APIDocs(directory: directory)
            } catch {
                http.stop()
                throw error
            }
        } else {
            docs = APIDocs.embedded
        }
        do {
            let rest = try RESTService(
                root: ObjectContext(coordinator: container.coordinator), reads: container.coordinator, metrics: metrics,
                openAPI: {
                    [
                        document = (
                            OpenAPIGenerator.json(for: model, access: openAPIAccess),
                            OpenAPIGenerator.yaml(for: model, access: openAPIAccess)
                        )
                    ] in
                    document
                }, readCacheLimit: options.readCacheObjects, entityAccess: options.entityAccess, docs: docs,
                limits: options.limits,
                export: SnapshotExportSettings(directory: URL(fileURLWithPath: options.dataDirectory), log: log))
            coordinator.withLock { $0 = container.coordinator }
            for (entity, holders) in container.coordinator.routes.sorted(by: { $0.key < $1.key })
            where holders.count > 1 {
                let names = holders.map { $0.configuration ?? ObjectModel.defaultConfiguration }
                log(
                    "strata: \(entity) is in configurations \(names.joined(separator: ", ")): it is served from \(names[0])'s store (its ids are keys there; objects in the others are not served); --store Default=sqlite:PATH keeps every entity in one store"
                )
            }
            let recovered = container.coordinator.lastRecovery
            if !recovered.isEmpty { log("strata: recovery: " + Self.describe(recovered, in: container.coordinator)) }
            service.withLock { $0 = rest }
            startPruner(container.coordinator)
        } catch {
            http.stop()
            for store in container.coordinator.stores { container.coordinator.remove(store) }
            throw ServeError(error.detail)
        }
    }

    /// Starts the background pruner of expired history (see ``HistoryPruner``), when history is
    /// recorded and not kept forever.
    private func startPruner(_ coordinator: StoreCoordinator) {
        guard let started = HistoryPruner(coordinator: coordinator, options: options, metrics: metrics, log: log) else {
            return
        }
        pruner.withLock { $0 = started }
        started.start()
    }

    /// The history transactions the background pruner forgot in store `store` (its UUID).
    public func prunedHistory(store: String) -> Int { metrics.prunedHistory(store: store) }

    /// One line on who may use the server: the tokens in force (by name), or anonymous access.
    public var accessSummary: String? {
        guard let control = try? access.get() else { return nil }
        let names = control.tokenNames
        if names.isEmpty { return "anonymous access: anyone who reaches the port may read and change everything" }
        return "access: bearer tokens \(names.joined(separator: ", "))"
            + (control.file.map { " (\($0) re-read on SIGHUP)" } ?? "")
    }

    /// Re-reads the tokens file (SIGHUP); on an error the tokens in force stay.
    /// - Returns: how many tokens are in force.
    @discardableResult
    public func reloadTokens() throws(ServeError) -> Int {
        try access.get().reload()
    }

    /// Reads the TLS certificate and key files again (SIGHUP): new connections get them, open
    /// ones keep theirs; on an error the ones in force stay.
    public func reloadTLS() throws(ServeError) {
        guard let certificate = options.tlsCertificate, let key = options.tlsKey else {
            throw ServeError("HTTPS needs both --tls-cert and --tls-key")
        }
        guard let chain = FileManager.default.contents(atPath: certificate) else {
            throw ServeError("cannot read the TLS certificate \(certificate)")
        }
        guard let secret = FileManager.default.contents(atPath: key) else {
            throw ServeError("cannot read the TLS key \(key)")
        }
        do throws(HTTPServerError) {
            try TLSCredentials.load(certificate: Array(chain), key: Array(secret))
        } catch {
            throw ServeError("\(error.message) (\(certificate), \(key))")
        }
    }

    /// Whether the server speaks HTTPS.
    public var isTLS: Bool { options.tlsCertificate != nil || options.tlsKey != nil }

    /// Whether `host` is a loopback address (only this machine reaches it).
    static func isLoopback(_ host: String) -> Bool {
        let trimmed = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return trimmed == "localhost" || trimmed == "::1" || trimmed.hasPrefix("127.")
    }

    /// Stops accepting connections, lets in-flight requests finish, and closes the stores.
    public func stop() {
        // The change feed's streams and long-polls end first, so that no open connection holds
        // up the server's stop.
        service.withLock { $0 }?.shutdown()
        http.stop()
        service.withLock { $0 = nil }
        pruner.withLock { pruner in
            defer { pruner = nil }
            return pruner
        }?.stop()
        if let coordinator = coordinator.withLock({ $0 }) {
            for store in coordinator.stores { coordinator.remove(store) }
        }
        buffered?.close()
    }

    /// What a recovery did, naming stores by configuration and place.
    static func describe(_ report: RecoveryReport, in reads: any CommittedReads) -> String {
        let summaries = reads.storeSummaries
        func name(_ identifier: String) -> String {
            guard let store = summaries.first(where: { $0.identifier == identifier }) else {
                return "store \(identifier)"
            }
            return "\(store.configuration ?? ObjectModel.defaultConfiguration) (\(store.location ?? "memory"))"
        }
        var text =
            "finished \(report.finishedSaves) interrupted save\(report.finishedSaves == 1 ? "" : "s") across stores"
        if !report.repairedStores.isEmpty {
            text +=
                "; wrote their missing parts into "
                + report.repairedStores.sorted { $0.key < $1.key }.map { "\(name($0.key)): \($0.value)" }.joined(
                    separator: ", ")
        }
        if report.waitingSaves > 0 { text += "; \(report.waitingSaves) wait for stores that are not attached" }
        return text
    }
}

/// A server that cannot start, with one message for the person running it.
public struct ServeError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
