import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// Reads by id are answered from the service's cache of rendered objects; after every kind of
/// write each read must still equal the object rendered afresh from the store.
@Suite struct ReadCacheTests {
    /// The body a read of `path` (`/books/7`) must have: the stored row rendered now.
    static func stored(_ fixture: ServerFixture, _ path: String) throws -> [UInt8]? {
        let service = try #require(fixture.server.restService)
        let parts = path.split(separator: "/").map(String.init)
        let entity = try #require(service.resources[parts[0]])
        guard let row = try? service.storedRow(entity, parts[1]) else { return nil }
        return try service.render(row)
    }

    /// Reads `path` three times (the first marks it, the second keeps it, the third comes from the
    /// cache) and checks each against the store.
    static func expectFresh(
        _ fixture: ServerFixture, _ path: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let expected = try stored(fixture, path)
        for _ in 0..<3 {
            let response = try fixture.client.send("GET", path)
            if let expected {
                #expect(response.status == 200, "\(path)", sourceLocation: sourceLocation)
                #expect(response.text == String(decoding: expected, as: UTF8.self), sourceLocation: sourceLocation)
            } else {
                #expect(response.status == 404, "\(path): \(response.text)", sourceLocation: sourceLocation)
            }
        }
    }

    static func id(_ response: ClientResponse) throws -> Int64 {
        try #require(field(response, "_id")?.doubleValue.map { Int64($0) }, "\(response.text)")
    }

