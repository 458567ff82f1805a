import Foundation
import Strata
import StrataHTTP
import StrataTestSupport
import Testing

@testable import StrataServer

/// List pages followed through their `next` links: with a keyset cursor (the last row's sort
/// values and id) every order pages through exactly the rows one big page lists, ties and nulls
/// included, and a row inserted before the current page does not shift the pages after it.
@Suite(.serialized) struct KeysetCursorTests {
    /// Every id, following `next` from `path` (which has its own `?`).
    static func pages(
        _ client: TestClient, _ path: String, insertBeforePage: Int? = nil, insert: () throws -> Void = {}
    )
        throws -> (ids: [Int64], cursors: [String])
    {
        var ids: [Int64] = []
        var cursors: [String] = []
        var next: String? = path
        var page = 0
        while let link = next {
            if page == insertBeforePage { try insert() }
            let response = try client.send("GET", link)
            try #require(response.status == 200, "\(link): \(response.text)")
            ids += items(response).compactMap { $0["_id"]?.doubleValue.map { Int64($0) } }
            next = field(response, "next")?.stringValue
            if let next, let range = next.range(of: "after=") {
                cursors.append(String(next[range.upperBound...].prefix { $0 != "&" }))
            }
            page += 1
            try #require(page < 200, "no end to the pages of \(path)")
        }
        return (ids, cursors)
    }

    /// The Catalog store in SQLite, and in PostgreSQL where the test run has a cluster (which
    /// sorts and compares the keyset in Strata's own evaluator, with `_pk` in the prefilter).
    static var stores: [String] { PostgreSQLTestServer.requirement.runs ? ["sqlite", "postgresql"] : ["sqlite"] }

