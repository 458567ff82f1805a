import StrataHTTP

/// Which web pages may call the server from a browser (`--cors-origin`): exact origins, or `*`
/// (only for anonymous access). A request from an origin not listed gets no CORS headers at all,
/// so the browser keeps its answer from the page.
public struct CORSPolicy: Sendable {
    /// The origins allowed, exactly as browsers send them (`https://app.example.org`).
    public let origins: Set<String>
    /// Any origin (`*`).
    public let anyOrigin: Bool

    /// The methods a preflight allows.
    static let methods = "GET, HEAD, POST, PATCH, PUT, DELETE"
    /// The request headers a preflight allows.
    static let requestHeaders = "Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, Prefer"
    /// The response headers a page may read.
    static let exposedHeaders = "ETag, Location, Retry-After, WWW-Authenticate, Idempotent-Replayed"
    /// How long a browser may keep a preflight's answer, in seconds.
    static let maxAge = "600"

    /// - Throws: ``ServeError`` for an origin that is not `scheme://host[:port]`, or `*` with tokens.
    public init(origins: [String], tokensInForce: Bool) throws(ServeError) {
        var allowed: Set<String> = []
        var any = false
        for origin in origins {
            if origin == "*" {
                guard !tokensInForce else {
                    throw ServeError(
                        "--cors-origin '*' is for anonymous access only: with tokens, name each origin (https://app.example.org)"
                    )
                }
                any = true
                continue
            }
            let parts = origin.split(separator: "/", omittingEmptySubsequences: false)
            guard origin.hasPrefix("http://") || origin.hasPrefix("https://"), parts.count == 3, !parts[2].isEmpty
            else {
                throw ServeError(
                    "--cors-origin '\(origin)' is not an origin: scheme://host[:port], without a path (or *)")
            }
            allowed.insert(origin.lowercased())
        }
        self.origins = allowed
        anyOrigin = any
    }

    /// Whether any origin is allowed at all.
    public var isEnabled: Bool { anyOrigin || !origins.isEmpty }

    /// The value of `Access-Control-Allow-Origin` for `request`, nil when its origin is not allowed.
    func allowedOrigin(_ request: HTTPRequest) -> String? {
        guard let origin = request.header("origin") else { return nil }
        if anyOrigin { return "*" }
        return origins.contains(origin.lowercased()) ? origin : nil
    }

    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`), nil for any
    /// other request.
    func preflight(_ request: HTTPRequest) -> HTTPResponse? {
        guard isEnabled, request.method == "OPTIONS", request.header("access-control-request-method") != nil else {
            return nil
        }
        var headers: [(name: String, value: String)] = [("Vary", "Origin")]
        if let origin = allowedOrigin(request) {
            headers += [
                ("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Methods", Self.methods),
                ("Access-Control-Allow-Headers", Self.requestHeaders), ("Access-Control-Max-Age", Self.maxAge),
            ]
        }
        return HTTPResponse(status: 204, headers: headers)
    }

    /// `response` with the CORS headers `request`'s origin gets.
    func decorate(_ response: HTTPResponse, for request: HTTPRequest) -> HTTPResponse {
        guard isEnabled else { return response }
        var response = response
        response.headers.append(("Vary", "Origin"))
        if let origin = allowedOrigin(request) {
            response.headers.append(("Access-Control-Allow-Origin", origin))
            response.headers.append(("Access-Control-Expose-Headers", Self.exposedHeaders))
        }
        return response
    }
}
