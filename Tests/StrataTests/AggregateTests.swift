import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Aggregate fetches (dictionary results with `propertiesToGroupBy`) in every store: each function
/// on each type it fits, grouping by attribute and to-one, having, order, window and the errors.
@Suite struct AggregateTests {
    /// Six books by two authors (one book without), with every kind of value and some nulls.
    static func filled(_ kind: StoreUnderTest, _ folder: TemporaryDirectory) throws -> (
        store: any PersistentStore, authors: [ObjectID]
    ) {
        let store = try kind.open(folder)
        let herbert = try newRow(store, "Author", ["name": .string("Herbert")])
        let butler = try newRow(store, "Author", ["name": .string("Butler")])
        func date(_ seconds: Double) -> AttributeValue { .date(Date(timeIntervalSince1970: seconds)) }
        let books: [([String: AttributeValue], ObjectID?)] = [
            (
                [
                    "title": "Dune", "year": 1965, "pages": 412, "rating": 4.5,
                    "price": .decimal(Decimal(string: "9.99")!),
                    "published": date(1000), "wordCount": 9_000_000_000_000_000_000,
                ], herbert.id
            ),
            (
                [
                    "title": "Messiah", "year": 1969, "pages": 256, "rating": 3.5,
                    "price": .decimal(Decimal(string: "0.1")!),
                    "published": date(2000), "wordCount": 9_000_000_000_000_000_000,
                ], herbert.id
            ),
            (
                [
                    "title": "Kindred", "year": 1979, "pages": 264, "rating": 4.0,
                    "price": .decimal(Decimal(string: "0.2")!), "published": date(500),
                ], butler.id
            ),
            (
                ["title": "Dawn", "year": 1979, "pages": .null, "rating": .null, "price": .null, "published": .null],
                butler.id
            ),
            (
                [
                    "title": "Éclat", "year": 1979, "pages": 100, "rating": 1.0, "price": .decimal(1),
                    "published": date(3000),
                ], butler.id
            ),
            (
                [
                    "title": "Anonymous", "year": .null, "pages": 10, "rating": .null,
                    "price": .decimal(Decimal(string: "1e-20")!),
                ], nil
            ),
        ]
        var rows = [herbert, butler]
        for (values, author) in books {
            var row = try newRow(store, "Book", values)
            row.toOne["author"] = author
            rows.append(row)
        }
        try store.save(StoreChanges(inserts: rows))
        return (store, [herbert.id, butler.id])
    }

    static func request(
        _ group: [String], _ expressions: [(String, String)], where format: String? = nil, having: String? = nil,
        order: [SortKey] = [], limit: Int? = nil, offset: Int = 0
    ) throws -> AggregateRequest {
        AggregateRequest(
            entityName: "Book", predicate: try format.map { try FetchPredicate(format: $0) },
            propertiesToGroupBy: group,
            expressions: try expressions.map { try AggregateExpression(name: $0.0, expression: $0.1) },
            havingPredicate: try having.map { try FetchPredicate(format: $0) }, sortDescriptors: order,
            fetchLimit: limit, fetchOffset: offset)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func everyFunctionByYear(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (store, _) = try Self.filled(kind, folder)
        let rows = try store.aggregate(
            Self.request(
                ["year"],
                [
                    ("n", "@count"), ("rated", "@count.rating"), ("pages", "@sum.pages"), ("meanPages", "@avg.pages"),
                    ("meanRating", "average:(rating)"), ("total", "sum:(price)"), ("meanPrice", "@avg.price"),
                    ("first", "@min.title"), ("last", "@max.title"), ("earliest", "@min.published"),
                    ("latest", "@max.published"), ("cheapest", "@min.price"), ("dearest", "@max.price"),
                    ("maxRating", "@max.rating"),
                ]), model: conformanceModel)
        // Nulls first, as every sort puts them.
        #expect(rows.map { $0["year"] } == [.null, 1965, 1969, 1979])
        let y1979 = try #require(rows.last)
        #expect(y1979["n"] == 3)
        #expect(y1979["rated"] == 2)
        #expect(y1979["pages"] == 364)
        #expect(y1979["meanPages"] == 182.0)
        #expect(y1979["meanRating"] == 2.5)
        #expect(y1979["total"] == .decimal(Decimal(string: "1.2")!))
        #expect(y1979["meanPrice"] == .decimal(Decimal(string: "0.6")!))
        // Strings by their bytes: "É" (0xC3 0x89) after every ASCII letter.
        #expect(y1979["first"] == "Dawn")
        #expect(y1979["last"] == "Éclat")
        #expect(y1979["earliest"] == .date(Date(timeIntervalSince1970: 500)))
        #expect(y1979["latest"] == .date(Date(timeIntervalSince1970: 3000)))
        #expect(y1979["cheapest"] == .decimal(Decimal(string: "0.2")!))
        #expect(y1979["dearest"] == .decimal(1))
        #expect(y1979["maxRating"] == 4.0)
        // A group whose values are all null: counts 0, the rest null.
        let anonymous = rows[0]
        #expect(anonymous["rated"] == 0)
        #expect(anonymous["meanRating"] == .null)
        #expect(anonymous["maxRating"] == .null)
        #expect(anonymous["earliest"] == .null)
        #expect(anonymous["total"] == .decimal(Decimal(string: "1e-20")!))
    }

    @Test(arguments: StoreUnderTest.allCases)
    func decimalsStayExactAndIntegerSumsPastSixtyFourBitsAreRefused(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (store, authors) = try Self.filled(kind, folder)
        let rows = try store.aggregate(
            Self.request(["author"], [("total", "@sum.price"), ("mean", "@avg.price"), ("words", "@avg.wordCount")]),
            model: conformanceModel)
        let herbert = try #require(rows.first { $0.objectIDs["author"] == authors[0] })
        // 9.99 + 0.1 exactly (a double would give 10.090000000000001).
        #expect(herbert["total"] == .decimal(Decimal(string: "10.09")!))
        #expect(herbert["mean"] == .decimal(Decimal(string: "5.045")!))
        // The average of two values whose sum is past Int64: exact sum, one rounding.
        #expect(herbert["words"] == .double(9e18))
        // A sum past Int64 is an error naming the attribute, not a wrapped or rounded number.
        #expect {
            try store.aggregate(Self.request(["author"], [("words", "@sum.wordCount")]), model: conformanceModel)
        } throws: { error in
            (error as? StoreError)?.code == .invalidRequest && "\(error)".contains("64-bit")
        }
        // Butler's three prices: 0.2 + 1 exactly; avg = 0.6.
        let butler = try #require(rows.first { $0.objectIDs["author"] == authors[1] })
        #expect(butler["total"] == .decimal(Decimal(string: "1.2")!))
        // A third is rounded to what a decimal holds (39 digits here), the same in every store.
        let third = try store.aggregate(
            Self.request([], [("mean", "@avg.price")], where: "price < 0.5"), model: conformanceModel)
        #expect(third.first?["mean"] == .decimal(Decimal(string: "0.100000000000000000003333333333333333333")!))
    }

