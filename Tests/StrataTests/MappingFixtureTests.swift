import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Core Data mapping models on the project's own fixture (``NotebookMappingFixture``: a model
/// bundle with four versions and two `.xcmappingmodel`s beside it, written in Xcode's formats):
/// read, run through a mapped and an inferred step on a store Strata wrote with version 1, and
/// refused, with nothing written, when they need what Strata cannot run. These always run; the
/// Moody tests (``MappingModelTests``) add real material when it is there.
@Suite struct MappingFixtureTests {
    /// A folder with the bundle and its mapping models, and a version 1 store.
    struct Setup {
        let folder = TemporaryDirectory()
        let bundle: URL
        let store: URL

        init() throws {
            bundle = try NotebookMappingFixture.write(in: folder.url)
            store = folder.file("notes.sqlite")
            try NotebookMappingFixture.seedVersion1(at: store, bundle: bundle)
        }

        func version(_ name: String) throws -> ObjectModel {
            try ObjectModel.load(contentsOf: bundle.appendingPathComponent("\(name).xcdatamodel"))
        }

        var mappings: [MappingModel] {
            get throws { try MappingModel.discover(near: bundle).map { try MappingModel.load(contentsOf: $0) } }
        }

        /// Opens the store with `version`, migrating it through the bundle's versions and `mappings`.
        func migrate(
            to version: String, mappings: [MappingModel], policies: [String: any EntityMigrationPolicy] = [:]
        ) throws {
            let coordinator = StoreCoordinator(model: try self.version(version))
            let opened = try coordinator.addStore(
                type: .sqlite, configuration: nil, url: store,
                options: StoreOptions(
                    durability: .normal, migrate: true,
                    modelHistory: try ObjectModel.loadCoreDataModelVersions(at: bundle), mappingModels: mappings,
                    migrationPolicies: policies))
            coordinator.remove(opened)
        }
    }

    static func rows(_ url: URL, _ sql: String) throws -> [String] {
        let db = try SQLiteConnection(path: url.path, readOnly: true)
        return try db.query(sql) { row in
            (0..<row.columnCount).map { row.isNull($0) ? "nil" : row.text($0) }.joined(separator: "|")
        }
    }

