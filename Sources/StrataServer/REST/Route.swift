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

    /// The paths of one segment that are no resource.
    private static let fixed: [(name: StaticString, route: Route)] = [
        ("live", .live), ("ready", .ready), ("metrics", .metrics), ("openapi.json", .openAPIJSON),
        ("openapi.yaml", .openAPIYAML), ("_batch", .batch), ("docs", .docs(file: nil)),
    ]

    /// Parses a decoded path against the model's resource paths.
    init(path: String, resources: [String: String]) {
        var trimmed = Substring(path)
        if trimmed.utf8.count > 1, trimmed.utf8.last == UInt8(ascii: "/") {
            trimmed = trimmed[..<trimmed.utf8.index(before: trimmed.endIndex)]
        }
        // The segments after the first slash, at most four (more is no route): by UTF-8 bytes and
        // without an array, as this runs for every request. Indices move through the UTF-8 view:
        // a `Substring`'s own `index(after:)` steps by characters, finding grapheme breaks.
        var segments: (Substring, Substring, Substring) = ("", "", "")
        var count = 0
        let bytes = trimmed.utf8
        if var start = bytes.firstIndex(of: UInt8(ascii: "/")).map({ bytes.index(after: $0) }) {
            while count < 4 {
                let next = bytes[start...].firstIndex(of: UInt8(ascii: "/"))
                let segment = trimmed[start..<(next ?? bytes.endIndex)]
                switch count {
                case 0: segments.0 = segment
                case 1: segments.1 = segment
                case 2: segments.2 = segment
                default: break
                }
                count += 1
                guard let next else { break }
                start = bytes.index(after: next)
            }
        }
        let first = segments.0
        guard count > 0, !(count == 1 && first.isEmpty) else {
            self = .index
            return
        }
        func isSegment(_ segment: Substring, _ name: StaticString) -> Bool {
            segment.utf8.elementsEqual(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        }
        if count == 1 {
            self =
                Self.fixed.first { isSegment(first, $0.name) }?.route
                ?? resources[String(first)].map { .collection(entity: $0) } ?? .unknown
            return
        }
        if count == 2, isSegment(first, "docs") {
            self = .docs(file: String(segments.1))
            return
        }
        if count == 2, isSegment(first, "_model") {
            switch segments.1 {
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
        let id = String(segments.1)
        switch count {
        case 2: self = isSegment(segments.1, "_bulk") ? .bulk(entity: entity) : .item(entity: entity, id: id)
        case 3: self = .property(entity: entity, id: id, name: String(segments.2))
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