    /// `--read-cache N` sizes the cache; 0 keeps nothing, and every read comes from the store.
    @Test func theCacheHoldsWhatTheOptionSays() throws {
        for (limit, kept) in [(0, 0), (2, 2), (10_000, 3)] {
            let fixture = try ServerFixture { $0.readCacheObjects = limit }
            let service = try #require(fixture.server.restService)
            var ids: [Int64] = []
            for title in ["One", "Two", "Three"] {
                ids.append(try Self.id(fixture.client.send("POST", "/books", json: #"{"title": "\#(title)"}"#)))
            }
            for id in ids {
                #expect(try fixture.client.send("GET", "/books/\(id)").status == 200)
                try Self.expectFresh(fixture, "/books/\(id)")
            }
            let held = ids.filter { service.readCache.lookup("Book", $0).entry != nil }
            #expect(held.count == kept, "limit \(limit): \(held)")
        }
    }

    @Test func readsFollowEveryKindOfWrite() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let author = try Self.id(client.send("POST", "/authors", json: #"{"name": "N. K. Jemisin"}"#))
        let first = try Self.id(
            client.send("POST", "/books", json: #"{"title": "The Fifth Season", "author": \#(author)}"#))
        let tag = try Self.id(client.send("POST", "/tags", json: #"{"name": "fantasy"}"#))
        let paths = ["/authors/\(author)", "/books/\(first)", "/tags/\(tag)"]
        for path in paths { try Self.expectFresh(fixture, path) }

        // A new book of the author changes the author's list of books.
        let second = try Self.id(
            client.send("POST", "/books", json: #"{"title": "The Obelisk Gate", "author": \#(author)}"#))
        #expect(
            field(try client.send("GET", "/authors/\(author)"), "books")
                == .array([.integer(first), .integer(second)]))
        for path in paths + ["/books/\(second)"] { try Self.expectFresh(fixture, path) }

        // An update shows at once, with its new ETag.
        #expect(try client.send("PATCH", "/books/\(first)", json: #"{"year": 2015}"#).status == 200)
        let updated = try client.send("GET", "/books/\(first)")
        #expect(field(updated, "year") == .integer(2015))
        #expect(updated.header("etag") == "\"2\"")
        #expect(try client.send("GET", "/books/\(first)", headers: ["If-None-Match": "\"1\""]).status == 200)

        // Setting one side of a many-to-many relationship changes the other side's reads.
        #expect(try client.send("PATCH", "/tags/\(tag)", json: #"{"books": [\#(first), \#(second)]}"#).status == 200)
        #expect(field(try client.send("GET", "/books/\(second)"), "tags") == .array([.integer(tag)]))
        for path in paths + ["/books/\(second)"] { try Self.expectFresh(fixture, path) }

        // A batch, a replacement and a delete.
        let batch = try client.send(
            "POST", "/_batch",
            json: #"""
                {"operations": [{"method": "PATCH", "path": "/books/\#(second)", "body": {"title": "The Obelisk Gate (2016)"}}]}
                """#)
        #expect(batch.status == 200, "\(batch.text)")
        try Self.expectFresh(fixture, "/books/\(second)")
        #expect(
            try client.send("PUT", "/books/\(first)", json: #"{"title": "The Fifth Season", "author": \#(author)}"#)
                .status == 200)
        for path in paths { try Self.expectFresh(fixture, path) }
        #expect(try client.send("DELETE", "/books/\(second)").status == 204)
        for path in paths + ["/books/\(second)"] { try Self.expectFresh(fixture, path) }
        #expect(try client.send("GET", "/books/\(second)").status == 404)
    }

    @Test func readsRacingWritesNeverKeepAnOldVersion() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let book = try Self.id(client.send("POST", "/books", json: #"{"title": "Version 0", "year": 0}"#))
        // Writers and readers of one object at once: reads that started before a write must not
        // leave the version they saw in the cache after it.
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for round in 0..<40 {
                if worker < 2 {
                    _ = try? client.send("PATCH", "/books/\(book)", json: #"{"year": \#(round * 2 + worker)}"#)
                } else {
                    _ = try? client.send("GET", "/books/\(book)")
                }
            }
        }
        let expected = try #require(try Self.stored(fixture, "/books/\(book)"))
        let read = try client.send("GET", "/books/\(book)")
        #expect(read.text == String(decoding: expected, as: UTF8.self))
        let version = try #require(try fixture.server.restService?.storedRow("Book", "\(book)").version)
        #expect(version > 1)
        #expect(read.header("etag") == "\"\(version)\"")
    }
}

@Suite struct ReadCacheRuleTests {
    @Test func aReadThatStartedBeforeAWriteIsNotKept() throws {
        let model = try ObjectModel.example
        let cache = ReadCache(model: model, limit: 2)
        let book = ObjectID(store: "S", entity: "Book", primaryKey: 7)
        let old = ReadCache.Entry(version: 1, body: Array("old".utf8))
        let (missing, before) = cache.lookup("Book", 7)
        #expect(missing == nil)
        // The save lands between the read from the store and the store into the cache.
        cache.invalidate(ContextChanges(inserted: [], updated: [book], deleted: [], byStore: [:]))
        cache.store("Book", 7, old, generation: before)
        #expect(cache.lookup("Book", 7).entry == nil)

        let (_, now) = cache.lookup("Book", 7)
        cache.store("Book", 7, ReadCache.Entry(version: 2, body: Array("new".utf8)), generation: now)
        #expect(cache.lookup("Book", 7).entry?.version == 2)
        // An author's change clears the books (their `author` may have changed through the inverse).
        let (_, authorGeneration) = cache.lookup("Author", 1)
        cache.store("Author", 1, old, generation: authorGeneration)
        cache.invalidate(
            ContextChanges(
                inserted: [], updated: [ObjectID(store: "S", entity: "Author", primaryKey: 1)], deleted: [],
                byStore: [:]))
        #expect(cache.lookup("Book", 7).entry == nil)
        #expect(cache.lookup("Author", 1).entry == nil)
        // Beyond the limit the oldest goes first.
        for key in Int64(1)...3 {
            cache.store("Tag", key, old, generation: cache.lookup("Tag", key).generation)
        }
        #expect(cache.lookup("Tag", 1).entry == nil)
        #expect(cache.lookup("Tag", 2).entry != nil && cache.lookup("Tag", 3).entry != nil)
    }

    /// What a read offers is kept the second time it is offered lately, not the first: keys read
    /// once (a scan, random ids over many more objects than the cache holds) are not kept.
    @Test func aKeyReadOnceIsNotKeptAndOneReadAgainIs() throws {
        let cache = ReadCache(model: try ObjectModel.example, limit: 10_000)
        let entry = ReadCache.Entry(version: 1, body: Array("{}".utf8))
        func held() -> Int { (1...5_000).filter { cache.lookup("Book", Int64($0)).entry != nil }.count }
        for key in Int64(1)...5_000 { cache.offer("Book", key, entry, generation: cache.generation(of: "Book")) }
        // Only keys whose doorkeeper bit another key had set pass (eight bits a key: a few percent).
        #expect(held() < 500, "\(held()) of 5000 keys offered once were kept")
        for key in Int64(1)...5_000 { cache.offer("Book", key, entry, generation: cache.generation(of: "Book")) }
        #expect(held() == 5_000)
        // A write clears what it changed, not what the doorkeeper saw: the next offer keeps it.
        cache.invalidate(
            ContextChanges(
                inserted: [], updated: [ObjectID(store: "S", entity: "Book", primaryKey: 7)], deleted: [], byStore: [:])
        )
        #expect(cache.lookup("Book", 7).entry == nil)
        cache.offer("Book", 7, entry, generation: cache.generation(of: "Book"))
        #expect(cache.lookup("Book", 7).entry != nil)
    }
}
