import Foundation
import StrataServer
import StrataTestSupport
import Testing

@testable import Strata

/// Who may read `/_changes`, and what it shows them: bearer tokens as for a list, and
/// `--entity-access` (hidden entities never appear, read-only ones do), on live servers.
@Suite struct ChangesFeedAccessTests {
    /// The entities of the feed's changes from the oldest kept, in order.
    static func entities(_ client: TestClient, _ query: String = "") throws -> [String] {
        let page = try client.send("GET", "/_changes" + (query.isEmpty ? "" : "?" + query))
        #expect(page.status == 200, "\(query): \(page.text)")
        return (page.json.objectValue?["changes"]?.arrayValue ?? []).map {
            $0.objectValue?["entity"]?.stringValue ?? "?"
        }
    }

    @Test func theFeedAsksForTheScopeAListAsksFor() throws {
        let fixture = try ServerFixture(options: AccessControlTests.tokens)
        let client = fixture.client
        let credentials: [(String, [String: String], Int)] = [
            ("no token", [:], 401),
            ("an unknown token", AccessControlTests.bearer("not-a-token-at-all"), 401),
            ("a malformed header", ["Authorization": "Basic abc"], 401),
            ("read", AccessControlTests.bearer(AccessControlTests.reader), 200),
            ("write", AccessControlTests.bearer(AccessControlTests.writer), 200),
            ("admin alone", AccessControlTests.bearer(AccessControlTests.admin), 403),
        ]
        for (name, headers, status) in credentials {
            let list = try client.send("GET", "/books", headers: headers)
            for target in ["/_changes", "/_changes?limit=1", "/_changes?entities=Book"] {
                let feed = try client.send("GET", target, headers: headers)
                #expect(feed.status == status && list.status == status, "\(name) \(target): \(feed.status)")
                #expect(feed.header("WWW-Authenticate") == list.header("WWW-Authenticate"), "\(name) \(target)")
                if status != 200 {
                    #expect(feed.header("Content-Type") == "application/problem+json", "\(name)")
                    #expect(feed.json.objectValue?["changes"] == nil, "\(name)")
                }
            }
        }
        // A refused request learns nothing, not even whether history is kept: the same answer
        // as with history off.
        let off = try ServerFixture {
            AccessControlTests.tokens(&$0)
            $0.history = false
        }
        #expect(try off.client.send("GET", "/_changes").status == 401)
        #expect(
            try off.client.send("GET", "/_changes", headers: AccessControlTests.bearer(AccessControlTests.admin)).status
                == 403)
    }

    @Test func hiddenEntitiesNeverAppearAndReadOnlyOnesDo() throws {
        let fixture = try ServerFixture { $0.entityAccess = ["Book": .hidden, "Author": .readOnly] }
        let client = fixture.client
        let coordinator = try #require(fixture.server.restService).root.coordinator
        // Read-only and hidden entities are written by the library; Tag over HTTP.
        let context = ObjectContext(coordinator: coordinator)
        let author = try context.insert("Author", values: ["name": .string("Le Guin")])
        let book = try context.insert("Book", values: ["title": .string("Lathe")])
        try book.setObject(author, forKey: "author")
        try context.save()
        #expect(try client.send("POST", "/tags", json: #"{"name": "sf"}"#).status == 201)
        try book.setValue(.string("The Lathe of Heaven"), forKey: "title")
        try author.setValue(.string("Ursula K. Le Guin"), forKey: "name")
        try context.save()
        try context.delete(book)
        try context.save()
        #expect(try coordinator.history().count == 4)

        // The author's changes: its insert, its new name, and its books losing the deleted one.
        #expect(try Self.entities(client) == ["Author", "Tag", "Author", "Author"])
        #expect(try Self.entities(client, "entities=Author") == ["Author", "Author", "Author"])
        #expect(try Self.entities(client, "entities=Tag,Author&limit=1") == ["Author"])
        // Naming a hidden entity is naming no entity.
        for (query, named) in [("Book", "Book"), ("Author,Book", "Book"), ("Nothing", "Nothing")] {
            let refused = try client.send("GET", "/_changes?entities=\(query)")
            #expect(refused.status == 400, "\(query)")
            #expect(refused.json.objectValue?["detail"] == .string("entities: no entity \(named)"), "\(query)")
        }
        // Paged one change at a time, the book's changes stay out too.
        let oldest = try coordinator.oldestHistoryToken().description
        let paged = try ChangesFeedTests.follow(client, from: oldest, limit: 1)
        #expect(
            paged.changes.map { $0.objectValue?["entity"]?.stringValue ?? "?" } == [
                "Author", "Tag", "Author", "Author",
            ])
        #expect(!paged.changes.map(\.jsonText).joined().contains("Lathe"))
    }

    @Test func aHiddenSubentityStaysOutWhenItsParentIsAskedFor() throws {
        let model = try ObjectModel.load(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/Models/Clinic.json"))
        let fixture = try ServerFixture(model: model) { $0.entityAccess = ["Vet": .hidden] }
        let client = fixture.client
        let coordinator = try #require(fixture.server.restService).root.coordinator
        let context = ObjectContext(coordinator: coordinator)
        _ = try context.insert(
            "Vet", values: ["name": .string("Dr. Who"), "licence": .string("L1"), "senior": .boolean(true)])
        try context.save()
        #expect(try client.send("POST", "/owners", json: #"{"name": "Ann"}"#).status == 201)
        #expect(try coordinator.history().count == 2)
        #expect(try Self.entities(client) == ["Owner"])
        #expect(try Self.entities(client, "entities=Person") == ["Owner"])
        #expect(try client.send("GET", "/_changes?entities=Vet").status == 400)
    }
}