    @Test(arguments: StoreUnderTest.allCases)
    func toOneGroupsHavingOrderAndWindow(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (store, authors) = try Self.filled(kind, folder)
        let byAuthor = try store.aggregate(
            Self.request(
                ["author"], [("n", "@count"), ("pages", "@sum.pages")], order: [SortKey("n", ascending: false)]),
            model: conformanceModel)
        #expect(byAuthor.map { $0["n"] } == [3, 2, 1])
        #expect(byAuthor.map { $0.objectIDs["author"] } == [authors[1], authors[0], nil])
        #expect(byAuthor[0]["author"] == .integer(authors[1].primaryKey!))
        #expect(byAuthor[2]["author"] == .null)
        // Having over an aggregate, the filter applied before grouping, a window over the rows.
        let having = try store.aggregate(
            Self.request(
                ["year"], [("n", "@count"), ("rating", "@avg.rating")], where: "year > 1960",
                having: "n >= 1 AND rating > 2",
                order: [SortKey("rating")]), model: conformanceModel)
        #expect(having.map { $0["year"] } == [1979, 1969, 1965])
        let windowed = try store.aggregate(
            Self.request(["year"], [("n", "@count")], order: [SortKey("year", ascending: false)], limit: 2, offset: 1),
            model: conformanceModel)
        #expect(windowed.map { $0["year"] } == [1969, 1965])
        // Grouping only: the distinct values. Two grouping columns.
        let pairs = try store.aggregate(Self.request(["author", "year"], []), model: conformanceModel)
        #expect(pairs.count == 4)
        // No grouping: one row, even over nothing.
        let none = try store.aggregate(
            Self.request(
                [], [("n", "@count"), ("total", "@sum.pages"), ("low", "@min.year")], where: "FALSEPREDICATE"),
            model: conformanceModel)
        #expect(none == [AggregateRow(values: ["n": 0, "total": .null, "low": .null])])
        let grouped = try store.aggregate(
            Self.request(["year"], [("n", "@count")], where: "FALSEPREDICATE"), model: conformanceModel)
        #expect(grouped.isEmpty)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func requestsTheModelDoesNotFitAreRefused(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (store, _) = try Self.filled(kind, folder)
        let refused: [(AggregateRequest, String)] = [
            (try Self.request([], [("s", "@sum.title")]), "does not apply to 'title'"),
            (try Self.request([], [("s", "@avg.published")]), "does not apply to 'published'"),
            (try Self.request([], [("s", "@min.available")]), "does not apply to 'available'"),
            (try Self.request(["cover"], [("n", "@count")]), "cannot group by 'cover'"),
            (try Self.request(["tags"], [("n", "@count")]), "cannot group by 'tags'"),
            (try Self.request(["nope"], [("n", "@count")]), "cannot group by 'nope'"),
            (try Self.request([], [("s", "@sum.nope")]), "'nope'"),
            (try Self.request(["year"], [("year", "@count")]), "named twice"),
            (try Self.request(["year"], [("n", "@count")], having: "title == 'x'"), "having predicate names 'title'"),
            (try Self.request(["year"], [("n", "@count")], order: [SortKey("title")]), "cannot sort by 'title'"),
            (try Self.request([], []), "at least one"),
        ]
        for (request, message) in refused {
            #expect("\(message)") {
                try store.aggregate(request, model: conformanceModel)
            } throws: { error in
                (error as? StoreError)?.code == .invalidRequest && "\(error)".contains(message)
            }
        }
        #expect(throws: Strata.PredicateError.self) { try AggregateExpression(name: "x", expression: "@sum") }
        #expect(throws: Strata.PredicateError.self) { try AggregateExpression(name: "x", expression: "@median.year") }
    }

    /// NaN, where a store keeps it (in memory and PostgreSQL; SQLite stores it as null): a sum or
    /// average with a NaN is NaN, and NaN is the greatest double, as PostgreSQL orders it.
    @Test(arguments: StoreUnderTest.allCases)
    func notANumber(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let rows = try [Double.nan, 1, 2].map { try newRow(store, "Book", ["rating": .double($0)]) }
        try store.save(StoreChanges(inserts: rows))
        let result = try store.aggregate(
            Self.request(
                [], [("n", "@count.rating"), ("sum", "@sum.rating"), ("low", "@min.rating"), ("high", "@max.rating")]),
            model: conformanceModel)
        let row = try #require(result.first)
        #expect(row["low"] == 1.0)
        if kind == .sqlite {
            #expect(row["n"] == 2)
            #expect(row["sum"] == 3.0)
            #expect(row["high"] == 2.0)
        } else {
            #expect(row["n"] == 3)
            #expect(row["sum"].isNaNDouble)
            #expect(row["high"].isNaNDouble)
        }
    }

    @Test func theContextAndTheCoordinatorAnswerAsTheStore() throws {
        let folder = TemporaryDirectory()
        let (store, _) = try Self.filled(.sqlite, folder)
        let coordinator = StoreCoordinator(model: conformanceModel)
        try coordinator.add(store)
        let request = try Self.request(["year"], [("n", "@count")])
        let context = ObjectContext(coordinator: coordinator)
        #expect(try context.aggregate(request) == store.aggregate(request, model: conformanceModel))
        #expect(
            try (coordinator as any CommittedReads).aggregate(request)
                == store.aggregate(request, model: conformanceModel))
        var bad = request
        bad.propertiesToGroupBy = ["cover"]
        #expect(throws: ContextError.self) { try context.aggregate(bad) }
    }

    /// SQLite groups in SQL: the plan of the grouped count by year reads the year index (no temporary
    /// table for the groups), and the statement is a GROUP BY.
    @Test func sqliteGroupsInSQL() throws {
        let folder = TemporaryDirectory()
        let (store, _) = try Self.filled(.sqlite, folder)
        let sqlite = try #require(store as? SQLiteStore)
        let request = try Self.request(["year"], [("n", "@count")])
        let plan = try AggregatePlan(request, model: conformanceModel)
        let (_, from, arguments) = try sqlite.selection(request.filter)
        let sql = sqlite.aggregateSQL(plan, from: from).sql
        #expect(sql.contains("GROUP BY"), "\(sql)")
        let db = try SQLiteConnection(path: folder.file("store.sqlite").path, readOnly: true)
        let steps = try db.query("EXPLAIN QUERY PLAN " + sql, arguments) { $0.text(3) }
        #expect(steps.contains { $0.contains("Book_year") }, "\(steps)")
        #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "\(steps)")
    }

    /// PostgreSQL groups in SQL when its prefilter states the whole predicate.
    @Test(.enabled(if: PostgreSQLTestServer.requirement.runs)) func postgresqlGroupsInSQL() throws {
        let folder = TemporaryDirectory()
        let (store, _) = try Self.filled(.postgresql, folder)
        let postgres = try #require(store as? PostgreSQLStore)
        let request = try Self.request(["year"], [("n", "@count"), ("p", "@sum.price"), ("t", "@max.title")])
        let plan = try AggregatePlan(request, model: conformanceModel)
        let (_, from, _) = try postgres.selection(request.filter)
        let sql = postgres.aggregateSQL(plan, from: from)
        let explained = try PostgreSQLTestServer.psql("EXPLAIN " + sql)
        #expect(explained.contains("Aggregate"), "\(explained)")
        #expect(explained.contains("Group Key"), "\(explained)")
    }
}

// Literals for the expected values above.
extension AttributeValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral
{
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
}

extension AttributeValue {
    fileprivate var isNaNDouble: Bool { if case .double(let value) = self { value.isNaN } else { false } }
}
