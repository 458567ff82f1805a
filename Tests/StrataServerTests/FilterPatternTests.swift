import Foundation
import Strata
import StrataTestSupport
import Testing

@testable import StrataServer

/// A list filter's pattern in the served document states exactly what the server takes: for every
/// attribute type of the example model, sample values (edge cases included) in every filter form
/// are answered 200 when the document's pattern matches them and 400 when it does not. Values no
/// store can hold (out of range, past a decimal's digits or the microsecond) compare as what they
/// are in every store type.
@Suite(.serialized) struct FilterPatternTests {
    /// Values to put after an operator, per attribute type, valid and not.
    static let samples: [AttributeType: [String]] = [
        .string: ["", "a", "a,b", "x\u{1}y", "\u{301}x", "null", ")", "é(", "\n", "\u{0}", "\u{10FFFF}"],
        .integer16: [
            "0", "-0", "007", "+5", "32767", "32768", "-32768", "-32769", "99999999999999999999",
            "-99999999999999999999", "1.5", "1e3", " 5", "", "abc", "\u{663}", "-",
        ],
        .double: [
            "0", "-0", "2.5", "-1e3", "1E+400", "-1e400", "1e-400", "0x10", "inf", "nan", "1.", ".5", "+1", "1e",
            "007.5", "1e99999999999999999999",
        ],
        .decimal: [
            "9.99", "1.5e-3", "+1", ".5", "1.", "1e128", "1e999", "1e1000", String(repeating: "9", count: 60),
            "-0.000", "abc", "1e+", "0x1", "",
        ],
        .boolean: ["true", "false", "TRUE", "1", "yes", ""],
        .date: [
            "2024-01-01T00:00:00Z", "2024-02-29T23:59:60.123456789+23:59", "2023-02-29T00:00:00Z",
            "2000-02-29t00:00:00z", "1900-02-29T00:00:00Z", "2024-01-01 00:00:00-00:00", "2024-13-01T00:00:00Z",
            "2024-01-01T24:00:00Z", "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00", "2024-01-01T00:00:61Z",
            "2024-01-01T00:00:00.1234567890Z", "0000-02-29T00:00:00Z", "2024-04-31T00:00:00Z", "2024-1-01T00:00:00Z",
            "\u{662}024-01-01T00:00:00Z", "2024-12-31T23:59:60Z",
        ],
        .uuid: [
            "123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
            "123e4567e89b12d3a456426614174000", "{123e4567-e89b-12d3-a456-426614174000}",
            "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000",
        ],
        .binary: ["QQ==", "QR==", "QUJD", "", "QQ", "Q===", "QQ==QQ==", "ab+/", "YQ"],
        .uri: ["https://example.com/a", "not a uri", "", "x,y"],
        .json: ["{}", "1", "null", "x"],
    ]

    /// The filter parameters of `GET /books` and their patterns, from the served document.
    static func patterns(_ client: TestClient) throws -> [String: String] {
        let document = try client.send("GET", "/openapi.json").json
        let parameters =
            document.objectValue?["paths"]?.objectValue?["/books"]?.objectValue?["get"]?
            .objectValue?["parameters"]?.arrayValue ?? []
        var patterns: [String: String] = [:]
        for parameter in parameters {
            guard let object = parameter.objectValue, let name = object["name"]?.stringValue,
                let pattern = object["schema"]?.objectValue?["pattern"]?.stringValue
            else { continue }
            patterns[name] = pattern
        }
        return patterns
    }

