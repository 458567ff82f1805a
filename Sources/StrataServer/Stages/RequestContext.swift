import Strata

/// What the server's stages learn about one request on its way in (`RequestPipeline`), for the
/// stages after them and the REST service. Typed, and never taken from the client.
public struct RequestContext: Sendable {
    /// The name of the bearer token the request presented, when the server knows it (also when
    /// its scopes fall short and the request is refused); nil for an anonymous request.
    public var tokenName: String?
    /// What the request may do: every scope under anonymous access, its token's scopes with
    /// tokens in force, none for a path open to everyone (`/live`, `/ready`, the public docs).
    public var scopes: Set<AccessScope>

    /// Every scope: what anonymous access grants.
    public static let everyScope = Set(AccessScope.allCases)

    /// A request's context; by default one under anonymous access (no token, every scope).
    public init(tokenName: String? = nil, scopes: Set<AccessScope> = everyScope) {
        self.tokenName = tokenName
        self.scopes = scopes
    }

    /// Who the request acts for: its token's name, or `anonymous`. An `Idempotency-Key` is kept
    /// per author, so two clients never see each other's answers.
    public var author: String { tokenName ?? "anonymous" }

    /// When the pipeline took the request, in nanoseconds of uptime (the access log's clock).
    var started: UInt64 = 0
    /// How many stages let the request through: those whose `leave` see its response.
    var stagesPassed = 0
    /// The service that answers the request, once the readiness stage let it through.
    var service: RESTService?
    /// The `Idempotency-Key` this request claimed, finished with its answer.
    var idempotencyClaim: IdempotencyClaim?
}
