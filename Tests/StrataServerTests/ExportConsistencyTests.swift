import Foundation
import StrataServer
import StrataTestSupport
import Synchronization
import Testing

@testable import Strata

/// `GET /_export` while clients write: each file holds exactly the state of its
/// `Strata-History-Token`, checked against the feed after that token and the state the server
/// ends in.
@Suite struct ExportConsistencyTests {
    /// One book as a file or the server holds it.
    struct Book: Equatable, CustomStringConvertible {
        var version: Int64
        var title: String
        var year: Int64
        var description: String { "v\(version) \(title) \(year)" }
    }

    static func integer(_ value: JSONValue?) -> Int64? {
        if case .integer(let number)? = value { return number }
        return nil
    }

    /// A stored book as a file would hold it.
    static func book(_ row: StoreRow) -> Book {
        var book = Book(version: row.version, title: "", year: -1)
        if case .string(let title)? = row.attributes["title"] { book.title = title }
        if case .integer(let year)? = row.attributes["year"] { book.year = year }
        return book
    }

    /// The books (by primary key) and search queries an exported file holds.
    static func read(_ url: URL) throws -> (books: [Int64: Book], queries: Set<String>) {
        let db = try SQLiteConnection(path: url.path, mode: .readOnly)
        let rows = try db.query("SELECT Z_PK, Z_OPT, ZTITLE, ZYEAR FROM ZBOOK") {
            ($0.int64(0), Book(version: $0.int64(1), title: $0.text(2), year: $0.int64(3)))
        }
        let queries = try db.query("SELECT ZQUERY FROM ZSEARCHLOG") { $0.text(0) }
        return (Dictionary(uniqueKeysWithValues: rows), Set(queries))
    }

    /// Writes until `stop`: creates books whose title names the year they are written with, and
    /// changes and deletes some of them (`kind` 0 and 1), or saves a book and a search log of the
    /// same name in one batch across both stores (`kind` 2).
    static func write(
        _ client: TestClient, kind: Int, stop: borrowing Atomic<Bool>, failures: borrowing Mutex<[String]>
    ) {
        var mine: [Int64] = []
        var generator = SystemRandomNumberGenerator()
        for number in (2000 + kind * 400)..<min(3000, 2400 + kind * 400) {
            guard !stop.load(ordering: .acquiring) else { return }
            do {
                if kind == 2 {
                    let batch =
                        #"{"operations": [{"method": "POST", "path": "/books", "body": "#
                        + #"{"title": "pair-\#(number)", "year": \#(number)}}, {"method": "POST", "#
                        + #""path": "/search-logs", "body": {"query": "pair-\#(number)"}}]}"#
                    let response = try client.send("POST", "/_batch", json: batch)
                    if response.status != 200 { failures.withLock { $0.append("batch: \(response.text)") } }
                    continue
                }
                let body = #"{"title": "k\#(number)", "year": \#(number)}"#
                if mine.isEmpty || number % 3 == 0 {
                    let created = try client.send("POST", "/books", json: body)
                    guard created.status == 201, let id = Self.integer(created.json.objectValue?["_id"]) else {
                        failures.withLock { $0.append("POST: \(created.text)") }
                        continue
                    }
                    mine.append(id)
                } else if kind == 1, number % 5 == 0 {
                    let id = mine.remove(at: Int.random(in: 0..<mine.count, using: &generator))
                    let deleted = try client.send("DELETE", "/books/\(id)")
                    if deleted.status != 204 { failures.withLock { $0.append("DELETE: \(deleted.text)") } }
                } else {
                    let id = mine[Int.random(in: 0..<mine.count, using: &generator)]
                    let changed = try client.send("PATCH", "/books/\(id)", json: body)
                    if changed.status != 200 { failures.withLock { $0.append("PATCH: \(changed.text)") } }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
    }

    @Test func everyExportHoldsExactlyTheStateOfItsToken() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let coordinator = try #require(fixture.server.restService).root.coordinator
        // Enough books that an export takes a while.
        _ = try coordinator.save(
            SaveRequest(
                inserts: (0..<2000).map {
                    StoreRow(
                        id: .temporary(entity: "Book"),
                        attributes: ["title": .string("s\($0)"), "year": .integer(Int64($0)), "format": .string("e")])
                }))
        let folder = TemporaryDirectory()
        let stop = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let exports = Mutex<[(token: String, url: URL)]>([])
        onThreads(4) { thread in
            guard thread == 3 else { return Self.write(client, kind: thread, stop: stop, failures: failures) }
            defer { stop.store(true, ordering: .releasing) }
            for index in 0..<5 {
                do {
                    let response = try client.send("GET", "/_export")
                    guard response.status == 200, let token = response.header("strata-history-token") else {
                        failures.withLock { $0.append("export: \(response.status) \(response.text)") }
                        return
                    }
                    let url = folder.file("export-\(index).sqlite")
                    try Data(response.body).write(to: url)
                    exports.withLock { $0.append((token, url)) }
                } catch {
                    failures.withLock { $0.append("export: \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let final = Dictionary(
            uniqueKeysWithValues: try coordinator.fetch(FetchRequest(entityName: "Book")).map {
                ($0.id.primaryKey!, Self.book($0))
            })
        let taken = exports.withLock { $0 }
        #expect(taken.count == 5)
        #expect(Set(taken.map(\.token)).count > 1, "writes landed between the exports")
        var laterChanges = 0
        for (token, url) in taken {
            let file = try Self.read(url)
            // No write is in a file by halves: each book's title names the year written with it,
            // and the batches across the two stores are in it whole or not at all.
            for (key, book) in file.books
            where book.title.dropFirst(book.title.hasPrefix("pair-") ? 5 : 1) != "\(book.year)" {
                Issue.record("book \(key) in the export at \(token) is \(book)")
            }
            #expect(Set(file.books.values.map(\.title).filter { $0.hasPrefix("pair-") }) == file.queries, "\(token)")
            // The feed after the token holds exactly what the file lacks.
            let feed = try ChangesFeedTests.follow(client, from: token, limit: 1000).changes
            var first: [Int64: (op: String, version: Int64)] = [:]
            for change in feed {
                guard let object = change.objectValue, object["entity"]?.stringValue == "Book",
                    let key = Self.integer(object["_id"]), first[key] == nil
                else { continue }
                first[key] = (object["op"]?.stringValue ?? "", Self.integer(object["_version"]) ?? 0)
                laterChanges += 1
            }
            for key in Set(file.books.keys).union(final.keys).union(first.keys) {
                let held = file.books[key]
                switch first[key] {
                case nil: #expect(held == final[key], "book \(key) unchanged after \(token)")
                case ("insert", _)?: #expect(held == nil, "book \(key) inserted after \(token)")
                case ("update", let version)?:
                    #expect(held?.version == version - 1, "book \(key) updated after \(token)")
                case ("delete", let version)?: #expect(held?.version == version, "book \(key) deleted after \(token)")
                case let other?: Issue.record("book \(key): \(other)")
                }
            }
        }
        #expect(laterChanges > 0, "some export had writes after its token")
        #expect(try ExportRouteTests.leftovers(fixture) == [])
    }
}
