import Foundation
import StrataServer
import StrataTestSupport
import Testing

@testable import Strata

#if canImport(Glibc)
    import Glibc
#endif

/// A store that cannot be written (a full disk, a read-only file) answers writes with a 503 that
/// names it, keeps serving reads, changes nothing, and takes writes again once it can, without a
/// restart.
@Suite(.serialized) struct StoreFailureTests {
    static func sqliteStore(_ fixture: ServerFixture, holding entity: String) throws -> SQLiteStore {
        let service = try #require(fixture.server.restService)
        return try #require(service.root.coordinator.stores(for: entity).first as? SQLiteStore)
    }

    static func count(_ fixture: ServerFixture, _ path: String) throws -> Int {
        guard case .array(let items)? = try fixture.client.send("GET", path + "?limit=1000").json.objectValue?["items"]
        else { return -1 }
        return items.count
    }

    static let big = String(repeating: "q", count: 20_000)

    @Test func aFullStoreAnswers503NamingItAndTakesWritesAgainWhenThereIsRoom() throws {
        let fixture = try ServerFixture()
        #expect(try fixture.client.send("POST", "/search-logs", json: #"{"query": "before"}"#).status == 201)
        let activity = try Self.sqliteStore(fixture, holding: "SearchLog")
        try activity.limitPages(to: 0)
        let refused = try fixture.client.send("POST", "/search-logs", json: #"{"query": "\#(Self.big)"}"#)
        #expect(refused.status == 503)
        #expect(refused.header("content-type") == "application/problem+json")
        #expect(refused.header("retry-after") != nil)
        #expect(refused.json.objectValue?["store"] == .string(fixture.activityURL.path))
        #expect(refused.text.contains("full"), "\(refused.text)")
        // A batch across both stores is refused whole: no author appears either.
        let authors = try Self.count(fixture, "/authors")
        let batchBody =
            #"{"operations": [{"method": "POST", "path": "/authors", "body": {"name": "Half"}}, {"method": "POST", "path": "/search-logs", "body": {"query": "\#(Self.big)"}}]}"#
        let batch = try fixture.client.send("POST", "/_batch", json: batchBody)
        #expect(batch.status == 503, "\(batch.text)")
        #expect(try Self.count(fixture, "/authors") == authors)
        // Reads go on, and the other store still takes writes.
        #expect(try Self.count(fixture, "/search-logs") == 1)
        #expect(try fixture.client.send("POST", "/authors", json: #"{"name": "Elsewhere"}"#).status == 201)
        // Room again: the same writes go through, without a restart.
        try activity.limitPages(to: nil)
        #expect(try fixture.client.send("POST", "/search-logs", json: #"{"query": "\#(Self.big)"}"#).status == 201)
        #expect(try fixture.client.send("POST", "/_batch", json: batchBody).status == 200)
        #expect(try Self.count(fixture, "/search-logs") == 3)
    }

    @Test
    func aReadOnlyStoreFileAnswers503AndTakesWritesOnceItIsWritable() throws {
        let folder = TemporaryDirectory()
        func start() throws -> StrataServerInstance {
            var options = ServerOptions()
            options.port = 0
            options.dataDirectory = folder.url.path
            options.durability = .normal
            let server = StrataServerInstance(model: try ObjectModel.example, options: options, log: { _ in })
            try server.start()
            return server
        }
        do {
            let server = try start()
            let client = TestClient(port: server.port)
            #expect(try client.send("POST", "/search-logs", json: #"{"query": "kept"}"#).status == 201)
            server.stop()
        }
        let activity = folder.file("activity.sqlite")
        let file = try UnwritableFile(activity)
        defer { file.restore() }
        let server = try start()
        defer { server.stop() }
        let client = TestClient(port: server.port)
        let refused = try client.send("POST", "/search-logs", json: #"{"query": "refused"}"#)
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.json.objectValue?["store"] == .string(activity.path))
        #expect(try client.send("GET", "/search-logs").status == 200)
        #expect(try client.send("POST", "/authors", json: #"{"name": "Other store"}"#).status == 201)
        file.restore()
        #expect(try client.send("POST", "/search-logs", json: #"{"query": "again"}"#).status == 201)
        guard case .array(let items)? = try client.send("GET", "/search-logs").json.objectValue?["items"] else {
            Issue.record("no list")
            return
        }
        #expect(items.count == 2)
    }
}

/// An SQLite file that SQLite will not write, for every user: its header's write version (byte 18)
/// set past 2, which SQLite takes as a file format it may read but not write. File modes would not
/// do: root, whom CI runs as, writes through them. Mode 0444 is set as well, so that for other
/// users SQLite also opens it read-only, as it opens a file the user cannot write.
final class UnwritableFile {
    let url: URL
    private let writeVersion: UInt8

    /// Makes the (checkpointed, closed) SQLite file at `url` unwritable.
    init(_ url: URL) throws {
        self.url = url
        let handle = try FileHandle(forUpdating: url)
        defer { try? handle.close() }
        try handle.seek(toOffset: 18)
        guard let byte = try handle.read(upToCount: 1)?.first, byte == 1 || byte == 2 else {
            throw TestClientError("\(url.path) is not an SQLite file of format 1 or 2")
        }
        writeVersion = byte
        try handle.seek(toOffset: 18)
        try handle.write(contentsOf: [3])
        chmod(url.path, 0o444)
    }

    /// Makes the file writable again (its header as it was, mode 0644).
    func restore() {
        chmod(url.path, 0o644)
        guard let handle = try? FileHandle(forUpdating: url) else { return }
        defer { try? handle.close() }
        try? handle.seek(toOffset: 18)
        try? handle.write(contentsOf: [writeVersion])
    }
}