    @Test func readsTheMappingModelsAsXcodeWritesThem() throws {
        let setup = try Setup()
        let found = MappingModel.discover(near: setup.bundle)
        #expect(found.map(\.lastPathComponent) == ["Notes 3-Notes 4.xcmappingmodel", "Notes-Notes 2.xcmappingmodel"])
        let renaming = try MappingModel.load(contentsOf: try #require(found.last))
        #expect(renaming.name == "Notes-Notes 2")
        #expect(renaming.sourceModelName == "Notes")
        #expect(renaming.destinationModelName == "Notes 2")
        // Listed in reverse in the file; mappingnumber orders them.
        #expect(renaming.entityMappings.map(\.name) == ["FolderToFolder", "PersonToPerson", "NoteToArticle"])
        let note = try #require(renaming.entityMapping(named: "NoteToArticle"))
        #expect(note.sourceEntity == "Note")
        #expect(note.destinationEntity == "Article")
        #expect(note.mappingType == "Undefined")
        #expect(note.policyClassName == nil)
        let attributes = Dictionary(uniqueKeysWithValues: note.attributeMappings.map { ($0.name, $0.expression) })
        #expect(attributes["headline"] == .keyPath(variable: "source", path: ["title"]))
        #expect(attributes["folderName"] == .keyPath(variable: "source", path: ["folder", "name"]))
        #expect(attributes["status"] == .constant(.string("draft")))
        #expect(attributes["body"] == .some(nil))
        let writer = note.relationshipMappings.first { $0.name == "writer" }?.expression
        #expect(
            writer?.description
                == #"FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "PersonToPerson", $source.author)"#
        )
        let folder = try #require(renaming.entityMapping(named: "FolderToFolder"))
        #expect(
            folder.relationshipMappings.first { $0.name == "articles" }?.expression?.description
                == #"FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "NoteToArticle", $source.notes)"#
        )
        let statuses = try MappingModel.load(contentsOf: found[0].appendingPathComponent("xcmapping.xml"))
        #expect(statuses.name == "Notes 3-Notes 4")
        #expect(
            statuses.entityMapping(named: "ArticleToArticle")?.policyClassName
                == NotebookMappingFixture.statusPolicyClass)
        // An archived FUNCTION with another selector reads as itself.
        let other = ArchivedExpression.function(
            operand: .keyPath("source", "title"), selector: "uppercaseString", arguments: [])
        #expect(ExpressionArchive.decode(other.archive).description == #"FUNCTION($source.title, "uppercaseString")"#)
        #expect(
            ExpressionArchive.decode(ArchivedExpression.constant(.integer(70000)).archive) == .constant(.integer(70000))
        )
    }

    @Test func aVersion1StoreMigratesThroughAMappedAndAnInferredStep() throws {
        let setup = try Setup()
        try setup.migrate(to: "Notes 3", mappings: try setup.mappings)
        let store = setup.store
        #expect(try Self.rows(store, NotebookMappingFixture.articlesQuery) == NotebookMappingFixture.migratedArticles)
        // Version 3's additions, inferred, hold their defaults.
        #expect(try Self.rows(store, #"SELECT "pinned", count(*) FROM "Article" GROUP BY 1"#) == ["0|4"])
        #expect(
            try Self.rows(store, #"SELECT "name", "colour" FROM "Folder" ORDER BY 1"#) == ["Inbox|nil", "Work|nil"])
        #expect(try Self.rows(store, #"SELECT "name" FROM "Person" ORDER BY 1"#) == ["Ana", "Ben"])
        #expect(
            try Self.rows(store, #"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'Note'"#) == ["0"]
        )
        // The store opens with version 3 and no migration, and its objects read through the model.
        let coordinator = StoreCoordinator(model: try setup.version("Notes 3"))
        let opened = try coordinator.addStore(type: .sqlite, configuration: nil, url: store)
        defer { coordinator.remove(opened) }
        let context = ObjectContext(coordinator: coordinator)
        let work = try #require(
            try context.fetch(FetchRequest(entityName: "Folder", predicate: .equal("name", .string("Work")))).first)
        let articles = try work.objects(forKey: "articles").map { try $0.value(forKey: "headline") }
        #expect(articles == [.string("Ship release")])
        let loose = try #require(
            try context.fetch(FetchRequest(entityName: "Article", predicate: .equal("score", .integer(1)))).first)
        #expect(try loose.object(forKey: "inFolder") == nil)
    }

    @Test func everyStepRunsWithTheRegisteredPolicyForTheCustomMapping() throws {
        let setup = try Setup()
        try setup.migrate(
            to: "Notes 4", mappings: try setup.mappings,
            policies: [NotebookMappingFixture.statusPolicyClass: StatusesFromText()])
        let store = setup.store
        #expect(try Self.rows(store, #"SELECT "name" FROM "Status" ORDER BY 1"#) == ["draft"])
        let linked = """
            SELECT a."headline", s."name", f."name", p."name" FROM "Article" a LEFT JOIN "Status" s ON s."_pk" = a."state" \
            LEFT JOIN "Folder" f ON f."_pk" = a."inFolder" LEFT JOIN "Person" p ON p."_pk" = a."writer" ORDER BY 1
            """
        #expect(
            try Self.rows(store, linked) == [
                "Buy milk|draft|Inbox|Ana", "Call Ana|draft|Inbox|Ben", "Loose thought|draft|nil|nil",
                "Ship release|draft|Work|Ben",
            ])
    }

    @Test func anUnsupportedExpressionIsRefusedByNameAndNothingIsWritten() throws {
        let setup = try Setup()
        let edited = TemporaryDirectory()
        let url = try XcodeMappingWriter.write(
            NotebookMappingFixture.notesToNotes2(
                headline: .function(operand: .keyPath("source", "title"), selector: "uppercaseString", arguments: [])),
            named: "Notes-Notes 2", in: edited.url)
        let mapping = try MappingModel.load(contentsOf: url)
        let before = try Data(contentsOf: setup.store)
        let rowsBefore = try Self.rows(setup.store, #"SELECT "title", "stars" FROM "Note" ORDER BY 1"#)
        #expect {
            try setup.migrate(to: "Notes 3", mappings: [mapping])
        } throws: { error in
            let message = (error as? StoreError)?.message ?? ""
            return message.contains("mapping model Notes-Notes 2, entity mapping NoteToArticle")
                && message.contains(#"FUNCTION($source.title, "uppercaseString")"#) && message.contains("headline")
        }
        #expect(try Data(contentsOf: setup.store) == before)
        #expect(try Self.rows(setup.store, #"SELECT "title", "stars" FROM "Note" ORDER BY 1"#) == rowsBefore)
        // Still a version 1 store: it opens with version 1 and no migration.
        let coordinator = StoreCoordinator(model: try setup.version("Notes"))
        coordinator.remove(try coordinator.addStore(type: .sqlite, configuration: nil, url: setup.store))
    }

    @Test func aCustomPolicyClassIsRefusedByClassAndMappingUnlessRegistered() throws {
        let setup = try Setup()
        let before = try Data(contentsOf: setup.store)
        #expect {
            try setup.migrate(to: "Notes 4", mappings: try setup.mappings)
        } throws: { error in
            let message = (error as? StoreError)?.message ?? ""
            return message.contains("'\(NotebookMappingFixture.statusPolicyClass)'")
                && message.contains("mapping model Notes 3-Notes 4, entity mapping ArticleToArticle")
        }
        #expect(try Data(contentsOf: setup.store) == before)
        // A policy registered under another name does not run it.
        #expect(throws: StoreError.self) {
            try setup.migrate(
                to: "Notes 4", mappings: try setup.mappings, policies: ["Notebook.Other": StatusesFromText()])
        }
        #expect(try Data(contentsOf: setup.store) == before)
    }
}

/// The `Notes 3-Notes 4` mapping's custom policy, written as an ``EntityMigrationPolicy``: each
/// article's `status` text becomes its `state`, one Status object per text.
struct StatusesFromText: EntityMigrationPolicy {
    func createDestinationInstances(for source: MigrationObject, mapping: EntityMapping, manager: MigrationManager)
        throws
    {
        try manager.createDefaultDestinationInstance(for: source, mapping: mapping)
        let text = manager.value("status", of: source)
        guard !text.isNull,
            let article = manager.destinationObjects(forEntityMappingNamed: mapping.name, sources: [source]).first
        else { return }
        let status =
            try manager.destinationObjects(of: "Status").first { manager.destinationValue("name", of: $0) == text }
            ?? {
                let made = try manager.insertDestinationObject(of: "Status")
                try manager.setValue(text, "name", of: made)
                return made
            }()
        try manager.relate(article, "state", to: [status])
    }
}