    @Test(arguments: stores) func everyOrderPagesThroughExactlyTheRowsOfOnePage(store: String) throws {
        let catalog = store == "postgresql" ? try StoreSpec(PostgreSQLTestServer.storeURL().absoluteString) : nil
        let fixture = try ServerFixture { options in
            if let catalog { options.stores["Catalog"] = catalog }
        }
        if catalog != nil {
            #expect(try fixture.client.send("GET", "/").text.contains(#""type":"postgresql""#))
        }
        let client = fixture.client
        // 61 books: years from a small set (many ties) and some without one, titles twice (with
        // different authors), dates with nulls.
        let author = try client.send("POST", "/authors", json: #"{"name": "A"}"#)
        let other = try client.send("POST", "/authors", json: #"{"name": "B"}"#)
        let authors = [field(author, "_id")!, field(other, "_id")!].map { $0.jsonText }
        for index in 0..<61 {
            let year = index % 7 == 0 ? "null" : String(1990 + index % 5)
            let published = index % 4 == 0 ? "null" : "\"20\(10 + index % 9)-01-01T00:00:00Z\""
            let body =
                #"{"title": "T\#(index % 31)", "author": \#(authors[index < 31 ? 0 : 1]), "#
                + #""year": \#(year), "published": \#(published), "available": \#(index % 3 == 0), "#
                + #""price": "\#(index % 6).5"}"#
            let created = try client.send("POST", "/books", json: body)
            try #require(created.status == 201, "\(created.text)")
        }
        let orders = [
            "", "order=year", "order=year.desc", "order=year,title.desc", "order=title,_id.desc",
            "order=published.desc",
            "order=available,year.desc", "order=_id.desc", "order=price", "order=year&year=gte.1991",
        ]
        for order in orders {
            let all = try Self.pages(client, "/books?limit=1000&\(order)").ids
            #expect(order.contains("gte") ? all.count > 20 && all.count < 61 : all.count == 61, "\(order)")
            let paged = try Self.pages(client, "/books?limit=7&\(order)")
            #expect(paged.ids == all, "\(order): paged \(paged.ids) but one page \(all)")
            // Every order but the decimal one (which pages by position) carries a keyset.
            let keysets = paged.cursors.filter { $0.contains(".") }.count
            #expect(
                order == "order=price" ? keysets == 0 : keysets == paged.cursors.count, "\(order): \(paged.cursors)")
        }
        // A cursor with `offset`: that many items further on, also across the nulls that follow
        // the values (descending) or precede them (ascending), which are read as a second segment.
        for order in ["order=year.desc", "order=year", "order=year,title.desc"] {
            let all = try Self.pages(client, "/books?limit=1000&\(order)").ids
            let paged = try Self.pages(client, "/books?limit=7&\(order)")
            for (page, cursor) in paged.cursors.enumerated() where page % 2 == 0 {
                for skip in [0, 3, 7, 11, 60] {
                    let response = try client.send("GET", "/books?limit=7&\(order)&after=\(cursor)&offset=\(skip)")
                    let ids = items(response).compactMap { $0["_id"]?.doubleValue.map { Int64($0) } }
                    let start = min(all.count, 7 * (page + 1) + skip)
                    #expect(
                        ids == Array(all[start..<min(all.count, start + 7)]),
                        "\(order), page \(page + 2), offset \(skip)")
                }
            }
        }
        // A book inserted before the third page, sorting first: the pages after it do not shift
        // (offsets would repeat the last row of page two).
        let before = try Self.pages(client, "/books?limit=1000&order=year.desc").ids
        var inserted: Int64 = 0
        let paged = try Self.pages(client, "/books?limit=7&order=year.desc", insertBeforePage: 2) {
            let created = try client.send("POST", "/books", json: #"{"title": "New", "year": 2999}"#)
            inserted = Int64(field(created, "_id")?.doubleValue ?? 0)
        }
        #expect(inserted > 0 && !paged.ids.contains(inserted))
        #expect(paged.ids == before, "\(paged.ids) vs \(before)")
        // A keyset cursor given with another order pages by its position instead (no 400), and
        // `total` counts every match whatever the cursor.
        let cursor = try #require(paged.cursors.first)
        let elsewhere = try client.send("GET", "/books?limit=7&order=title&after=\(cursor)&count=exact")
        #expect(elsewhere.status == 200 && items(elsewhere).count == 7, "\(elsewhere.text)")
        #expect(field(elsewhere, "total") == .integer(62))
        let same = try client.send("GET", "/books?limit=7&order=year.desc&after=\(cursor)&count=exact")
        #expect(field(same, "total") == .integer(62))
    }

    /// Which lists are answered on the polling thread: pages read through an index the model
    /// declares (Book's `year` index, the `title`+`author` uniqueness) or by id; anything that may
    /// read many rows goes to a handler thread.
    @Test func cheapListsAreAnsweredInlineAndTheRestOnAHandlerThread() throws {
        let fixture = try ServerFixture()
        let service = try #require(fixture.server.restService)
        func dispatch(_ query: [(String, String)], accept: String? = nil) -> HTTPDispatch {
            service.dispatch(
                for: HTTPRequest(
                    method: "GET", path: "/books", query: query.map { (name: $0.0, value: $0.1) },
                    headers: accept.map { ["accept": $0] } ?? [:]))
        }
        let inline: [[(String, String)]] = [
            [], [("year", "gt.2000"), ("order", "year.desc"), ("limit", "20")], [("order", "_id.desc")],
            [("title", "like.Dune*"), ("order", "title")], [("after", ListQuery.cursor(40)), ("limit", "100")],
            [("offset", "1000")], [("_id", "in.(1,2)")],
        ]
        let pooled: [[(String, String)]] = [
            [("where", "year > 2000")], [("count", "exact")], [("pages", "gt.100")], [("order", "pages")],
            [("limit", "101")], [("offset", "1001")], [("order", "rating,year")],
        ]
        for query in inline { #expect(dispatch(query) == .inline, "\(query)") }
        for query in pooled { #expect(dispatch(query) == .pool, "\(query)") }
        #expect(dispatch([], accept: "text/html") == .pool)
    }
}
