import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Core Data mapping models on PostgreSQL stores: the scenarios ``MappingFixtureTests`` runs on
/// SQLite (``NotebookMappingFixture``), on a store in the test run's PostgreSQL cluster — a mapped
/// and an inferred step, a registered custom policy, refusals that leave the schema and its rows
/// exactly as they were (compared as a dump), a step that fails half-way through and runs whole
/// the next time — and ordered relationships keeping both sides' order through a mapping.
@Suite(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct PostgreSQLMappingTests {
    /// A folder with the bundle and its mapping models, and a version 1 store in a schema of its own.
    struct Setup {
        let folder = TemporaryDirectory()
        let bundle: URL
        let url: URL
        let schema: String

        init() throws {
            bundle = try NotebookMappingFixture.write(in: folder.url)
            url = try folder.postgreSQLURL(name: "notes")
            schema = folder.postgreSQLSchema(name: "notes")
            let store = try PostgreSQLStore(
                model: try Self.version("Notes", in: bundle), configuration: nil, url: url)
            defer { store.close() }
            try NotebookMappingFixture.seedVersion1(into: store)
        }

        static func version(_ name: String, in bundle: URL) throws -> ObjectModel {
            try ObjectModel.load(contentsOf: bundle.appendingPathComponent("\(name).xcdatamodel"))
        }

        func version(_ name: String) throws -> ObjectModel { try Self.version(name, in: bundle) }

        var mappings: [MappingModel] {
            get throws { try MappingModel.discover(near: bundle).map { try MappingModel.load(contentsOf: $0) } }
        }

        /// Opens the store with `version`, migrating it through the bundle's versions and `mappings`.
        func migrate(
            to version: String, mappings: [MappingModel], policies: [String: any EntityMigrationPolicy] = [:]
        ) throws {
            let coordinator = StoreCoordinator(model: try self.version(version))
            let opened = try coordinator.addStore(
                type: .postgresql, configuration: nil, url: url,
                options: StoreOptions(
                    migrate: true, modelHistory: try ObjectModel.loadCoreDataModelVersions(at: bundle),
                    mappingModels: mappings, migrationPolicies: policies))
            coordinator.remove(opened)
        }

        /// The rows `sql` reads in the store's schema, as `psql` prints them.
        func rows(_ sql: String) throws -> [String] {
            try PostgreSQLTestServer.psql("SET search_path TO \(schema); \(sql)").split(separator: "\n").map(
                String.init)
        }

        /// The schema's tables, columns, indexes, sequences and every row.
        var dump: [String] {
            get throws {
                let literal = "'\(schema)'"
                var lines = try rows(
                    "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = \(literal) ORDER BY 1, ordinal_position"
                )
                lines += try rows("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = \(literal) ORDER BY 1")
                // A sequence's position is not transactional in PostgreSQL: a step rolled back may
                // have moved it on (keys are never reused); its name is compared.
                lines += try rows("SELECT sequencename FROM pg_sequences WHERE schemaname = \(literal) ORDER BY 1")
                let tables = try rows(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = \(literal) ORDER BY 1")
                for table in tables {
                    lines += try rows("SELECT t::text FROM \(SQLiteSchema.quote(table)) t ORDER BY 1").map {
                        "\(table): \($0)"
                    }
                }
                return lines
            }
        }
    }

    static func text(_ column: String) -> String { NotebookMappingFixture.text(column) }

    @Test func aVersion1StoreMigratesThroughAMappedAndAnInferredStep() throws {
        let setup = try Setup()
        try setup.migrate(to: "Notes 3", mappings: try setup.mappings)
        #expect(
            try setup.rows(NotebookMappingFixture.postgreSQLArticlesQuery) == NotebookMappingFixture.migratedArticles)
        #expect(try setup.rows(#"SELECT "pinned", count(*) FROM "Article" GROUP BY 1"#) == ["0|4"])
        #expect(
            try setup.rows(#"SELECT \#(Self.text(#""name""#)), \#(Self.text(#""colour""#)) FROM "Folder" ORDER BY 1"#)
                == ["Inbox|nil", "Work|nil"])
        #expect(try setup.rows(#"SELECT \#(Self.text(#""name""#)) FROM "Person" ORDER BY 1"#) == ["Ana", "Ben"])
        #expect(
            try setup.rows(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = '\(setup.schema)' AND table_name = 'Note'"
            ) == ["0"])
        // The store opens with version 3 and no migration, and its objects read through the model.
        let coordinator = StoreCoordinator(model: try setup.version("Notes 3"))
        let opened = try coordinator.addStore(type: .postgresql, configuration: nil, url: setup.url)
        defer { coordinator.remove(opened) }
        let context = ObjectContext(coordinator: coordinator)
        let work = try #require(
            try context.fetch(FetchRequest(entityName: "Folder", predicate: .equal("name", .string("Work")))).first)
        let articles = try work.objects(forKey: "articles").map { try $0.value(forKey: "headline") }
        #expect(articles == [.string("Ship release")])
        let loose = try #require(
            try context.fetch(FetchRequest(entityName: "Article", predicate: .equal("score", .integer(1)))).first)
        #expect(try loose.object(forKey: "inFolder") == nil)
        // New objects take keys past those the step wrote.
        let written = try setup.rows(#"SELECT max("_pk") FROM "Article""#).first.flatMap { Int64($0) } ?? .max
        let article = try context.insert(
            "Article", values: ["headline": .string("Later"), "score": .integer(2), "status": .string("draft")])
        try context.save()
        #expect(try #require(article.objectID.primaryKey) > written)
    }

    @Test func everyStepRunsWithTheRegisteredPolicyForTheCustomMapping() throws {
        let setup = try Setup()
        try setup.migrate(
            to: "Notes 4", mappings: try setup.mappings,
            policies: [NotebookMappingFixture.statusPolicyClass: StatusesFromText()])
        #expect(try setup.rows(#"SELECT \#(Self.text(#""name""#)) FROM "Status" ORDER BY 1"#) == ["draft"])
        let linked = """
            SELECT \(Self.text(#"a."headline""#)), \(Self.text(#"s."name""#)), \(Self.text(#"f."name""#)), \
            \(Self.text(#"p."name""#)) FROM "Article" a LEFT JOIN "Status" s ON s."_pk" = a."state" \
            LEFT JOIN "Folder" f ON f."_pk" = a."inFolder" LEFT JOIN "Person" p ON p."_pk" = a."writer" ORDER BY 1
            """
        #expect(
            try setup.rows(linked) == [
                "Buy milk|draft|Inbox|Ana", "Call Ana|draft|Inbox|Ben", "Loose thought|draft|nil|nil",
                "Ship release|draft|Work|Ben",
            ])
        let store = try PostgreSQLStore(model: try setup.version("Notes 4"), configuration: nil, url: setup.url)
        defer { store.close() }
        #expect(store.metadata.modelVersion == "4")
        // The Status the policy made is an object like any other, and its hierarchy's keys continue.
        let status = try #require(try store.fetch(FetchRequest(entityName: "Status")).first)
        #expect(try store.relatedIDs(of: status.id, relationship: "articles").count == 4)
        let next = try store.newObjectIDs(entity: "Status", count: 1)
        #expect(try #require(next.first?.primaryKey) > (status.id.primaryKey ?? .max))
    }

    @Test func anUnsupportedExpressionIsRefusedByNameAndNothingIsWritten() throws {
        let setup = try Setup()
        let edited = TemporaryDirectory()
        let url = try XcodeMappingWriter.write(
            NotebookMappingFixture.notesToNotes2(
                headline: .function(operand: .keyPath("source", "title"), selector: "uppercaseString", arguments: [])),
            named: "Notes-Notes 2", in: edited.url)
        let mapping = try MappingModel.load(contentsOf: url)
        let before = try setup.dump
        #expect(before.contains { $0.hasPrefix("Note: ") })
        #expect {
            try setup.migrate(to: "Notes 3", mappings: [mapping])
        } throws: { error in
            let message = (error as? StoreError)?.message ?? ""
            return message.contains("mapping model Notes-Notes 2, entity mapping NoteToArticle")
                && message.contains(#"FUNCTION($source.title, "uppercaseString")"#) && message.contains("headline")
        }
        #expect(try setup.dump == before)
        // Still a version 1 store: it opens with version 1 and no migration.
        let coordinator = StoreCoordinator(model: try setup.version("Notes"))
        coordinator.remove(try coordinator.addStore(type: .postgresql, configuration: nil, url: setup.url))
    }

    @Test func aCustomPolicyClassIsRefusedByClassAndMappingUnlessRegistered() throws {
        let setup = try Setup()
        let before = try setup.dump
        #expect {
            try setup.migrate(to: "Notes 4", mappings: try setup.mappings)
        } throws: { error in
            let message = (error as? StoreError)?.message ?? ""
            return message.contains("'\(NotebookMappingFixture.statusPolicyClass)'")
                && message.contains("mapping model Notes 3-Notes 4, entity mapping ArticleToArticle")
        }
        #expect(try setup.dump == before)
        #expect(throws: StoreError.self) {
            try setup.migrate(
                to: "Notes 4", mappings: try setup.mappings, policies: ["Notebook.Other": StatusesFromText()])
        }
        #expect(try setup.dump == before)
    }

    @Test func aStepThatFailsHalfWayLeavesTheStoreAsItWasAndRunsWholeNextTime() throws {
        let setup = try Setup()
        let before = try setup.dump
        // The policy fails on the second article, after the mapped and inferred steps before it ran
        // and the first article's objects were made.
        #expect {
            try setup.migrate(
                to: "Notes 4", mappings: try setup.mappings,
                policies: [NotebookMappingFixture.statusPolicyClass: FailsOnArticle(headline: "Ship release")])
        } throws: { error in
            let message = (error as? StoreError)?.message ?? ""
            return message.contains("a migration policy failed") && message.contains("Ship release")
        }
        #expect(try setup.dump == before)
        do {
            // Keys continue past every object the store holds.
            let store = try PostgreSQLStore(model: try setup.version("Notes"), configuration: nil, url: setup.url)
            defer { store.close() }
            #expect(try #require(try store.newObjectIDs(entity: "Folder", count: 1).first?.primaryKey) > 2)
        }
        try setup.migrate(
            to: "Notes 4", mappings: try setup.mappings,
            policies: [NotebookMappingFixture.statusPolicyClass: StatusesFromText()])
        #expect(
            try setup.rows(
                #"SELECT \#(Self.text(#"a."headline""#)), a."state" IS NOT NULL FROM "Article" a ORDER BY 1"#)
                == ["Buy milk|t", "Call Ana|t", "Loose thought|t", "Ship release|t"])
    }

    /// Version 1 of a playlist app: Playlist.songs ↔ Song.playlists, both ordered. Version 2:
    /// Playlist becomes Mix (`tracks`), Song becomes Track (`mixes`), mapped by `Lists-Lists 2`.
    static let lists = [
        XcodeModelVersion(
            "Lists", identifier: "1",
            entities: [
                XcodeEntity(
                    "Playlist", attributes: [XcodeAttribute("name", "String")],
                    relationships: [
                        XcodeRelationship("songs", to: "Song", inverse: "playlists", toMany: true, ordered: true)
                    ]),
                XcodeEntity(
                    "Song", attributes: [XcodeAttribute("title", "String")],
                    relationships: [
                        XcodeRelationship("playlists", to: "Playlist", inverse: "songs", toMany: true, ordered: true)
                    ]),
            ]),
        XcodeModelVersion(
            "Lists 2", identifier: "2",
            entities: [
                XcodeEntity(
                    "Mix", attributes: [XcodeAttribute("name", "String")],
                    relationships: [
                        XcodeRelationship("tracks", to: "Track", inverse: "mixes", toMany: true, ordered: true)
                    ]),
                XcodeEntity(
                    "Track", attributes: [XcodeAttribute("title", "String")],
                    relationships: [
                        XcodeRelationship("mixes", to: "Mix", inverse: "tracks", toMany: true, ordered: true)
                    ]),
            ]),
    ]

    static let listsMapping = XcodeMappingModel(
        bundle: "Lists.xcdatamodeld", from: "Lists", to: "Lists 2",
        entityMappings: [
            XcodeEntityMapping(
                "Playlist", to: "Mix", attributes: [.named("name")],
                relationships: [.objects("tracks", keyPath: "$source.songs", mapping: "SongToTrack")]),
            XcodeEntityMapping(
                "Song", to: "Track", attributes: [.named("title")],
                relationships: [.objects("mixes", keyPath: "$source.playlists", mapping: "PlaylistToMix")]),
        ])

    @Test(arguments: [StoreUnderTest.sqlite, .postgresql])
    func bothOrderedSidesOfAManyToManyKeepTheirOrder(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let bundle = try XcodeModelWriter.writeBundle(
            named: "Lists", versions: Self.lists, current: "Lists 2", in: folder.url)
        let mapping = try MappingModel.load(
            contentsOf: try XcodeMappingWriter.write(Self.listsMapping, named: "Lists-Lists 2", in: folder.url))
        let v1 = try ObjectModel.load(contentsOf: bundle.appendingPathComponent("Lists.xcdatamodel"))
        let v2 = try ObjectModel.load(contentsOf: bundle.appendingPathComponent("Lists 2.xcdatamodel"))
        let url = kind == .sqlite ? folder.file("lists.sqlite") : try folder.postgreSQLURL(name: "lists")
        func open(_ model: ObjectModel, _ options: StoreOptions = StoreOptions()) throws -> any PersistentStore {
            kind == .sqlite
                ? try SQLiteStore(model: model, configuration: nil, url: url, options: options)
                : try PostgreSQLStore(model: model, configuration: nil, url: url, options: options)
        }
        // Each side's order differs from key order and from the other side's.
        let playlistOrders: [[Int]] = [[2, 0, 1], [1, 2]]
        let songOrders: [[Int]] = [[0], [1, 0], [1, 0]]
        let (playlists, songs): ([ObjectID], [ObjectID])
        do {
            let store = try open(v1)
            defer { store.close() }
            playlists = try store.newObjectIDs(entity: "Playlist", count: 2)
            songs = try store.newObjectIDs(entity: "Song", count: 3)
            try store.save(
                StoreChanges(
                    inserts: playlists.enumerated().map { StoreRow(id: $1, attributes: ["name": .string("P\($0)")]) }
                        + songs.enumerated().map { StoreRow(id: $1, attributes: ["title": .string("S\($0)")]) }))
            try store.save(
                StoreChanges(
                    updates: playlists.indices.map {
                        StoreUpdate(
                            id: playlists[$0], expectedVersion: nil,
                            toMany: ["songs": playlistOrders[$0].map { songs[$0] }])
                    }))
            try store.save(
                StoreChanges(
                    updates: songs.indices.map {
                        StoreUpdate(
                            id: songs[$0], expectedVersion: nil,
                            toMany: ["playlists": songOrders[$0].map { playlists[$0] }])
                    }))
            for (index, song) in songs.enumerated() {
                #expect(
                    try store.relatedIDs(of: song, relationship: "playlists") == songOrders[index].map { playlists[$0] }
                )
            }
            for (index, playlist) in playlists.enumerated() {
                #expect(
                    try store.relatedIDs(of: playlist, relationship: "songs")
                        == playlistOrders[index].map { songs[$0] })
            }
        }
        let store = try open(v2, StoreOptions(migrate: true, modelHistory: [v1], mappingModels: [mapping]))
        defer { store.close() }
        func id(_ entity: String, _ old: ObjectID) -> ObjectID {
            ObjectID(store: store.identifier, entity: entity, primaryKey: old.primaryKey!)
        }
        for (index, playlist) in playlists.enumerated() {
            #expect(
                try store.relatedIDs(of: id("Mix", playlist), relationship: "tracks")
                    == playlistOrders[index].map { id("Track", songs[$0]) })
        }
        for (index, song) in songs.enumerated() {
            #expect(
                try store.relatedIDs(of: id("Track", song), relationship: "mixes")
                    == songOrders[index].map { id("Mix", playlists[$0]) })
        }
    }
}

/// A policy for the `Notes 3-Notes 4` mapping that fails on the article headlined `headline`.
struct FailsOnArticle: EntityMigrationPolicy {
    let headline: String

    struct Failure: Error, CustomStringConvertible {
        let headline: String
        var description: String { "cannot migrate '\(headline)'" }
    }

    func createDestinationInstances(for source: MigrationObject, mapping: EntityMapping, manager: MigrationManager)
        throws
    {
        try manager.createDefaultDestinationInstance(for: source, mapping: mapping)
        if manager.value("headline", of: source) == .string(headline) { throw Failure(headline: headline) }
    }
}
