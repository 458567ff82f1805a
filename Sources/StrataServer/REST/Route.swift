import Strata

/// Where a request path points.
enum Route: Equatable {
    case index
    case live
    case ready
    case metrics
    case openAPIJSON
    case openAPIYAML
    case batch
    /// `/_model/diagram.svg`, `.mmd` or `.dot`: the format
    case diagram(format: String)
    /// `/docs` (nil) and `/docs/<file>`: the API docs and their assets
    case docs(file: String?)
    /// `/books`
    case collection(entity: String)
    /// `/books/_bulk`: several objects created at once
    case bulk(entity: String)
    /// `/books/42` (id as given; checked later)
    case item(entity: String, id: String)
    /// `/books/42/author`
    case property(entity: String, id: String, name: String)
    case unknown

    /// Parses a decoded path against the model's resource paths.
    init(path: String, resources: [String: String]) {
        var trimmed = Substring(path)
        if trimmed.utf8.count > 1, trimmed.utf8.last == UInt8(ascii: "/") { trimmed = trimmed.dropLast() }
        // The segments after the first slash, at most four (more is no route): by UTF-8 bytes,
        // as this runs for every request.
        var parts: [Substring] = []
        parts.reserveCapacity(4)
        if let slash = trimmed.utf8.firstIndex(of: UInt8(ascii: "/")) {
            var rest = trimmed[trimmed.index(after: slash)...]
            while parts.count < 4 {
                guard let next = rest.utf8.firstIndex(of: UInt8(ascii: "/")) else {
                    parts.append(rest)
                    break
                }
                parts.append(rest[..<next])
                rest = rest[rest.index(after: next)...]
            }
        }
        guard let first = parts.first, !(parts.count == 1 && first.isEmpty) else {
            self = .index
            return
        }
        if parts.count == 1 {
            switch first {
            case "live": self = .live
            case "ready": self = .ready
            case "metrics": self = .metrics
            case "openapi.json": self = .openAPIJSON
            case "openapi.yaml": self = .openAPIYAML
            case "_batch": self = .batch
            case "docs": self = .docs(file: nil)
            default: self = resources[String(first)].map { .collection(entity: $0) } ?? .unknown
            }
            return
        }
        if first == "docs", parts.count == 2 {
            self = .docs(file: String(parts[parts.startIndex + 1]))
            return
        }
        if first == "_model", parts.count == 2 {
            switch parts[parts.startIndex + 1] {
            case "diagram.svg": self = .diagram(format: "svg")
            case "diagram.mmd": self = .diagram(format: "mmd")
            case "diagram.dot": self = .diagram(format: "dot")
            default: self = .unknown
            }
            return
        }
        guard let entity = resources[String(first)] else {
            self = .unknown
            return
        }
        let id = String(parts[parts.startIndex + 1])
        switch parts.count {
        case 2: self = id == "_bulk" ? .bulk(entity: entity) : .item(entity: entity, id: id)
        case 3: self = .property(entity: entity, id: id, name: String(parts[parts.startIndex + 2]))
        default: self = .unknown
        }
    }

    /// The route template for metrics (`/books/{id}`).
    func template(_ resourcePath: (String) -> String) -> String {
        switch self {
        case .index: "/"
        case .live: "/live"
        case .ready: "/ready"
        case .metrics: "/metrics"
        case .openAPIJSON: "/openapi.json"
        case .openAPIYAML: "/openapi.yaml"
        case .batch: "/_batch"
        case .diagram(let format): "/_model/diagram.\(format)"
        case .docs(let file): file == nil ? "/docs" : "/docs/{file}"
        case .collection(let entity): "/\(resourcePath(entity))"
        case .bulk(let entity): "/\(resourcePath(entity))/_bulk"
        case .item(let entity, _): "/\(resourcePath(entity))/{id}"
        case .property(let entity, _, let name): "/\(resourcePath(entity))/{id}/\(name)"
        case .unknown: "unknown"
        }
    }

    /// The methods the route accepts.
    var allowed: [String] {
        switch self {
        case .collection: ["GET", "HEAD", "POST"]
        case .item: ["GET", "HEAD", "PATCH", "PUT", "DELETE"]
        case .batch, .bulk: ["POST"]
        default: ["GET", "HEAD"]
        }
    }
}
