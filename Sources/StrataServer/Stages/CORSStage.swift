import StrataHTTP

/// Answers CORS preflights and adds the CORS headers to every other answer, as ``CORSPolicy``
/// says (no headers at all without `--cors-origin`).
struct CORSStage: ServerStage {
    /// The origins allowed; nil when the ones given cannot be used (the server then does not start).
    let policy: CORSPolicy?

    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse? {
        // A request over one of the server's limits is answered by the limits stage, whatever it is.
        guard request.exceededLimit == nil else { return nil }
        return policy?.preflight(request)
    }

    func leave(_ response: HTTPResponse, to request: HTTPRequest, _ context: RequestContext) -> HTTPResponse {
        policy?.decorate(response, for: request) ?? response
    }
}
