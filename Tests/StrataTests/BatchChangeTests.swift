import Foundation
import StrataTestSupport
import Synchronization
import Testing

@testable import Strata

/// Batch updates and deletes by predicate, in every kind of store: validation, delete rules,
/// versions, history, and contexts that learn of them.
@Suite struct BatchChangeTests {
    /// Authors cascade to their books; tags deny while they hold books; a review needs its book.
    static let modelJSON = #"""
        {"name": "Batch", "version": "1", "entities": [
          {"name": "Author", "attributes": [{"name": "name", "type": "string", "optional": false}],
           "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "author", "deleteRule": "cascade"}]},
          {"name": "Book", "attributes": [
             {"name": "title", "type": "string", "optional": false, "maxLength": 40},
             {"name": "year", "type": "integer32", "min": 0, "max": 3000},
             {"name": "available", "type": "boolean", "optional": false, "default": true}],
           "relationships": [{"name": "author", "destination": "Author", "inverse": "books"},
                             {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "books"},
                             {"name": "reviews", "destination": "Review", "toMany": true, "inverse": "book"}],
           "uniqueness": [["title"]]},
          {"name": "Tag", "attributes": [{"name": "name", "type": "string"}],
           "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "tags", "deleteRule": "deny"}]},
          {"name": "Review", "attributes": [{"name": "stars", "type": "integer16"}],
           "relationships": [{"name": "book", "destination": "Book", "inverse": "reviews", "optional": false}]}
        ]}
        """#
    static let model = try! ObjectModel.load(json: Array(modelJSON.utf8))

    /// A coordinator over one store of `kind` recording history.
    static func open(_ kind: StoreUnderTest, _ folder: TemporaryDirectory) throws -> StoreCoordinator {
        let coordinator = StoreCoordinator(model: model)
        let options = StoreOptions(recordsHistory: true)
        switch kind {
        case .sqlite: try coordinator.addStore(type: .sqlite, url: folder.file("batch.sqlite"), options: options)
        case .memory: try coordinator.addStore(type: .inMemory, options: options)
        case .postgresql:
            try coordinator.addStore(type: .postgresql, url: try folder.postgreSQLURL(name: "batch"), options: options)
        }
        return coordinator
    }

    /// Two authors (Ann with books 1–3, Bo with book 4), a tag on book 4, a review of book 3.
    static func seed(_ context: ObjectContext) throws -> (ann: ObjectID, bo: ObjectID, tag: ObjectID) {
        let ann = try context.insert("Author", values: ["name": .string("Ann")])
        let bo = try context.insert("Author", values: ["name": .string("Bo")])
        var books: [ManagedObject] = []
        for (index, year) in [1900, 1940, 1999, 2010].enumerated() {
            let book = try context.insert(
                "Book", values: ["title": .string("Book \(index + 1)"), "year": .integer(Int64(year))])
            try book.setObject(index < 3 ? ann : bo, forKey: "author")
            books.append(book)
        }
        let tag = try context.insert("Tag", values: ["name": .string("classic")])
        try tag.setObjects([books[3]], forKey: "books")
        let review = try context.insert("Review", values: ["stars": .integer(5)])
        try review.setObject(books[2], forKey: "book")
        try context.save()
        return (ann.objectID, bo.objectID, tag.objectID)
    }

    static func books(_ coordinator: StoreCoordinator) throws -> [StoreRow] {
        try coordinator.fetch(FetchRequest(entityName: "Book", sortDescriptors: [SortKey("title")]))
    }

    @Test(arguments: StoreUnderTest.allCases)
    func updatesMatchedObjectsRaisingVersionsAndRecordingHistory(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        let context = ObjectContext(coordinator: coordinator)
        _ = try Self.seed(context)
        let before = try coordinator.currentHistoryToken()
        var request = BatchUpdateRequest(
            entityName: "Book", predicate: try FetchPredicate(format: "year < 1950"),
            propertiesToUpdate: ["available": .boolean(false), "year": .integer(1950)])
        request.resultType = .objects
        let result = try context.execute(request)
        #expect(result.count == 2)
        #expect(result.objects.map { $0[attribute: "year"] } == [.integer(1950), .integer(1950)])
        #expect(result.objects.allSatisfy { $0.version == 2 })
        let rows = try Self.books(coordinator)
        #expect(
            rows.map { $0[attribute: "available"] } == [
                .boolean(false), .boolean(false), .boolean(true), .boolean(true),
            ])
        #expect(rows.map(\.version) == [2, 2, 1, 1])
        let history = try coordinator.history(after: before)
        #expect(history.count == 1)
        let changes = history.flatMap(\.changes)
        #expect(Set(changes.map(\.objectID)) == Set(result.objectIDs))
        #expect(
            changes.allSatisfy {
                $0.kind == .update && $0.version == 2 && $0.updatedProperties == ["available", "year"]
            })
        #expect(result.historyToken != nil)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func aValueBreakingARuleRefusesTheWholeBatch(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        let context = ObjectContext(coordinator: coordinator)
        _ = try Self.seed(context)
        let before = try Self.books(coordinator)
        let tooLate = BatchUpdateRequest(entityName: "Book", propertiesToUpdate: ["year": .integer(5000)])
        #expect { try context.execute(tooLate) } throws: { error in
            let error = error as! ContextError
            return error.code == .validation && error.failures.map(\.rule) == [.max]
        }
        let noTitle = BatchUpdateRequest(entityName: "Book", propertiesToUpdate: ["title": .null])
        #expect { try context.execute(noTitle) } throws: { ($0 as! ContextError).failures.map(\.rule) == [.required] }
        // Two books cannot share a title: the store's uniqueness constraint refuses it all.
        let sameTitle = BatchUpdateRequest(entityName: "Book", propertiesToUpdate: ["title": .string("Same")])
        #expect { try context.execute(sameTitle) } throws: {
            ($0 as! ContextError).storeError?.code == .uniqueViolation
        }
        let relationship = BatchUpdateRequest(entityName: "Book", propertiesToUpdate: ["author": .null])
        #expect { try context.execute(relationship) } throws: { ($0 as! ContextError).code == .unknownProperty }
        #expect(try Self.books(coordinator) == before)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func maxAffectedRefusesAndChangesNothing(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        let context = ObjectContext(coordinator: coordinator)
        _ = try Self.seed(context)
        let before = try Self.books(coordinator)
        var update = BatchUpdateRequest(entityName: "Book", propertiesToUpdate: ["available": .boolean(false)])
        update.maxAffected = 3
        #expect { try context.execute(update) } throws: { ($0 as! ContextError).code == .tooManyAffected }
        var delete = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Book"))
        delete.maxAffected = 3
        #expect { try context.execute(delete) } throws: { ($0 as! ContextError).code == .tooManyAffected }
        #expect(try Self.books(coordinator) == before)
        update.maxAffected = 4
        #expect(try context.execute(update).count == 4)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func deleteCascadesAndNullifies(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        let context = ObjectContext(coordinator: coordinator)
        let (_, bo, tag) = try Self.seed(context)
        let before = try coordinator.currentHistoryToken()
        let tagVersion = try #require(try coordinator.row(for: tag)?.version)
        // Bo's book is tagged: deleting Bo cascades to it, and the tag lets go of it (a join table:
        // the tag's version rises).
        var request = BatchDeleteRequest(
            fetchRequest: FetchRequest(entityName: "Author", predicate: try FetchPredicate(format: "name == 'Bo'")))
        request.resultType = .objectIDs
        let result = try context.execute(request)
        #expect(result.count == 1)
        #expect(result.objectIDs == [bo])
        #expect(Set(result.changes.deleted.map(\.entityName)) == ["Author", "Book"])
        #expect(result.changes.updated == [tag])
        #expect(try Self.books(coordinator).count == 3)
        #expect(try coordinator.relatedIDs(of: tag, relationship: "books").isEmpty)
        #expect(try coordinator.row(for: tag)?.version == tagVersion + 1)
        let changes = try coordinator.history(after: before).flatMap(\.changes)
        #expect(changes.filter { $0.kind == .delete }.count == 2)
        #expect(changes.filter { $0.kind == .update }.map(\.objectID) == [tag])
    }

    @Test(arguments: StoreUnderTest.allCases)
    func denyAndRequiredInversesRefuseTheWholeDelete(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        let context = ObjectContext(coordinator: coordinator)
        let (ann, _, _) = try Self.seed(context)
        let books = try Self.books(coordinator)
        // The tag holds book 4: deny.
        let tags = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Tag"))
        #expect { try context.execute(tags) } throws: { ($0 as! ContextError).failures.map(\.rule) == [.deny] }
        // Deleting every author cascades to book 4 too, which the tag holds: the tag's rule is
        // not the authors', so that goes; but book 3's review needs its book.
        let authors = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Author"))
        #expect { try context.execute(authors) } throws: { ($0 as! ContextError).failures.map(\.rule) == [.required] }
        #expect(try Self.books(coordinator) == books)
        #expect(try coordinator.row(for: ann) != nil)
        // Without the review, Ann goes with her books.
        let reviews = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Review")))
        #expect(reviews.count == 1)
        let ann2 = BatchDeleteRequest(
            fetchRequest: FetchRequest(entityName: "Author", predicate: try FetchPredicate(format: "name == 'Ann'")))
        #expect(try context.execute(ann2).changes.deleted.count == 4)
        #expect(try Self.books(coordinator).count == 1)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func contextsHoldingAffectedObjectsLearnOfIt(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        let root = ObjectContext(coordinator: coordinator)
        _ = try Self.seed(root)
        let other = ObjectContext(coordinator: coordinator)
        root.observeSaves { changes in ObjectContext.mergeChanges(fromRemoteContextSave: changes, into: [other]) }
        let child = root.newChildContext()
        let request = FetchRequest(entityName: "Book", sortDescriptors: [SortKey("title")])
        let held = try child.fetch(request)
        let heldElsewhere = try other.fetch(request)
        #expect(try held[0].value(forKey: "available") == .boolean(true))
        #expect(try heldElsewhere[0].value(forKey: "available") == .boolean(true))
        _ = try child.execute(
            BatchUpdateRequest(
                entityName: "Book", predicate: try FetchPredicate(format: "year < 1950"),
                propertiesToUpdate: ["available": .boolean(false)]))
        #expect(try held[0].value(forKey: "available") == .boolean(false))
        #expect(held[0].version == 2)
        #expect(try heldElsewhere[0].value(forKey: "available") == .boolean(false))
        #expect(try root.object(with: held[1].objectID).value(forKey: "available") == .boolean(false))
        // A later edit in the child saves against the new version.
        try held[0].setValue(.integer(1901), forKey: "year")
        try child.save()
        try root.save()
        #expect(try coordinator.row(for: held[0].objectID)?.version == 3)
        // A batch delete: the object leaves the contexts.
        _ = try root.execute(
            BatchDeleteRequest(
                fetchRequest: FetchRequest(entityName: "Book", predicate: try FetchPredicate(format: "year > 2000"))))
        #expect(throws: ContextError.self) { try other.object(with: heldElsewhere[3].objectID) }
        #expect(throws: ContextError.self) { try root.object(with: held[3].objectID) }
    }

    /// Derived attributes are computed by every save, from the objects written and those they
    /// reach: with them, a batch change is made in a private context and keeps them right.
    @Test(arguments: StoreUnderTest.allCases)
    func derivedAttributesStayRight(_ kind: StoreUnderTest) throws {
        let model = try ObjectModel.load(
            json: Array(
                #"""
                {"name": "Derived", "version": "1", "entities": [
                  {"name": "Writer", "attributes": [{"name": "name", "type": "string"},
                     {"name": "pages", "type": "integer64", "derivation": "works.@sum.pages"}],
                   "relationships": [{"name": "works", "destination": "Work", "toMany": true, "inverse": "writer"}]},
                  {"name": "Work", "attributes": [{"name": "title", "type": "string"}, {"name": "pages", "type": "integer32"},
                     {"name": "shout", "type": "string", "derivation": "uppercase:(title)"}],
                   "relationships": [{"name": "writer", "destination": "Writer", "inverse": "works"}]}
                ]}
                """#.utf8))
        let folder = TemporaryDirectory()
        let coordinator = StoreCoordinator(model: model)
        switch kind {
        case .sqlite: try coordinator.addStore(type: .sqlite, url: folder.file("derived.sqlite"))
        case .memory: try coordinator.addStore(type: .inMemory)
        case .postgresql: try coordinator.addStore(type: .postgresql, url: try folder.postgreSQLURL(name: "derived"))
        }
        let context = ObjectContext(coordinator: coordinator)
        let writer = try context.insert("Writer", values: ["name": .string("Jo")])
        for pages in [10, 20] {
            let work = try context.insert(
                "Work", values: ["title": .string("w\(pages)"), "pages": .integer(Int64(pages))])
            try work.setObject(writer, forKey: "writer")
        }
        try context.save()
        #expect(try writer.value(forKey: "pages") == .integer(30))
        let result = try context.execute(
            BatchUpdateRequest(
                entityName: "Work", predicate: try FetchPredicate(format: "pages > 15"),
                propertiesToUpdate: ["title": .string("big"), "pages": .integer(50)]))
        #expect(result.count == 1)
        #expect(try writer.value(forKey: "pages") == .integer(60))
        let works = try coordinator.fetch(FetchRequest(entityName: "Work", sortDescriptors: [SortKey("pages")]))
        #expect(works.map { $0[attribute: "shout"] } == [.string("W10"), .string("BIG")])
        let deleted = try context.execute(
            BatchDeleteRequest(
                fetchRequest: FetchRequest(entityName: "Work", predicate: try FetchPredicate(format: "pages < 15"))))
        #expect(deleted.count == 1)
        #expect(try coordinator.row(for: writer.objectID)?[attribute: "pages"] == .integer(50))
        #expect(try writer.value(forKey: "pages") == .integer(50))
    }
}
