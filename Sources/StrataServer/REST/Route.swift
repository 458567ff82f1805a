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
    /// `/_changes`: the stores' persistent history as a feed
    case changes
    /// `/_export`: every object in one Core Data store file, from one snapshot
    case export
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
        ("openapi.yaml", .openAPIYAML), ("_batch", .batch), ("_changes", .changes), ("_export", .export),
        ("docs", .docs(file: nil)),
    ]

    /// Parses a decoded path against the model's resource paths.
    init(path: String, resources: [String: String]) {
        var path = path
        self = path.withUTF8 { Self.parse($0, resources: resources) }
    }

    /// Parses a path's UTF-8 bytes: the segments after the first slash, at most four (more is no
    /// route), found by byte and compared by byte, as this runs for every request (splitting the
    /// `String` through its `Substring` views costs several times as many instructions).
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, resources: [String: String]) -> Route {
        let slash = UInt8(ascii: "/")
        var end = bytes.count
        if end > 1, bytes[end - 1] == slash { end -= 1 }
        var first = 0
        while first < end, bytes[first] != slash { first += 1 }
        guard first < end else { return .index }
        // Up to three segments' bounds, without an array (an allocation per request); a fourth
        // segment only counts.
        var bounds: (Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0)
        var count = 0
        var start = first + 1
        while count < 4 {
            var next = start
            while next < end, bytes[next] != slash { next += 1 }
            switch count {
            case 0: (bounds.0, bounds.1) = (start, next)
            case 1: (bounds.2, bounds.3) = (start, next)
            case 2: (bounds.4, bounds.5) = (start, next)
            default: break
            }
            count += 1
            guard next < end else { break }
            start = next + 1
        }
        func segment(_ index: Int) -> UnsafeBufferPointer<UInt8> {
            let range =
                switch index {
                case 0: bounds.0..<bounds.1
                case 1: bounds.2..<bounds.3
                default: bounds.4..<bounds.5
                }
            return UnsafeBufferPointer(rebasing: bytes[range])
        }
        func string(_ index: Int) -> String { String(decoding: segment(index), as: UTF8.self) }
        func isSegment(_ index: Int, _ name: StaticString) -> Bool {
            segment(index).elementsEqual(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        }
        if count == 1 {
            if bounds.0 == bounds.1 { return .index }
            return Self.fixed.first { isSegment(0, $0.name) }?.route
                ?? resources[string(0)].map { .collection(entity: $0) } ?? .unknown
        }
        if count == 2, isSegment(0, "docs") { return .docs(file: string(1)) }
        if count == 2, isSegment(0, "_model") {
            if isSegment(1, "diagram.svg") { return .diagram(format: "svg") }
            if isSegment(1, "diagram.mmd") { return .diagram(format: "mmd") }
            if isSegment(1, "diagram.dot") { return .diagram(format: "dot") }
            return .unknown
        }
        guard let entity = resources[string(0)] else { return .unknown }
        switch count {
        case 2: return isSegment(1, "_bulk") ? .bulk(entity: entity) : .item(entity: entity, id: string(1))
        case 3: return .property(entity: entity, id: string(1), name: string(2))
        default: return .unknown
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
        case .changes: "/_changes"
        case .export: "/_export"
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
        case .collection: ["GET", "HEAD", "POST", "PATCH", "DELETE"]
        case .item: ["GET", "HEAD", "PATCH", "PUT", "DELETE"]
        case .batch, .bulk: ["POST"]
        default: ["GET", "HEAD"]
        }
    }
}
