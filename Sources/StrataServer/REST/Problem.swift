import Foundation
import Strata
import StrataHTTP

/// An RFC 9457 problem: every error the server answers with, rendered as
/// `application/problem+json`.
public struct Problem: Error, Sendable {
    /// One failing field of a request body or object.
    public struct FieldError: Sendable, Hashable {
        /// The field (attribute or relationship name, or a query parameter).
        public var field: String
        /// A stable code: `required`, `type`, `unknown`, `min`, `max`, `minLength`, `maxLength`,
        /// `regex`, `minCount`, `maxCount`, `deny`, `unique`, `readOnly`, `notFound`.
        public var code: String
        /// A sentence for people.
        public var message: String

        /// Creates a field error.
        public init(field: String, code: String, message: String) {
            self.field = field
            self.code = code
            self.message = message
        }
    }

    /// The HTTP status.
    public var status: Int
    /// A short, stable summary of the kind of problem.
    public var title: String
    /// What happened in this case.
    public var detail: String
    /// Field errors (validation).
    public var errors: [FieldError]
    /// Extra members (`operation` for a failed batch operation, say).
    public var extra: [String: JSONValue]
    /// Extra headers (`Allow` on a 405).
    public var headers: [(name: String, value: String)]

    /// Creates a problem.
    public init(
        _ status: Int, _ title: String, _ detail: String, errors: [FieldError] = [], extra: [String: JSONValue] = [:],
        headers: [(name: String, value: String)] = []
    ) {
        self.status = status
        self.title = title
        self.detail = detail
        self.errors = errors
        self.extra = extra
        self.headers = headers
    }

    /// The `type` URI: a stable name per status.
    public var type: String {
        let slug = title.lowercased().map { $0.isLetter || $0.isNumber ? String($0) : "-" }.joined()
        return "https://strata.dev/problems/\(slug)"
    }

    /// The JSON body.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "type": .string(type), "title": .string(title), "status": .integer(Int64(status)),
            "detail": .string(detail),
        ]
        if !errors.isEmpty {
            members["errors"] = .array(
                errors.map {
                    .object(["field": .string($0.field), "code": .string($0.code), "message": .string($0.message)])
                })
        }
        for (key, value) in extra { members[key] = value }
        return .object(members)
    }

    /// The response.
    public var response: HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/problem+json")] + headers,
            body: Array(json.jsonText.utf8))
    }

    static func badRequest(_ detail: String, errors: [FieldError] = []) -> Problem {
        Problem(400, "Bad Request", detail, errors: errors)
    }

    static func notFound(_ detail: String) -> Problem { Problem(404, "Not Found", detail) }

    static func validation(_ detail: String, _ errors: [FieldError]) -> Problem {
        Problem(422, "Unprocessable Content", detail, errors: errors)
    }

    static func conflict(_ detail: String, errors: [FieldError] = []) -> Problem {
        Problem(409, "Conflict", detail, errors: errors)
    }

    static func methodNotAllowed(_ method: String, allowed: [String]) -> Problem {
        Problem(
            405, "Method Not Allowed", "\(method) is not allowed here; allowed: \(allowed.joined(separator: ", "))",
            headers: [("Allow", allowed.joined(separator: ", "))])
    }
}

extension Problem {
    /// The problem for a context error: validation → 422, conflicts and deny → 409, unique → 409.
    init(_ error: ContextError) {
        switch error.code {
        case .validation:
            let fields = error.failures.map {
                FieldError(field: $0.field, code: $0.rule.rawValue, message: "\($0.field) \($0.message)")
            }
            if error.failures.contains(where: { $0.rule == .deny }) {
                self = .conflict(
                    "the delete is refused by a deny rule: "
                        + error.failures.map(\.description).joined(separator: "; "), errors: fields)
            } else {
                self = .validation("the object breaks the model's rules", fields)
            }
        case .conflict:
            self = Problem(412, "Precondition Failed", "the object changed since it was read: \(error.message)")
        case .notFound: self = .notFound(error.message)
        case .missingReference:
            self = .conflict(
                error.message,
                errors: error.failures.map {
                    FieldError(field: $0.field, code: "notFound", message: "\($0.field) \($0.message)")
                })
        case .invalidValue, .unknownProperty, .abstractEntity:
            self = .validation(error.message, [])
        case .invalidPredicate: self = .badRequest(error.message)
        case .tooManyAffected: self = Problem(412, "Precondition Failed", error.message)
        case .store:
            if let store = error.storeError {
                self = Problem(store)
            } else {
                self = Problem(500, "Internal Server Error", error.message)
            }
        }
    }

    /// The problem for any error a request handler meets: problems as they are, context and
    /// store errors mapped, anything else a 500.
    /// The header of a `503` whose write may or may not have happened (`Strata-Outcome: unknown`).
    static let outcomeHeader = "Strata-Outcome"

    static func from(_ error: any Error) -> Problem {
        switch error {
        case let problem as Problem: problem
        case let error as ContextError: Problem(error)
        case let error as StoreError: Problem(error)
        default: Problem(500, "Internal Server Error", "\(error)")
        }
    }

    /// The problem for a store error: unique → 409, invalid requests → 400/422, the rest → 500.
    init(_ error: StoreError) {
        switch error.code {
        case .uniqueViolation:
            self = .conflict(
                error.message,
                errors: error.fields.map { FieldError(field: $0, code: "unique", message: "\($0) must be unique") })
        case .conflict: self = Problem(412, "Precondition Failed", error.message)
        case .invalidRequest:
            self = .validation(
                error.message, error.fields.map { FieldError(field: $0, code: "invalid", message: error.message) })
        case .notFound: self = .notFound(error.message)
        case .closed, .noStoreForEntity: self = Problem(503, "Service Unavailable", error.message)
        case .tooExpensive: self = Problem(422, "Unprocessable Content", error.message)
        case .overBudget:
            self = Problem(
                503, "Service Unavailable",
                "\(error.message): narrow the filter (an indexed attribute, fewer rows, no MATCHES over a large table) or try again when the server is less busy",
                headers: [("Retry-After", "1")])
        case .unavailable:
            self = Problem(
                503, "Service Unavailable", "\(error.message); nothing was written, try again shortly",
                headers: [("Retry-After", "2")])
        case .outcomeUnknown:
            // Not to be retried blindly: the write may have happened.
            var problem = Problem(
                503, "Service Unavailable",
                "\(error.message); read the resource to see whether the write happened before sending it again",
                headers: [("Retry-After", "5"), (Self.outcomeHeader, "unknown")])
            problem.extra["outcome"] = .string("unknown")
            self = problem
        case .full, .notWritable, .unsettled:
            // The store is named: the operator knows which disk or file to look at; reads go on.
            var problem = Problem(
                503, "Service Unavailable",
                "\(error.message)\(error.storeURL.map { " (store \(StoreSummary.location(of: $0)))" } ?? ""); nothing was written, try again later",
                headers: [("Retry-After", "5")])
            if let url = error.storeURL { problem.extra["store"] = .string(StoreSummary.location(of: url)) }
            self = problem
        default: self = Problem(500, "Internal Server Error", error.message)
        }
    }
}
