import Foundation
import StrataTestSupport
import Testing

@testable import Strata

@Suite struct SQLiteStoreTests {
    @Test func fileHoldsOnlyItsConfigurationAndMetadata() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("logs.sqlite")
        let store = try SQLiteStore(model: conformanceModel, configuration: "Logs", url: url)
        let db = try SQLiteConnection(path: url.path, readOnly: true)
        let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") { $0.text(0) }
        #expect(tables == ["Visit", "_strata_metadata"])
        let metadata = Dictionary(
            uniqueKeysWithValues: try db.query("SELECT key, value FROM _strata_metadata") { ($0.text(0), $0.text(1)) })
        #expect(metadata["uuid"] == store.identifier)
        #expect(metadata["configuration"] == "Logs")
        #expect(metadata["modelVersion"] == "1")
        let hashes = try JSONValue.parse(try #require(metadata["entityHashes"]))
        #expect(hashes == .object(["Visit": .string(conformanceModel.versionHash(of: "Visit")!)]))
        #expect(try db.query("PRAGMA journal_mode") { $0.text(0) } == ["wal"])
    }

    @Test func reopeningKeepsIdentityAndData() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        let first = try SQLiteStore(model: conformanceModel, configuration: "Main", url: url)
        let tag = try newRow(first, "Tag", ["name": .string("kept")])
        try first.save(StoreChanges(inserts: [tag]))
        first.close()
        let second = try SQLiteStore(model: conformanceModel, configuration: "Main", url: url)
        #expect(second.identifier == first.identifier)
        #expect(try second.row(for: tag.id)?.attributes["name"] == .string("kept"))
        // New keys continue after the stored ones.
        #expect(try second.newObjectIDs(entity: "Tag", count: 1)[0].primaryKey! > tag.id.primaryKey!)
    }

    @Test func incompatibleModelIsAClearError() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        _ = try SQLiteStore(model: conformanceModel, configuration: "Main", url: url)
        let changed = try ObjectModel.load(
            json: Array(
                conformanceModelJSON.replacingOccurrences(
                    of: #"{"name": "label", "type": "string"}"#, with: #"{"name": "label", "type": "integer64"}"#
                )
                .utf8))
        do {
            _ = try SQLiteStore(model: changed, configuration: "Main", url: url)
            Issue.record("opened a store with an incompatible model")
        } catch {
            #expect(error.code == .incompatibleModel)
            #expect(error.message.contains("entities changed: Shelf"))
            #expect(error.storeURL == url)
        }
        do {
            _ = try SQLiteStore(model: conformanceModel, configuration: "Logs", url: url)
            Issue.record("opened a store for another configuration")
        } catch {
            #expect(error.code == .configurationMismatch)
            #expect(error.message.contains("'Main'") && error.message.contains("'Logs'"))
        }
    }

    @Test func foreignFilesAreRefused() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("other.sqlite")
        let db = try SQLiteConnection(path: url.path)
        try db.execute("CREATE TABLE t (x)")
        do {
            _ = try SQLiteStore(model: conformanceModel, configuration: nil, url: url)
            Issue.record("opened a foreign SQLite file")
        } catch {
            #expect(error.code == .incompatibleModel)
        }
        try Data("not a database at all, just text that is long enough to have a header".utf8).write(
            to: folder.file("text.sqlite"))
        do {
            _ = try SQLiteStore(model: conformanceModel, configuration: nil, url: folder.file("text.sqlite"))
            Issue.record("opened a text file")
        } catch {
            #expect(error.code == .io)
        }
    }

    @Test func preparedStatementsAreReused() throws {
        let folder = TemporaryDirectory()
        let db = try SQLiteConnection(path: folder.file("x.sqlite").path)
        try db.execute("CREATE TABLE t (x)")
        let first = try db.statement("SELECT x FROM t WHERE x = ?")
        let second = try db.statement("SELECT x FROM t WHERE x = ?")
        #expect(first === second)
    }
}
