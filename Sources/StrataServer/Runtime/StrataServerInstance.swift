import Foundation
import Strata
import StrataHTTP

/// A running `strata serve`: the HTTP server, the stores and the REST service.
///
/// ``start()`` listens first and answers `/live` at once; `/ready` and the entity routes answer
/// 503 until every store is loaded.
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

    /// Prepares a server for `model`.
    /// - Parameter log: receives one access-log line per request, on the thread that answers it;
    ///   by default stderr, written by a thread of its own (see ``BufferedLog``).
    public init(model: ObjectModel, options: ServerOptions, log: (@Sendable (String) -> Void)? = nil) {
        self.model = model
        self.options = options
        let buffered = log == nil ? BufferedLog() : nil
        self.buffered = buffered
        self.log = log ?? { line in buffered?.write(line) }
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
        let service = self.service
        let metrics = self.metrics
        let logLine = self.log
        let format = options.logFormat
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
        let policy = try? cors.get()
        /// Writes the access-log line of `response` (with its CORS headers), answered `begin`
        /// nanoseconds into uptime.
        let logged: @Sendable (HTTPRequest, HTTPResponse, UInt64) -> HTTPResponse = { request, response, begin in
            let response = policy?.decorate(response, for: request) ?? response
            let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e6
            if let buffered, format != "json" {
                var line: [UInt8] = []
                StrataServerInstance.appendAccessLine(request, response, milliseconds, to: &line)
                buffered.write(line)
            } else {
                logLine(StrataServerInstance.accessLine(request, response, milliseconds, format: format))
            }
            return response
        }
        let limiter =
            options.rateLimit > 0
            ? RateLimiter(
                rate: options.rateLimit, burst: options.rateBurst > 0 ? options.rateBurst : 2 * options.rateLimit)
            : nil
        /// 429 when the request's client (its token, else its address) is over the rate.
        let limited: @Sendable (HTTPRequest) -> HTTPResponse? = { request in
            guard let limiter, request.path != "/live", request.path != "/ready" else { return nil }
            let client = request.attributes["token"].map { "token:" + $0 } ?? "ip:" + request.remoteAddress
            guard let wait = limiter.take(client) else { return nil }
            return Problem(
                429, "Too Many Requests",
                "more than \(String(format: "%g", options.rateLimit)) requests per second from \(request.attributes["token"].map { "token " + $0 } ?? request.remoteAddress); try again in \(wait) s",
                headers: [("Retry-After", String(wait))]
            ).response
        }
        /// The request on behalf of its token, or the answer refusing it.
        let authorized: @Sendable (HTTPRequest) -> (HTTPRequest, HTTPResponse?) = { request in
            guard let control else { return (request, limited(request)) }
            switch control.decide(request) {
            case .open: return (request, limited(request))
            case .denied(let response, let token):
                var request = request
                request.attributes["token"] = token
                return (request, response)
            case .allowed(let token):
                var request = request
                request.attributes["token"] = token.name
                request.attributes["scopes"] = token.scopes.sorted().map(\.rawValue).joined(separator: ",")
                return (request, limited(request))
            }
        }
        let ledger = self.ledger
        /// A write with an `Idempotency-Key`: its first answer again, a refusal, or how to keep
        /// the answer it is about to get.
        let idempotent: @Sendable (HTTPRequest, RESTService) -> IdempotentStep = { request, service in
            guard service.isWrite(request) else { return .proceed(keep: { $0 }) }
            return StrataServerInstance.idempotencyStep(request, ledger: ledger.withLock { $0 })
        }
        http = HTTPServer(
            configuration: configuration,
            handler: { incoming in
                let begin = DispatchTime.now().uptimeNanoseconds
                if let preflight = policy?.preflight(incoming) {
                    logLine(StrataServerInstance.accessLine(incoming, preflight, 0, format: format))
                    return preflight
                }
                let (request, refusal) = authorized(incoming)
                if let refusal { return logged(request, refusal, begin) }
                guard let ready = service.withLock({ $0 }) else {
                    return logged(request, StrataServerInstance.notReady(request, metrics: metrics), begin)
                }
                switch idempotent(request, ready) {
                case .answer(let response): return logged(request, response, begin)
                case .proceed(let keep): return logged(request, keep(ready.handle(request)), begin)
                }
            },
            tooLarge: { request in
                let response: HTTPResponse
                switch request.exceededLimit {
                case "target":
                    response =
                        Problem(
                            414, "URI Too Long",
                            "the request target (path and query) is longer than \(options.maxTargetBytes) bytes"
                        ).response
                case "headers":
                    response =
                        Problem(
                            431, "Request Header Fields Too Large",
                            "the request headers are larger than \(options.maxHeaderBytes) bytes"
                        ).response
                case "connections":
                    response =
                        Problem(
                            429, "Too Many Requests",
                            "this address has \(options.maxConnectionsPerIP) connections open already; reuse one",
                            headers: [("Retry-After", "1")]
                        ).response
                case "time":
                    response =
                        Problem(
                            408, "Request Timeout",
                            "the request took longer than \(options.requestTimeoutSeconds) s to arrive"
                        ).response
                default:
                    response =
                        Problem(
                            413, "Content Too Large", "the request body is larger than \(options.maxBodyBytes) bytes"
                        ).response
                }
                return logged(request, response, DispatchTime.now().uptimeNanoseconds)
            },
            dispatch: { request in
                // Until the stores load every answer is a constant.
                service.withLock({ $0 })?.dispatch(for: request) ?? .inline
            },
            deferred: { incoming, responder in
                let begin = DispatchTime.now().uptimeNanoseconds
                let (request, refusal) = authorized(incoming)
                let respond: @Sendable (HTTPResponse) -> Void = { responder.respond(logged(request, $0, begin)) }
                if let refusal {
                    respond(refusal)
                    return
                }
                guard let ready = service.withLock({ $0 }) else {
                    respond(StrataServerInstance.notReady(request, metrics: metrics))
                    return
                }
                switch idempotent(request, ready) {
                case .answer(let response): respond(response)
                case .proceed(let keep):
                    ready.handle(request, lead: responder.runBlocking) { respond(keep($0)) }
                }
            })
    }

    /// The port the server listens on.
    public var port: UInt16 { http.port }

    /// The REST service, once the stores are loaded.
    public var restService: RESTService? { service.withLock { $0 } }

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
        if options.idempotencyHours > 0 {
            let path = options.dataDirectory + "/_idempotency.sqlite"
            do {
                try FileManager.default.createDirectory(
                    atPath: options.dataDirectory, withIntermediateDirectories: true)
                let opened = try IdempotencyLedger(path: path, lifetime: options.idempotencyHours * 3600)
                ledger.withLock { $0 = opened }
            } catch {
                throw ServeError("cannot keep idempotency keys in \(path): \(error)")
            }
        }
        var openAPIAccess = OpenAPIAccess(
            bearer: control.isEnabled, privateDocument: options.privateOpenAPI,
            entities: model.resolvedAccess(overrides: options.entityAccess))
        openAPIAccess.limits = options.limits
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
                limits: options.limits)
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
        } catch {
            http.stop()
            for store in container.coordinator.stores { container.coordinator.remove(store) }
            throw ServeError(error.detail)
        }
    }

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
        http.stop()
        service.withLock { $0 = nil }
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

    static func notReady(_ request: HTTPRequest, metrics: Metrics) -> HTTPResponse {
        if request.path == "/live" {
            return HTTPResponse(
                status: 200, headers: [("Content-Type", "application/json")], body: Array(#"{"status":"live"}"#.utf8))
        }
        return Problem(503, "Service Unavailable", "the stores are still loading").response
    }

    /// One access-log line.
    static func accessLine(_ request: HTTPRequest, _ response: HTTPResponse, _ milliseconds: Double, format: String)
        -> String
    {
        if format == "json" {
            let query =
                request.query.isEmpty
                ? "" : "?" + request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            let duration = (milliseconds * 1000).rounded() / 1000
            return JSONValue.object([
                "time": .string(AttributeValue.formatDate(Date())), "remote": .string(request.remoteAddress),
                "method": .string(request.method), "path": .string(request.path + query),
                "status": .integer(Int64(response.status)), "bytes": .integer(Int64(response.body.count)),
                "ms": .double(duration), "token": request.attributes["token"].map { .string($0) } ?? .null,
            ]).jsonText
        }
        var line: [UInt8] = []
        appendAccessLine(request, response, milliseconds, to: &line)
        return String(decoding: line, as: UTF8.self)
    }

    /// Appends the text access-log line `remote "METHOD path?query" status bytes 0.123ms[ token=name]`
    /// to `out` as UTF-8, written as bytes: building it as a `String` was a tenth of a cached GET's
    /// instructions.
    static func appendAccessLine(
        _ request: HTTPRequest, _ response: HTTPResponse, _ milliseconds: Double, to out: inout [UInt8]
    ) {
        let token = request.attributes["token"]
        out.reserveCapacity(out.count + 64 + request.remoteAddress.utf8.count + request.path.utf8.count)
        out += request.remoteAddress.utf8
        out += #" ""#.utf8
        out += request.method.utf8
        out.append(UInt8(ascii: " "))
        out += request.path.utf8
        for (index, item) in request.query.enumerated() {
            out.append(UInt8(ascii: index == 0 ? "?" : "&"))
            out += item.name.utf8
            out.append(UInt8(ascii: "="))
            out += item.value.utf8
        }
        out += #"" "#.utf8
        JSONValue.writeInteger(Int64(response.status), to: &out)
        out.append(UInt8(ascii: " "))
        JSONValue.writeInteger(Int64(response.body.count), to: &out)
        out.append(UInt8(ascii: " "))
        appendMilliseconds(milliseconds, to: &out)
        out += "ms".utf8
        if let token {
            out += " token=".utf8
            out += token.utf8
        }
    }

    /// Milliseconds to three decimals as `Double`'s description writes them once rounded (`0.25`,
    /// `3.0`, `12.125`), appended as bytes without formatting a `Double` (formatting it was a tenth
    /// of the access line's cost).
    static func appendMilliseconds(_ milliseconds: Double, to out: inout [UInt8]) {
        guard milliseconds.isFinite, milliseconds >= 0, milliseconds < 1e12 else {
            out += "\((milliseconds * 1000).rounded() / 1000)".utf8
            return
        }
        let micro = Int64((milliseconds * 1000).rounded())
        JSONValue.writeInteger(micro / 1000, to: &out)
        out.append(UInt8(ascii: "."))
        var fraction = micro % 1000
        guard fraction != 0 else {
            out.append(UInt8(ascii: "0"))
            return
        }
        var digits = 3
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        // Leading zeros of the kept digits: 0.05 is "05" after the point.
        var width = 1
        var rest = fraction / 10
        while rest > 0 {
            width += 1
            rest /= 10
        }
        for _ in width..<digits { out.append(UInt8(ascii: "0")) }
        JSONValue.writeInteger(fraction, to: &out)
    }

    /// Milliseconds to three decimals as `Double`'s description writes them once rounded (`0.25`,
    /// `3.0`, `12.125`), without formatting a `Double` (see ``appendMilliseconds(_:to:)``).
    static func millisecondsText(_ milliseconds: Double) -> String {
        var out: [UInt8] = []
        appendMilliseconds(milliseconds, to: &out)
        return String(decoding: out, as: UTF8.self)
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
