import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// The suite every store type passes: the same IDs, values, versions, constraints, relationships,
/// predicates and order.
@Suite struct StoreConformanceTests {
    static let extremes: [String: AttributeValue] = [
        "title": .string("Zoë’s 🚀 日本語 \u{0}tail"),
        "year": .integer(Int64(Int32.min)),
        "pages": .integer(Int64(Int16.max)),
        "wordCount": .integer(Int64.max),
        "price": .decimal(Decimal(string: "12345678901234567890.123456789")!),
        "rating": .double(-0.1 + 0.2),
        "weight": .double(Double.leastNonzeroMagnitude),
        "available": .boolean(false),
        "published": .date(AttributeValue.date(microseconds: 1_700_000_000_123_456)),
        "cover": .binary(Data([0, 1, 0, 255, 0])),
        "sku": .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
        "homepage": .uri("https://example.org/ü?q=1#x"),
        "metadata": .json(.object(["nested": .array([.integer(1), .null, .string("ä")]), "flag": .bool(true)])),
    ]

    @Test(arguments: StoreUnderTest.allCases)
    func everyValueTypeRoundTripsExactly(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let low = try newRow(store, "Book", Self.extremes)
        var highValues = Self.extremes
        highValues["wordCount"] = .integer(Int64.min)
        highValues["title"] = .string("second")
        highValues["price"] = .decimal(Decimal(string: "-0.000000000000000000012345678901234567891")!)
        let high = try newRow(store, "Book", highValues)
        let versions = try store.save(StoreChanges(inserts: [low, high]))
        #expect(versions[low.id] == 1)
        let read = try #require(try store.row(for: low.id))
        #expect(read.version == 1)
        for (name, value) in Self.extremes {
            #expect(read.attributes[name] == value, "attribute \(name)")
        }
        #expect(try store.row(for: high.id)?.attributes["wordCount"] == .integer(Int64.min))
        #expect(try store.row(for: high.id)?.attributes["price"] == highValues["price"])
        #expect(read.toOne["author"] == .some(nil))
        #expect(try store.fetch(FetchRequest(entityName: "Book")).map(\.id) == [low.id, high.id])
        if kind == .sqlite {
            let reopened = try kind.open(folder)
            #expect(try reopened.row(for: low.id) == read)
        }
    }

