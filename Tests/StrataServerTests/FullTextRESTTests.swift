import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// The text search filters over HTTP (`fts`, `plfts`, `phfts`, `wfts`, `not.`), `order=rank`, the
/// refusals, the document's patterns, and the table page's search box and facets.
@Suite(.serialized) struct FullTextRESTTests {
    static var stores: [String] { PostgreSQLTestServer.requirement.runs ? ["sqlite", "postgresql"] : ["sqlite"] }

    static let titles = [
        "The White Whale", "Whale songs", "A Tale of the Sea", "Whale whale sea", "Dust", "Whaling days",
    ]

    static func fixture(_ store: String) throws -> ServerFixture {
        let catalog = store == "postgresql" ? try StoreSpec(PostgreSQLTestServer.storeURL().absoluteString) : nil
        let fixture = try ServerFixture { options in
            if let catalog { options.stores["Catalog"] = catalog }
        }
        let body = titles.enumerated().map { index, title in
            #"{"title": "\#(title)", "year": \#(index % 2 == 0 ? 1990 : 2000), "available": \#(index < 2)}"#
        }
        let bulk = try fixture.client.send("POST", "/books/_bulk", json: "[" + body.joined(separator: ",") + "]")
        #expect(bulk.status == 201 || bulk.status == 200, "\(bulk.text)")
        return fixture
    }

    static func titles(_ client: TestClient, _ query: String) throws -> [String] {
        let answer = try client.send("GET", "/books?" + query)
        #expect(answer.status == 200, "\(query): \(answer.text)")
        return items(answer).compactMap { $0["title"]?.stringValue }
    }

    @Test(arguments: stores) func theOperatorsFilterAndRank(store: String) throws {
        let fixture = try Self.fixture(store)
        let client = fixture.client
        let cases: [(String, [String])] = [
            ("title=fts.whale&order=title", ["The White Whale", "Whale songs", "Whale whale sea"]),
            (
                "title=fts." + RESTService.escape("whal:* & !sea") + "&order=title",
                ["The White Whale", "Whale songs", "Whaling days"]
            ),
            ("title=plfts." + RESTService.escape("WHITE whale"), ["The White Whale"]),
            ("title=phfts." + RESTService.escape("whale white"), []),
            ("title=phfts." + RESTService.escape("white whale"), ["The White Whale"]),
            (
                "title=wfts." + RESTService.escape(#""the sea" or dust"#) + "&order=title",
                ["A Tale of the Sea", "Dust"]
            ),
            ("title=not.fts.whale&order=title", ["A Tale of the Sea", "Dust", "Whaling days"]),
            ("title=plfts." + RESTService.escape("..."), []),
            // Not well formed in fts's language: its words, all required.
            ("title=fts." + RESTService.escape("white & (whale"), ["The White Whale"]),
            // Relevance: 2 of 3 words, 1 of 2, 1 of 3.
            ("title=fts.whale&order=rank", ["Whale whale sea", "Whale songs", "The White Whale"]),
            ("title=fts.whale&order=rank.asc", ["The White Whale", "Whale songs", "Whale whale sea"]),
            ("title=fts.whale&order=rank&limit=1&offset=1", ["Whale songs"]),
            ("title=fts.whale&year=eq.2000&order=rank", ["Whale whale sea", "Whale songs"]),
            // Without a text search every relevance is 0: by id, as the last key's direction says.
            ("year=eq.2000&order=format,rank.asc", ["Whale songs", "Whale whale sea", "Whaling days"]),
            (
                "where=" + RESTService.escape("title TEXTSEARCH 'whale & !sea'") + "&order=title",
                ["The White Whale", "Whale songs"]
            ),
        ]
        for (query, expected) in cases {
            #expect(try Self.titles(client, query) == expected, "\(store) \(query)")
        }
        // A page by rank continues where it stopped.
        let first = try client.send("GET", "/books?title=fts.whale&order=rank&limit=2")
        let next = try #require(field(first, "next")?.stringValue)
        #expect(items(try client.send("GET", next)).compactMap { $0["title"]?.stringValue } == ["The White Whale"])
    }

    @Test func refusalsNameTheAttributeAndWhy() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let refused: [(String, String)] = [
            ("format=fts.paperback", "'format' of Book is not searchable"),
            ("format=not.wfts.paperback", "(Book has: title)"),
            ("name=fts.x", "not searchable"),
            ("title=fts(english).whale", "no text search configuration"),
            ("title=fts", "fts, plfts, phfts, wfts"),
        ]
        for (query, words) in refused {
            let path = query.hasPrefix("name") ? "/authors?" : "/books?"
            let answer = try client.send("GET", path + query)
            #expect(answer.status == 400, "\(query): \(answer.text)")
            #expect(field(answer, "detail")?.stringValue?.contains(words) == true, "\(query): \(answer.text)")
        }
        // `order=rank` needs a searchable attribute; Author has none.
        #expect(try client.send("GET", "/authors?order=rank").status == 400)
    }

