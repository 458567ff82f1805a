import Foundation
import Strata
import StrataHTTP

@testable import StrataServer

/// What the stage tests share: requests and answers built by hand, and a stage's way in.
enum Stage {
    /// A request from `10.0.0.7`, headers named in lowercase as the server names them.
    static func request(
        _ method: String, _ path: String, headers: [String: String] = [:], body: String = "",
        exceeded: HTTPServerLimit? = nil
    ) -> HTTPRequest {
        var request = HTTPRequest(
            method: method, path: path, headers: headers, body: Array(body.utf8), remoteAddress: "10.0.0.7")
        request.exceededLimit = exceeded
        return request
    }

    /// `stage`'s answer to `request` on its way in, and the context it leaves.
    static func enter(
        _ stage: some ServerStage, _ request: HTTPRequest, context: RequestContext = RequestContext()
    ) -> (answer: HTTPResponse?, context: RequestContext) {
        var context = context
        let answer = stage.enter(request, &context)
        return (answer, context)
    }

    /// A response's header, by name compared case-insensitively.
    static func header(_ response: HTTPResponse?, _ name: String) -> String? {
        response?.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// A response's body as JSON.
    static func json(_ response: HTTPResponse?) throws -> JSONValue {
        try JSONValue.parse(response?.body ?? [])
    }
}
