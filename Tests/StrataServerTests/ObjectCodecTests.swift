import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// A read by id is rendered from the stored row by a byte writer of its own; it must say what the
/// object rendered through a context says, with its keys in order.
@Suite struct ObjectCodecTests {
    /// The object at `path` (`/books/7`) as GET answers it and as a fresh context renders it.
    static func renderings(_ fixture: ServerFixture, _ path: String) throws -> (bytes: String, object: JSONValue) {
        let service = try #require(fixture.server.restService)
        let response = try fixture.client.send("GET", path)
        #expect(response.status == 200, "\(path): \(response.text)")
        let parts = path.split(separator: "/").map(String.init)
        let entity = try #require(service.resources[parts[0]])
        let key = try #require(Int64(parts[1]))
        let id = try #require(service.prototypeByEntity[entity]?.withPrimaryKey(key))
        let context = service.readContext()
        let object = try context.object(with: id)
        return (response.text, try withExtendedLifetime(context) { try service.codec.render(object) })
    }

    /// The member names of a rendered object, in the order its bytes hold them.
    static func keyOrder(_ text: String) throws -> [String] {
        let object = try #require(try JSONValue.parse(Array(text.utf8)).objectValue)
        // Each member's `"name":` where the name is a key of the object, found left to right.
        var order: [(String.Index, String)] = []
        for name in object.keys {
            let range = try #require(text.range(of: "\"\(name)\":"), "\(name) in \(text)")
            order.append((range.lowerBound, name))
        }
        return order.sorted { $0.0 < $1.0 }.map(\.1)
    }

    @Test func aRowRendersAsItsObjectDoes() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        let author = try ReadCacheTests.id(client.send("POST", "/authors", json: #"{"name": "Ursula"}"#))
        let tags = try ["sf", "classic"].map {
            try ReadCacheTests.id(client.send("POST", "/tags", json: #"{"name": "\#($0)"}"#))
        }
        let full = try ReadCacheTests.id(
            client.send(
                "POST", "/books",
                json: #"""
                    {"title": "A \"quoted\" back\\slash\nline é 漢字 \u0001", "year": 1969, "pages": 304,
                     "wordCount": -5, "format": "hardcover", "price": "12.50", "rating": 4.5, "weight": 0.25,
                     "available": false, "published": "1969-03-01T00:00:00Z", "cover": "AQID",
                     "sku": "6f1d3c5e-2b7a-4c1e-9f3a-1d2e3f4a5b6c", "homepage": "https://example.com/a?b=c",
                     "metadata": {"k": [1, null, "x"]}, "author": \#(author), "tags": [\#(tags[1]), \#(tags[0])]}
                    """#))
        let bare = try ReadCacheTests.id(client.send("POST", "/books", json: #"{"title": "Untitled"}"#))
        for path in ["/books/\(full)", "/books/\(bare)", "/authors/\(author)", "/tags/\(tags[0])"] {
            let (bytes, object) = try Self.renderings(fixture, path)
            #expect(try JSONValue.parse(Array(bytes.utf8)) == object, "\(path): \(bytes)")
            let keys = try Self.keyOrder(bytes)
            #expect(keys == keys.sorted(), "\(path): \(bytes)")
            #expect(keys.first == "_id", "\(path): \(bytes)")
            #expect(bytes.hasPrefix(#"{"_id":"#) && bytes.hasSuffix("}"), "\(path): \(bytes)")
        }
        // Members with no value say null, and empty lists are lists.
        let (bareBytes, _) = try Self.renderings(fixture, "/books/\(bare)")
        #expect(bareBytes.contains(#""author":null,"available":true,"cover":null,"#), "\(bareBytes)")
        #expect(bareBytes.contains(#""tags":[],"title":"Untitled","#), "\(bareBytes)")
        #expect(bareBytes.hasSuffix(#""wordCount":null,"year":null}"#), "\(bareBytes)")
    }
}
