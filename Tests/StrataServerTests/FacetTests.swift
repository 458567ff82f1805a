import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// `facet=` on a list: value counts over every object the filters match, checked against what the
/// test inserted, counted by hand.
@Suite(.serialized) struct FacetTests {
    /// The `values` of facet `name` as (value, count) pairs, and its `truncated`.
    static func facet(_ response: ClientResponse, _ name: String) -> (values: [(JSONValue, Int)], truncated: Bool?) {
        let facet = field(response, "facets")?.objectValue?[name]?.objectValue
        let values = (facet?["values"]?.arrayValue ?? []).compactMap { item -> (JSONValue, Int)? in
            guard let object = item.objectValue, let value = object["value"],
                let count = object["count"]?.doubleValue
            else { return nil }
            return (value, Int(count))
        }
        return (values, facet?["truncated"]?.boolValue)
    }

    static func expectFacet(
        _ response: ClientResponse, _ name: String, _ expected: [(JSONValue, Int)], truncated: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let (values, isTruncated) = facet(response, name)
        #expect(values.map(\.0) == expected.map(\.0), "\(name): \(response.text)", sourceLocation: sourceLocation)
        #expect(values.map(\.1) == expected.map(\.1), "\(name): \(response.text)", sourceLocation: sourceLocation)
        #expect(isTruncated == truncated, "\(name): \(response.text)", sourceLocation: sourceLocation)
    }

    @Test func countsOverTheFilteredSetWithNullsAndTies() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        var authors: [Int64] = []
        for name in ["Ursula", "Octavia"] {
            let created = try client.send("POST", "/authors", json: #"{"name": "\#(name)"}"#)
            #expect(created.status == 201, "\(created.text)")
            authors.append(try #require(field(created, "_id")?.doubleValue.map { Int64($0) }))
        }
        // year, format, author index (nil: none), by hand below.
        let books: [(Int?, String?, Int?)] = [
            (1999, "hardcover", 0), (1999, "hardcover", 0), (1999, "hardcover", 0), (2001, "hardcover", 0),
            (2001, "hardcover", 0), (nil, "hardcover", 0), (nil, "hardcover", 0), (2005, "hardcover", 1),
            (2001, nil, 1), (1999, nil, 1), (nil, nil, nil), (1980, nil, nil),
        ]
        let body = books.enumerated().map { index, book in
            var members = [#""title": "Book \#(index)""#]
            if let year = book.0 { members.append(#""year": \#(year)"#) }
            if let format = book.1 { members.append(#""format": "\#(format)""#) }
            if let author = book.2 { members.append(#""author": \#(authors[author])"#) }
            return "{" + members.joined(separator: ", ") + "}"
        }
        let bulk = try client.send("POST", "/books/_bulk", json: "[" + body.joined(separator: ",") + "]")
        #expect(bulk.status == 201 || bulk.status == 200, "\(bulk.text)")

        // Every book, a page of two: the counts cover all twelve; ties by value, null first.
        let all = try client.send("GET", "/books?facet=year&facet=format&facet=author&limit=2")
        #expect(all.status == 200, "\(all.text)")
        #expect(items(all).count == 2)
        #expect(field(all, "facets")?.objectValue?.keys.sorted() == ["author", "format", "year"])
        Self.expectFacet(
            all, "year",
            [(.integer(1999), 4), (.null, 3), (.integer(2001), 3), (.integer(1980), 1), (.integer(2005), 1)])
        Self.expectFacet(all, "format", [(.string("hardcover"), 8), (.string("paperback"), 4)])
        Self.expectFacet(
            all, "author", [(.integer(authors[0]), 7), (.integer(authors[1]), 3), (.null, 2)])
        // The answer's members in the usual (sorted) order, facets first.
        #expect(all.text.hasPrefix(#"{"facets":{"year":"#), "\(all.text)")

        // Filters apply: a column filter, then where=.
        let recent = try client.send("GET", "/books?year=gte.2000&facet=year&facet=author")
        Self.expectFacet(recent, "year", [(.integer(2001), 3), (.integer(2005), 1)])
        Self.expectFacet(recent, "author", [(.integer(authors[0]), 2), (.integer(authors[1]), 2)])
        let paperbacks = try client.send(
            "GET", "/books?facet=year&where=" + RESTService.escape("format == 'paperback'"))
        Self.expectFacet(
            paperbacks, "year", [(.null, 1), (.integer(1980), 1), (.integer(1999), 1), (.integer(2001), 1)])
        let none = try client.send("GET", "/books?year=eq.1500&facet=format")
        Self.expectFacet(none, "format", [])
        // Without facet=, no facets member.
        #expect(field(try client.send("GET", "/books"), "facets") == nil)

        // Refused, each naming what is wrong.
        let refused: [(String, String)] = [
            ("facet=nothing", "'nothing'"), ("facet=tags", "'tags'"), ("facet=cover", "'cover'"),
            ("facet=metadata", "'metadata'"), ("facet=year&facet=year", "more than once"),
            ("facet=title&facet=year&facet=pages&facet=format&facet=price&facet=rating", "at most 5"),
        ]
        for (query, words) in refused {
            let answer = try client.send("GET", "/books?" + query)
            #expect(answer.status == 400, "\(query): \(answer.text)")
            #expect(field(answer, "detail")?.stringValue?.contains(words) == true, "\(query): \(answer.text)")
        }
    }

    @Test func truncatedPastThirtyValues() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        // 32 distinct titles, one of them twice: 33 books.
        let titles = (0..<32).map { "T\($0 < 10 ? "0" : "")\($0)" } + ["T31"]
        let bulk = try client.send(
            "POST", "/books/_bulk", json: "[" + titles.map { #"{"title": "\#($0)"}"# }.joined(separator: ",") + "]")
        #expect(bulk.status == 201 || bulk.status == 200, "\(bulk.text)")
        let answer = try client.send("GET", "/books?facet=title&facet=format")
        let expected = [(JSONValue.string("T31"), 2)] + (0..<29).map { (JSONValue.string(titles[$0]), 1) }
        Self.expectFacet(answer, "title", expected, truncated: true)
        Self.expectFacet(answer, "format", [(.string("paperback"), 33)])
        // Exactly thirty values are not truncated.
        let thirty = try client.send("GET", "/books?title=lt.T30&facet=title")
        Self.expectFacet(thirty, "title", (0..<30).map { (JSONValue.string(titles[$0]), 1) })
    }

    @Test func theDocumentDescribesFacets() throws {
        let document = OpenAPIGenerator.document(for: try ObjectModel.example)
        let parameters = OpenAPITests.at(document, "paths", "/books", "get", "parameters")?.arrayValue ?? []
        let facet = try #require(parameters.first { OpenAPITests.at($0, "name") == .string("facet") })
        let pattern = try #require(OpenAPITests.at(facet, "schema", "items", "pattern")?.stringValue)
        let regex = try NSRegularExpression(pattern: pattern)
        func matches(_ text: String) -> Bool {
            regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        }
        for name in ["year", "format", "title", "author", "available", "published", "price"] {
            #expect(matches(name), "\(name) !~ \(pattern)")
        }
        for name in ["cover", "metadata", "tags", "nothing", "yearx", "_id"] { #expect(!matches(name), "\(name)") }
        #expect(OpenAPITests.at(facet, "schema", "maxItems") == .integer(Int64(ListFacets.maxFacets)))
        let required = OpenAPITests.at(
            document, "components", "schemas", "BookList", "properties", "facets", "additionalProperties", "required")
        #expect(OpenAPITests.strings(required) == ["values", "truncated"])
    }
}
