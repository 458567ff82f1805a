import StrataHTTP

/// Answers a request over one of the HTTP server's limits (``HTTPRequest/exceededLimit``), each
/// with its own status and a problem naming the limit; lets every other request through.
struct LimitsStage: ServerStage {
    let maxBodyBytes: Int
    let maxTargetBytes: Int
    let maxHeaderBytes: Int
    let maxConnectionsPerIP: Int
    let requestTimeoutSeconds: Int

    init(options: ServerOptions) {
        maxBodyBytes = options.maxBodyBytes
        maxTargetBytes = options.maxTargetBytes
        maxHeaderBytes = options.maxHeaderBytes
        maxConnectionsPerIP = options.maxConnectionsPerIP
        requestTimeoutSeconds = options.requestTimeoutSeconds
    }

    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse? {
        request.exceededLimit.map(answer)
    }

    /// The answer to a request over `limit`.
    func answer(_ limit: HTTPServerLimit) -> HTTPResponse {
        let problem =
            switch limit {
            case .body: Problem(413, "Content Too Large", "the request body is larger than \(maxBodyBytes) bytes")
            case .target:
                Problem(
                    414, "URI Too Long", "the request target (path and query) is longer than \(maxTargetBytes) bytes")
            case .headers:
                Problem(
                    431, "Request Header Fields Too Large",
                    "the request headers are larger than \(maxHeaderBytes) bytes")
            case .connections:
                Problem(
                    429, "Too Many Requests",
                    "this address has \(maxConnectionsPerIP) connections open already; reuse one",
                    headers: [("Retry-After", "1")])
            case .parameters:
                Problem(
                    414, "URI Too Long",
                    "the query has more than \(HTTPServerConfiguration.defaultMaxQueryParameters) parameters")
            case .time:
                Problem(
                    408, "Request Timeout", "the request took longer than \(requestTimeoutSeconds) s to arrive")
            }
        return problem.response
    }
}
