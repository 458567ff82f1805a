import Strata
import StrataHTTP

/// Lets a request through to the REST service once the stores are loaded; until then answers
/// `/live` 200 and everything else 503.
struct ReadinessStage: ServerStage {
    /// The service, nil while the stores load.
    let service: Locked<RESTService?>

    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse? {
        guard let ready = service.withLock({ $0 }) else { return Self.notReady(request) }
        context.service = ready
        return nil
    }

    /// The answer to `request` while the stores load.
    static func notReady(_ request: HTTPRequest) -> HTTPResponse {
        if request.path == "/live" {
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: RESTService.live)
        }
        return Problem(503, "Service Unavailable", "the stores are still loading").response
    }
}
