import Foundation
import Strata
import StrataHTTP

/// What a bearer token may do: `read` (GET and HEAD of entities and `/`), `write` (every entity
/// operation and `/_batch`, reads included), `admin` (`/metrics` and the stores' locations and
/// server versions in `/`).
public enum AccessScope: String, Sendable, CaseIterable, Comparable {
    case read, write, admin

    public static func < (lhs: AccessScope, rhs: AccessScope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// One bearer token: a name (what logs show), its scopes, and its secret's SHA-256 digest (the
/// secret itself is not kept).
public struct AccessToken: Sendable {
    public var name: String
    public var scopes: Set<AccessScope>
    let digest: [UInt8]

    /// The shortest secret given in clear text.
    public static let minimumSecretLength = 16

    /// Parses `NAME:SCOPE[,SCOPE]:SECRET`; SECRET may be `sha256:` and the secret's SHA-256 digest
    /// in hex (64 digits), so a tokens file need not hold the secret.
    public init(parsing text: String) throws(ServeError) {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else {
            throw ServeError("a token is NAME:SCOPE[,SCOPE]:SECRET, not '\(Self.masked(text))'")
        }
        let name = parts[0]
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.@".contains($0)) })
        else {
            throw ServeError("token name '\(name)' must be letters, digits and - _ . @")
        }
        var scopes: Set<AccessScope> = []
        for scope in parts[1].split(separator: ",") {
            guard let known = AccessScope(rawValue: scope.trimmingCharacters(in: .whitespaces)) else {
                throw ServeError("token \(name): unknown scope '\(scope)' (known: read, write, admin)")
            }
            scopes.insert(known)
        }
        guard !scopes.isEmpty else { throw ServeError("token \(name) has no scope (read, write, admin)") }
        let secret = parts[2]
        if secret.hasPrefix("sha256:") {
            let hex = Array(secret.dropFirst("sha256:".count).lowercased().utf8)
            guard hex.count == 64, let bytes = Self.bytes(hex: hex) else {
                throw ServeError("token \(name): sha256: needs the secret's digest as 64 hex digits")
            }
            digest = bytes
        } else {
            guard secret.count >= Self.minimumSecretLength else {
                throw ServeError(
                    "token \(name): the secret must be at least \(Self.minimumSecretLength) characters (openssl rand -hex 24 makes one)"
                )
            }
            digest = Self.digest(secret)
        }
        self.name = name
        self.scopes = scopes
    }

    /// Whether the token grants `scope`: `write` includes `read`.
    func grants(_ scope: AccessScope) -> Bool {
        scopes.contains(scope) || (scope == .read && scopes.contains(.write))
    }

    /// The SHA-256 digest of `secret`'s UTF-8 bytes.
    static func digest(_ secret: String) -> [UInt8] {
        var hash = SHA256()
        hash.update(secret)
        return hash.finalize()
    }

    /// `text` with everything after the second colon hidden.
    static func masked(_ text: String) -> String {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        return parts.count == 3 ? "\(parts[0]):\(parts[1]):***" : "***"
    }

    private static func bytes(hex: [UInt8]) -> [UInt8]? {
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var result: [UInt8] = []
        for index in stride(from: 0, to: hex.count, by: 2) {
            guard let high = value(hex[index]), let low = value(hex[index + 1]) else { return nil }
            result.append(high << 4 | low)
        }
        return result
    }
}

/// Who may do what: bearer tokens from the command line and a tokens file (re-read by
/// ``reload()``). Without any token every request is let through (anonymous access).
public final class AccessControl: Sendable {
    private let fixed: [AccessToken]
    /// The tokens file, one `NAME:SCOPES:SECRET` per line (`#` starts a comment).
    public let file: String?
    /// Whether the OpenAPI document needs a `read` token too.
    public let privateOpenAPI: Bool
    private let tokens: Locked<[AccessToken]>

    /// - Throws: ``ServeError`` for a malformed token, a duplicate name or an unreadable file.
    public init(tokens: [String], file: String?, privateOpenAPI: Bool) throws(ServeError) {
        var parsed: [AccessToken] = []
        for text in tokens { parsed.append(try AccessToken(parsing: text)) }
        fixed = parsed
        self.file = file
        self.privateOpenAPI = privateOpenAPI
        self.tokens = Locked(parsed)
        if file != nil { _ = try reload() }
        try Self.checkNames(self.tokens.current)
    }

    /// The names of the tokens in force.
    public var tokenNames: [String] { tokens.current.map(\.name) }

    /// Whether any token is configured (otherwise access is anonymous).
    public var isEnabled: Bool { !tokens.current.isEmpty }

    /// Re-reads the tokens file; on an error the tokens stay as they were.
    /// - Returns: how many tokens are in force.
    @discardableResult
    public func reload() throws(ServeError) -> Int {
        guard let file else { return tokens.current.count }
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ServeError("cannot read the tokens file \(file): \(error.localizedDescription)")
        }
        var loaded = fixed
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            do throws(ServeError) {
                loaded.append(try AccessToken(parsing: trimmed))
            } catch {
                throw ServeError("\(file) line \(number + 1): \(error.message)")
            }
        }
        try Self.checkNames(loaded)
        tokens.withLock { $0 = loaded }
        return loaded.count
    }

