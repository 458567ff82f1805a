import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Full-text search in the library: words, query languages, the index each store keeps through
/// inserts, updates, deletes and failed saves, relevance, and agreement between the stores.
@Suite struct FullTextTests {
    static let model = try! ObjectModel.load(
        json: Array(
            #"""
            {"name": "Texts", "version": "1", "entities": [
              {"name": "Doc", "attributes": [
                 {"name": "title", "type": "string", "searchable": true},
                 {"name": "body", "type": "string", "searchable": true},
                 {"name": "code", "type": "string"}],
               "uniqueness": [["code"]]}
            ]}
            """#.utf8))

    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqlite, memory, postgresql
        var testDescription: String { rawValue }
        static var available: [Kind] {
            PostgreSQLTestServer.requirement.runs ? [.sqlite, .memory, .postgresql] : [.sqlite, .memory]
        }

        func context(_ folder: TemporaryDirectory, model: ObjectModel = FullTextTests.model) throws -> ObjectContext {
            let coordinator = StoreCoordinator(model: model)
            switch self {
            case .sqlite: try coordinator.addStore(type: .sqlite, url: folder.file("texts.sqlite"))
            case .memory: try coordinator.addStore(type: .inMemory)
            case .postgresql: try coordinator.addStore(type: .postgresql, url: try folder.postgreSQLURL(name: "texts"))
            }
            return ObjectContext(coordinator: coordinator)
        }
    }

    static let documents: [(title: String, body: String?)] = [
        ("The White Whale", "The whale, the whale, the white whale."),
        ("Whale songs", "A whale sings."),
        ("Café society", "Naïve painters at the café"),
        ("Sea stories", nil),
        ("Moby-Dick", "whaling ships and the sea, a long long story of the sea and of ships"),
        ("Nothing here", "dust and stones"),
    ]

    static func fill(_ context: ObjectContext) throws {
        for (index, document) in documents.enumerated() {
            _ = try context.insert(
                "Doc",
                values: [
                    "title": .string(document.title), "body": document.body.map { .string($0) } ?? .null,
                    "code": .string("c\(index)"),
                ])
        }
        try context.save()
    }

    static func titles(_ context: ObjectContext, _ predicate: FetchPredicate, ranked: Bool = false) throws -> [String] {
        let sort = ranked ? [SortKey(SortKey.rank, ascending: false)] : [SortKey("title")]
        return try context.fetch(FetchRequest(entityName: "Doc", predicate: predicate, sortDescriptors: sort)).map {
            try $0.value(forKey: "title").textValue ?? ""
        }
    }

    static func search(_ key: String, _ text: String, _ syntax: TextQuery.Syntax = .plain) throws -> FetchPredicate {
        .textSearch(try TextSearch(key, matching: text, syntax: syntax))
    }

    @Test func wordsAreLettersAndDigitsWithCaseAndDiacriticsFolded() {
        #expect(
            TextSearch.words(in: "Café au LAIT, naïve e\u{301}t it's 3.14 x_y Straße")
                == ["cafe", "au", "lait", "naive", "et", "it", "s", "3", "14", "x", "y", "straße"])
        #expect(TextSearch.words(in: " \u{301} -- ").isEmpty)
    }

    @Test func queryLanguagesReadAsPostgreSQLsOperatorsDo() throws {
        #expect(
            try TextQuery("Whale  Song", syntax: .plain)
                == .and([.word("whale", prefix: false), .word("song", prefix: false)]))
        #expect(try TextQuery("white whale", syntax: .phrase) == .phrase(["white", "whale"]))
        #expect(
            try TextQuery("(cat | dog) & !bird & fish:* & 'a' <-> 'b'", syntax: .query)
                == .and([
                    .or([.word("cat", prefix: false), .word("dog", prefix: false)]), .not(.word("bird", prefix: false)),
                    .word("fish", prefix: true), .phrase(["a", "b"]),
                ]))
        #expect(
            try TextQuery(#"sea "white whale" -dust or stones"#, syntax: .websearch)
                == .or([
                    .and([
                        .word("sea", prefix: false), .phrase(["white", "whale"]), .not(.word("dust", prefix: false)),
                    ]),
                    .word("stones", prefix: false),
                ]))
        #expect(try TextQuery("!!! ...", syntax: .plain) == .or([]))
        #expect((try? TextQuery("cat & (dog", syntax: .query)) == nil)
        #expect((try? TextQuery("(a | b) <-> c", syntax: .query)) == nil)
        let query = try TextQuery("cat & !(dog | 'x' <-> 'y') & fi:*", syntax: .query)
        #expect(try TextQuery(query.text, syntax: .query) == query)
    }

    @Test func formatStringsWriteAndReadTextSearches() throws {
        let predicate = try FetchPredicate(format: "title textsearch 'whale & !sea' AND code == 'c1'")
        #expect(
            predicate
                == .and([
                    .textSearch(
                        TextSearch("title", .and([.word("whale", prefix: false), .not(.word("sea", prefix: false))]))),
                    .equal("code", .string("c1")),
                ]))
        #expect(try FetchPredicate(format: predicate.predicateFormat) == predicate)
        #expect((try? FetchPredicate(format: "title TEXTSEARCH 3")) == nil)
        #expect((try? FetchPredicate(format: "title TEXTSEARCH 'a & (b'")) == nil)
    }

    @Test func aSearchOnAnAttributeThatIsNotSearchableIsRefused() throws {
        let folder = TemporaryDirectory()
        let context = try Kind.sqlite.context(folder)
        #expect {
            try context.fetch(FetchRequest(entityName: "Doc", predicate: try Self.search("code", "c1")))
        } throws: { "\($0)".contains("'code' of 'Doc' is not searchable") }
    }

    /// The queries every store answers alike, with the titles they match (sorted).
    static let agreed: [(FetchPredicate, [String])] = {
        func s(_ key: String, _ text: String, _ syntax: TextQuery.Syntax) -> FetchPredicate {
            try! search(key, text, syntax)
        }
        return [
            (s("title", "whale", .plain), ["The White Whale", "Whale songs"]),
            (s("body", "WHALE", .plain), ["The White Whale", "Whale songs"]),
            (s("body", "cafe naive", .plain), ["Café society"]),
            (s("body", "the whale", .phrase), ["The White Whale"]),
            (s("body", "whal:*", .query), ["Moby-Dick", "The White Whale", "Whale songs"]),
            (s("body", "sea & !whaling", .query), []),
            (s("body", "sea | dust", .query), ["Moby-Dick", "Nothing here"]),
            (s("title", "dick", .query), ["Moby-Dick"]),
            (s("body", #""white whale" or stones"#, .websearch), ["Nothing here", "The White Whale"]),
            (s("body", "whale -sings", .websearch), ["The White Whale"]),
            (.not(s("body", "the", .plain)), ["Nothing here", "Sea stories", "Whale songs"]),
            (s("body", "...", .plain), []),
            (.and([s("title", "whale", .plain), .compare("code", .notEqual, .string("c0"))]), ["Whale songs"]),
        ]
    }()

    @Test(arguments: Kind.available) func everyStoreMatchesTheSameObjects(kind: Kind) throws {
        let folder = TemporaryDirectory()
        let context = try kind.context(folder)
        try Self.fill(context)
        let fresh = ObjectContext(coordinator: context.coordinator)
        for (predicate, expected) in Self.agreed {
            #expect(try Self.titles(fresh, predicate) == expected, "\(predicate)")
        }
    }

    @Test(arguments: Kind.available) func moreOccurrencesAndShorterTextRankFirst(kind: Kind) throws {
        let folder = TemporaryDirectory()
        let context = try kind.context(folder)
        try Self.fill(context)
        let fresh = ObjectContext(coordinator: context.coordinator)
        // 3 of 7 words, then 1 of 3.
        #expect(
            try Self.titles(fresh, try Self.search("body", "whale"), ranked: true) == [
                "The White Whale", "Whale songs",
            ])
        // "Whale songs" (1 of 2 words) before "The White Whale" (1 of 3).
        #expect(
            try Self.titles(fresh, try Self.search("title", "whale"), ranked: true) == [
                "Whale songs", "The White Whale",
            ])
        var ascending = FetchRequest(
            entityName: "Doc", predicate: try Self.search("title", "whale"),
            sortDescriptors: [SortKey(SortKey.rank, ascending: true)], fetchLimit: 1)
        #expect(try fresh.fetch(ascending).map { try $0.value(forKey: "title") } == [.string("The White Whale")])
        ascending.fetchOffset = 1
        #expect(try fresh.fetch(ascending).map { try $0.value(forKey: "title") } == [.string("Whale songs")])
    }

    @Test(arguments: Kind.available) func theIndexFollowsUpdatesDeletesAndFailedSaves(kind: Kind) throws {
        let folder = TemporaryDirectory()
        let context = try kind.context(folder)
        try Self.fill(context)
        let whale = try Self.search("title", "whale")
        let songs = try context.fetch(FetchRequest(entityName: "Doc", predicate: .equal("code", .string("c1"))))[0]
        try songs.setValue(.string("Dolphin songs"), forKey: "title")
        try context.save()
        #expect(try Self.titles(ObjectContext(coordinator: context.coordinator), whale) == ["The White Whale"])
        #expect(
            try Self.titles(ObjectContext(coordinator: context.coordinator), try Self.search("title", "dolphin")) == [
                "Dolphin songs"
            ])
        try context.delete(songs)
        try context.save()
        #expect(
            try Self.titles(ObjectContext(coordinator: context.coordinator), try Self.search("title", "songs")) == [])
        // A save that breaks uniqueness writes nothing, the index included.
        _ = try context.insert("Doc", values: ["title": .string("Narwhal"), "code": .string("c0")])
        #expect(throws: ContextError.self) { try context.save() }
        context.rollback()
        #expect(
            try Self.titles(ObjectContext(coordinator: context.coordinator), try Self.search("title", "narwhal")) == [])
        // Unsaved objects are searched in memory.
        _ = try context.insert("Doc", values: ["title": .string("Unsaved whale"), "code": .string("u")])
        #expect(try Self.titles(context, whale) == ["The White Whale", "Unsaved whale"])
        if kind == .sqlite {
            let db = try SQLiteConnection(path: folder.file("texts.sqlite").path)
            try db.execute("INSERT INTO \"_strata_fts_Doc\"(\"_strata_fts_Doc\", rank) VALUES ('integrity-check', 1)")
        }
    }

    /// A NUL is a character a string may hold (PostgreSQL's text may not: its index reads the
    /// bytes); every store takes it as the separator between two words, and keeps the text whole.
    @Test(arguments: Kind.available) func aNULInSearchableTextSeparatesWords(kind: Kind) throws {
        let folder = TemporaryDirectory()
        let context = try kind.context(folder)
        let title = "sea\u{0}horse \u{0}"
        _ = try context.insert("Doc", values: ["title": .string(title), "code": .string("nul")])
        try context.save()
        let fresh = ObjectContext(coordinator: context.coordinator)
        #expect(try Self.titles(fresh, try Self.search("title", "horse")) == [title])
        #expect(try Self.titles(fresh, try Self.search("title", "sea")) == [title])
        #expect(try Self.titles(fresh, try Self.search("title", "seahorse")) == [])
        let object = try fresh.fetch(FetchRequest(entityName: "Doc"))[0]
        try object.setValue(.string("\u{0}dolphin"), forKey: "title")
        try fresh.save()
        #expect(
            try Self.titles(ObjectContext(coordinator: context.coordinator), try Self.search("title", "dolphin")) == [
                "\u{0}dolphin"
            ])
    }
}