    @Test(arguments: StoreUnderTest.allCases)
    func versionsAndOptimisticLocking(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let author = try newRow(store, "Author", ["name": .string("Le Guin")])
        try store.save(StoreChanges(inserts: [author]))
        let versions = try store.save(
            StoreChanges(updates: [
                StoreUpdate(id: author.id, expectedVersion: 1, attributes: ["name": .string("Ursula")])
            ]))
        #expect(versions[author.id] == 2)
        #expect(try store.row(for: author.id)?.attributes["name"] == .string("Ursula"))
        // A stale update and a stale delete are both reported, and nothing is written.
        let other = try newRow(store, "Author", ["name": .string("Other")])
        try store.save(StoreChanges(inserts: [other]))
        do {
            try store.save(
                StoreChanges(
                    updates: [StoreUpdate(id: author.id, expectedVersion: 1, attributes: ["name": .string("stale")])],
                    deletes: [StoreDeletion(id: other.id, expectedVersion: 7)]))
            Issue.record("a stale save succeeded")
        } catch {
            #expect(error.code == .conflict)
            #expect(
                Set(error.conflicts) == [
                    VersionConflict(id: author.id, expectedVersion: 1, storedVersion: 2),
                    VersionConflict(id: other.id, expectedVersion: 7, storedVersion: 1),
                ])
        }
        #expect(try store.row(for: author.id)?.attributes["name"] == .string("Ursula"))
        #expect(try store.row(for: other.id) != nil)
        // No expected version: overwrite.
        try store.save(
            StoreChanges(updates: [
                StoreUpdate(id: author.id, expectedVersion: nil, attributes: ["name": .string("Forced")])
            ]))
        #expect(try store.row(for: author.id)?.version == 3)
        try store.save(StoreChanges(deletes: [StoreDeletion(id: other.id, expectedVersion: 1)]))
        #expect(try store.row(for: other.id) == nil)
        // An update of a deleted object reports it as deleted.
        do {
            try store.save(StoreChanges(updates: [StoreUpdate(id: other.id, expectedVersion: 1, attributes: [:])]))
            Issue.record("updated a deleted object")
        } catch {
            #expect(error.conflicts == [VersionConflict(id: other.id, expectedVersion: 1, storedVersion: nil)])
        }
    }

    @Test(arguments: StoreUnderTest.allCases)
    func uniquenessFailureLeavesTheStoreUnchanged(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let tag = try newRow(store, "Tag", ["name": .string("sf")])
        try store.save(StoreChanges(inserts: [tag]))
        let fresh = try newRow(store, "Tag", ["name": .string("fantasy")])
        let clash = try newRow(store, "Tag", ["name": .string("sf")])
        do {
            try store.save(StoreChanges(inserts: [fresh, clash]))
            Issue.record("a duplicate tag was saved")
        } catch {
            #expect(error.code == .uniqueViolation)
            #expect(error.entity == "Tag")
            #expect(error.fields == ["name"])
        }
        #expect(try store.count(FetchRequest(entityName: "Tag")) == 1)
        // A nil value never collides; the compound constraint holds per author.
        let author = try newRow(store, "Author", ["name": .string("A")])
        var first = try newRow(store, "Book", ["title": .string("Same")])
        first.toOne["author"] = author.id
        var second = try newRow(store, "Book", ["title": .string("Same")])
        second.toOne["author"] = .some(nil)
        let third = try newRow(store, "Book", ["title": .string("Same")])
        try store.save(StoreChanges(inserts: [author, first, second, third]))
        var duplicate = try newRow(store, "Book", ["title": .string("Same")])
        duplicate.toOne["author"] = author.id
        #expect(throws: StoreError.self) { try store.save(StoreChanges(inserts: [duplicate])) }
        #expect(try store.count(FetchRequest(entityName: "Book")) == 3)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func relationshipsOfEveryKind(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let author = try newRow(store, "Author", ["name": .string("A")])
        var books: [StoreRow] = []
        for title in ["b1", "b2", "b3"] {
            var book = try newRow(store, "Book", ["title": .string(title)])
            book.toOne["author"] = author.id
            books.append(book)
        }
        var red = try newRow(store, "Tag", ["name": .string("red")])
        let blue = try newRow(store, "Tag", ["name": .string("blue")])
        // Many-to-many set from both sides.
        red.toMany["books"] = [books[2].id, books[0].id]
        books[1].toMany["tags"] = [blue.id, red.id]
        let shelf = try newRow(store, "Shelf", ["label": .string("top")])
        var items: [StoreRow] = []
        for (entity, title) in [("Note", "n1"), ("Photo", "p1"), ("Note", "n2")] {
            var item = try newRow(store, entity, ["title": .string(title)])
            item.toOne["shelf"] = shelf.id
            items.append(item)
        }
        var orderedShelf = shelf
        orderedShelf.toMany["items"] = [items[2].id, items[0].id, items[1].id]
        try store.save(StoreChanges(inserts: [author] + books + [red, blue, orderedShelf] + items))

        #expect(try store.relatedIDs(of: author.id, relationship: "books") == books.map(\.id))
        #expect(try store.row(for: books[0].id)?.toOne["author"] == .some(author.id))
        #expect(
            Set(try store.relatedIDs(of: red.id, relationship: "books")) == [books[0].id, books[1].id, books[2].id])
        #expect(try store.relatedIDs(of: books[1].id, relationship: "tags").contains(red.id))
        #expect(try store.relatedIDs(of: books[1].id, relationship: "tags").contains(blue.id))
        #expect(try store.relatedIDs(of: books[0].id, relationship: "tags") == [red.id])
        // Ordered to-many keeps its order, and IDs name the concrete subentity.
        #expect(try store.relatedIDs(of: shelf.id, relationship: "items") == [items[2].id, items[0].id, items[1].id])
        #expect(try store.row(for: items[1].id)?.id.entityName == "Photo")
        // Reorder, then delete a member: the join rows go with it.
        try store.save(
            StoreChanges(updates: [
                StoreUpdate(
                    id: shelf.id, expectedVersion: 1, toMany: ["items": [items[1].id, items[2].id, items[0].id]])
            ]))
        #expect(try store.relatedIDs(of: shelf.id, relationship: "items") == [items[1].id, items[2].id, items[0].id])
        try store.save(
            StoreChanges(deletes: [
                StoreDeletion(id: items[2].id, expectedVersion: 1), StoreDeletion(id: books[0].id, expectedVersion: 1),
            ]))
        #expect(try store.relatedIDs(of: shelf.id, relationship: "items") == [items[1].id, items[0].id])
        #expect(Set(try store.relatedIDs(of: red.id, relationship: "books")) == [books[1].id, books[2].id])
        #expect(try store.relatedIDs(of: author.id, relationship: "books") == [books[1].id, books[2].id])
        try expectRowWithToMany(store, [author.id, shelf.id, red.id, books[1].id, items[1].id])
        // In the order written, not in key order (blue's key is the greater), read apart or with the row.
        #expect(try store.relatedIDs(of: books[1].id, relationship: "tags") == [blue.id, red.id])
        #expect(
            try store.rowWithToMany(for: books[1].id, model: conformanceModel)?.toMany["tags"] == [blue.id, red.id])
        #expect(
            try store.rowWithToMany(for: red.id, model: conformanceModel)?.toMany["books"] == [
                books[1].id, books[2].id,
            ])
        // Moving a book to no author.
        try store.save(
            StoreChanges(updates: [StoreUpdate(id: books[1].id, expectedVersion: 1, toOne: ["author": nil])]))
        #expect(try store.relatedIDs(of: author.id, relationship: "books") == [books[2].id])
        // Read again after a save: a pooled reader is not left in its earlier snapshot.
        try expectRowWithToMany(store, [author.id, books[1].id])
        #expect(try store.rowWithToMany(for: items[2].id, model: conformanceModel) == nil)
    }

    /// The row with its to-many relationships read together is the row and each list read apart.
    func expectRowWithToMany(_ store: any PersistentStore, _ ids: [ObjectID]) throws {
        for id in ids {
            var expected = try #require(try store.row(for: id))
            for relationship in conformanceModel.relationships(of: id.entityName) where relationship.isToMany {
                expected.toMany[relationship.name] = try store.relatedIDs(of: id, relationship: relationship.name)
            }
            #expect(try store.rowWithToMany(for: id, model: conformanceModel) == expected, "\(id)")
        }
    }

    @Test(arguments: StoreUnderTest.allCases)
    func referencesMustStayInTheStore(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let elsewhere = ObjectID(store: "another-store", entity: "Author", primaryKey: 1)
        var book = try newRow(store, "Book", ["title": .string("x")])
        book.toOne["author"] = elsewhere
        #expect(throws: StoreError.self) { try store.save(StoreChanges(inserts: [book])) }
        #expect(try store.count(FetchRequest(entityName: "Book")) == 0)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func inheritanceFetches(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let rows = [
            try newRow(store, "Note", ["title": .string("a"), "body": .string("text")]),
            try newRow(store, "Photo", ["title": .string("b"), "link": .uri("https://x.org/p.png")]),
        ]
        try store.save(StoreChanges(inserts: rows))
        #expect(try store.fetch(FetchRequest(entityName: "Item")).map(\.id) == rows.map(\.id))
        #expect(try store.fetch(FetchRequest(entityName: "Note")).map(\.id) == [rows[0].id])
        #expect(try store.fetch(FetchRequest(entityName: "Item", includesSubentities: false)).isEmpty)
        #expect(try store.count(FetchRequest(entityName: "Item", predicate: .equal("title", .string("b")))) == 1)
        let note = try #require(try store.row(for: rows[0].id))
        #expect(note.attributes["body"] == .string("text"))
        #expect(note.attributes["link"] == nil)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func predicatesSortingAndWindows(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let books: [(String, Int64?, String)] = [
            ("Dune", 1965, "12.50"), ("dune messiah", 1969, "9.99"), ("Émile", nil, "100"), ("Kindred", 1979, "12.5"),
            ("x'); DROP TABLE Book; --", 2001, "1"),
        ]
        var rows: [StoreRow] = []
        for (title, year, price) in books {
            rows.append(
                try newRow(
                    store, "Book",
                    [
                        "title": .string(title), "year": year.map { .integer($0) } ?? .null,
                        "price": .decimal(Decimal(string: price)!), "available": .boolean(year != nil),
                    ]))
        }
        try store.save(StoreChanges(inserts: rows))
        func titles(_ predicate: FetchPredicate, sort: [SortKey] = [SortKey("title")]) throws -> [String] {
            try store.fetch(FetchRequest(entityName: "Book", predicate: predicate, sortDescriptors: sort)).compactMap {
                if case .string(let s) = $0.attributes["title"] { s } else { nil }
            }
        }
        #expect(
            try titles(.compare("year", .greater, .integer(1966))) == [
                "Kindred", "dune messiah", "x'); DROP TABLE Book; --",
            ])
        #expect(try titles(.equal("year", .null)) == ["Émile"])
        #expect(try titles(.compare("year", .notEqual, .integer(1965))).count == 4)
        #expect(try titles(.not(.compare("year", .less, .integer(1970)))).count == 3)
        #expect(
            try titles(.compare("title", .beginsWith, .string("dune"), options: .caseInsensitive)) == [
                "Dune", "dune messiah",
            ])
        #expect(
            try titles(.compare("title", .equal, .string("emile"), options: [.caseInsensitive, .diacriticInsensitive]))
                == ["Émile"])
        #expect(
            try titles(.compare("title", .like, .string("*d?ne*"), options: .caseInsensitive)) == [
                "Dune", "dune messiah",
            ])
        #expect(try titles(.compare("title", .matches, .string("K.*d"))) == ["Kindred"])
        #expect(try titles(.compare("title", .contains, .string("DROP TABLE"))) == ["x'); DROP TABLE Book; --"])
        #expect(try titles(.equal("title", .string("x'); DROP TABLE Book; --"))) == ["x'); DROP TABLE Book; --"])
        #expect(
            try titles(
                .comparison(
                    Comparison(.keyPath("year"), .in, .list([.constant(.integer(1965)), .constant(.integer(1979))]))))
                == ["Dune", "Kindred"])
        #expect(
            try titles(
                .comparison(
                    Comparison(
                        .keyPath("year"), .between, .list([.constant(.integer(1960)), .constant(.integer(1970))]))))
                == ["Dune", "dune messiah"])
        #expect(try titles(.equal("price", .decimal(Decimal(string: "12.5")!))) == ["Dune", "Kindred"])
        #expect(try titles(.compare("price", .greater, .integer(10))) == ["Dune", "Kindred", "Émile"])
        #expect(
            try titles(.and([.equal("available", .boolean(true)), .compare("year", .less, .integer(1970))])) == [
                "Dune", "dune messiah",
            ])
        #expect(try titles(.or([.equal("year", .integer(1965)), .equal("year", .null)])) == ["Dune", "Émile"])
        // Sorting: binary order by default (uppercase before lowercase, É after ASCII), nil first.
        #expect(try titles(.always) == ["Dune", "Kindred", "dune messiah", "x'); DROP TABLE Book; --", "Émile"])
        #expect(
            try titles(.always, sort: [SortKey("title", caseInsensitive: true)]).prefix(2) == ["Dune", "dune messiah"])
        #expect(try titles(.always, sort: [SortKey("year", ascending: false)]).last == "Émile")
        #expect(try titles(.always, sort: [SortKey("year")]).first == "Émile")
        #expect(
            try titles(.always, sort: [SortKey("price"), SortKey("title")]) == [
                "x'); DROP TABLE Book; --", "dune messiah", "Dune", "Kindred", "Émile",
            ])
        let window = try store.fetch(
            FetchRequest(entityName: "Book", sortDescriptors: [SortKey("title")], fetchLimit: 2, fetchOffset: 1))
        #expect(window.map { $0.attributes["title"] } == [.string("Kindred"), .string("dune messiah")])
        #expect(
            try store.count(
                FetchRequest(
                    entityName: "Book", predicate: .compare("year", .greaterOrEqual, .integer(1969)), fetchLimit: 1))
                == 3)
        // The table survived the metacharacters.
        #expect(try store.count(FetchRequest(entityName: "Book")) == 5)
        // Bad requests are errors, not crashes.
        #expect(throws: StoreError.self) {
            try store.fetch(FetchRequest(entityName: "Book", predicate: .equal("nope", .integer(1))))
        }
        #expect(throws: StoreError.self) {
            try store.fetch(FetchRequest(entityName: "Book", predicate: .equal("year", .string("abc"))))
        }
        #expect(throws: StoreError.self) {
            try store.fetch(FetchRequest(entityName: "Book", sortDescriptors: [SortKey("nope")]))
        }
        #expect(throws: StoreError.self) { try store.fetch(FetchRequest(entityName: "Nope")) }
    }

    @Test(arguments: StoreUnderTest.allCases)
    func relationshipPredicates(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let author = try newRow(store, "Author", ["name": .string("A")])
        var owned = try newRow(store, "Book", ["title": .string("owned")])
        owned.toOne["author"] = author.id
        let orphan = try newRow(store, "Book", ["title": .string("orphan")])
        try store.save(StoreChanges(inserts: [author, owned, orphan]))
        let byAuthor = FetchPredicate.comparison(Comparison(.keyPath("author"), .equal, .object(author.id)))
        #expect(try store.fetch(FetchRequest(entityName: "Book", predicate: byAuthor)).map(\.id) == [owned.id])
        #expect(try store.fetch(FetchRequest(entityName: "Book", predicate: .not(byAuthor))).map(\.id) == [orphan.id])
        #expect(
            try store.fetch(FetchRequest(entityName: "Book", predicate: .equal("author", .null))).map(\.id) == [
                orphan.id
            ])
        let foreign = FetchPredicate.comparison(
            Comparison(.keyPath("author"), .equal, .object(ObjectID(store: "x", entity: "Author", primaryKey: 1))))
        #expect(try store.fetch(FetchRequest(entityName: "Book", predicate: foreign)).isEmpty)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func configurationLimitsTheEntities(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let logs = try kind.open(folder, configuration: "Logs", name: "logs")
        #expect(logs.entityNames == ["Visit"])
        #expect(logs.configuration == "Logs")
        #expect(throws: StoreError.self) { _ = try logs.newObjectIDs(entity: "Book", count: 1) }
        let all = try kind.open(folder, configuration: "Default", name: "all")
        #expect(all.entityNames.count == conformanceModel.entities.count)
        #expect(all.configuration == nil)
        do {
            _ = try kind.open(folder, configuration: "Nope", name: "nope")
            Issue.record("opened an unknown configuration")
        } catch let error as StoreError {
            #expect(error.code == .unknownConfiguration)
        }
    }

    @Test(arguments: StoreUnderTest.allCases)
    func preparedSavesCommitOrRollBack(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let kept = try newRow(store, "Tag", ["name": .string("kept")])
        let prepared = try store.prepare(StoreChanges(inserts: [kept]))
        // Readers do not see a prepared save.
        #expect(try store.count(FetchRequest(entityName: "Tag")) == 0)
        try prepared.commit()
        #expect(try store.count(FetchRequest(entityName: "Tag")) == 1)
        let dropped = try newRow(store, "Tag", ["name": .string("dropped")])
        try store.prepare(StoreChanges(inserts: [dropped])).rollback()
        #expect(try store.count(FetchRequest(entityName: "Tag")) == 1)
        // Keys are never reused, even after a rollback.
        #expect(try store.newObjectIDs(entity: "Tag", count: 1)[0].primaryKey! > dropped.id.primaryKey!)
        store.close()
        #expect(throws: StoreError.self) { try store.fetch(FetchRequest(entityName: "Tag")) }
    }
}