    @Test func theDocumentAdmitsTheOperatorsOnSearchableAttributesOnly() throws {
        let document = OpenAPIGenerator.document(for: try ObjectModel.example)
        let parameters = OpenAPITests.at(document, "paths", "/books", "get", "parameters")?.arrayValue ?? []
        func pattern(_ name: String) throws -> NSRegularExpression {
            let parameter = try #require(parameters.first { OpenAPITests.at($0, "name") == .string(name) })
            return try NSRegularExpression(
                pattern: try #require(OpenAPITests.at(parameter, "schema", "pattern")?.stringValue))
        }
        func admits(_ regex: NSRegularExpression, _ value: String) -> Bool {
            regex.firstMatch(in: value, range: NSRange(value.startIndex..., in: value)) != nil
        }
        let title = try pattern("title")
        for value in ["fts.whale", "plfts.a b", "phfts.", "wfts.\"a b\" -c", "not.fts.x", "eq.x"] {
            #expect(admits(title, value), "\(value)")
        }
        #expect(!admits(title, "fts(english).x"))
        let format = try pattern("format")
        #expect(!admits(format, "fts.x") && admits(format, "eq.x"))
        let order = try pattern("order")
        #expect(admits(order, "rank") && admits(order, "year.desc,rank.asc"))
    }

    @Test func theTablePageSearchesAndFacets() throws {
        let fixture = try Self.fixture("sqlite")
        let client = fixture.client
        let html = ["Accept": "text/html"]
        let page = try client.send("GET", "/books?year=eq.1990", headers: html)
        #expect(page.status == 200)
        #expect(page.text.contains(#"<input type="search" name="_search""#), "\(page.text)")
        #expect(page.text.contains(#"<input type="hidden" name="year" value="eq.1990">"#))
        // Facets of the filtered set, as links adding a filter.
        #expect(page.text.contains(#"data-facet="available""#) && page.text.contains(#"data-facet="year""#))
        #expect(
            page.text.contains(#"href="/books?year=eq.1990&amp;available=is.false">false</a> <small>2</small>"#),
            "\(page.text)")
        // The search box answers with the API's own filter.
        let search = try client.send("GET", "/books?year=eq.1990&_search=whale", headers: html)
        #expect(search.status == 303)
        #expect(search.header("Location") == "/books?year=eq.1990&title=wfts.whale&order=rank")
        let results = try client.send("GET", try #require(search.header("Location")), headers: html)
        #expect(results.text.contains("The White Whale") && !results.text.contains("Whale whale sea"))
        #expect(!results.text.contains("Whale songs"))
        #expect(results.text.contains(#"value="whale""#))
        // Authors have nothing searchable: no box.
        #expect(!(try client.send("GET", "/authors", headers: html)).text.contains("_search"))
    }
}
