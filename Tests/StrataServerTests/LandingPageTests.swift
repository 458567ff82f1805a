import Foundation
import Strata
import StrataHTTP
import StrataServer
import StrataTestSupport
import Testing

/// What a browser gets: HTML for `/`, a collection and an object when it prefers HTML; JSON for
/// every other client.
@Suite struct LandingPageTests {
    static let browser = [
        "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
    ]

    @Test func acceptDecidesBetweenHTMLAndJSON() {
        func wants(_ accept: String?) -> Bool {
            RESTService.wantsHTML(HTTPRequest(method: "GET", path: "/", headers: accept.map { ["accept": $0] } ?? [:]))
        }
        #expect(wants(Self.browser["Accept"]))
        #expect(wants("text/html"))
        #expect(!wants(nil))
        #expect(!wants("*/*"))
        #expect(!wants("application/json"))
        #expect(!wants("application/json, text/html;q=0.5"))
        #expect(!wants("text/html;q=0"))
    }

    @Test func theLandingPageListsConfigurationsStoresAndEntitiesWithCounts() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        #expect(try client.send("POST", "/authors", json: #"{"name": "Ursula <K.> Le Guin"}"#).status == 201)
        #expect(
            try client.send(
                "POST", "/books/_bulk",
                json: #"[{"title": "Earthsea", "author": 1}, {"title": "The Lathe", "year": 1971}]"#
            ).status == 201)
        let page = try client.send("GET", "/", headers: Self.browser)
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.header("Vary") == "Accept")
        let html = page.text
        #expect(html.contains("<section class=\"configuration\" data-configuration=\"Catalog\">"))
        #expect(html.contains("<section class=\"configuration\" data-configuration=\"Activity\">"))
        for (entity, count) in [("Author", 1), ("Book", 2), ("Tag", 0), ("SearchLog", 0)] {
            #expect(html.contains("data-entity=\"\(entity)\""), "\(entity)")
            let row = html.components(separatedBy: "data-entity=\"\(entity)\"").dropFirst().first ?? ""
            #expect(row.contains("<td class=\"count\">\(count)</td>"), "\(entity): \(row.prefix(300))")
        }
        #expect(html.contains("curl -s &#39;") || html.contains("curl -s 'http://127.0.0.1"))
        #expect(html.contains("<img src=\"/_model/diagram.svg\""))
        #expect(!html.contains("<script"))
        // JSON clients keep JSON.
        let json = try client.send("GET", "/")
        #expect(json.header("Content-Type") == "application/json")
        #expect(json.json.objectValue?["model"] != nil)
    }

    @Test func collectionsAndObjectsAreTablesWithLinksFiltersAndPages() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        #expect(try client.send("POST", "/authors", json: #"{"name": "Ursula <K.> Le Guin"}"#).status == 201)
        let books = (1...3).map { #"{"title": "Book \#($0)", "year": \#(1960 + $0), "author": 1}"# }
        #expect(try client.send("POST", "/books/_bulk", json: "[" + books.joined(separator: ",") + "]").status == 201)
        let table = try client.send("GET", "/books?limit=2&order=year.desc", headers: Self.browser)
        #expect(table.status == 200 && table.header("Content-Type") == "text/html; charset=utf-8")
        #expect(table.text.contains("<a href=\"/books/3\">3</a>"))
        #expect(table.text.contains("<a href=\"/authors/1\">Author 1</a>"))
        #expect(table.text.contains("<a href=\"/books/3/tags\">0 Tag</a>"))
        #expect(!table.text.contains("Book 1<"))
        #expect(table.text.contains("rel=\"next\" href=\"/books?limit=2&amp;order=year.desc&amp;after="))
        let filtered = try client.send(
            "GET", "/books?where=" + "title ENDSWITH '1'".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!,
            headers: Self.browser)
        #expect(filtered.text.contains("Book 1") && !filtered.text.contains("Book 2"))
        #expect(
            filtered.text.contains("value=\"title ENDSWITH &#39;1&#39;\"")
                || filtered.text.contains("value=\"title ENDSWITH '1'\""))
        let author = try client.send("GET", "/authors/1", headers: Self.browser)
        #expect(author.status == 200)
        #expect(author.text.contains("Ursula &lt;K.&gt; Le Guin"))
        #expect(author.text.contains("<a href=\"/authors/1/books\">3 Book</a>"))
        // A client's mistake is still a problem, in JSON.
        let bad = try client.send("GET", "/books?year=gt.x", headers: Self.browser)
        #expect(bad.status == 400 && bad.header("Content-Type") == "application/problem+json")
        #expect(try client.send("GET", "/books/1").header("Content-Type") == "application/json")
    }
}

