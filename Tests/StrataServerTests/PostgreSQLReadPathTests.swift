import Foundation
import Strata
import StrataServer
import StrataTestSupport
import Testing

/// Reads by id over a PostgreSQL store, which a pipelined reader answers without a handler thread
/// each: the same answers as every other read path, read-your-writes, and a blocking read when
/// the reader's connections fail.
@Suite(
    .serialized,
    .enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct PostgreSQLReadPathTests {
    static func serve() throws -> ServerFixture {
        let catalog = try StoreSpec(PostgreSQLTestServer.storeURL().absoluteString)
        return try ServerFixture { $0.stores["Catalog"] = catalog }
    }

    static func id(_ response: ClientResponse) throws -> Int64 {
        let value = try #require(field(response, "_id")?.doubleValue, "\(response.status) \(response.text)")
        return Int64(value)
    }

    @Test func readsByIDAnswerAsListsAndRelationshipsDo() throws {
        let fixture = try Self.serve()
        let client = fixture.client
        let author = try Self.id(try client.send("POST", "/authors", json: #"{"name": "Le Guin"}"#))
        var tags: [Int64] = []
        for name in ["sea", "magic", "islands"] {
            tags.append(try Self.id(try client.send("POST", "/tags", json: #"{"name": "\#(name)"}"#)))
        }
        var books: [Int64] = []
        for index in 0..<5 {
            let chosen = index == 0 ? [tags[2], tags[0], tags[1]] : index == 1 ? [tags[1]] : []
            books.append(
                try Self.id(
                    try client.send(
                        "POST", "/books",
                        json: #"{"title": "B\#(index)", "author": \#(author), "tags": \#(chosen), "year": 1968}"#)))
        }
        for book in books {
            let read = try client.send("GET", "/books/\(book)")
            #expect(read.status == 200)
            let listed = items(try client.send("GET", "/books?_id=eq.\(book)")).first
            #expect(read.json.objectValue == listed, "\(read.text)")
            let related = try client.send("GET", "/books/\(book)/tags")
            #expect(
                field(read, "tags")?.arrayValue?.compactMap(\.doubleValue)
                    == items(related).compactMap { $0["_id"]?.doubleValue }, "\(related.text)")
        }
        #expect(field(try client.send("GET", "/books/\(books[0])"), "tags")?.arrayValue?.count == 3)
        let written = try client.send("GET", "/authors/\(author)")
        #expect(field(written, "books") == .array(books.map { .integer($0) }))
        #expect(field(written, "name") == .string("Le Guin"))

        // Refusals and conditional answers, as every read by id gives them.
        #expect(try client.send("GET", "/books/999999").status == 404)
        #expect(try client.send("GET", "/books/abc").status == 404)
        #expect(try client.send("GET", "/books/0").status == 404)
        #expect(try client.send("GET", "/books/\(books[0])?x=1").status == 400)
        let etag = try #require(try client.send("GET", "/books/\(books[0])").header("ETag"))
        #expect(try client.send("GET", "/books/\(books[0])", headers: ["If-None-Match": etag]).status == 304)
        let head = try client.send("HEAD", "/books/\(books[0])")
        #expect(head.status == 200 && head.body.isEmpty && head.header("ETag") == etag)
    }

    @Test func aReadAfterAnAcknowledgedWriteSeesIt() throws {
        let fixture = try Self.serve()
        let client = fixture.client
        let book = try Self.id(try client.send("POST", "/books", json: #"{"title": "Lathe"}"#))
        for round in 1...40 {
            let rating = Double(round % 6)
            let patched = try client.send("PATCH", "/books/\(book)", json: #"{"rating": \#(rating)}"#)
            #expect(patched.status == 200)
            let read = try client.send("GET", "/books/\(book)")
            #expect(field(read, "rating")?.doubleValue == rating, "round \(round)")
            #expect(read.header("ETag") == patched.header("ETag"), "round \(round)")
        }
        let deleted = try client.send("DELETE", "/books/\(book)")
        #expect(deleted.status == 204)
        #expect(try client.send("GET", "/books/\(book)").status == 404)
    }

    @Test func concurrentReadsEachGetTheirOwnObject() throws {
        let fixture = try Self.serve()
        let client = fixture.client
        var books: [Int64] = []
        for index in 0..<20 {
            books.append(try Self.id(try client.send("POST", "/books", json: #"{"title": "C\#(index)"}"#)))
        }
        let wrong = Locked<[String]>([])
        let known = books
        onThreads(8) { thread in
            for step in 0..<40 {
                let index = (thread * 7 + step) % known.count
                let response = try? client.send("GET", "/books/\(known[index])")
                guard let response, response.status == 200, field(response, "title") == .string("C\(index)") else {
                    wrong.withLock { $0.append("\(known[index]): \(response?.status ?? -1) \(response?.text ?? "")") }
                    continue
                }
            }
        }
        #expect(wrong.current.isEmpty, "\(wrong.current.prefix(3))")
    }

    @Test func readsKeepAnsweringWhenTheReadersConnectionsAreKilled() throws {
        let fixture = try Self.serve()
        let client = fixture.client
        let book = try Self.id(try client.send("POST", "/books", json: #"{"title": "Dispossessed"}"#))
        for _ in 0..<5 { #expect(try client.send("GET", "/books/\(book)").status == 200) }
        // The reader's connections, and only they, last ran the keyed read.
        let killed = try PostgreSQLTestServer.psql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE '%ARRAY(SELECT%' AND pid <> pg_backend_pid()"
        )
        #expect(Int(killed.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 >= 1, "\(killed)")
        for _ in 0..<20 {
            let read = try client.send("GET", "/books/\(book)")
            #expect(read.status == 200 && field(read, "title") == .string("Dispossessed"), "\(read.text)")
        }
    }
}
