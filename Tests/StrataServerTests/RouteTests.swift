import Testing

@testable import StrataServer

/// Request paths as the service reads them.
@Suite struct RouteTests {
    static let resources = ["books": "Book", "ünï": "Unicode", "live-data": "Live"]

    @Test(arguments: [
        ("", Route.index), ("/", .index), ("//", .index),
        ("/live", .live), ("/live/", .live), ("/ready", .ready), ("/metrics", .metrics),
        ("/openapi.json", .openAPIJSON), ("/openapi.yaml", .openAPIYAML), ("/_batch", .batch),
        ("/docs", .docs(file: nil)), ("/docs/", .docs(file: nil)), ("/docs/ui.css", .docs(file: "ui.css")),
        ("/_model/diagram.svg", .diagram(format: "svg")), ("/_model/diagram.mmd", .diagram(format: "mmd")),
        ("/_model/diagram.dot", .diagram(format: "dot")), ("/_model/diagram.png", .unknown),
        ("/books", .collection(entity: "Book")), ("/books/", .collection(entity: "Book")),
        ("/books/42", .item(entity: "Book", id: "42")), ("/books//", .item(entity: "Book", id: "")),
        ("/books/_bulk", .bulk(entity: "Book")), ("/books/_bulk/", .bulk(entity: "Book")),
        ("/books/42/author", .property(entity: "Book", id: "42", name: "author")),
        ("/books/42/author/1", .unknown), ("/books/42/author/1/2", .unknown),
        ("/ünï/7", .item(entity: "Unicode", id: "7")), ("/live-data", .collection(entity: "Live")),
        ("/lives", .unknown), ("/liv", .unknown), ("/nope", .unknown), ("/nope/1", .unknown),
        ("/live/1", .unknown), ("/docs/a/b", .unknown), ("books/42", .unknown),
        // A combining mark after a slash makes one character with it: segments split by bytes.
        ("/books/\u{301}1", .item(entity: "Book", id: "\u{301}1")),
        ("/books/1/\u{301}x", .property(entity: "Book", id: "1", name: "\u{301}x")),
    ])
    func pathsParse(path: String, route: Route) {
        #expect(Route(path: path, resources: Self.resources) == route)
    }
}
