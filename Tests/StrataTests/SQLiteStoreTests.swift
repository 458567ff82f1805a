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

    /// Readers map the file (``StoreOptions/memoryMapBytes``), so that a read of a page the kernel
    /// caches is no system call; with 0 nothing is mapped and every read is a `pread`.
    @Test func readersMapTheFileUnlessToldNot() throws {
        let folder = TemporaryDirectory()
        for bytes in [StoreOptions.defaultMemoryMapBytes, 0] {
            let url = folder.file("mapped-\(bytes).sqlite")
            let writer = try SQLiteStore(model: conformanceModel, configuration: "Main", url: url)
            let tag = try newRow(writer, "Tag", ["name": .string("mapped")])
            try writer.save(StoreChanges(inserts: [tag]))
            // Closing checkpoints the WAL into the file: the row is read from the file itself, not
            // from the WAL (which SQLite reads with pread whatever the map).
            writer.close()
            let store = try SQLiteStore(
                model: conformanceModel, configuration: "Main", url: url,
                options: StoreOptions(memoryMapBytes: bytes))
            defer { store.close() }
            #expect(try store.row(for: tag.id)?.attributes["name"] == .string("mapped"))
            let maps = try #require(try FileHandle(forReadingAtPath: "/proc/self/maps")?.readToEnd())
            let path = url.resolvingSymlinksInPath().path
            let mapped = String(decoding: maps, as: UTF8.self).split(separator: "\n").contains {
                $0.hasSuffix(" " + path)
            }
            #expect(mapped == (bytes > 0), "\(bytes) bytes: \(path) mapped: \(mapped)")
        }
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

    /// The SQL kept for a request answers later requests with other values, windows and orders
    /// rightly, also once the cache has been emptied for being full.
    @Test func requestSQLIsKeptPerRequestNotPerValue() throws {
        let folder = TemporaryDirectory()
        let store = try SQLiteStore(model: conformanceModel, configuration: "Main", url: folder.file("main.sqlite"))
        var rows: [StoreRow] = []
        for year in 1990..<2030 {
            rows.append(try newRow(store, "Book", ["title": .string("b\(year)"), "year": .integer(Int64(year))]))
        }
        try store.save(StoreChanges(inserts: rows))
        func years(_ format: String, limit: Int? = nil, offset: Int = 0, ascending: Bool = true) throws -> [Int64] {
            var request = FetchRequest(
                entityName: "Book", predicate: try FetchPredicate(format: format),
                sortDescriptors: [SortKey("year", ascending: ascending)])
            request.fetchLimit = limit
            request.fetchOffset = offset
            return try store.fetch(request).compactMap {
                if case .integer(let year)? = $0.attributes["year"] { return year }
                return nil
            }
        }
        for round in 0..<3 {
            for threshold in Int64(1990)..<2030 {
                let expected = Array(max(threshold + 1, 1990)..<2030)
                #expect(try years("year > \(threshold)") == expected, "round \(round)")
                #expect(try years("year > \(threshold)", limit: 3, offset: 1) == Array(expected.dropFirst().prefix(3)))
                #expect(try years("year > \(threshold)", ascending: false) == expected.reversed())
            }
            // More distinct requests than the cache keeps.
            for title in 0..<(SQLiteStore.fetchSQLLimit + 10) { _ = try years("title == 'x\(title)'") }
        }
    }

    /// Text that Swift calls equal but SQLite does not (precomposed and decomposed accents) never
    /// shares kept SQL: each request binds its own bytes.
    @Test func canonicallyEqualTextIsNotAnsweredFromAnotherRequestsSQL() throws {
        let folder = TemporaryDirectory()
        let store = try SQLiteStore(model: conformanceModel, configuration: "Main", url: folder.file("main.sqlite"))
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed && Array(composed.utf8) != Array(decomposed.utf8))
        try store.save(
            StoreChanges(inserts: [
                try newRow(store, "Book", ["title": .string(composed), "year": .integer(1)]),
                try newRow(store, "Book", ["title": .string(decomposed), "year": .integer(2)]),
            ]))
        func years(_ title: String) throws -> [AttributeValue?] {
            let predicate = FetchPredicate.comparison(Comparison(.keyPath("title"), .equal, .constant(.string(title))))
            return try store.fetch(FetchRequest(entityName: "Book", predicate: predicate)).map { $0.attributes["year"] }
        }
        let first = try years(composed)
        let second = try years(decomposed)
        store.fetchSQL.withLock { $0.removeAll() }
        #expect(try years(decomposed) == second)
        #expect(try years(composed) == first)
        #expect(first == [.integer(1)] && second == [.integer(2)], "\(first) \(second)")
    }
}