    private static func checkNames(_ tokens: [AccessToken]) throws(ServeError) {
        var seen: Set<String> = []
        for token in tokens where !seen.insert(token.name).inserted {
            throw ServeError("two tokens are named '\(token.name)'")
        }
    }

    /// What `request` needs: nil for what is always open.
    func requiredScope(_ request: HTTPRequest) -> AccessScope? {
        switch request.path {
        case "/live", "/ready": return nil
        case "/openapi.json", "/openapi.yaml", "/docs": return privateOpenAPI ? .read : nil
        case "/metrics": return .admin
        case "/_batch": return .write
        default:
            // A CORS preflight carries no credentials.
            if request.method == "OPTIONS" { return nil }
            // The docs' assets go with the document they show.
            if request.path.hasPrefix("/docs/") { return privateOpenAPI ? .read : nil }
            return request.method == "GET" || request.method == "HEAD" ? .read : .write
        }
    }

    /// The outcome of checking one request.
    enum Decision {
        /// Let through with every scope: no token is in force (anonymous access).
        case anonymous
        /// Let through without a scope: a path that is always open.
        case open
        /// Let through on behalf of `token`.
        case allowed(AccessToken)
        /// Answered at once (401, or 403 naming the token).
        case denied(HTTPResponse, token: String?)
    }

    /// Checks `request`'s `Authorization: Bearer` token against the scope its route needs.
    func decide(_ request: HTTPRequest) -> Decision {
        let current = tokens.current
        guard !current.isEmpty else { return .anonymous }
        guard let scope = requiredScope(request) else { return .open }
        guard let header = request.header("authorization"), header.count > 7,
            header.prefix(7).lowercased() == "bearer "
        else {
            return .denied(
                Self.problem(
                    401, "Unauthorized", "this server needs a bearer token: Authorization: Bearer <secret>",
                    challenge: #"Bearer realm="strata""#), token: nil)
        }
        let presented = AccessToken.digest(header.dropFirst(7).trimmingCharacters(in: .whitespaces))
        // Every token is compared, each in constant time, so timing tells nothing.
        var match: AccessToken?
        for token in current {
            var difference: UInt8 = 0
            for (a, b) in zip(token.digest, presented) { difference |= a ^ b }
            if difference == 0 && match == nil { match = token }
        }
        guard let match else {
            return .denied(
                Self.problem(
                    401, "Unauthorized", "the bearer token is not one this server knows",
                    challenge: #"Bearer realm="strata", error="invalid_token""#), token: nil)
        }
        // The index is for readers and, with the stores' locations, for admins.
        guard match.grants(scope) || (request.path == "/" && match.scopes.contains(.admin)) else {
            return .denied(
                Self.problem(
                    403, "Forbidden",
                    "token \(match.name) has scope \(match.scopes.sorted().map(\.rawValue).joined(separator: ",")); \(request.method) \(request.path) needs \(scope.rawValue)",
                    challenge: #"Bearer realm="strata", error="insufficient_scope", scope="\#(scope.rawValue)""#),
                token: match.name)
        }
        return .allowed(match)
    }

    private static func problem(_ status: Int, _ title: String, _ detail: String, challenge: String) -> HTTPResponse {
        var response = Problem(status, title, detail).response
        response.headers.append(("WWW-Authenticate", challenge))
        return response
    }
}
