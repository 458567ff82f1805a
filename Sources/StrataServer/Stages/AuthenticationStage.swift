import StrataHTTP

/// Checks a request's bearer token against the scope its route needs (``AccessControl``): refuses
/// it (401, or 403 naming the token), or notes the token's name and scopes in the context.
struct AuthenticationStage: ServerStage {
    /// Who may do what; nil when the tokens given cannot be used (the server then does not start).
    let control: AccessControl?

    func enter(_ request: HTTPRequest, _ context: inout RequestContext) -> HTTPResponse? {
        guard let control else { return nil }
        switch control.decide(request) {
        case .anonymous:
            return nil
        case .open:
            context.scopes = []
            return nil
        case .allowed(let token):
            context.tokenName = token.name
            context.scopes = token.scopes
            return nil
        case .denied(let response, let token):
            context.tokenName = token
            context.scopes = []
            return response
        }
    }
}
