import Foundation
import StrataHTTP
import StrataTestSupport
import Synchronization
import Testing

@testable import Strata
@testable import StrataServer

/// `GET /_export` on a live server: every object the caller may read in one Core Data store file,
/// from one snapshot, with the history token of exactly what it holds.
@Suite struct ExportRouteTests {
    /// Saves `response`'s body as a file in `folder`.
    static func save(_ response: ClientResponse, in folder: TemporaryDirectory, _ name: String) throws -> URL {
        let url = folder.file(name)
        try Data(response.body).write(to: url)
        return url
    }

    /// The files exports are building or left in the server's data folder.
    static func leftovers(_ fixture: ServerFixture) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: fixture.folder.url.path).filter {
            $0.contains(SnapshotExports.filePrefix)
        }
    }

    @Test func readersGetTheFileAndOthersAProblem() throws {
        let fixture = try ServerFixture(options: AccessControlTests.tokens)
        let client = fixture.client
        let writer = AccessControlTests.bearer(AccessControlTests.writer)
        #expect(try client.send("POST", "/authors", json: #"{"name": "Ann"}"#, headers: writer).status == 201)
        for (label, headers, status) in [
            ("no token", [:], 401), ("an unknown token", AccessControlTests.bearer("not-a-token-at-all"), 401),
            ("an admin token", AccessControlTests.bearer(AccessControlTests.admin), 403),
        ] as [(String, [String: String], Int)] {
            let refused = try client.send("GET", "/_export", headers: headers)
            #expect(refused.status == status, "\(label)")
            #expect(refused.header("content-type") == "application/problem+json", "\(label)")
            #expect(refused.header("strata-history-token") == nil, "\(label)")
        }
        for secret in [AccessControlTests.reader, AccessControlTests.writer] {
            let response = try client.send("GET", "/_export", headers: AccessControlTests.bearer(secret))
            #expect(response.status == 200)
            #expect(response.header("content-type") == "application/vnd.sqlite3")
            #expect(response.header("content-length") == String(response.body.count))
            #expect(response.header("content-disposition") == #"attachment; filename="Library.sqlite""#)
            #expect(response.header("strata-history-token") != nil)
            #expect(Array(response.body.prefix(16)) == Array("SQLite format 3\0".utf8))
        }
        let head = try client.send("HEAD", "/_export", headers: AccessControlTests.bearer(AccessControlTests.reader))
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(Int(head.header("content-length") ?? "") ?? 0 > 0)
        let asked = try client.send("GET", "/_export?entities=Book", headers: writer)
        #expect(asked.status == 400)
        #expect(asked.header("content-type") == "application/problem+json")
        #expect(try client.send("POST", "/_export", json: "{}", headers: writer).status == 405)
        #expect(try Self.leftovers(fixture) == [])
    }

    @Test func theFileReadsBackToTheServersObjectsWithoutHiddenOnes() throws {
        let fixture = try ServerFixture { $0.entityAccess = ["SearchLog": .hidden] }
        let client = fixture.client
        let coordinator = try #require(fixture.server.restService).root.coordinator
        #expect(try client.send("POST", "/authors", json: #"{"name": "Ursula"}"#).status == 201)
        #expect(try client.send("POST", "/tags", json: #"{"name": "fantasy"}"#).status == 201)
        #expect(try client.send("POST", "/tags", json: #"{"name": "classic"}"#).status == 201)
        let book =
            #"{"title": "Earthsea", "year": 1968, "price": "12.45", "author": 1, "tags": [1, 2], "#
            + #""published": "2024-03-01T10:00:00.25Z", "sku": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "#
            + #""metadata": {"series": "Hainish"}}"#
        #expect(try client.send("POST", "/books", json: book).status == 201)
        #expect(try client.send("POST", "/books", json: #"{"title": "Lathe", "author": 1, "tags": [2]}"#).status == 201)
        #expect(try client.send("PATCH", "/books/2", json: #"{"year": 1971}"#).status == 200)
        _ = try coordinator.save(
            SaveRequest(inserts: [StoreRow(id: .temporary(entity: "SearchLog"), attributes: ["query": .string("q")])]))

        let response = try client.send("GET", "/_export")
        #expect(response.status == 200)
        let folder = TemporaryDirectory()
        let file = try Self.save(response, in: folder, "Seed.sqlite")
        let db = try SQLiteConnection(path: file.path, mode: .readOnly)
        #expect(try db.query("SELECT count(*) FROM ZBOOK") { $0.int64(0) } == [2])
        #expect(try db.query("SELECT count(*) FROM ZSEARCHLOG") { $0.int64(0) } == [0])
        #expect(try db.query("PRAGMA journal_mode") { $0.text(0) } == ["delete"])

        let model = try ObjectModel.example
        let again = folder.file("again.sqlite")
        _ = try CoreDataImporter.importStore(at: file, model: model, targets: ["Default": again])
        let reread = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: again)])
        defer { for store in reread.coordinator.stores { reread.coordinator.remove(store) } }
        #expect(try reread.coordinator.count(FetchRequest(entityName: "SearchLog")) == 0)
        // Everything else is as the server holds it, once its one SearchLog is gone.
        let served = try coordinator.fetch(FetchRequest(entityName: "SearchLog"))
        _ = try coordinator.save(SaveRequest(deletes: served.map { StoreDeletion(id: $0.id, expectedVersion: nil) }))
        try expectSameObjects(model, coordinator, reread.coordinator, "GET /_export")
        #expect(try Self.leftovers(fixture) == [])
    }

    @Test func aClientThatLeavesMidDownloadLeavesNoFileAndTheServerAnswersOthers() throws {
        let fixture = try ServerFixture()
        let coordinator = try #require(fixture.server.restService).root.coordinator
        _ = try coordinator.save(
            SaveRequest(
                inserts: (0..<3000).map {
                    StoreRow(
                        id: .temporary(entity: "Book"),
                        attributes: [
                            "title": .string(String(repeating: "t", count: 200) + "\($0)"), "year": .integer(1),
                        ])
                }))
        for _ in 0..<3 {
            let connection = try TestConnection(port: fixture.server.port)
            try connection.send("GET /_export HTTP/1.1\r\nHost: localhost\r\n\r\n")
            var byte: UInt8 = 0
            _ = recv(connection.descriptor, &byte, 1, 0)
            connection.disconnect()
        }
        #expect(try fixture.client.send("GET", "/books/1").status == 200)
        try waitUntil { try Self.leftovers(fixture).isEmpty }
        let whole = try fixture.client.send("GET", "/_export")
        #expect(whole.status == 200 && whole.body.count > 600_000)
    }

    @Test func aLongExportWritesProgressLines() throws {
        let folder = TemporaryDirectory()
        let model = try ObjectModel.example
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(
            type: .sqlite, url: folder.file("all.sqlite"), options: StoreOptions(recordsHistory: true))
        defer { for store in coordinator.stores { coordinator.remove(store) } }
        _ = try coordinator.save(
            SaveRequest(
                inserts: (0..<5000).map {
                    StoreRow(
                        id: .temporary(entity: "Book"),
                        attributes: ["title": .string("b\($0)"), "format": .string("e")])
                }))
        let lines = Mutex<[String]>([])
        let service = try RESTService(
            root: ObjectContext(coordinator: coordinator), reads: coordinator,
            export: SnapshotExportSettings(
                directory: folder.file("exports"), log: { line in lines.withLock { $0.append(line) } },
                progressSeconds: 0))
        let response = service.handle(HTTPRequest(method: "GET", path: "/_export"))
        #expect(response.status == 200)
        let size = try #require(response.file?.size)
        let logged = lines.withLock { $0 }
        #expect(
            logged.contains { $0.hasPrefix("strata: GET /_export: 2000 of 5000 objects written (40%)") }, "\(logged)")
        #expect(logged.last?.hasPrefix("strata: GET /_export: 5000 objects, \(size) bytes in ") == true, "\(logged)")
        #expect(logged.last?.hasSuffix(", history token \(try coordinator.currentHistoryToken())") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file("exports").path) == [])
    }
}
