import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Text holding a NUL byte survives every SQLite path whole: a store's writes, reads and
/// predicates, a migration (copied rows and a bound default), and a split (copied rows and the
/// source read through a snapshot connection).
@Suite struct NulTextTests {
    static let title = "before\u{0}after"
    static let query = "q\u{0}uery"

    static func string(_ row: StoreRow?, _ name: String) -> String? {
        if case .string(let text)? = row?.attributes[name] { return text }
        return nil
    }

    /// A Default store of the example model holding a book and a search log with NUL bytes.
    static func makeSource(_ url: URL) throws -> (book: ObjectID, log: ObjectID) {
        let store = try SQLiteStore(model: try ObjectModel.example, configuration: nil, url: url)
        defer { store.close() }
        let book = StoreRow(
            id: try store.newObjectIDs(entity: "Book", count: 1)[0],
            attributes: ["title": .string(title), "format": .string("paper\u{0}back"), "available": .boolean(true)])
        let log = StoreRow(
            id: try store.newObjectIDs(entity: "SearchLog", count: 1)[0], attributes: ["query": .string(query)])
        try store.save(StoreChanges(inserts: [book, log]))
        return (book.id, log.id)
    }

    @Test func storeWritesReadsAndMatchesTextWithNul() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("all.sqlite")
        let (bookID, _) = try Self.makeSource(url)
        let store = try SQLiteStore(model: try ObjectModel.example, configuration: nil, url: url)
        defer { store.close() }
        let row = try store.row(for: bookID)
        #expect(Self.string(row, "title") == Self.title)
        #expect(Self.string(row, "format") == "paper\u{0}back")
        let matched = try store.fetch(
            FetchRequest(
                entityName: "Book", predicate: try FetchPredicate(format: "title == %@", .value(.string(Self.title)))))
        #expect(matched.map(\.id) == [bookID])
        let cut = try store.fetch(
            FetchRequest(
                entityName: "Book", predicate: try FetchPredicate(format: "title == %@", .value(.string("before")))))
        #expect(cut.isEmpty, "a NUL byte must not end the bound text")
        // An update binds the text again.
        try store.save(
            StoreChanges(updates: [
                StoreUpdate(id: bookID, expectedVersion: 1, attributes: ["title": .string("x\u{0}y")])
            ]))
        #expect(Self.string(try store.row(for: bookID), "title") == "x\u{0}y")
    }

    @Test func migrationKeepsTextWithNulAndBindsDefaultsWithNul() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("notes.sqlite")
        let v1 = try ObjectModel.load(
            json: Array(
                #"{"name": "Notes", "version": "1", "entities": [{"name": "Note", "attributes": [{"name": "text", "type": "string"}]}]}"#
                    .utf8))
        let v2 = try ObjectModel.load(
            json: Array(
                #"""
                {"name": "Notes", "version": "2", "entities": [{"name": "Note", "attributes": [
                  {"name": "text", "type": "string"},
                  {"name": "label", "type": "string", "optional": false, "default": "la\u0000bel"}]}]}
                """#.utf8))
        let id: ObjectID
        do {
            let store = try SQLiteStore(model: v1, configuration: nil, url: url)
            let row = StoreRow(
                id: try store.newObjectIDs(entity: "Note", count: 1)[0], attributes: ["text": .string("no\u{0}te")])
            try store.save(StoreChanges(inserts: [row]))
            store.close()
            id = row.id
        }
        let migrated = try SQLiteStore(model: v2, configuration: nil, url: url, options: StoreOptions(migrate: true))
        defer { migrated.close() }
        let row = try migrated.row(for: id)
        #expect(Self.string(row, "text") == "no\u{0}te")
        #expect(Self.string(row, "label") == "la\u{0}bel")
    }

    @Test func splitCopiesTextWithNul() throws {
        let folder = TemporaryDirectory()
        let source = folder.file("all.sqlite")
        let (bookID, logID) = try Self.makeSource(source)
        let before = try Data(contentsOf: source)
        let targets = ["Catalog": folder.file("catalog.sqlite"), "Activity": folder.file("activity.sqlite")]
        let report = try StoreSplitter.split(model: try ObjectModel.example, source: source, targets: targets)
        #expect(report.outcome == .split)
        #expect(try Data(contentsOf: source) == before)
        let coordinator = StoreCoordinator(model: try ObjectModel.example)
        let catalog = try coordinator.addStore(type: .sqlite, configuration: "Catalog", url: targets["Catalog"]!)
        let activity = try coordinator.addStore(type: .sqlite, configuration: "Activity", url: targets["Activity"]!)
        let book = try catalog.fetch(FetchRequest(entityName: "Book")).first
        #expect(book?.id.primaryKey == bookID.primaryKey)
        #expect(Self.string(book, "title") == Self.title)
        let log = try activity.fetch(FetchRequest(entityName: "SearchLog")).first
        #expect(log?.id.primaryKey == logID.primaryKey)
        #expect(Self.string(log, "query") == Self.query)
    }
}
