import Foundation
import StrataServer
import StrataTestSupport
import Testing

@testable import Strata

/// One request of a load test as the client saw it.
struct HistoryEvent: Sendable {
    var client: Int
    var method: String
    var path: String
    /// The version the request named in `If-Match`.
    var ifMatch: Int64?
    var status: Int
    /// The version in the response's `ETag`.
    var version: Int64?
}

/// Every request of a load test, in each client's order, and the checks a correct server passes.
final class History: Sendable {
    private let events = Locked<[HistoryEvent]>([])

    func record(_ event: HistoryEvent) { events.withLock { $0.append(event) } }

    var all: [HistoryEvent] { events.current }

    /// Sends a request on `client`'s connection and records it.
    func send(
        _ connection: TestConnection, client: Int, _ method: String, _ path: String, json: String? = nil,
        ifMatch: Int64? = nil
    ) throws -> ClientResponse {
        var headers: [String: String] = [:]
        if let ifMatch { headers["If-Match"] = "\"\(ifMatch)\"" }
        let response = try connection.request(method, path, json: json, headers: headers)
        let version = response.header("etag").flatMap {
            Int64($0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        }
        record(
            HistoryEvent(
                client: client, method: method, path: path, ifMatch: ifMatch, status: response.status, version: version)
        )
        return response
    }

    /// PATCHes `pages` to one more than `pages` with `If-Match` on `version`, recorded; the status.
    func increment(_ connection: TestConnection, client: Int, _ path: String, pages: Int64, at version: Int64) throws
        -> Int
    {
        try send(connection, client: client, "PATCH", path, json: #"{"pages": \#(pages + 1)}"#, ifMatch: version).status
    }

    /// What is wrong with the recorded history: each acknowledged conditional write must be the
    /// unique successor of the version it named, and no client may read a version older than one
    /// it already saw acknowledged or read.
    func violations() -> [String] {
        var problems: [String] = []
        let events = all
        var successors: [String: [Int64: Int]] = [:]
        for event in events where event.ifMatch != nil && (event.status == 200 || event.status == 204) {
            let named = event.ifMatch!
            successors[event.path, default: [:]][named, default: 0] += 1
            if event.method != "DELETE", event.version != named + 1 {
                problems.append(
                    "\(event.method) \(event.path) named version \(named) and was answered with version \(event.version.map(String.init) ?? "none")"
                )
            }
        }
        for (path, counts) in successors {
            for (version, count) in counts where count > 1 {
                problems.append("\(count) acknowledged writes of \(path) all replaced version \(version)")
            }
        }
        var seen: [Int: [String: Int64]] = [:]
        for event in events where event.status == 200 || event.status == 201 {
            guard let version = event.version else { continue }
            let before = seen[event.client]?[event.path] ?? 0
            if event.method == "GET", version < before {
                problems.append(
                    "client \(event.client) read \(event.path) at version \(version) after it had seen version \(before)"
                )
            }
            seen[event.client, default: [:]][event.path] = max(before, version)
        }
        return problems
    }
}

/// Concurrent writers over a live server: optimistic locking, delete rules and uniqueness hold
/// under many connections on the same few objects, checked against the recorded history.
@Suite(.serialized) struct ConcurrentWriteTests {
    static func integer(_ response: ClientResponse, _ key: String) -> Int64? {
        if case .integer(let value)? = response.json.objectValue?[key] { return value }
        return nil
    }

    /// Creates an author and one book with `pages: 1`; returns the book's id.
    static func makeBook(_ client: TestClient, title: String = "Hot") throws -> Int64 {
        let author = try client.send("POST", "/authors", json: #"{"name": "A"}"#)
        let authorID = try #require(integer(author, "_id"))
        let book = try client.send(
            "POST", "/books", json: #"{"title": "\#(title)", "author": \#(authorID), "pages": 1}"#)
        return try #require(integer(book, "_id"))
    }

    /// Read-modify-write loops on one book, each retried on 412 until acknowledged: every
    /// acknowledged update must be exactly one increment.
    @Test(arguments: [(2, false), (4, false), (8, false), (64, false), (4, true), (64, true)])
    func readModifyWriteLosesNothing(connections: Int, inBatch: Bool) throws {
        let fixture = try ServerFixture()
        let id = try Self.makeBook(fixture.client)
        let path = "/books/\(id)"
        let total = max(connections, 160 * stressFactor)
        let perClient = total / connections
        let history = History()
        let errors = Locked<[String]>([])
        onThreads(connections) { client in
            let connection = TestConnection(reconnectingTo: fixture.server.port)
            var acknowledged = 0
            var attempts = 0
            while acknowledged < perClient && attempts < perClient * 200 {
                attempts += 1
                do {
                    let read = try history.send(connection, client: client, "GET", path)
                    guard read.status == 200, let version = Self.integer(read, "_version"),
                        let pages = Self.integer(read, "pages")
                    else {
                        errors.withLock { $0.append("GET \(read.status): \(read.text)") }
                        return
                    }
                    let status: Int
                    if inBatch {
                        let batch = try connection.request(
                            "POST", "/_batch",
                            json:
                                #"{"operations": [{"method": "PATCH", "path": "\#(path)", "headers": {"If-Match": "\"\#(version)\""}, "body": {"pages": \#(pages + 1)}}]}"#
                        )
                        var result = batch.status
                        var answered: Int64?
                        if batch.status == 200, case .array(let results)? = batch.json.objectValue?["results"],
                            case .object(let first)? = results.first, case .object(let headers)? = first["headers"],
                            case .string(let etag)? = headers["ETag"]
                        {
                            result = 200
                            answered = Int64(etag.trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
                        }
                        history.record(
                            HistoryEvent(
                                client: client, method: "PATCH", path: path, ifMatch: version, status: result,
                                version: answered))
                        status = result
                    } else {
                        status = try history.increment(connection, client: client, path, pages: pages, at: version)
                    }
                    switch status {
                    case 200: acknowledged += 1
                    case 412: continue
                    default:
                        errors.withLock { $0.append("PATCH answered \(status)") }
                        return
                    }
                } catch {
                    errors.withLock { $0.append("\(error)") }
                    return
                }
            }
        }
        #expect(errors.current.isEmpty, "\(errors.current.prefix(3))")
        let acknowledged = history.all.filter { $0.method == "PATCH" && $0.status == 200 }.count
        #expect(acknowledged == perClient * connections)
        let final = try fixture.client.send("GET", path)
        #expect(Self.integer(final, "pages") == Int64(1 + acknowledged), "acknowledged updates were lost")
        #expect(Self.integer(final, "_version") == Int64(1 + acknowledged))
        let violations = history.violations()
        #expect(violations.isEmpty, "\(violations.prefix(5))")
    }

    /// PATCH, PUT and DELETE with If-Match from several connections on three hot books: the
    /// history has a unique successor for every acknowledged write, reads never go back in time,
    /// and exactly one DELETE per book succeeds.
    @Test func conditionalWritesOnHotObjects() throws {
        let fixture = try ServerFixture()
        let books = try (0..<3).map { try Self.makeBook(fixture.client, title: "Hot \($0)") }
        let history = History()
        let errors = Locked<[String]>([])
        let rounds = 40 * stressFactor
        onThreads(8) { client in
            let connection = TestConnection(reconnectingTo: fixture.server.port)
            var random = SystemRandomNumberGenerator()
            do {
                for round in 0..<rounds {
                    let id = books[Int.random(in: 0..<books.count, using: &random)]
                    let path = "/books/\(id)"
                    let read = try history.send(connection, client: client, "GET", path)
                    guard read.status == 200, let version = Self.integer(read, "_version"),
                        let pages = Self.integer(read, "pages")
                    else { continue }
                    let status: Int
                    if round % 3 == 2 {
                        status =
                            try history.send(
                                connection, client: client, "PUT", path,
                                json: #"{"title": "Hot put \#(id)", "pages": \#(pages + 1)}"#, ifMatch: version
                            ).status
                    } else {
                        status = try history.increment(connection, client: client, path, pages: pages, at: version)
                    }
                    if status != 200 && status != 412 { errors.withLock { $0.append("write answered \(status)") } }
                    // Read your own write.
                    if status == 200 { _ = try history.send(connection, client: client, "GET", path) }
                }
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
        }
        // Then everyone tries to delete every book at the version it last read.
        onThreads(8) { client in
            let connection = TestConnection(reconnectingTo: fixture.server.port)
            do {
                for id in books {
                    let path = "/books/\(id)"
                    let read = try history.send(connection, client: client, "GET", path)
                    guard let version = Self.integer(read, "_version") else { continue }
                    let status = try history.send(connection, client: client, "DELETE", path, ifMatch: version).status
                    if ![204, 412, 404].contains(status) { errors.withLock { $0.append("DELETE answered \(status)") } }
                }
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
        }
        #expect(errors.current.isEmpty, "\(errors.current.prefix(3))")
        let events = history.all
        for id in books {
            let path = "/books/\(id)"
            #expect(events.filter { $0.path == path && $0.method == "DELETE" && $0.status == 204 }.count == 1)
            #expect(try fixture.client.send("GET", path).status == 404)
            // Every acknowledged write before the delete was one version step.
            let writes = events.filter {
                $0.path == path && ($0.method == "PATCH" || $0.method == "PUT") && $0.status == 200
            }
            let deleted = try #require(
                events.first { $0.path == path && $0.method == "DELETE" && $0.status == 204 }?.ifMatch)
            #expect(
                deleted == Int64(1 + writes.count),
                "the delete replaced version \(deleted) after \(writes.count) writes")
        }
        let violations = history.violations()
        #expect(violations.isEmpty, "\(violations.prefix(5))")
    }

    /// Two connections POST books of an author while a third deletes the author (cascade): no
    /// book is left whose author does not exist, and every acknowledged book either stands with
    /// its author or went with it.
    @Test func cascadeDeleteAgainstInserts() throws {
        let fixture = try ServerFixture()
        let rounds = 30 * stressFactor
        let port = fixture.server.port
        let created = Locked<[Int64]>([])
        let unexpected = Locked<[String]>([])
        for round in 0..<rounds {
            let author = try fixture.client.send("POST", "/authors", json: #"{"name": "Doomed \#(round)"}"#)
            let authorID = try #require(Self.integer(author, "_id"))
            onThreads(3) { thread in
                let connection = TestConnection(reconnectingTo: port)
                do {
                    if thread == 2 {
                        let status = try connection.request("DELETE", "/authors/\(authorID)").status
                        if status != 204 { unexpected.withLock { $0.append("DELETE \(status)") } }
                        return
                    }
                    for index in 0..<4 {
                        let response = try connection.request(
                            "POST", "/books",
                            json: #"{"title": "r\#(round)-\#(thread)-\#(index)", "author": \#(authorID)}"#)
                        switch response.status {
                        case 201: created.withLock { $0.append(Self.integer(response, "_id")!) }
                        case 409: break  // the author was deleted first
                        default: unexpected.withLock { $0.append("POST \(response.status): \(response.text)") }
                        }
                    }
                } catch {
                    unexpected.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(unexpected.current.isEmpty, "\(unexpected.current.prefix(3))")
        #expect(try danglingReferences(fixture).isEmpty)
        // Every author was deleted, so every acknowledged book went with its author.
        for id in created.current { #expect(try fixture.client.send("GET", "/books/\(id)").status == 404) }
    }

    /// One connection POSTs a book tagged T while another deletes T (`Tag.books` is deny): exactly
    /// one of them succeeds, and an acknowledged link is never dropped.
    @Test func denyDeleteAgainstLinks() throws {
        let fixture = try ServerFixture()
        let rounds = 30 * stressFactor
        let port = fixture.server.port
        let author = try fixture.client.send("POST", "/authors", json: #"{"name": "Tagger"}"#)
        let authorID = try #require(Self.integer(author, "_id"))
        let outcomes = Locked<[String: Int]>([:])
        for round in 0..<rounds {
            let tag = try fixture.client.send("POST", "/tags", json: #"{"name": "t\#(round)"}"#)
            let tagID = try #require(Self.integer(tag, "_id"))
            let results = Locked<(post: Int, book: Int64?, delete: Int)>((0, nil, 0))
            onThreads(2) { thread in
                let connection = TestConnection(reconnectingTo: port)
                if thread == 0 {
                    let response = try? connection.request(
                        "POST", "/books", json: #"{"title": "d\#(round)", "author": \#(authorID), "tags": [\#(tagID)]}"#
                    )
                    results.withLock {
                        $0.post = response?.status ?? 0
                        $0.book = response.flatMap { Self.integer($0, "_id") }
                    }
                } else {
                    let status = (try? connection.request("DELETE", "/tags/\(tagID)").status) ?? 0
                    results.withLock { $0.delete = status }
                }
            }
            let (post, book, delete) = results.current
            outcomes.withLock { $0["\(post)/\(delete)", default: 0] += 1 }
            if post == 201, let book {
                // The link stands: the tag exists and the book holds it.
                let tagged = try fixture.client.send("GET", "/books/\(book)")
                #expect(
                    tagged.json.objectValue?["tags"] == .array([.integer(tagID)]),
                    "round \(round): the link was dropped")
                #expect(try fixture.client.send("GET", "/tags/\(tagID)").status == 200)
                #expect(delete == 409)
            } else {
                #expect(post == 409 && delete == 204, "round \(round): POST \(post), DELETE \(delete)")
            }
        }
        #expect(outcomes.current.keys.allSatisfy { ["201/409", "409/204"].contains($0) }, "\(outcomes.current)")
        #expect(try danglingReferences(fixture).isEmpty)
    }

    /// Six connections POST the same title and author at once: exactly one 201 each round, 409 for
    /// the others.
    @Test func uniqueKeyRaceHasOneWinner() throws {
        let fixture = try ServerFixture()
        let author = try fixture.client.send("POST", "/authors", json: #"{"name": "U"}"#)
        let authorID = try #require(Self.integer(author, "_id"))
        let port = fixture.server.port
        for round in 0..<(20 * stressFactor) {
            let statuses = Locked<[Int]>([])
            onThreads(6) { _ in
                let status =
                    (try? TestConnection(reconnectingTo: port).request(
                        "POST", "/books", json: #"{"title": "Same \#(round)", "author": \#(authorID)}"#
                    ).status) ?? 0
                statuses.withLock { $0.append(status) }
            }
            #expect(statuses.current.sorted() == [201, 409, 409, 409, 409, 409], "round \(round)")
        }
    }

    /// Two connections move books between two authors back and forth: every book's author lists
    /// it, and every author lists exactly the books that name it.
    @Test func movedToOneKeepsItsInverse() throws {
        let fixture = try ServerFixture()
        let first = try #require(
            Self.integer(try fixture.client.send("POST", "/authors", json: #"{"name": "L"}"#), "_id"))
        let second = try #require(
            Self.integer(try fixture.client.send("POST", "/authors", json: #"{"name": "R"}"#), "_id"))
        let books = try (0..<4).map { index in
            try #require(
                Self.integer(
                    try fixture.client.send("POST", "/books", json: #"{"title": "m\#(index)", "author": \#(first)}"#),
                    "_id"))
        }
        let port = fixture.server.port
        onThreads(4) { thread in
            let connection = TestConnection(reconnectingTo: port)
            for index in 0..<(40 * stressFactor) {
                let book = books[(thread + index) % books.count]
                let author = (thread + index) % 2 == 0 ? first : second
                _ = try? connection.request("PATCH", "/books/\(book)", json: #"{"author": \#(author)}"#)
            }
        }
        var listed: [Int64: Int64] = [:]
        for author in [first, second] {
            guard
                case .array(let ids)? = try fixture.client.send("GET", "/authors/\(author)").json.objectValue?["books"]
            else {
                Issue.record("no books list")
                continue
            }
            for case .integer(let id) in ids {
                #expect(listed[id] == nil, "book \(id) is listed by two authors")
                listed[id] = author
            }
        }
        for book in books {
            let named = Self.integer(try fixture.client.send("GET", "/books/\(book)"), "author")
            #expect(named != nil && listed[book] == named, "book \(book) names \(named.map(String.init) ?? "nil")")
        }
    }

    /// References in the store files that name objects that do not exist.
    func danglingReferences(_ fixture: ServerFixture) throws -> [String] {
        let db = try SQLiteConnection(path: fixture.catalogURL.path, readOnly: true)
        var problems: [String] = []
        problems += try db.query(
            #"SELECT "_pk" FROM "Book" WHERE "author" IS NOT NULL AND "author" NOT IN (SELECT "_pk" FROM "Author")"#
        ) { "book \($0.int64(0)) names a missing author" }
        let joins = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '_join_%'") {
            $0.text(0)
        }
        for join in joins {
            problems += try db.query(
                #"SELECT "source", "target" FROM \#(SQLiteSchema.quote(join)) WHERE "source" NOT IN (SELECT "_pk" FROM "Book") OR "target" NOT IN (SELECT "_pk" FROM "Tag")"#
            ) { "\(join) row \($0.int64(0))→\($0.int64(1)) names a missing object" }
        }
        return problems
    }
}
