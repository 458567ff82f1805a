import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// The lightweight migrations Core Data infers that depend on a store's data: a to-many becoming
/// to-one, an optional attribute becoming required with no default, a numeric attribute changing
/// type. Each runs when every object fits the new model and is refused otherwise, naming what
/// does not fit, before the store changes; on SQLite files and PostgreSQL stores alike.
@Suite struct InferredMigrationTests {
    /// The SQL stores that migrate: SQLite, and PostgreSQL whenever its tests run.
    static var stores: [StoreUnderTest] {
        StoreUnderTest.allCases.filter { $0 != .memory }
    }

    /// A library: authors with books (one-to-many), books with tags (many-to-many); `Item` holds
    /// numbers of several types.
    static func model(_ version: String, author: String, book: String, tag: String, item: String) throws
        -> ObjectModel
    {
        let json = """
            {"name": "Library", "version": "\(version)", "entities": [
              {"name": "Author", "attributes": [{"name": "name", "type": "string"}], "relationships": [\(author)]},
              {"name": "Book", "attributes": [{"name": "title", "type": "string"}], "relationships": [\(book)]},
              {"name": "Tag", "attributes": [{"name": "label", "type": "string"}], "relationships": [\(tag)]},
              {"name": "Item", "attributes": [\(item)]}
            ], "configurations": [{"name": "Books", "entities": ["Author", "Book", "Tag"]}, {"name": "Items", "entities": ["Item"]}]}
            """
        return try ObjectModel.load(json: Array(json.utf8))
    }

    static let items = """
        {"name": "count", "type": "integer64"}, {"name": "ratio", "type": "double"},
        {"name": "price", "type": "decimal"}, {"name": "level", "type": "integer16"}
        """

