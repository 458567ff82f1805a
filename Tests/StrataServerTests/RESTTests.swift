import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// The `items` of a list response, as JSON objects.
func items(_ response: ClientResponse) -> [[String: JSONValue]] {
    response.json.objectValue?["items"]?.arrayValue?.compactMap(\.objectValue) ?? []
}

func field(_ response: ClientResponse, _ name: String) -> JSONValue? { response.json.objectValue?[name] }

@Suite(.serialized) struct RESTTests {
    @Test func everyRouteOverBothStores() throws {
        let fixture = try ServerFixture()
        let client = fixture.client

        // Create an author and books.
        let author = try client.send(
            "POST", "/authors", json: #"{"name": "Ursula K. Le Guin", "email": "ursula@example.org"}"#)
        #expect(author.status == 201)
        let authorID = try #require(field(author, "_id")?.doubleValue.map { Int64($0) })
        #expect(author.header("location") == "/authors/\(authorID)")
        #expect(author.header("etag") == "\"1\"")
        let books = try client.send(
            "POST", "/books/_bulk",
            json: #"""
                [{"title": "A Wizard of Earthsea", "year": 1968, "author": \#(authorID), "price": "7.99", "published": "1968-11-01T00:00:00Z"},
                 {"title": "The Left Hand of Darkness", "year": 1969, "author": \#(authorID), "rating": 4.5},
                 {"title": "The Dispossessed", "year": 1974, "author": \#(authorID), "available": false},
                 {"title": "Unfinished", "format": "hardcover"}]
                """#)
        #expect(books.status == 201)
        let created = books.json.arrayValue ?? []
        #expect(created.count == 4)
        let earthsea = try #require(created.first?.objectValue?["_id"].flatMap { $0.doubleValue.map { Int64($0) } })
        #expect(created.first?.objectValue?["format"] == .string("paperback"))
        #expect(created.first?.objectValue?["price"] == .string("7.99"))

        // Read, ETag, If-None-Match.
        let book = try client.send("GET", "/books/\(earthsea)")
        #expect(book.status == 200)
        #expect(field(book, "title") == .string("A Wizard of Earthsea"))
        #expect(field(book, "author") == .integer(authorID))
        #expect(field(book, "tags") == .array([]))
        #expect(book.header("content-type") == "application/json")
        let etag = try #require(book.header("etag"))
        #expect(try client.send("GET", "/books/\(earthsea)", headers: ["If-None-Match": etag]).status == 304)
        #expect(try client.send("GET", "/books/\(earthsea)", headers: ["If-None-Match": "\"99\""]).status == 200)
        #expect(try client.send("HEAD", "/books/\(earthsea)").status == 200)

        // Lists: every filter operator, where, order, limits, cursors, count.
        func titles(_ target: String) throws -> [String] {
            let response = try client.send("GET", target)
            #expect(response.status == 200, "\(target): \(response.text)")
            return items(response).compactMap { $0["title"]?.stringValue }
        }
        #expect(try titles("/books?year=gt.1968&order=year") == ["The Left Hand of Darkness", "The Dispossessed"])
        #expect(try titles("/books?year=eq.1969") == ["The Left Hand of Darkness"])
        #expect(try titles("/books?year=neq.1969&order=year").count == 3)
        #expect(
            try titles("/books?year=gte.1969&year=lte.1974&order=year.desc") == [
                "The Dispossessed", "The Left Hand of Darkness",
            ])
        #expect(try titles("/books?year=lt.1969") == ["A Wizard of Earthsea"])
        #expect(try titles("/books?title=like.The*&order=title") == ["The Dispossessed", "The Left Hand of Darkness"])
        #expect(try titles("/books?title=ilike.*EARTHSEA") == ["A Wizard of Earthsea"])
        // A value starting with a combining mark (U+0301) is a value, not a missing operator.
        #expect(try titles("/books?title=eq.%CC%81x") == [])
        #expect(try titles("/books?title=not.eq.%CC%81x").count == 4)
        #expect(try titles("/books?title=in.(%CC%81x,A%20Wizard%20of%20Earthsea)") == ["A Wizard of Earthsea"])
        #expect(try titles("/books?title=in.(A%20Wizard%20of%20Earthsea,%CC%81x)") == ["A Wizard of Earthsea"])
        // On an attribute named `query`, such a value filters: it does not name a fetch request.
        let markLog = try client.send("POST", "/search-logs", json: #"{"query": "\u0301x"}"#)
        let logs = try client.send("GET", "/search-logs?query=eq.%CC%81x")
        #expect(logs.status == 200, "\(logs.text)")
        #expect(items(logs).compactMap { $0["query"]?.stringValue } == ["\u{301}x"], "\(logs.text)")
        let logID = try #require(field(markLog, "_id")?.doubleValue.map { Int64($0) }, "\(markLog.text)")
        #expect(try client.send("DELETE", "/search-logs/\(logID)").status == 204)
        #expect(try titles("/books?year=in.(1968,1974)&order=year") == ["A Wizard of Earthsea", "The Dispossessed"])
        #expect(try titles("/books?year=is.null") == ["Unfinished"])
        #expect(try titles("/books?available=is.false") == ["The Dispossessed"])
        #expect(try titles("/books?available=is.true&order=title").count == 3)
        #expect(
            try titles("/books?year=not.is.null&year=not.eq.1968&order=year") == [
                "The Left Hand of Darkness", "The Dispossessed",
            ])
        #expect(try titles("/books?author=eq.\(authorID)&order=year").count == 3)
        #expect(
            try titles("/books?where=" + RESTService.escape("year BETWEEN {1960, 1970} AND title CONTAINS[c] 'left'"))
                == ["The Left Hand of Darkness"])
        let page = try client.send("GET", "/books?order=title&limit=2&count=exact")
        #expect(items(page).count == 2)
        #expect(field(page, "total") == .integer(4))
        let next = try #require(field(page, "next")?.stringValue)
        let second = try client.send("GET", next)
        #expect(items(second).compactMap { $0["title"]?.stringValue } == ["The Left Hand of Darkness", "Unfinished"])
        #expect(field(second, "next") == .null)
        #expect(try titles("/books?order=title&offset=3") == ["Unfinished"])

        // Patch with If-Match; a stale one gets 412 as a problem.
        let patched = try client.send(
            "PATCH", "/books/\(earthsea)", json: #"{"rating": 4.8, "tags": []}"#,
            headers: ["If-Match": etag, "Content-Type": "application/merge-patch+json"])
        #expect(patched.status == 200)
        #expect(field(patched, "rating") == .double(4.8))
        #expect(patched.header("etag") == "\"2\"")
        let stale = try client.send("PATCH", "/books/\(earthsea)", json: #"{"rating": 1}"#, headers: ["If-Match": etag])
        #expect(stale.status == 412)
        #expect(stale.header("content-type") == "application/problem+json")
        #expect(field(stale, "status") == .integer(412))
        #expect(try client.send("GET", "/books/\(earthsea)").json.objectValue?["rating"] == .double(4.8))
        // Merge patch: null clears.
        #expect(field(try client.send("PATCH", "/books/\(earthsea)", json: #"{"price": null}"#), "price") == .null)

        // Replace: left-out fields are reset.
        let replaced = try client.send(
            "PUT", "/books/\(earthsea)", json: #"{"title": "Earthsea", "author": \#(authorID)}"#)
        #expect(replaced.status == 200)
        #expect(field(replaced, "year") == .null)
        #expect(field(replaced, "format") == .string("paperback"))

        // Tags, both sides of a many-to-many.
        let tag = try client.send("POST", "/tags", json: #"{"name": "fantasy", "books": [\#(earthsea)]}"#)
        #expect(tag.status == 201)
        let tagID = try #require(field(tag, "_id")?.doubleValue.map { Int64($0) })
        #expect(field(try client.send("GET", "/books/\(earthsea)"), "tags") == .array([.integer(tagID)]))

        // Relationship sub-resources.
        let authorBooks = try client.send("GET", "/authors/\(authorID)/books?limit=2")
        #expect(items(authorBooks).count == 2)
        #expect(field(authorBooks, "next")?.stringValue != nil)
        #expect(field(try client.send("GET", "/books/\(earthsea)/author"), "name") == .string("Ursula K. Le Guin"))
        let orphan = try #require(created.last?.objectValue?["_id"].flatMap { $0.doubleValue.map { Int64($0) } })
        let noAuthor = try client.send("GET", "/books/\(orphan)/author")
        #expect(noAuthor.status == 204 && noAuthor.body.isEmpty)
        #expect(try client.send("GET", "/books/999999/author").status == 404)

        // A search log lands in the other store; the fetched property reads it from a Book.
        let log = try client.send(
            "POST", "/search-logs",
            json: #"{"query": "earthsea maps", "at": "2026-11-30T10:00:00.123456Z", "results": 1}"#)
        #expect(log.status == 201)
        #expect(field(log, "at") == .string("2026-11-30T10:00:00.123456Z"))
        let searches = try client.send("GET", "/books/\(earthsea)/searches")
        #expect(searches.status == 200)
        #expect(items(searches).compactMap { $0["query"]?.stringValue } == ["earthsea maps"])

        // Prefer: return=minimal.
        let minimal = try client.send(
            "POST", "/tags", json: #"{"name": "classic"}"#, headers: ["Prefer": "return=minimal"])
        #expect(minimal.status == 201 && minimal.body.isEmpty && minimal.header("location") != nil)

        // Batch across both stores, with a reference to an earlier operation.
        let current = try #require(try client.send("GET", "/books/\(earthsea)").header("etag"))
        let batch = try client.send(
            "POST", "/_batch",
            json: #"""
                {"operations": [
                  {"method": "POST", "path": "/authors", "body": {"name": "Octavia E. Butler"}},
                  {"method": "POST", "path": "/books", "body": {"title": "Kindred", "year": 1979, "author": {"$ref": 0}}},
                  {"method": "PATCH", "path": "/books/\#(earthsea)", "headers": {"If-Match": \#(JSONValue.string(current).jsonText)}, "body": {"year": 1968}},
                  {"method": "POST", "path": "/search-logs", "body": {"query": "kindred"}}
                ]}
                """#)
        #expect(batch.status == 200, "\(batch.text)")
        let results = field(batch, "results")?.arrayValue ?? []
        #expect(
            results.compactMap { $0.objectValue?["status"] } == [
                .integer(201), .integer(201), .integer(200), .integer(201),
            ])
        try #require(results.count == 4)
        let butler = results[0].objectValue?["body"]?.objectValue?["_id"]
        #expect(results[1].objectValue?["body"]?.objectValue?["author"] == butler)

        // Routing: each object is in its configuration's file.
        let catalog = try sqliteDump(fixture.catalogURL)
        let activity = try sqliteDump(fixture.activityURL)
        #expect(catalog.contains { $0.hasPrefix("Book: ") && $0.contains("|Kindred|") })
        #expect(catalog.contains { $0.hasPrefix("Author: ") && $0.contains("Octavia E. Butler") })
        #expect(!catalog.contains { $0.hasPrefix("SearchLog") })
        #expect(activity.filter { $0.hasPrefix("SearchLog: ") }.count == 2)
        #expect(!activity.contains { $0.hasPrefix("Book") || $0.hasPrefix("Author") })

        // Delete with the cascade rule: the author's books go too.
        #expect(try client.send("DELETE", "/authors/\(authorID)").status == 204)
        #expect(try client.send("GET", "/authors/\(authorID)").status == 404)
        #expect(try client.send("GET", "/books/\(earthsea)").status == 404)
        #expect(try titles("/books?order=title") == ["Kindred", "Unfinished"])

        // System endpoints.
        let index = try client.send("GET", "/")
        #expect(index.status == 200)
        let entities = field(index, "entities")?.arrayValue?.compactMap { $0.objectValue?["path"]?.stringValue }
        #expect(entities == ["/authors", "/books", "/tags", "/search-logs"])
        #expect(try client.send("GET", "/live").status == 200)
        #expect(try client.send("GET", "/ready").status == 200)
        let metrics = try client.send("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("strata_requests_total{route=\"/books/{id}\",method=\"GET\",status=\"200\"}"))
        #expect(metrics.text.contains("strata_store_saves_total"))
        #expect(metrics.text.contains("strata_request_duration_seconds_bucket"))
        #expect(metrics.text.contains("strata_store_file_bytes"))
        #expect(fixture.logLines.current.contains { $0.contains("\"GET /books/\(earthsea)\" 200") })
    }
}
