import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// `GET /books?select=…` with aggregates on a real server: groups, aliases, filters before grouping,
/// order and having on aggregates, paging, and the problems for what does not fit.
@Suite(.serialized) struct AggregateRESTTests {
    /// The items of a list answer, each as an object.
    static func items(_ response: ClientResponse) -> [[String: JSONValue]] {
        (field(response, "items")?.arrayValue ?? []).compactMap(\.objectValue)
    }

    /// A server with two authors and seven books.
    static func filled() throws -> (ServerFixture, [Int64]) {
        let fixture = try ServerFixture()
        var authors: [Int64] = []
        for name in ["Ursula", "Octavia"] {
            let created = try fixture.client.send("POST", "/authors", json: #"{"name": "\#(name)"}"#)
            authors.append(try #require(field(created, "_id")?.doubleValue.map { Int64($0) }))
        }
        // title, year, rating, price, author index
        let books: [(String, Int?, Double?, String?, Int?)] = [
            ("A", 1969, 4.5, "9.99", 0), ("B", 1969, 3.5, "0.1", 0), ("C", 1974, 4.0, "0.2", 0),
            ("D", 1979, nil, nil, 1), ("E", 1979, 2.0, "1", 1), ("F", 1979, 5.0, "2.5", 1), ("G", nil, nil, nil, nil),
        ]
        let body = books.map { book in
            var members = [#""title": "\#(book.0)""#]
            if let year = book.1 { members.append(#""year": \#(year)"#) }
            if let rating = book.2 { members.append(#""rating": \#(rating)"#) }
            if let price = book.3 { members.append(#""price": "\#(price)""#) }
            if let author = book.4 { members.append(#""author": \#(authors[author])"#) }
            return "{" + members.joined(separator: ", ") + "}"
        }
        let bulk = try fixture.client.send("POST", "/books/_bulk", json: "[" + body.joined(separator: ",") + "]")
        #expect(bulk.status == 201 || bulk.status == 200, "\(bulk.text)")
        return (fixture, authors)
    }

    @Test func groupsCountsAndAggregates() throws {
        let (fixture, authors) = try Self.filled()
        let client = fixture.client
        let byYear = try client.send("GET", "/books?select=year,count(),rating.avg(),total:price.sum(),rating.max()")
        #expect(byYear.status == 200, "\(byYear.text)")
        let groups = Self.items(byYear)
        // Nulls first; members in select order; decimals as strings, as items show them.
        #expect(byYear.text.contains(#"{"year":1969,"count":2,"avg":4"#), "\(byYear.text)")
        #expect(byYear.text.contains(#""total":"10.09","max":4.5}"#), "\(byYear.text)")
        #expect(groups.map { $0["year"]?.doubleValue } == [nil, 1969, 1974, 1979])
        #expect(groups.last?["count"]?.doubleValue == 3)
        #expect(groups.last?["avg"]?.doubleValue == 3.5)
        #expect(groups.last?["total"] == .string("3.5"))
        #expect(groups.first?["avg"] == .null)
        #expect(field(byYear, "next") == .null)
        #expect(field(byYear, "total") == .null)

        // Filters apply before grouping; order on an aggregate; a to-one grouped by related id.
        let byAuthor = try client.send("GET", "/books?select=author,n:count()&year=gte.1970&order=count().desc,author")
        #expect(byAuthor.status == 200, "\(byAuthor.text)")
        #expect(
            Self.items(byAuthor).map { [$0["author"]?.doubleValue, $0["n"]?.doubleValue] } == [
                [Double(authors[1]), 3], [Double(authors[0]), 1],
            ], "\(byAuthor.text)")

        // having keeps the groups that pass; an aggregate need not be selected to filter or order.
        let having = try client.send("GET", "/books?select=year,count()&having=count().gte.2,rating.avg().lt.3.9")
        #expect(Self.items(having).map { $0["year"]?.doubleValue } == [1979], "\(having.text)")
        let where_ = try client.send(
            "GET", "/books?select=year,count()&where=" + RESTService.escape("title != 'A'") + "&order=rating.min()")
        #expect(Self.items(where_).map { $0["year"]?.doubleValue } == [nil, 1979, 1969, 1974], "\(where_.text)")

        // No plain column: the whole filtered set is one group.
        let whole = try client.send("GET", "/books?select=count(),price.min(),price.max()&year=eq.1500")
        #expect(whole.text.contains(#""items":[{"count":0,"min":null,"max":null}]"#), "\(whole.text)")
    }

    @Test func pagesOfGroupsAndTheirTotal() throws {
        let (fixture, _) = try Self.filled()
        let client = fixture.client
        let first = try client.send("GET", "/books?select=year,count()&limit=3&count=exact&order=year.desc")
        #expect(first.status == 200, "\(first.text)")
        #expect(Self.items(first).map { $0["year"]?.doubleValue } == [1979, 1974, 1969])
        #expect(field(first, "total")?.doubleValue == 4)
        let next = try #require(field(first, "next")?.stringValue)
        let second = try client.send("GET", next)
        #expect(Self.items(second).map { $0["year"]?.doubleValue } == [nil], "\(second.text)")
        #expect(field(second, "next") == .null)
        let offset = try client.send("GET", "/books?select=year,count()&offset=1&limit=1")
        #expect(Self.items(offset).map { $0["year"]?.doubleValue } == [1969], "\(offset.text)")
    }

    @Test func whatDoesNotFitIsAProblemNamingIt() throws {
        let (fixture, _) = try Self.filled()
        let client = fixture.client
        let cases: [(String, String)] = [
            ("select=title.sum()", "sum() does not apply to 'title'"),
            ("select=published.avg()", "avg() does not apply to 'published'"),
            ("select=nope,count()", "'nope' is not an attribute"),
            ("select=nope.max()", "'nope' is not an attribute"),
            ("select=year.median()", "'median' is not count"),
            ("select=cover,count()", "'cover' is not an attribute or to-one relationship"),
            ("select=tags,count()", "'tags' is not an attribute or to-one relationship"),
            ("select=year,title", "at least one aggregate"),
            ("select=rating.avg(),price.avg()", "two members are named 'avg'"),
            ("select=year,count()&order=title", "'title' is not a grouped column"),
            ("select=year,count()&having=year.eq.5", "having: 'year.eq.5'"),
            ("select=year,count()&having=title.max().gt.5", "does not compare with a number"),
            ("select=year,count()&having=count().gt.x", "does not compare an aggregate with a number"),
            ("having=count().gt.1", "applies only with select"),
            ("order=count().desc", "count()"),
            ("select=1x:count()", "alias"),
        ]
        for (query, message) in cases {
            let response = try client.send("GET", "/books?" + query)
            #expect(response.status == 400, "\(query): \(response.text)")
            #expect(response.text.contains(message), "\(query): \(response.text)")
        }
    }

    /// The document's `select`, `having` and `order` patterns state what the server takes: each
    /// sample is answered 200 when the pattern matches it and 400 when not (with `select=year,count()`
    /// beside `having` and `order`; names given twice, a rule no pattern states, are left out).
    @Test func thePatternsStateWhatTheServerTakes() throws {
        let (fixture, _) = try Self.filled()
        let client = fixture.client
        let patterns = try FilterPatternTests.patterns(client)
        let samples: [String: [String]] = [
            "select": [
                "year,count()", "count()", "n:count()", "author,title,count(),price.sum(),rating.avg()",
                "published.min(),title.max(),c:cover.count(),m:metadata.count(),author.count()", "title.sum()",
                "cover,count()", "year", "", "count", "count(),", ",count()", "1a:count()", "a-b:count()",
                "year,format,available,price,rating,published,title,sku,homepage,count()",
                "year,format,available,price,rating,published,title,sku,homepage,author,count()",
                "count()," + (0..<10).map { "a\($0):count()" }.joined(separator: ","),
                "count()," + (0..<9).map { "a\($0):count()" }.joined(separator: ","), "tags.count()",
                "published.sum()", "year.median()", " count()", "COUNT()",
            ],
            "having": [
                "count().gt.5", "count().gt.-5", "rating.avg().lte.4.25", "price.sum().eq.0.1", "year.min().neq.1",
                "title.count().gte.1", "title.max().gt.1", "count().gt.1e3", "count().gt.+5", "count().gt.",
                "count().gt.5,count().lt.9", "count().like.5", "count().gt.1234567890123456789", "count().gt..5",
                "published.max().gt.0", "author.count().gt.0",
            ],
            "order": ["count().desc", "year,rating.avg().asc", "price.sum()", "title.min().desc", "year.desc"],
        ]
        for (name, values) in samples {
            let pattern = try #require(patterns[name], "\(name) has no pattern")
            for value in values {
                let expected = try FilterPatternTests.matches(pattern, value)
                var query = "\(name)=\(FilterPatternTests.encoded(value))"
                if name != "select" { query = "select=year,count()&" + query }
                let response = try client.send("GET", "/books?" + query)
                #expect(
                    response.status == (expected ? 200 : 400),
                    "\(query) (pattern matches: \(expected)): \(response.text)")
            }
        }
    }

    /// The same answers from a PostgreSQL store, which groups in SQL.
    @Test(.enabled(if: PostgreSQLTestServer.requirement.runs)) func postgreSQLAnswersAlike() throws {
        let catalog = try StoreSpec(PostgreSQLTestServer.storeURL().absoluteString)
        let fixture = try ServerFixture { $0.stores["Catalog"] = catalog }
        let client = fixture.client
        let bulk = try client.send(
            "POST", "/books/_bulk",
            json:
                #"[{"title": "A", "year": 1969, "price": "0.1"}, {"title": "B", "year": 1969, "price": "0.2"}, {"title": "C"}]"#
        )
        #expect(bulk.status == 201 || bulk.status == 200, "\(bulk.text)")
        let response = try client.send("GET", "/books?select=year,count(),price.sum(),title.max()&order=year.desc")
        #expect(
            response.text.contains(
                #"[{"year":1969,"count":2,"sum":"0.3","max":"B"},{"year":null,"count":1,"sum":null,"max":"C"}]"#),
            "\(response.text)")
    }
}