    static var v1: ObjectModel {
        get throws {
            try model(
                "1",
                author: #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "author"}"#,
                book: #"""
                    {"name": "author", "destination": "Author", "inverse": "books"},
                    {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "books"}
                    """#,
                tag: #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "tags"}"#,
                item: items)
        }
    }

    /// Version 2 of the relationships: `Author.book` and `Book.tag` become to-one (one-to-one,
    /// and one-to-many from `Tag.books`).
    static var toOne: ObjectModel {
        get throws {
            try model(
                "2",
                author: #"{"name": "book", "renamedFrom": "books", "destination": "Book", "inverse": "author"}"#,
                book: #"""
                    {"name": "author", "destination": "Author", "inverse": "book"},
                    {"name": "tag", "renamedFrom": "tags", "destination": "Tag", "inverse": "books"}
                    """#,
                tag: #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "tag"}"#,
                item: items)
        }
    }

    /// Version 2 of the numbers, with `items` as `Item`'s attributes.
    static func numbers(_ items: String) throws -> ObjectModel {
        try model(
            "2",
            author: #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "author"}"#,
            book: #"""
                {"name": "author", "destination": "Author", "inverse": "books"},
                {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "books"}
                """#,
            tag: #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "tags"}"#,
            item: items)
    }

    /// The keys of what `seed` saved.
    struct Seeded {
        var authors: [ObjectID] = []
        var books: [ObjectID] = []
        var tags: [ObjectID] = []
        var items: [ObjectID] = []
    }

    /// Saves three authors, three books (the first two with an author and a tag each, the third
    /// with neither), two tags and two items into `store`.
    static func seed(_ store: any PersistentStore) throws -> Seeded {
        var seeded = Seeded()
        seeded.authors = try store.newObjectIDs(entity: "Author", count: 3)
        seeded.books = try store.newObjectIDs(entity: "Book", count: 3)
        seeded.tags = try store.newObjectIDs(entity: "Tag", count: 2)
        seeded.items = try store.newObjectIDs(entity: "Item", count: 2)
        var inserts = seeded.authors.enumerated().map { StoreRow(id: $1, attributes: ["name": .string("A\($0)")]) }
        inserts += seeded.tags.enumerated().map { StoreRow(id: $1, attributes: ["label": .string("T\($0)")]) }
        for (index, id) in seeded.books.enumerated() {
            inserts.append(
                StoreRow(
                    id: id, attributes: ["title": .string("B\(index)")],
                    toOne: ["author": index < 2 ? seeded.authors[index] : nil],
                    toMany: ["tags": index < 2 ? [seeded.tags[index]] : []]))
        }
        inserts.append(
            StoreRow(
                id: seeded.items[0],
                attributes: [
                    "count": .integer(5), "ratio": .double(2), "price": .decimal(Decimal(string: "12.5")!),
                    "level": .integer(4),
                ]))
        inserts.append(
            StoreRow(
                id: seeded.items[1],
                attributes: [
                    "count": .integer(300), "ratio": .double(-7), "price": .decimal(3), "level": .null,
                ]))
        try store.save(StoreChanges(inserts: inserts))
        return seeded
    }

    /// A new store of `kind` in `folder` with version 1's objects; its URL and keys.
    static func seeded(_ kind: StoreUnderTest, _ folder: TemporaryDirectory) throws -> (URL, Seeded) {
        let url = kind == .sqlite ? folder.file("library.sqlite") : try folder.postgreSQLURL(name: "library")
        let store = try open(kind, url, try v1, migrate: false)
        defer { store.close() }
        return (url, try seed(store))
    }

    static func open(_ kind: StoreUnderTest, _ url: URL, _ model: ObjectModel, migrate: Bool) throws(StoreError)
        -> any PersistentStore
    {
        let options = StoreOptions(migrate: migrate)
        return kind == .sqlite
            ? try SQLiteStore(model: model, configuration: nil, url: url, options: options)
            : try PostgreSQLStore(model: model, configuration: nil, url: url, options: options)
    }

    /// Every object of version 1's store at `url`, read back, and its model version: what a
    /// refused migration must leave as it was.
    static func snapshot(_ kind: StoreUnderTest, _ url: URL) throws -> [String] {
        var lines = kind == .sqlite ? try dumpSQLite(url) : []
        let model = try v1
        let store = try open(kind, url, model, migrate: false)
        defer { store.close() }
        lines.append("version \(store.metadata.modelVersion ?? "?")")
        for entity in ["Author", "Book", "Tag", "Item"] {
            for row in try store.fetch(FetchRequest(entityName: entity)).sorted(by: {
                $0.id.primaryKey! < $1.id.primaryKey!
            }) {
                var line = "\(row.id) v\(row.version)"
                for attribute in model.attributes(of: entity).map(\.name).sorted() {
                    line += " \(attribute)=\(row[attribute: attribute])"
                }
                for (name, id) in row.toOne.sorted(by: { $0.key < $1.key }) {
                    line += " \(name)=\(id?.primaryKey ?? 0)"
                }
                for name in ["books", "tags"] where model.relationship(name, of: entity) != nil {
                    line += " \(name)=\(try store.relatedIDs(of: row.id, relationship: name).map(\.primaryKey!))"
                }
                lines.append(line)
            }
        }
        return lines
    }

    /// Opens the store at `url` with `model`, migrating, expecting a refusal whose message holds
    /// every one of `expected`; then checks the store is as it was.
    static func expectRefusal(
        _ kind: StoreUnderTest, _ url: URL, _ model: ObjectModel, _ expected: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let before = try snapshot(kind, url)
        do {
            _ = try open(kind, url, model, migrate: true)
            Issue.record("migrated", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .incompatibleModel, sourceLocation: sourceLocation)
            for text in expected {
                #expect(error.message.contains(text), "\(error.message)", sourceLocation: sourceLocation)
            }
        }
        let after = try snapshot(kind, url)
        #expect(
            after == before, "\(after.filter { !before.contains($0) }) \(before.filter { !after.contains($0) })",
            sourceLocation: sourceLocation)
    }

    // MARK: To-many becomes to-one

    @Test(arguments: stores)
    func toManyBecomesToOneWhenNoObjectHasTwoMembers(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (url, seeded) = try Self.seeded(kind, folder)
        let plan = try (kind == .sqlite ? StoreType.sqlite : StoreType.postgresql).kind.inspect(
            url, model: try Self.toOne, history: []
        ).plan
        #expect(plan?.isPossible == true, "\(plan?.summary ?? "")")
        #expect(
            plan?.changes.filter { $0.kind == .makeToOne }.map(\.description).sorted() == [
                "Author.book: becomes to-one; each object's single member is kept (none: nil), and the migration is refused if an object has more than one",
                "Book.tag: becomes to-one; each object's single member is kept (none: nil), and the migration is refused if an object has more than one",
            ])
        let store = try Self.open(kind, url, try Self.toOne, migrate: true)
        defer { store.close() }
        let authors = try rows(store, "Author")
        #expect(
            seeded.authors.map { authors[$0.primaryKey!]?.toOne["book"]??.primaryKey } == [
                seeded.books[0].primaryKey, seeded.books[1].primaryKey, nil,
            ])
        let books = try rows(store, "Book")
        #expect(
            seeded.books.map { books[$0.primaryKey!]?.toOne["tag"]??.primaryKey } == [
                seeded.tags[0].primaryKey, seeded.tags[1].primaryKey, nil,
            ])
        #expect(
            seeded.books.map { books[$0.primaryKey!]?.toOne["author"]??.primaryKey } == [
                seeded.authors[0].primaryKey, seeded.authors[1].primaryKey, nil,
            ])
        let tag = ObjectID(store: store.identifier, entity: "Tag", primaryKey: seeded.tags[1].primaryKey!)
        #expect(try store.relatedIDs(of: tag, relationship: "books").map(\.primaryKey) == [seeded.books[1].primaryKey])
        // The to-one is a relationship like any other: it can be set and read back.
        let third = ObjectID(store: store.identifier, entity: "Book", primaryKey: seeded.books[2].primaryKey!)
        try store.save(
            StoreChanges(updates: [StoreUpdate(id: third, expectedVersion: nil, toOne: ["tag": tag])]))
        #expect(try store.relatedIDs(of: tag, relationship: "books").count == 2)
        if kind == .sqlite {
            #expect(try !schemaNames(url).contains("_join_Book_tags"))
            #expect(try columns(url, "Author").contains("book"))
        }
    }

    @Test(arguments: stores)
    func toManyWithTwoMembersIsRefusedBeforeAnythingIsWritten(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (url, seeded) = try Self.seeded(kind, folder)
        do {
            // The first author gets the third book; the third book gets both tags.
            let store = try Self.open(kind, url, try Self.v1, migrate: false)
            defer { store.close() }
            let book = ObjectID(store: store.identifier, entity: "Book", primaryKey: seeded.books[2].primaryKey!)
            let tags = seeded.tags.map { ObjectID(store: store.identifier, entity: "Tag", primaryKey: $0.primaryKey!) }
            let author = ObjectID(store: store.identifier, entity: "Author", primaryKey: seeded.authors[0].primaryKey!)
            try store.save(
                StoreChanges(
                    updates: [
                        StoreUpdate(id: book, expectedVersion: nil, toOne: ["author": author], toMany: ["tags": tags])
                    ]
                ))
        }
        try Self.expectRefusal(
            kind, url, try Self.toOne,
            [
                "Author.book: becomes to-one, and 1 object of Author has more than one member (e.g. Author \(seeded.authors[0].primaryKey!))",
                "Book.tag: becomes to-one, and 1 object of Book has more than one member (e.g. Book \(seeded.books[2].primaryKey!))",
            ])
    }

    // MARK: Optional becomes required

    @Test(arguments: stores)
    func requiredWithoutADefaultMigratesOnlyWhenEveryObjectHasAValue(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (url, seeded) = try Self.seeded(kind, folder)
        let required = try Self.numbers(
            Self.items.replacingOccurrences(
                of: #"{"name": "level", "type": "integer16"}"#,
                with: #"{"name": "level", "type": "integer16", "optional": false}"#))
        let inspect = { () throws -> MigrationPlan? in
            try (kind == .sqlite ? StoreType.sqlite : StoreType.postgresql).kind.inspect(
                url, model: required, history: []
            ).plan
        }
        // A dry run reads the data too.
        let dryRun = try inspect()
        #expect(dryRun?.isPossible == false)
        #expect(
            dryRun?.refusals.map(\.description) == [
                "Item.level: becomes required with no default value, and 1 object of Item has none (e.g. Item \(seeded.items[1].primaryKey!)); give it a default value in the model"
            ])
        #expect(dryRun?.summary.contains("cannot migrate (dataDoesNotFit) Item.level: becomes required") == true)
        try Self.expectRefusal(
            kind, url, required,
            [
                "Item.level: becomes required with no default value, and 1 object of Item has none (e.g. Item \(seeded.items[1].primaryKey!))"
            ])
        do {
            let store = try Self.open(kind, url, try Self.v1, migrate: false)
            defer { store.close() }
            let item = ObjectID(store: store.identifier, entity: "Item", primaryKey: seeded.items[1].primaryKey!)
            try store.save(
                StoreChanges(updates: [StoreUpdate(id: item, expectedVersion: nil, attributes: ["level": .integer(9)])])
            )
        }
        #expect(try inspect()?.isPossible == true)
        let store = try Self.open(kind, url, required, migrate: true)
        defer { store.close() }
        #expect(store.metadata.modelVersion == "2")
        #expect(try rows(store, "Item")[seeded.items[1].primaryKey!]?[attribute: "level"] == .integer(9))
    }

    // MARK: Numeric types change

    @Test(arguments: stores)
    func numbersAreConvertedBetweenNumericTypes(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (url, seeded) = try Self.seeded(kind, folder)
        let converted = try Self.numbers(
            """
            {"name": "count", "type": "integer16"}, {"name": "ratio", "type": "integer32"},
            {"name": "price", "type": "double"}, {"name": "level", "type": "decimal", "optional": false, "default": "0.5"}
            """)
        let plan = try (kind == .sqlite ? StoreType.sqlite : StoreType.postgresql).kind.inspect(
            url, model: converted, history: []
        ).plan
        #expect(
            plan?.changes.filter { $0.kind == .convertType }.map(\.description).sorted().first
                == "Item.count: type changes from integer64 to integer16; values are converted, and the migration is refused if one does not fit"
        )
        var store = try Self.open(kind, url, converted, migrate: true)
        var items = try rows(store, "Item")
        let values = { (name: String) in seeded.items.map { items[$0.primaryKey!]?[attribute: name] } }
        #expect(values("count") == [.integer(5), .integer(300)])
        #expect(values("ratio") == [.integer(2), .integer(-7)])
        #expect(values("price") == [.double(12.5), .double(3)])
        #expect(values("level") == [.decimal(4), .decimal(Decimal(string: "0.5")!)])
        store.close()
        // And on: to float, to double, to decimal from a double, to double from a decimal.
        let again = try ObjectModel.load(
            json: Array(
                try Self.numbers(
                    """
                    {"name": "count", "type": "float"}, {"name": "ratio", "type": "double"},
                    {"name": "price", "type": "decimal"}, {"name": "level", "type": "double"}
                    """
                ).canonicalJSON.replacingOccurrences(of: #""version":"2""#, with: #""version":"3""#).utf8))
        store = try Self.open(kind, url, again, migrate: true)
        defer { store.close() }
        #expect(store.metadata.modelVersion == "3")
        items = try rows(store, "Item")
        #expect(values("count") == [.double(5), .double(300)])
        #expect(values("ratio") == [.double(2), .double(-7)])
        #expect(values("price") == [.decimal(Decimal(string: "12.5")!), .decimal(3)])
        #expect(values("level") == [.double(4), .double(0.5)])
    }

    @Test(arguments: stores)
    func aNumberThatDoesNotFitItsNewTypeRefusesTheMigration(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (url, seeded) = try Self.seeded(kind, folder)
        do {
            let store = try Self.open(kind, url, try Self.v1, migrate: false)
            defer { store.close() }
            let item = ObjectID(store: store.identifier, entity: "Item", primaryKey: seeded.items[1].primaryKey!)
            try store.save(
                StoreChanges(
                    updates: [
                        StoreUpdate(
                            id: item, expectedVersion: nil,
                            attributes: [
                                "count": .integer(70000), "ratio": .double(2.5),
                                "price": .decimal(Decimal(string: "7.25")!),
                            ])
                    ]))
        }
        let narrowed = try Self.numbers(
            """
            {"name": "count", "type": "integer16"}, {"name": "ratio", "type": "integer64"},
            {"name": "price", "type": "integer32"}, {"name": "level", "type": "integer16"}
            """)
        let item = seeded.items[1].primaryKey!
        try Self.expectRefusal(
            kind, url, narrowed,
            [
                "Item.count: type changes from integer64 to integer16, and 1 value does not fit integer16 (e.g. 70000 of Item \(item))",
                "Item.ratio: type changes from double to integer64, and 1 value does not fit integer64 (e.g. 2.5 of Item \(item))",
                "Item.price: type changes from decimal to integer32, and 2 values do not fit integer32 (e.g. 12.5 of Item \(seeded.items[0].primaryKey!))",
            ])
    }

    @Test(arguments: stores)
    func aTypeChangeCoreDataDoesNotInferNeedsAMappingModel(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (url, _) = try Self.seeded(kind, folder)
        let text = try Self.numbers(Self.items.replacingOccurrences(of: #""integer64""#, with: #""string""#))
        try Self.expectRefusal(
            kind, url, text,
            [
                "Item.count: type changes from integer64 to string, which a lightweight migration does not convert; a mapping model is needed"
            ])
    }

    // MARK: One transaction per store

    /// Version 2 of both configurations: the relationships become to-one, the numbers change type.
    static var both: ObjectModel {
        get throws {
            let v2 = try toOne
            let json = v2.canonicalJSON.replacingOccurrences(
                of: #"{"name":"count","type":"integer64"}"#, with: #"{"name":"count","type":"integer16"}"#)
            return try ObjectModel.load(json: Array(json.utf8))
        }
    }

    static func descriptions(_ folder: TemporaryDirectory, migrate: Bool) -> [StoreDescription] {
        ["Books", "Items"].map { (name: String) in
            StoreDescription(
                type: .sqlite, configuration: name, url: folder.file("\(name).sqlite"),
                options: StoreOptions(migrate: migrate))
        }
    }

    /// Creates the two stores of version 1 with the seeded objects.
    static func seedBoth(_ folder: TemporaryDirectory) throws {
        let coordinator = StoreCoordinator(model: try v1)
        try coordinator.addStores(descriptions(folder, migrate: false))
        let context = ObjectContext(coordinator: coordinator)
        let authors = try (0..<2).map { try context.insert("Author", values: ["name": .string("A\($0)")]) }
        let tag = try context.insert("Tag", values: ["label": .string("T")])
        for (index, author) in authors.enumerated() {
            let book = try context.insert("Book", values: ["title": .string("B\(index)")])
            try book.setObject(author, forKey: "author")
            try book.setObjects(index == 0 ? [tag] : [], forKey: "tags")
        }
        try context.insert("Item", values: ["count": .integer(70000)])
        try context.save()
        for store in coordinator.stores { coordinator.remove(store) }
    }

    @Test func aRefusalInOneStoreLeavesEveryStoreOfTheCoordinatorAlone() throws {
        let folder = TemporaryDirectory()
        try Self.seedBoth(folder)
        let before = try ["Books", "Items"].map { try dumpSQLite(folder.file("\($0).sqlite")) }
        let coordinator = StoreCoordinator(model: try Self.both)
        do {
            try coordinator.addStores(Self.descriptions(folder, migrate: true))
            Issue.record("migrated")
        } catch {
            #expect(
                error.message.contains("Item.count: type changes from integer64 to integer16, and 1 value does not fit")
            )
        }
        #expect(try ["Books", "Items"].map { try dumpSQLite(folder.file("\($0).sqlite")) } == before)
    }

    @Test func aMigrationStoppedBetweenTheStoresIsFinishedOnTheNextOpen() throws {
        let folder = TemporaryDirectory()
        try Self.seedBoth(folder)
        let fitting = try Self.both.canonicalJSON.replacingOccurrences(
            of: #"{"name":"count","type":"integer16"}"#, with: #"{"name":"count","type":"integer64"}"#
        ).replacingOccurrences(of: #""ratio","type":"double""#, with: #""ratio","type":"float""#)
        let v2 = try ObjectModel.load(json: Array(fitting.utf8))
        do {
            let coordinator = StoreCoordinator(model: v2)
            coordinator.crashPoints.stop.withLock { $0 = { $0 == .betweenMigrationCommits } }
            #expect(throws: StoreError.self) { try coordinator.addStores(Self.descriptions(folder, migrate: true)) }
            for store in coordinator.stores { coordinator.remove(store) }
        }
        let versions = try Self.descriptions(folder, migrate: false).map {
            try #require(try SQLiteStoreKind().storedState(of: $0)).metadata.modelVersion
        }
        #expect(versions.sorted { ($0 ?? "") < ($1 ?? "") } == ["1", "2"], "one store migrated, one not")
        let coordinator = StoreCoordinator(model: v2)
        try coordinator.addStores(Self.descriptions(folder, migrate: false))
        defer { for store in coordinator.stores { coordinator.remove(store) } }
        let authors = try coordinator.fetch(FetchRequest(entityName: "Author"))
        let books = try coordinator.fetch(FetchRequest(entityName: "Book"))
        #expect(Set(authors.compactMap { $0.toOne["book"] ?? nil }) == Set(books.map(\.id)))
        #expect(books.compactMap { $0.toOne["tag"] ?? nil }.count == 1)
        #expect(try coordinator.fetch(FetchRequest(entityName: "Item")).first?[attribute: "count"] == .integer(70000))
    }

    /// With a history, the store still migrates in one step from its version to the model, as
    /// Core Data infers one mapping between those two: its checks read the store's data.
    @Test func aStoreMigratesInOneStepWhateverTheHistoryHoldsBetween() throws {
        let folder = TemporaryDirectory()
        let (url, seeded) = try Self.seeded(.sqlite, folder)
        let middle = try Self.numbers(Self.items.replacingOccurrences(of: #""integer64""#, with: #""integer32""#))
        let last = try ObjectModel.load(
            json: Array(
                try Self.toOne.canonicalJSON.replacingOccurrences(of: #""version":"2""#, with: #""version":"3""#)
                    .replacingOccurrences(of: #""type":"integer64""#, with: #""type":"integer32""#).utf8))
        let plan = try StoreType.sqlite.kind.inspect(url, model: last, history: [try Self.v1, middle]).plan
        #expect(
            plan?.steps.map { $0.changes.map(\.kind) } == [
                [.renameRelationship, .makeToOne, .renameRelationship, .makeToOne, .convertType]
            ])
        let store = try SQLiteStore(
            model: last, configuration: nil, url: url,
            options: StoreOptions(migrate: true, modelHistory: [try Self.v1, middle]))
        defer { store.close() }
        #expect(store.metadata.modelVersion == "3")
        let authors = try rows(store, "Author")
        #expect(authors[seeded.authors[1].primaryKey!]?.toOne["book"]??.primaryKey == seeded.books[1].primaryKey)
        #expect(try rows(store, "Item")[seeded.items[1].primaryKey!]?[attribute: "count"] == .integer(300))
    }

    @Test(arguments: stores)
    func anOrderedToManyAndBothSidesOfAManyToManyBecomeToOne(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let url = kind == .sqlite ? folder.file("library.sqlite") : try folder.postgreSQLURL(name: "library")
        let ordered = try Self.model(
            "1",
            author: #"{"name": "books", "destination": "Book", "toMany": true, "ordered": true, "inverse": "author"}"#,
            book: #"""
                {"name": "author", "destination": "Author", "inverse": "books"},
                {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "books"}
                """#,
            tag: #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "tags"}"#,
            item: Self.items)
        let seeded: Seeded
        do {
            let store = try Self.open(kind, url, ordered, migrate: false)
            defer { store.close() }
            seeded = try Self.seed(store)
            // An ordered to-many keeps its members in its join table: set from its side.
            try store.save(
                StoreChanges(
                    updates: (0..<2).map {
                        StoreUpdate(id: seeded.authors[$0], expectedVersion: nil, toMany: ["books": [seeded.books[$0]]])
                    }))
        }
        let oneToOne = try Self.model(
            "2",
            author: #"{"name": "book", "renamedFrom": "books", "destination": "Book", "inverse": "author"}"#,
            book: #"""
                {"name": "author", "destination": "Author", "inverse": "book"},
                {"name": "tag", "renamedFrom": "tags", "destination": "Tag", "inverse": "book"}
                """#,
            tag: #"{"name": "book", "renamedFrom": "books", "destination": "Book", "inverse": "tag"}"#,
            item: Self.items)
        let store = try Self.open(kind, url, oneToOne, migrate: true)
        defer { store.close() }
        let pk = { (id: ObjectID?) in id?.primaryKey }
        let authors = try rows(store, "Author")
        #expect(
            seeded.authors.map { pk(authors[$0.primaryKey!]?.toOne["book"] ?? nil) } == seeded.books.prefix(2).map(pk)
                + [nil])
        let books = try rows(store, "Book")
        #expect(seeded.books.map { pk(books[$0.primaryKey!]?.toOne["tag"] ?? nil) } == seeded.tags.map(pk) + [nil])
        let tags = try rows(store, "Tag")
        #expect(seeded.tags.map { pk(tags[$0.primaryKey!]?.toOne["book"] ?? nil) } == seeded.books.prefix(2).map(pk))
    }

    @Test(arguments: stores)
    func aDoubleBeyondAFloatRefusesTheMigration(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let (url, seeded) = try Self.seeded(kind, folder)
        do {
            let store = try Self.open(kind, url, try Self.v1, migrate: false)
            defer { store.close() }
            let item = ObjectID(store: store.identifier, entity: "Item", primaryKey: seeded.items[0].primaryKey!)
            try store.save(
                StoreChanges(updates: [
                    StoreUpdate(id: item, expectedVersion: nil, attributes: ["ratio": .double(1e300)])
                ]))
        }
        let float = try Self.numbers(Self.items.replacingOccurrences(of: #""double""#, with: #""float""#))
        try Self.expectRefusal(
            kind, url, float,
            [
                "Item.ratio: type changes from double to float, and 1 value does not fit float (e.g. 1",
                "e+300 of Item \(seeded.items[0].primaryKey!))",
            ])
    }
}