    /// Whether ICU (as `NSRegularExpression`, reading the document's text) finds the pattern in
    /// `text`, as `pattern` means it.
    static func matches(_ pattern: String, _ text: String) throws -> Bool {
        let regex = try NSRegularExpression(pattern: pattern)
        return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// `text` percent-encoded for a query value (everything but unreserved characters).
    static func encoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<"\u{80}"))
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed)!
    }

    @Test func theServerTakesExactlyWhatEachFilterPatternMatches() throws {
        let folder = TemporaryDirectory()
        let process = try StrataProcess(["serve", "--port", "0", "--data-dir", folder.file("data").path])
        let client = TestClient(port: try #require(process.port(), "\(process.stderr.current)"))
        let patterns = try Self.patterns(client)
        let model = try ObjectModel.example
        var checked = 0
        var taken = 0
        // `select` and `having` are checked by AggregateRESTTests.
        for (name, pattern) in patterns.sorted(by: { $0.key < $1.key })
        where !["order", "after", "select", "having"].contains(name) {
            let type = model.attribute(name, of: "Book")?.type
            let values: [String] =
                switch name {
                case "where": ["TRUEPREDICATE", "title == 'a\\nb'", "title == 'a\nb'", "\u{7F}", "\u{85}x", "x\u{9F}"]
                case "_id", "author": Self.samples[.integer16]!
                default: Self.samples[type == .float ? .double : (type?.isInteger == true ? .integer16 : type!)]!
                }
            var filters: [String] = ["is.null", "not.is.null", "is.true", "like.x*", "ilike.*X", "eq", "foo.1"]
            filters += ["not.not.eq.1", "in.(", "in.()", "in.(,)", "eq.null", "in.(null)", "NOT.eq.1"]
            // `where` takes predicates (these parse), less those with a control character.
            if name == "where" { filters = values }
            for value in values where name != "where" {
                filters += ["eq.\(value)", "not.lt.\(value)", "gte.\(value)", "in.(\(value))", "in.(\(value),null)"]
                filters += ["neq.\(value)", "in.(null,\(value),\(value))", "like.\(value)", value]
            }
            for filter in filters {
                let expected = try Self.matches(pattern, filter)
                let response = try client.send("GET", "/books?\(name)=\(Self.encoded(filter))")
                #expect(
                    response.status == (expected ? 200 : 400), "\(name)=\(filter.debugDescription): \(response.text)")
                checked += 1
                if expected { taken += 1 }
            }
        }
        #expect(checked > 1_000 && taken > 200, "\(checked) checked, \(taken) taken")
        _ = process
    }

    /// Values no store holds compare as what they are; `store` names the store (nil: SQLite).
    static func checkComparisons(_ client: TestClient) throws {
        let books = [
            #"{"title": "b1", "pages": 1, "wordCount": 5, "price": "1", "rating": 0, "weight": 0.5, "published": "2024-01-01T00:00:00.000001Z"}"#,
            #"{"title": "b2", "pages": 32767, "price": "99999999999999999999999999999999999999e127", "rating": 5, "published": "2024-01-01T00:00:00.000002Z"}"#,
            #"{"title": "b3"}"#,
        ]
        for book in books {
            let created = try client.send("POST", "/books", json: book)
            #expect(created.status == 201, "\(created.text)")
        }
        func titles(_ query: String) throws -> [String] {
            let response = try client.send("GET", "/books?order=title&\(query)")
            #expect(response.status == 200, "\(query): \(response.text)")
            return (response.json.objectValue?["items"]?.arrayValue ?? []).compactMap {
                $0.objectValue?["title"]?.stringValue
            }
        }
        let manyDigits = "1." + String(repeating: "0", count: 40) + "1"
        let expectations: [(String, [String])] = [
            ("pages=gt.99999", []), ("pages=lt.99999", ["b1", "b2"]), ("pages=not.lt.99999", ["b3"]),
            ("pages=gte.-99999", ["b1", "b2"]), ("pages=eq.99999", []), ("pages=neq.99999", ["b1", "b2", "b3"]),
            ("pages=in.(1,99999)", ["b1"]), ("pages=eq.0001", ["b1"]), ("pages=not.eq.99999", ["b1", "b2", "b3"]),
            ("wordCount=lt.99999999999999999999", ["b1"]), ("wordCount=gt.-99999999999999999999", ["b1"]),
            ("rating=lt.1e400", ["b1", "b2"]), ("rating=gt.-1e400", ["b1", "b2"]), ("rating=gt.1e400", []),
            ("rating=eq.1e-400", ["b1"]), ("weight=lte.1e99999", ["b1"]),
            ("price=gt.1e200", []), ("price=lt.1e200", ["b1", "b2"]), ("price=lt.-1e200", []),
            ("price=gte.\(manyDigits)", ["b2"]), ("price=lt.\(manyDigits)", ["b1"]), ("price=eq.\(manyDigits)", []),
            ("price=neq.\(manyDigits)", ["b1", "b2", "b3"]), ("price=in.(\(manyDigits),1)", ["b1"]),
            ("price=gt.-\(manyDigits)", ["b1", "b2"]), ("price=lte.-\(manyDigits)", []),
            ("price=gte.-1e200", ["b1", "b2"]), ("price=lt.\(String(repeating: "9", count: 38))5e126", ["b1", "b2"]),
            ("price=gt.\(String(repeating: "9", count: 38))5e126", []), ("price=gt.1e-200", ["b1", "b2"]),
            ("price=lte.-1e-200", []),
            ("price=eq.1e128", []),
            ("price=gte.\(String(repeating: "9", count: 39))e127", []),
            ("price=eq.\(String(repeating: "9", count: 38))0e126", ["b2"]),
            ("published=gt.2024-01-01T00:00:00.0000011Z", ["b2"]),
            ("published=gte.2024-01-01T00:00:00.0000011Z", ["b2"]),
            ("published=lt.2024-01-01T00:00:00.0000011Z", ["b1"]),
            ("published=lte.2024-01-01T00:00:00.0000011Z", ["b1"]),
            ("published=eq.2024-01-01T00:00:00.0000011Z", []),
            ("published=eq.2024-01-01T01:00:00.000001%2B01:00", ["b1"]),
            ("published=eq.2023-12-31T23:59:60.000002Z", ["b2"]),
            ("_id=eq.99999999999999999999", []), ("_id=not.in.(99999999999999999999)", ["b1", "b2", "b3"]),
            ("author=eq.99999999999999999999", []), ("author=is.null", ["b1", "b2", "b3"]),
            // Control characters in text are text (a NUL too, in every store).
            ("title=in.(%00,b1,%01)", ["b1"]), ("title=lt.b1%00", ["b1"]), ("title=gt.b1%00", ["b2", "b3"]),
            ("cover=not.is.null", []), ("metadata=is.null", ["b1", "b2", "b3"]),
        ]
        for (query, expected) in expectations {
            #expect(try titles(query) == expected, "\(query)")
        }
    }

    static func serve(_ store: ((TemporaryDirectory) throws -> String)?) throws -> (StrataProcess, TestClient) {
        let folder = TemporaryDirectory()
        var arguments = ["serve", "--port", "0", "--data-dir", folder.file("data").path]
        if let store { arguments += ["--store", "Catalog=\(try store(folder))"] }
        let process = try StrataProcess(arguments)
        return (process, TestClient(port: try #require(process.port(), "\(process.stderr.current)")))
    }

    @Test func valuesNoStoreHoldsCompareAsWhatTheyAreInSQLite() throws {
        let (process, client) = try Self.serve(nil)
        try Self.checkComparisons(client)
        _ = process
    }

    @Test func valuesNoStoreHoldsCompareAsWhatTheyAreInMemory() throws {
        let (process, client) = try Self.serve { _ in "memory" }
        try Self.checkComparisons(client)
        _ = process
    }

    @Test(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
    func valuesNoStoreHoldsCompareAsWhatTheyAreInPostgreSQL() throws {
        let (process, client) = try Self.serve { _ in try PostgreSQLTestServer.storeURL().absoluteString }
        try Self.checkComparisons(client)
        _ = process
    }

    /// `parseDate` reads exactly what ``AttributeValue/dateTimePattern`` states.
    @Test func datesAreReadAsTheirPatternStates() throws {
        let pattern = "^(?:" + AttributeValue.dateTimePattern + ")$"
        for text in Self.samples[.date]! + ["9999-12-31T23:59:60-23:59", "2024-06-15T12:30:60Z"] {
            #expect(try Self.matches(pattern, text) == (AttributeValue.parseDate(text) != nil), "\(text)")
        }
        func formatted(_ text: String) -> String? { AttributeValue.parseDate(text).map(AttributeValue.formatDate) }
        // A leap second is the next minute's first second, on the last day of a year too.
        #expect(formatted("2016-12-31T23:59:60Z") == "2017-01-01T00:00:00Z")
        #expect(formatted("2024-06-15T12:30:60.5+02:00") == "2024-06-15T10:31:00.500000Z")
        #expect(formatted("2000-02-29 00:00:00.123456789-00:30") == "2000-02-29T00:30:00.123456Z")
        #expect(formatted("1970-01-01T00:00:00Z") == "1970-01-01T00:00:00Z")
        #expect(formatted("1969-12-31T23:59:59.999999Z") == "1969-12-31T23:59:59.999999Z")
        #expect(formatted("0000-03-01T00:00:00Z") == "0000-03-01T00:00:00Z")
        // Every day of 1999–2001 (2000 is a leap year) agrees with the pattern.
        for year in [1900, 1999, 2000, 2001] {
            for month in 1...12 {
                for day in 28...31 {
                    let text = String(format: "%04d-%02d-%02dT00:00:00Z", year, month, day)
                    let parsed = AttributeValue.parseDate(text)
                    #expect(try Self.matches(pattern, text) == (parsed != nil), "\(text)")
                    if let parsed { #expect(AttributeValue.formatDate(parsed) == text) }
                }
            }
        }
    }
}

/// A batch operation's `path` pattern admits exactly the paths a batch takes: every collection
/// (for `POST`) and object (for the other methods), with or without a trailing slash; no other
/// path, such as `/`, a property, or one without its leading slash.
@Suite struct BatchPathPatternTests {
    @Test func theBatchTakesExactlyThePathsItsPatternMatches() throws {
        let folder = TemporaryDirectory()
        let process = try StrataProcess(["serve", "--port", "0", "--data-dir", folder.file("data").path])
        let client = TestClient(port: try #require(process.port(), "\(process.stderr.current)"))
        let document = try client.send("GET", "/openapi.json").json
        let pattern = try #require(
            document.objectValue?["components"]?.objectValue?["schemas"]?.objectValue?["BatchOperation"]?
                .objectValue?["properties"]?.objectValue?["path"]?.objectValue?["pattern"]?.stringValue)
        let bodies = [
            "authors": #"{"name": "A"}"#, "books": #"{"title": "B"}"#, "tags": #"{"name": "T"}"#,
            "search-logs": #"{"query": "q"}"#,
        ]
        var number = 0
        for resource in bodies.keys.sorted() {
            let created = try client.send("POST", "/\(resource)", json: bodies[resource]!)
            #expect(created.status == 201, "\(created.text)")
        }
        var paths = ["/", "", "x/books", "books", "//books", "/books//", "/books/1/author", "/books/abc", "/live"]
        paths += [
            "/_batch", "/books?x=1", "/bo%6Fks", "/books/1/x/y", "/books/-1", "/books/+1", "/books/+-1", "/books/_bulk",
        ]
        for resource in bodies.keys { paths += ["/\(resource)", "/\(resource)/", "/\(resource)/1", "/\(resource)/1/"] }
        var taken = 0
        for path in paths {
            let expected = try FilterPatternTests.matches(pattern, path)
            let item = path.split(separator: "/").count == 2
            for method in ["GET", "POST"] {
                let resource = String(path.split(separator: "/").first ?? "")
                number += 1
                let body =
                    method == "POST"
                    ? (bodies[resource] ?? "{}").replacingOccurrences(
                        of: #"": ""#, with: #"": "\#(number)"#) : nil
                let operation =
                    #"{"method": "\#(method)", "path": "\#(path)""# + (body.map { #", "body": \#($0)"# } ?? "")
                let response = try client.send("POST", "/_batch", json: #"{"operations": [\#(operation)}]}"#)
                if expected && (method == "POST") != item {
                    #expect(response.status == 200, "\(method) \(path): \(response.text)")
                    taken += 1
                } else {
                    #expect((400..<500).contains(response.status), "\(method) \(path): \(response.text)")
                }
            }
        }
        #expect(taken == 17)
        _ = process
    }
}
