import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `strata migrate` with Core Data mapping models on the project's own fixture
/// (``NotebookMappingFixture``): found on their own beside the model bundle, given with
/// `--mapping`, and a mapping naming a custom policy class refused with nothing changed. These
/// always run; ``MappingCommandLineTests`` adds the Moody material when it is there.
@Suite struct MappingFixtureCommandLineTests {
    static func rows(_ url: URL, _ sql: String) throws -> [String] {
        let db = try SQLiteConnection(path: url.path, readOnly: true)
        return try db.query(sql) { row in
            (0..<row.columnCount).map { row.isNull($0) ? "nil" : row.text($0) }.joined(separator: "|")
        }
    }

    @Test func migrateFindsTheMappingModelsBesideTheBundle() throws {
        let folder = TemporaryDirectory()
        let bundle = try NotebookMappingFixture.write(in: folder.url)
        let store = folder.file("notes.sqlite")
        try NotebookMappingFixture.seedVersion1(at: store, bundle: bundle)
        let toThree = [
            "migrate", "--model", bundle.appendingPathComponent("Notes 3.xcdatamodel").path, "--history", bundle.path,
            "--store", "Default=\(store.path)",
        ]
        let dryRun = try CommandLineTests.run(toThree + ["--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.error)")
        #expect(dryRun.output.contains("step 1 → 2 (mapping model Notes-Notes 2):"), "\(dryRun.output)")
        #expect(dryRun.output.contains("entity mapping NoteToArticle"), "\(dryRun.output)")
        #expect(dryRun.output.contains("step 2 → 3:"), "\(dryRun.output)")

        // To the current version 4 the 3 → 4 mapping needs the app's policy class: refused, nothing changed.
        let before = try Data(contentsOf: store)
        let refused = try CommandLineTests.run(["migrate", "--model", bundle.path, "--store", "Default=\(store.path)"])
        #expect(refused.status == 1)
        let said = refused.output + refused.error
        #expect(
            said.contains("'\(NotebookMappingFixture.statusPolicyClass)'")
                && said.contains("entity mapping ArticleToArticle"), "\(said)")
        #expect(try Data(contentsOf: store) == before)

        let migrated = try CommandLineTests.run(toThree)
        #expect(migrated.status == 0, "\(migrated.error)")
        #expect(try Self.rows(store, NotebookMappingFixture.articlesQuery) == NotebookMappingFixture.migratedArticles)
    }

    @Test func migrateTakesAMappingModelGivenWithTheOption() throws {
        let folder = TemporaryDirectory()
        // The bundle alone, in a folder without mapping models; the mapping model elsewhere.
        let bundle = try XcodeModelWriter.writeBundle(
            named: "Notes", versions: NotebookMappingFixture.versions, current: "Notes 4",
            in: folder.file("models"))
        let mapping = try XcodeMappingWriter.write(
            NotebookMappingFixture.notesToNotes2(), named: "Notes-Notes 2", in: folder.file("mappings"))
        let store = folder.file("notes.sqlite")
        try NotebookMappingFixture.seedVersion1(at: store, bundle: bundle)
        let toTwo = [
            "migrate", "--model", bundle.appendingPathComponent("Notes 2.xcdatamodel").path, "--history", bundle.path,
            "--store", "Default=\(store.path)",
        ]
        let inferred = try CommandLineTests.run(toTwo + ["--dry-run"])
        #expect(!inferred.output.contains("mapping model"), "\(inferred.output)")
        let given = try CommandLineTests.run(toTwo + ["--dry-run", "--mapping", mapping.path])
        #expect(given.status == 0, "\(given.error)")
        #expect(given.output.contains("step 1 → 2 (mapping model Notes-Notes 2):"), "\(given.output)")
        #expect(given.output.contains("entity mapping NoteToArticle"), "\(given.output)")

        let migrated = try CommandLineTests.run(toTwo + ["--mapping", mapping.path])
        #expect(migrated.status == 0, "\(migrated.error)")
        #expect(try Self.rows(store, NotebookMappingFixture.articlesQuery) == NotebookMappingFixture.migratedArticles)
    }
}

/// `strata migrate --store Default=postgresql://… --mapping PATH` on a store in the test run's
/// PostgreSQL cluster: dry run, a refusal that changes nothing, the migration.
@Suite(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct PostgreSQLMappingCommandLineTests {
    @Test func migrateRunsAMappingModelOnAPostgreSQLStore() throws {
        let folder = TemporaryDirectory()
        let bundle = try XcodeModelWriter.writeBundle(
            named: "Notes", versions: NotebookMappingFixture.versions, current: "Notes 4",
            in: folder.file("models"))
        let mapping = try XcodeMappingWriter.write(
            NotebookMappingFixture.notesToNotes2(), named: "Notes-Notes 2", in: folder.file("mappings"))
        let url = try folder.postgreSQLURL(name: "notes")
        let schema = folder.postgreSQLSchema(name: "notes")
        do {
            let store = try PostgreSQLStore(
                model: try ObjectModel.load(contentsOf: bundle.appendingPathComponent("Notes.xcdatamodel")),
                configuration: nil, url: url)
            defer { store.close() }
            try NotebookMappingFixture.seedVersion1(into: store)
        }
        func rows(_ sql: String) throws -> [String] {
            try PostgreSQLTestServer.psql("SET search_path TO \(schema); \(sql)").split(separator: "\n").map(
                String.init)
        }
        let version = #"SELECT value FROM "_strata_metadata" WHERE key = 'modelVersion'"#
        let model = { (name: String) in bundle.appendingPathComponent("\(name).xcdatamodel").path }
        let store = ["--history", bundle.path, "--store", "Default=\(url.absoluteString)"]

        let dryRun = try CommandLineTests.run(
            ["migrate", "--model", model("Notes 3")] + store + ["--mapping", mapping.path, "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.error)")
        #expect(dryRun.output.contains("step 1 → 2 (mapping model Notes-Notes 2):"), "\(dryRun.output)")
        #expect(dryRun.output.contains("entity mapping NoteToArticle"), "\(dryRun.output)")
        #expect(dryRun.output.contains("postgresql://"), "\(dryRun.output)")
        #expect(try rows(version) == ["1"])

        // The mapping's headline expression edited into one Strata does not evaluate: refused.
        let unsupported = try XcodeMappingWriter.write(
            NotebookMappingFixture.notesToNotes2(
                headline: .function(operand: .keyPath("source", "title"), selector: "uppercaseString", arguments: [])),
            named: "Notes-Notes 2", in: folder.file("unsupported"))
        let refused = try CommandLineTests.run(
            ["migrate", "--model", model("Notes 3")] + store + ["--mapping", unsupported.path])
        #expect(refused.status == 1)
        #expect(
            (refused.output + refused.error).contains(#"FUNCTION($source.title, "uppercaseString")"#),
            "\(refused.output) \(refused.error)")
        #expect(try rows(version) == ["1"])

        let migrated = try CommandLineTests.run(
            ["migrate", "--model", model("Notes 3")] + store + ["--mapping", mapping.path])
        #expect(migrated.status == 0, "\(migrated.error)")
        #expect(try rows(version) == ["3"])
        #expect(try rows(NotebookMappingFixture.postgreSQLArticlesQuery) == NotebookMappingFixture.migratedArticles)
    }
}