/// `/docs`: the Swagger UI build embedded in the binary, one from an assets folder, or a plain
/// page with none.
@Suite struct APIDocsTests {
    @Test func byDefaultDocsServesTheEmbeddedSwaggerUIAsVendored() throws {
        let fixture = try ServerFixture()
        let page = try fixture.client.send("GET", "/docs")
        #expect(page.status == 200 && page.text.contains("<script src=\"/docs/swagger-ui-bundle.js\"></script>"))
        let vendored = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/CSwaggerUI/swagger-ui")
        for name in [
            "swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "swagger-ui-bundle.js.LICENSE.txt", "VERSION",
        ] {
            let served = try fixture.client.send("GET", "/docs/\(name)")
            let file = try Data(contentsOf: vendored.appendingPathComponent(name))
            #expect(served.status == 200 && Data(served.body) == file, "\(name): \(served.body.count) bytes served")
        }
        let version = try String(contentsOf: vendored.appendingPathComponent("VERSION"), encoding: .utf8)
        #expect(version.hasPrefix("Swagger UI "))
        #expect(page.text.contains(version.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(try fixture.client.send("GET", "/docs/LICENSE").text.contains("Apache License"))
    }

    @Test func withoutAssetsDocsIsAPlainPageListingEveryOperation() throws {
        let fixture = try ServerFixture { $0.assetsDirectory = "" }
        let page = try fixture.client.send("GET", "/docs")
        #expect(page.status == 200 && page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.text.contains("--assets-dir ''"))
        for operation in ["createBook", "bulkCreateBooks", "listBooks", "getDiagramSvg", "batch"] {
            #expect(page.text.contains("id=\"\(operation)\""), "\(operation)")
        }
        #expect(!page.text.contains("<script"))
        #expect(try fixture.client.send("GET", "/docs/swagger-ui-bundle.js").status == 404)
    }

    @Test func withAssetsDocsServesSwaggerUIFromThisServerOnly() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-assets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let ui = folder.appendingPathComponent("swagger-ui")
        try FileManager.default.createDirectory(at: ui, withIntermediateDirectories: true)
        // Stand-ins with the names scripts/fetch-assets writes; the browser checks use the real files.
        for name in [
            "swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png", "LICENSE",
            "swagger-ui-bundle.js.LICENSE.txt", "VERSION",
        ] {
            try Data("contents of \(name)\n".utf8).write(to: ui.appendingPathComponent(name))
        }
        let fixture = try ServerFixture { $0.assetsDirectory = folder.path }
        let page = try fixture.client.send("GET", "/docs")
        #expect(page.status == 200)
        #expect(page.text.contains("<script src=\"/docs/swagger-ui-bundle.js\"></script>"))
        #expect(page.text.contains("url: \"/openapi.json\""))
        #expect(page.text.contains("validatorUrl: null"))
        #expect(!page.text.contains("http://") && !page.text.contains("https://"))
        let script = try fixture.client.send("GET", "/docs/swagger-ui-bundle.js")
        #expect(script.status == 200 && script.text == "contents of swagger-ui-bundle.js\n")
        #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(try fixture.client.send("GET", "/docs/LICENSE").status == 200)
        #expect(try fixture.client.send("GET", "/docs/other.js").status == 404)
        // A folder without the files stops the start with a message naming the script.
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("strata-empty-\(UUID().uuidString)")
        var thrown = ""
        do {
            _ = try ServerFixture { $0.assetsDirectory = empty.path }
        } catch {
            thrown = "\(error)"
        }
        #expect(thrown.contains("scripts/fetch-assets"), "\(thrown)")
    }
}
