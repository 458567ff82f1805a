import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// A change of searchability migrates a store: the full-text index is added and built for the
/// objects already there, or dropped; a model without searchable attributes keeps its hashes.
@Suite struct FullTextMigrationTests {
    static func model(searchable: Bool) throws -> ObjectModel {
        try ObjectModel.load(
            json: Array(
                """
                {"name": "Notes", "version": "\(searchable ? 2 : 1)", "entities": [
                  {"name": "Note", "attributes": [
                     {"name": "text", "type": "string"\(searchable ? ", \"searchable\": true" : "")},
                     {"name": "n", "type": "integer32"}]}
                ]}
                """.utf8))
    }

    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqlite, postgresql
        var testDescription: String { rawValue }
        static var available: [Kind] { PostgreSQLTestServer.requirement.runs ? [.sqlite, .postgresql] : [.sqlite] }
    }

    /// Opens the store of `kind` in `folder` with `model`, migrating it, runs `body` on a context.
    static func with(
        _ kind: Kind, _ folder: TemporaryDirectory, _ model: ObjectModel, _ body: (ObjectContext) throws -> Void
    ) throws {
        let coordinator = StoreCoordinator(model: model)
        let url = kind == .sqlite ? folder.file("notes.sqlite") : try folder.postgreSQLURL(name: "notes")
        let store = try coordinator.addStore(
            type: kind == .sqlite ? .sqlite : .postgresql, url: url, options: StoreOptions(migrate: true))
        defer { store.close() }
        try body(ObjectContext(coordinator: coordinator))
    }

    static func found(_ context: ObjectContext, _ word: String) throws -> [Int64] {
        try context.fetch(
            FetchRequest(
                entityName: "Note", predicate: .textSearch(try TextSearch("text", matching: word)),
                sortDescriptors: [SortKey("n")])
        ).map { object in
            guard case .integer(let n) = try object.value(forKey: "n") else { return -1 }
            return n
        }
    }

    /// The names of the store's full-text objects: FTS5 tables and triggers, or `tsvector` columns.
    static func indexParts(_ kind: Kind, _ folder: TemporaryDirectory) throws -> [String] {
        switch kind {
        case .sqlite:
            let db = try SQLiteConnection(path: folder.file("notes.sqlite").path)
            return try db.query(
                "SELECT name FROM sqlite_master WHERE name LIKE '\\_strata\\_fts\\_%' ESCAPE '\\' "
                    + "AND (type = 'trigger' OR sql LIKE 'CREATE VIRTUAL TABLE%') ORDER BY name"
            ) { $0.text(0) }
        case .postgresql:
            let schema = folder.postgreSQLSchema(name: "notes")
            let output = try PostgreSQLTestServer.psql(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = '\(schema)' "
                    + "AND column_name LIKE '\\_fts\\_%' ORDER BY 1")
            return output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                $0.hasPrefix("_fts_")
            }
        }
    }

    @Test func aModelWithoutSearchableAttributesKeepsItsHashes() throws {
        let plain = try Self.model(searchable: false)
        let searchable = try Self.model(searchable: true)
        #expect(plain.versionHash(of: "Note") != searchable.versionHash(of: "Note"))
        // The hash of an attribute that is not searchable is the one written before searchability
        // was known: nothing about it enters the hash.
        let reread = try ObjectModel.load(json: Array(searchable.canonicalJSON.utf8))
        #expect(reread.attribute("text", of: "Note")?.isSearchable == true)
        #expect(reread.versionHash(of: "Note") == searchable.versionHash(of: "Note"))
        var unmarked = searchable
        unmarked = try ObjectModel.load(
            json: Array(searchable.canonicalJSON.replacingOccurrences(of: #","searchable":true"#, with: "").utf8))
        #expect(unmarked.versionHash(of: "Note") == plain.versionHash(of: "Note"))
    }

    @Test func onlyStringAttributesCanBeSearchable() {
        let json =
            #"{"name": "M", "entities": [{"name": "E", "attributes": [{"name": "n", "type": "integer32", "searchable": true}]}]}"#
        #expect { try ObjectModel.load(json: Array(json.utf8)) } throws: {
            "\($0)".contains("only a string attribute can be searchable")
        }
    }

    @Test(arguments: Kind.available) func aMigrationAddsTheIndexForExistingObjectsAndDropsIt(kind: Kind) throws {
        let folder = TemporaryDirectory()
        try Self.with(kind, folder, try Self.model(searchable: false)) { context in
            for (n, text) in ["red fox", "blue whale", "red whale"].enumerated() {
                _ = try context.insert("Note", values: ["text": .string(text), "n": .integer(Int64(n))])
            }
            try context.save()
        }
        #expect(try Self.indexParts(kind, folder).isEmpty)
        try Self.with(kind, folder, try Self.model(searchable: true)) { context in
            #expect(try Self.found(context, "whale") == [1, 2])
            _ = try context.insert("Note", values: ["text": .string("green whale"), "n": .integer(3)])
            try context.save()
            #expect(try Self.found(context, "whale") == [1, 2, 3])
        }
        #expect(
            try Self.indexParts(kind, folder)
                == (kind == .sqlite
                    ? ["_strata_fts_Note", "_strata_fts_Note_ad", "_strata_fts_Note_ai", "_strata_fts_Note_au"]
                    : ["_fts_text"]))
        try Self.with(kind, folder, try Self.model(searchable: false)) { context in
            #expect(try Self.indexParts(kind, folder).isEmpty)
            // Writes go on without the index, and a search is refused.
            _ = try context.insert("Note", values: ["text": .string("grey whale"), "n": .integer(4)])
            try context.save()
            #expect(throws: ContextError.self) { try Self.found(context, "whale") }
        }
        try Self.with(kind, folder, try Self.model(searchable: true)) { context in
            let found = try Self.found(context, "whale")
            #expect(found == [1, 2, 3, 4])
        }
    }
}

extension FullTextMigrationTests {
    static func coreDataModel(_ attributes: String) throws -> ObjectModel {
        let folder = TemporaryDirectory()
        let model = folder.file("Notes.xcdatamodel")
        try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
        let contents = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Note" representedClassName="Note" syncable="YES">
                    \(attributes)
                </entity>
            </model>
            """
        try Data(contents.utf8).write(to: model.appendingPathComponent("contents"))
        return try ObjectModel.load(contentsOf: model)
    }

    @Test func coreDataModelsMarkSearchableAttributesInUserInfoOrForSpotlight() throws {
        let model = try Self.coreDataModel(
            """
            <attribute name="text" optional="YES" attributeType="String">
                <userInfo><entry key="strata.searchable" value="YES"/></userInfo>
            </attribute>
            <attribute name="title" optional="YES" attributeType="String" spotlightIndexingEnabled="YES"/>
            <attribute name="plain" optional="YES" attributeType="String"/>
            <attribute name="count" optional="YES" attributeType="Integer 32" spotlightIndexingEnabled="YES"/>
            """)
        #expect(model.attributes(of: "Note").filter(\.isSearchable).map(\.name).sorted() == ["text", "title"])
        #expect(model.sourceWarnings.contains { $0.message.contains("indexed in Spotlight") })
        #expect {
            try Self.coreDataModel(
                """
                <attribute name="n" optional="YES" attributeType="Integer 32">
                    <userInfo><entry key="strata.searchable" value="YES"/></userInfo>
                </attribute>
                """)
        } throws: { "\($0)".contains("only a String attribute can be searchable") }
    }
}
