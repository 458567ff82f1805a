import Dispatch
import Strata
import StrataHTTP

/// One job of the server's request pipeline (``RequestPipeline``): each stage sees a request on
/// its way in, may answer it there (the request then goes no further), and sees the response on
/// its way out when it let the request through.
protocol ServerStage: Sendable {
    /// Looks at `request` on its way in and notes what it learns in `context`.
    /// - Returns: the answer when the request goes no further, nil to let it through.
    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse?
    /// Looks at the response to a request this stage let through, on its way out.
    func leave(_ response: HTTPResponse, to request: HTTPRequest, _ context: RequestContext) -> HTTPResponse
}

extension ServerStage {
    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse? { nil }
    func leave(_ response: HTTPResponse, to request: HTTPRequest, _ context: RequestContext) -> HTTPResponse {
        response
    }
}

/// The stages every request passes, in order, before the REST service answers it: the access
/// log (outermost, so it sees every answer), CORS, the server's limits, authentication and
/// scopes, the rate limit, readiness (the stores loaded), and idempotency (innermost, so it keeps
/// only the service's own answers).
///
/// Each stage is a concrete type called directly: the request path is hot, so there is no list of
/// existentials and no closure per stage, and a request allocates nothing here.
final class RequestPipeline: Sendable {
    let accessLog: AccessLogStage
    let cors: CORSStage
    let limits: LimitsStage
    let authentication: AuthenticationStage
    let rateLimit: RateLimitStage
    let readiness: ReadinessStage
    let idempotency: IdempotencyStage

    /// The stages' places in the order above.
    private enum Position: Int {
        case accessLog, cors, limits, authentication, rateLimit, readiness, idempotency
    }

    init(
        accessLog: AccessLogStage, cors: CORSStage, limits: LimitsStage, authentication: AuthenticationStage,
        rateLimit: RateLimitStage, readiness: ReadinessStage, idempotency: IdempotencyStage
    ) {
        self.accessLog = accessLog
        self.cors = cors
        self.limits = limits
        self.authentication = authentication
        self.rateLimit = rateLimit
        self.readiness = readiness
        self.idempotency = idempotency
    }

    /// Answers `request` on this thread: a stage's answer, or the service's.
    func respond(_ request: HTTPRequest) -> HTTPResponse {
        var context = RequestContext()
        if let answer = enter(request, &context) { return leave(answer, to: request, context) }
        return leave(service(context).handle(request, context: context), to: request, context)
    }

    /// Answers `request` through `responder`: at once for a stage's answer, else when the
    /// service's deferred handling completes (a write once its group commit is durable).
    func respond(_ request: HTTPRequest, through responder: HTTPResponder) {
        var context = RequestContext()
        if let answer = enter(request, &context) {
            responder.respond(leave(answer, to: request, context))
            return
        }
        let entered = context
        service(context).handle(request, context: context, lead: responder.runBlocking) { [self] response in
            responder.respond(leave(response, to: request, entered))
        }
    }

    /// Runs the stages' `enter` in order until one answers.
    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse? {
        pass(accessLog, request, &context) ?? pass(cors, request, &context) ?? pass(limits, request, &context)
            ?? pass(authentication, request, &context) ?? pass(rateLimit, request, &context)
            ?? pass(readiness, request, &context) ?? pass(idempotency, request, &context)
    }

    /// Runs the `leave` of every stage the request passed, innermost first.
    func leave(_ response: HTTPResponse, to request: HTTPRequest, _ context: RequestContext) -> HTTPResponse {
        var response = response
        back(idempotency, .idempotency, &response, request, context)
        back(readiness, .readiness, &response, request, context)
        back(rateLimit, .rateLimit, &response, request, context)
        back(authentication, .authentication, &response, request, context)
        back(limits, .limits, &response, request, context)
        back(cors, .cors, &response, request, context)
        back(accessLog, .accessLog, &response, request, context)
        return response
    }

    private func pass(
        _ stage: some ServerStage, _ request: HTTPRequest, _ context: inout RequestContext
    ) -> HTTPResponse? {
        if let answer = stage.enter(request, &context) { return answer }
        context.stagesPassed += 1
        return nil
    }

    private func back(
        _ stage: some ServerStage, _ position: Position, _ response: inout HTTPResponse, _ request: HTTPRequest,
        _ context: RequestContext
    ) {
        if context.stagesPassed > position.rawValue { response = stage.leave(response, to: request, context) }
    }

    /// The service of a request every stage let through (the readiness stage put it there).
    private func service(_ context: RequestContext) -> RESTService {
        guard let service = context.service else {
            preconditionFailure("the readiness stage lets no request through without a service")
        }
        return service
    }
}
