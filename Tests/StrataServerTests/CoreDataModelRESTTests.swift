import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// The Core Data fixture models served over HTTP: what each loads with works through the REST
/// API as it does through contexts.
@Suite(.serialized) struct CoreDataModelRESTTests {
    static func serve(_ name: String) throws -> ServerFixture {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/CoreData/\(name)")
        return try ServerFixture(model: try ObjectModel.load(contentsOf: url))
    }

    static func id(_ response: ClientResponse) throws -> Int64 {
        try #require(field(response, "_id")?.doubleValue.map { Int64($0) }, "\(response.status) \(response.text)")
    }

    static func problem(_ response: ClientResponse, _ status: Int, _ text: String) {
        #expect(response.status == status, "\(response.text)")
        #expect(response.header("content-type") == "application/problem+json")
        #expect(response.text.contains(text), "\(response.text)")
    }

    @Test func attributesNamedIdAndVersionAreServedBesideTheServersOwn() throws {
        let fixture = try Self.serve("Naming.xcdatamodel")
        let client = fixture.client
        let created = try client.send("POST", "/messages", json: #"{"id": "m-1", "version": 7, "body": "hello"}"#)
        #expect(created.status == 201)
        let id = try Self.id(created)
        #expect(field(created, "id") == .string("m-1") && field(created, "version") == .integer(7))
        #expect(field(created, "_version") == .integer(1))
        let patched = try client.send(
            "PATCH", "/messages/\(id)", json: #"{"version": 8}"#, headers: ["If-Match": "\"1\""])
        #expect(
            patched.status == 200 && field(patched, "version") == .integer(8)
                && field(patched, "_version") == .integer(2))
        let byAttribute = try client.send("GET", "/messages?id=eq.m-1")
        #expect(items(byAttribute).map { $0["_id"] } == [.integer(id)])
        let byObject = try client.send("GET", "/messages?_id=eq.\(id)&version=eq.8")
        #expect(items(byObject).count == 1)
        // Metric and Doc move aside from the server's /metrics and /docs.
        #expect(try client.send("POST", "/metric", json: #"{"value": 2.5}"#).status == 201)
        #expect(try client.send("GET", "/metric").json.objectValue?["items"]?.arrayValue?.count == 1)
        #expect(try client.send("POST", "/doc", json: #"{"title": "Read me"}"#).status == 201)
        #expect(try client.send("GET", "/metrics").text.contains("strata_"))
        #expect(fixture.logLines.withLock { $0 }.contains { $0.contains("'/metrics' is a path of the server") })
    }

    @Test func derivedAttributesAreServedAndCannotBeSet() throws {
        let fixture = try Self.serve("Derived.xcdatamodel")
        let client = fixture.client
        let writer = try client.send("POST", "/writers", json: #"{"name": "Ana Ñúñez"}"#)
        #expect(writer.status == 201)
        let writerID = try Self.id(writer)
        #expect(field(writer, "shout") == .string("ANA ÑÚÑEZ") && field(writer, "searchName") == .string("ana nunez"))
        #expect(field(writer, "workCount") == .integer(0))
        Self.problem(try client.send("POST", "/writers", json: #"{"name": "X", "shout": "no"}"#), 422, "derived")
        let work = try client.send("POST", "/works", json: #"{"title": "Alba", "pages": 200, "writer": \#(writerID)}"#)
        #expect(work.status == 201 && field(work, "writerName") == .string("Ana Ñúñez"))
        let after = try client.send("GET", "/writers/\(writerID)")
        #expect(field(after, "workCount") == .integer(1) && field(after, "totalPages") == .integer(200))
        // A full replacement may echo the derived values it read.
        var echoed = after.json.objectValue ?? [:]
        echoed["name"] = .string("Bo")
        let put = try client.send(
            "PUT", "/writers/\(writerID)", json: JSONValue.object(echoed).jsonText,
            headers: ["If-Match": after.header("etag") ?? ""])
        #expect(put.status == 200 && field(put, "shout") == .string("BO"), "\(put.text)")
        #expect(field(try client.send("GET", "/works/\(try Self.id(work))"), "writerName") == .string("Bo"))
        // The contract says so: derived members are read-only and not in the write schemas.
        let spec = try client.send("GET", "/openapi.json").json
        let schemas = spec.objectValue?["components"]?.objectValue?["schemas"]?.objectValue
        let read = schemas?["Writer"]?.objectValue?["properties"]?.objectValue?["shout"]?.objectValue
        #expect(read?["readOnly"] == .bool(true))
        #expect(schemas?["WriterCreate"]?.objectValue?["properties"]?.objectValue?["shout"] == nil)
        #expect(schemas?["WriterCreate"]?.objectValue?["properties"]?.objectValue?["name"] != nil)
    }

    @Test func namedQueriesAreTheModelsFetchRequestTemplates() throws {
        let fixture = try Self.serve("Templates.xcdatamodel")
        let client = fixture.client
        let created = try client.send(
            "POST", "/records/_bulk",
            json: #"""
                [{"artist": "Nina", "title": "Pastel", "year": 1964, "location": {"city": "Paris"}},
                 {"artist": "nina", "title": "Wild", "year": 1966},
                 {"artist": "Miles", "title": "Blue", "year": 1959}]
                """#)
        #expect(created.status == 201, "\(created.text)")
        // A composite is answered with every element, null when unset.
        #expect(
            created.json.arrayValue?.first?.objectValue?["location"]
                == .object(["city": .string("Paris"), "country": .null]))
        func titles(_ target: String) throws -> [String] {
            let response = try client.send("GET", target)
            #expect(response.status == 200, "\(response.text)")
            return items(response).compactMap { $0["title"]?.stringValue }
        }
        #expect(try titles("/records?query=recordsOfYear&year=1966") == ["Wild"])
        #expect(
            try titles("/records?query=recordsByArtistSince&artist=NINA&since=1960&order=title") == ["Pastel", "Wild"])
        #expect(try titles("/records?query=recordsByArtistSince&artist=nina&since=1965") == ["Wild"])
        // A named query goes with the other filters, ordering and paging.
        #expect(try titles("/records?query=everyRecord&year=lt.1965&order=year.desc") == ["Pastel", "Blue"])
        Self.problem(try client.send("GET", "/records?query=nope"), 400, "recordsOfYear")
        Self.problem(try client.send("GET", "/records?query=recordsOfYear"), 400, "needs the parameter 'year'")
        Self.problem(try client.send("GET", "/records?query=recordsOfYear&year=soon"), 400, "year")
        Self.problem(try client.send("GET", "/tracks?query=recordsOfYear&year=1"), 400, "longTracks")
        Self.problem(
            try client.send("GET", "/records?query=recordsOfYear&year=1&query=everyRecord"), 400, "more than once")
        let spec = try client.send("GET", "/openapi.json").json
        let parameters =
            spec.objectValue?["paths"]?.objectValue?["/records"]?.objectValue?["get"]?.objectValue?["parameters"]?
            .arrayValue ?? []
        let query = parameters.first { $0.objectValue?["name"] == .string("query") }
        #expect(
            query?.objectValue?["schema"]?.objectValue?["enum"]
                == .array([.string("recordsOfYear"), .string("recordsByArtistSince"), .string("everyRecord")]))
        #expect(parameters.contains { $0.objectValue?["name"] == .string("since") })
        // The transient attribute is not served.
        #expect(created.json.arrayValue?.first?.objectValue?["scratch"] == nil)
    }

    @Test func deletingTheTargetOfARelationshipWithoutInverseClearsIt() throws {
        let fixture = try Self.serve("Relationships.xcdatamodel")
        let client = fixture.client
        let notes = try (0..<3).map { try Self.id(try client.send("POST", "/notes", json: #"{"text": "n\#($0)"}"#)) }
        let folder = try client.send(
            "POST", "/folders",
            json:
                #"{"name": "Inbox", "pinned": \#(notes[0]), "recent": [\#(notes[0]), \#(notes[1])], "queue": [\#(notes[2]), \#(notes[0])]}"#
        )
        #expect(folder.status == 201, "\(folder.text)")
        let folderID = try Self.id(folder)
        #expect(try client.send("DELETE", "/notes/\(notes[0])").status == 204)
        let after = try client.send("GET", "/folders/\(folderID)")
        #expect(field(after, "pinned") == .null)
        #expect(field(after, "recent") == .array([.integer(notes[1])]))
        #expect(field(after, "queue") == .array([.integer(notes[2])]))
        // The folder's version moved: the change is visible to If-Match writers.
        #expect(field(after, "_version") == .integer(2))
        #expect(try client.send("DELETE", "/folders/\(folderID)").status == 204)
        #expect(try client.send("GET", "/notes/\(notes[2])").status == 404)
        #expect(try client.send("GET", "/notes/\(notes[1])").status == 200)
    }
}

/// Entity inheritance over HTTP: an object is reachable at its own entity's path and its
/// ancestors', never at a sibling's.
@Suite struct InheritedEntityPathTests {
    @Test func anObjectOfOneSubentityIsNotFoundAtASiblingsPath() throws {
        let fixture = try CoreDataModelRESTTests.serve("Zoo.xcdatamodeld")
        let client = fixture.client
        let cat = try client.send("POST", "/cats", json: #"{"name": "Tom", "indoor": true}"#)
        let id = try CoreDataModelRESTTests.id(cat)
        #expect(try client.send("GET", "/cats/\(id)").status == 200)
        #expect(try client.send("GET", "/animals/\(id)").status == 200)
        // A Dog schema's client must never be handed a Cat: every method on /dogs/{id} is a 404.
        let attempts: [(String, String?)] = [
            ("GET", nil), ("PATCH", "{}"), ("PATCH", #"{"lives": 3}"#), ("PUT", #"{"name": "Rex"}"#), ("DELETE", nil),
        ]
        for (method, body) in attempts {
            let response =
                try body.map { try client.send(method, "/dogs/\(id)", json: $0) }
                ?? client.send(method, "/dogs/\(id)")
            CoreDataModelRESTTests.problem(response, 404, "Dog \(id) does not exist")
        }
        let batch = #"{"operations": [{"method": "PATCH", "path": "/dogs/\#(id)", "body": {"lives": 2}}]}"#
        #expect(try client.send("POST", "/_batch", json: batch).status == 404)
        // The cat is as it was.
        let stored = try client.send("GET", "/cats/\(id)")
        #expect(stored.text.contains(#""name":"Tom""#) && !stored.text.contains("lives"), "\(stored.text)")
        #expect(field(stored, "_version")?.doubleValue == 1)
        // The other way round: a Dog at the path of Cat, an entity without subentities of its own.
        let dog = try CoreDataModelRESTTests.id(try client.send("POST", "/dogs", json: #"{"name": "Rex"}"#))
        for (method, body) in [
            ("GET", nil), ("PATCH", #"{"indoor": false}"#), ("PUT", #"{"name": "Tom"}"#), ("DELETE", nil),
        ] {
            let response =
                try body.map { try client.send(method, "/cats/\(dog)", json: $0) }
                ?? client.send(method, "/cats/\(dog)")
            CoreDataModelRESTTests.problem(response, 404, "Cat \(dog) does not exist")
        }
        let kept = try client.send("GET", "/dogs/\(dog)")
        #expect(kept.text.contains(#""name":"Rex""#) && field(kept, "_version")?.doubleValue == 1, "\(kept.text)")
    }

    /// An abstract entity's objects are created at its subentities' paths: its collection takes no
    /// POST (405 naming them, in a batch too), its `_bulk` is no resource, and the document has
    /// neither, so no generated client offers a create that can only fail.
    @Test func anAbstractEntitysCollectionTakesNoPost() throws {
        let fixture = try CoreDataModelRESTTests.serve("Zoo.xcdatamodeld")
        let client = fixture.client
        let post = try client.send("POST", "/animals", json: #"{"name": "Tom"}"#)
        CoreDataModelRESTTests.problem(post, 405, "Animal is abstract")
        #expect(post.header("allow") == "GET, HEAD, PATCH, DELETE")
        #expect(post.text.contains("Cat at /cats"), "\(post.text)")
        CoreDataModelRESTTests.problem(
            try client.send("POST", "/animals/_bulk", json: #"[{"name": "Tom"}]"#), 404, "abstract")
        let options = try client.send("OPTIONS", "/animals")
        #expect(options.status == 204 && options.header("allow") == "GET, HEAD, PATCH, DELETE")
        let batch = #"{"operations": [{"method": "POST", "path": "/animals", "body": {"name": "Tom"}}]}"#
        CoreDataModelRESTTests.problem(try client.send("POST", "/_batch", json: batch), 405, "Animal is abstract")
        #expect(items(try client.send("GET", "/animals")).isEmpty)
        let document = try client.send("GET", "/openapi.json").json
        let paths = try #require(document.objectValue?["paths"]?.objectValue)
        #expect(paths["/animals"]?.objectValue?["post"] == nil && paths["/animals"]?.objectValue?["get"] != nil)
        #expect(paths["/animals/_bulk"] == nil)
        #expect(paths["/cats"]?.objectValue?["post"] != nil && paths["/cats/_bulk"] != nil)
    }

    /// A change that is valid itself but would leave another stored object without its required
    /// relationship conflicts with the stored state (409 naming that object); a body that lacks
    /// its own required relationship does not fit the model (422).
    @Test func leavingAnotherObjectWithoutItsRequiredRelationshipIsAConflict() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/Models/Clinic.json")
        let fixture = try ServerFixture(model: try ObjectModel.load(contentsOf: url))
        let client = fixture.client
        let visit = try client.send("POST", "/appointments", json: #"{"petName": "Tom", "at": "2026-01-02T03:04:05Z"}"#)
        let visitID = try CoreDataModelRESTTests.id(visit)
        let note = try client.send("POST", "/notes", json: #"{"text": "ok", "appointment": \#(visitID)}"#)
        let noteID = try CoreDataModelRESTTests.id(note)
        CoreDataModelRESTTests.problem(
            try client.send("POST", "/notes", json: #"{"text": "alone"}"#), 422, "appointment")
        let emptied = try client.send("PATCH", "/appointments/\(visitID)", json: #"{"notes": []}"#)
        CoreDataModelRESTTests.problem(emptied, 409, "Note \(noteID).appointment")
        // The other object's failing field is in `objects`, not in `errors` (which names the
        // request body's own fields, and which schema-aware clients read as such).
        let objects = emptied.json.objectValue?["objects"]?.arrayValue ?? []
        #expect(objects.count == 1 && objects.first?.objectValue?["entity"] == .string("Note"), "\(emptied.text)")
        #expect(objects.first?.objectValue?["id"] == .integer(noteID))
        #expect(objects.first?.objectValue?["field"] == .string("appointment"))
        #expect(emptied.json.objectValue?["errors"] == nil)
        let replaced = try client.send(
            "PUT", "/appointments/\(visitID)", json: #"{"petName": "Tom", "at": "2026-01-02T03:04:05Z"}"#)
        CoreDataModelRESTTests.problem(replaced, 409, "Note \(noteID).appointment")
        let batch =
            #"{"operations": [{"method": "PATCH", "path": "/appointments/\#(visitID)", "body": {"notes": []}}]}"#
        CoreDataModelRESTTests.problem(
            try client.send("POST", "/_batch", json: batch), 409, "Note \(noteID).appointment")
        // Nothing changed: the note keeps its appointment at its first version.
        let stored = try client.send("GET", "/notes/\(noteID)")
        #expect(field(stored, "appointment") == .integer(visitID) && field(stored, "_version") == .integer(1))
    }
}
