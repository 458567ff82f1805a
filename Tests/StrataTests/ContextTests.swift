import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Titles of books, for readable expectations.
func titles(_ objects: [ManagedObject]) -> [String] { objects.map { $0.string("title") ?? $0.string("name") ?? "?" } }

@Suite struct ContextTests {
    @Test(arguments: StackKind.allCases)
    func childSavesIntoParentAndRootWritesTheStores(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        let child = root.newChildContext()
        let grandchild = child.newChildContext()
        let author = try grandchild.insert("Author", values: ["name": .string("Le Guin")])
        let book = try grandchild.insert("Book", values: ["title": .string("Earthsea")])
        try book.setObject(author, forKey: "author")
        #expect(author.objectID.isTemporary)
        #expect(grandchild.hasChanges && !child.hasChanges)
        try grandchild.save()
        #expect(!grandchild.hasChanges && child.hasChanges && !root.hasChanges)
        try child.save()
        #expect(root.hasChanges)
        // Nothing has touched a store yet.
        #expect(try root.coordinator.count(FetchRequest(entityName: "Book")) == 0)
        try root.save()
        #expect(!root.hasChanges)
        #expect(try root.coordinator.count(FetchRequest(entityName: "Book")) == 1)
        // Every context that holds the object sees its permanent ID.
        let permanent = author.objectID
        #expect(!permanent.isTemporary)
        #expect(try root.object(with: permanent).string("name") == "Le Guin")
        #expect(try child.object(with: permanent).objectID == permanent)
        #expect(try book.object(forKey: "author")?.objectID == permanent)
        #expect(try root.object(with: book.objectID).version == 1)
        // The row is in the Main store's file.
        if stack == .postgresql {
            let schema = folder.postgreSQLSchema(name: "main")
            let rows = try PostgreSQLTestServer.psql(
                "SELECT \"_pk\" || '|' || \"_entity\" || '|' || \"_version\" || '|' || convert_from(\"title\", 'UTF8') FROM \(schema).\"Book\""
            )
            #expect(rows.contains("\(book.objectID.primaryKey!)|Book|1|Earthsea"), "\(rows)")
        } else if stack != .memory {
            let dump = try dumpSQLite(folder.file("main.sqlite"))
            #expect(dump.contains { $0.hasPrefix("Book: \(book.objectID.primaryKey!)|Book|1|Earthsea") })
        }
    }

    @Test(arguments: StackKind.allCases)
    func fetchesIncludeUnsavedChanges(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        for (title, year) in [("A", 2001), ("B", 1990), ("C", 1985), ("D", 2010)] {
            try root.insert("Book", values: ["title": .string(title), "year": .integer(Int64(year))])
        }
        try root.save()
        let child = root.newChildContext()
        let request = FetchRequest(
            entityName: "Book", predicate: .compare("year", .greater, .integer(1989)),
            sortDescriptors: [SortKey("year")])
        #expect(titles(try child.fetch(request)) == ["B", "A", "D"])
        try child.insert("Book", values: ["title": .string("E"), "year": .integer(1995)])
        let c = try #require(
            try child.fetch(FetchRequest(entityName: "Book", predicate: .equal("title", .string("C")))).first)
        try c.setValue(.integer(2020), forKey: "year")
        let a = try #require(
            try child.fetch(FetchRequest(entityName: "Book", predicate: .equal("title", .string("A")))).first)
        try child.delete(a)
        #expect(titles(try child.fetch(request)) == ["B", "E", "D", "C"])
        var window = request
        window.fetchLimit = 2
        window.fetchOffset = 1
        #expect(titles(try child.fetch(window)) == ["E", "D"])
        #expect(try child.count(request) == 4)
        // The root still sees the saved state.
        #expect(titles(try root.fetch(request)) == ["B", "A", "D"])
        try child.save()
        #expect(titles(try root.fetch(request)) == ["B", "E", "D", "C"])
        try root.save()
        let fresh = ObjectContext(coordinator: root.coordinator)
        #expect(titles(try fresh.fetch(request)) == ["B", "E", "D", "C"])
        #expect(try fresh.count(request) == 4)
    }

    @Test(arguments: StackKind.allCases)
    func inversesStayInStepAndOrderSurvivesReload(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        let author = try root.insert("Author", values: ["name": .string("A")])
        let other = try root.insert("Author", values: ["name": .string("B")])
        let book = try root.insert("Book", values: ["title": .string("T")])
        try book.setObject(author, forKey: "author")
        #expect(try author.objectIDs(forKey: "books") == [book.objectID])
        try other.add(book, toKey: "books")
        #expect(try author.objectIDs(forKey: "books").isEmpty)
        #expect(try book.object(forKey: "author")?.objectID == other.objectID)
        let red = try root.insert("Tag", values: ["name": .string("red")])
        try book.add(red, toKey: "tags")
        #expect(try red.objectIDs(forKey: "books") == [book.objectID])
        let shelf = try root.insert("Shelf", values: ["label": .string("s")])
        let items = try (0..<4).map { try root.insert("Item", values: ["title": .string("i\($0)")]) }
        try shelf.setObjects([items[2], items[0], items[3], items[1]], forKey: "items")
        #expect(try items[3].object(forKey: "shelf")?.objectID == shelf.objectID)
        try root.save()
        // Reload in a new context over the same stores.
        let fresh = ObjectContext(coordinator: root.coordinator)
        let reloaded = try fresh.object(with: shelf.objectID)
        #expect(titles(try reloaded.objects(forKey: "items")) == ["i2", "i0", "i3", "i1"])
        #expect(try fresh.object(with: book.objectID).object(forKey: "author")?.objectID == other.objectID)
        #expect(try fresh.object(with: red.objectID).objectIDs(forKey: "books") == [book.objectID])
        // Reorder in a child, save through, reload.
        let child = fresh.newChildContext()
        let childShelf = try child.object(with: shelf.objectID)
        var order = try childShelf.objects(forKey: "items")
        order.reverse()
        try childShelf.setObjects(order, forKey: "items")
        try child.save()
        try fresh.save()
        let third = ObjectContext(coordinator: root.coordinator)
        #expect(titles(try third.object(with: shelf.objectID).objects(forKey: "items")) == ["i1", "i3", "i0", "i2"])
    }

    @Test(arguments: StackKind.allCases)
    func deleteRules(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        let author = try root.insert("Author", values: ["name": .string("A")])
        let books = try (0..<2).map { try root.insert("Book", values: ["title": .string("b\($0)")]) }
        for book in books { try book.setObject(author, forKey: "author") }
        let tag = try root.insert("Tag", values: ["name": .string("t")])
        try tag.setObjects(books, forKey: "books")
        let owner = try root.insert("Owner", values: ["name": .string("o")])
        let pet = try root.insert("Pet", values: ["name": .string("p")])
        try pet.setObject(owner, forKey: "owner")
        try root.save()

        // Nullify: deleting a book takes it out of its author's and tag's lists.
        try root.delete(books[0])
        #expect(try author.objectIDs(forKey: "books") == [books[1].objectID])
        #expect(try tag.objectIDs(forKey: "books") == [books[1].objectID])
        try root.save()
        let fresh = ObjectContext(coordinator: root.coordinator)
        #expect(try fresh.object(with: tag.objectID).objectIDs(forKey: "books") == [books[1].objectID])

        // Cascade: deleting the author deletes its remaining book.
        try root.delete(author)
        try root.save()
        #expect(try root.coordinator.count(FetchRequest(entityName: "Book")) == 0)
        #expect(try fresh.coordinator.relatedIDs(of: tag.objectID, relationship: "books").isEmpty)

        // Deny: an owner with pets cannot be deleted; the save says why and keeps the change.
        try root.delete(owner)
        do {
            try root.save()
            Issue.record("deleted an owner with pets")
        } catch {
            #expect(error.code == .validation)
            #expect(error.failures.map(\.rule) == [.deny])
            #expect(error.failures.first?.field == "pets")
        }
        #expect(root.hasChanges)
        root.rollback()
        #expect(!root.hasChanges)
        #expect(try root.object(with: owner.objectID).string("name") == "o")

        // No action: deleting the pet leaves the owner's side alone; then the owner can go.
        try root.delete(pet)
        try root.save()
        try root.delete(try root.object(with: owner.objectID))
        try root.save()
        #expect(try root.coordinator.count(FetchRequest(entityName: "Owner")) == 0)
    }

    @Test(arguments: StackKind.allCases)
    func validationReportsEveryFailureAndKeepsTheChanges(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        let child = root.newChildContext()
        let author = try child.insert(
            "Author",
            values: [
                "name": .string(String(repeating: "x", count: 21)), "email": .string("nope"), "rank": .integer(11),
            ])
        let nameless = try child.insert("Book")
        let tag = try child.insert("Tag", values: ["name": .string("t")])
        for index in 0..<4 {
            let book = try child.insert("Book", values: ["title": .string("b\(index)")])
            try tag.add(book, toKey: "books")
        }
        do {
            try child.save()
            Issue.record("an invalid save succeeded")
        } catch {
            #expect(error.code == .validation)
            let found = Set(error.failures.map { "\($0.entity).\($0.field):\($0.rule.rawValue)" })
            #expect(
                found == [
                    "Author.name:maxLength", "Author.email:regex", "Author.rank:max", "Book.title:required",
                    "Tag.books:maxCount",
                ])
            #expect(error.failures.first { $0.field == "title" }?.objectID == nameless.objectID)
        }
        #expect(child.hasChanges)
        try author.setValue(.string("Ok"), forKey: "name")
        try author.setValue(.string("a@b.c"), forKey: "email")
        try author.setValue(.integer(5), forKey: "rank")
        try nameless.setValue(.string("Named"), forKey: "title")
        try tag.remove(try tag.objects(forKey: "books")[0], fromKey: "books")
        try child.save()
        try root.save()
        #expect(try root.coordinator.count(FetchRequest(entityName: "Book")) == 5)
        // Wrong types are refused when set.
        #expect(throws: ContextError.self) { try author.setValue(.string("ten"), forKey: "rank") }
        #expect(throws: ContextError.self) { try author.setValue(.string("x"), forKey: "nope") }
    }

    @Test(arguments: StackKind.allCases)
    func changesArePublishedAndMerged(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        let received = Locked<[ContextChanges]>([])
        root.observeSaves { changes in received.withLock { $0.append(changes) } }
        let book = try root.insert("Book", values: ["title": .string("Old")])
        let visit = try root.insert("Visit", values: ["path": .string("/old")])
        try root.save()
        let first = try #require(received.current.first)
        #expect(Set(first.inserted) == [book.objectID, visit.objectID])
        #expect(first.byStore[book.objectID.storeIdentifier!]?.inserted == [book.objectID])
        #expect(first.byStore[visit.objectID.storeIdentifier!]?.inserted == [visit.objectID])
        #expect(book.objectID.storeIdentifier != visit.objectID.storeIdentifier)

        let reader = ObjectContext(coordinator: root.coordinator)
        let seen = try reader.object(with: book.objectID)
        #expect(seen.string("title") == "Old")
        try book.setValue(.string("New"), forKey: "title")
        try root.save()
        let update = try #require(received.current.last)
        #expect(update.updated == [book.objectID])
        #expect(seen.string("title") == "Old")
        reader.mergeChanges(update)
        #expect(seen.string("title") == "New")
        try root.delete(book)
        try root.save()
        reader.mergeChanges(try #require(received.current.last))
        #expect(throws: ContextError.self) { try reader.object(with: book.objectID) }
    }

    @Test(arguments: StackKind.allCases)
    func rollbackAndReset(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        let book = try root.insert("Book", values: ["title": .string("Kept")])
        try root.save()
        try book.setValue(.string("Changed"), forKey: "title")
        try root.insert("Book", values: ["title": .string("Dropped")])
        #expect(root.hasChanges)
        root.rollback()
        #expect(!root.hasChanges)
        #expect(book.string("title") == "Kept")
        #expect(titles(try root.fetch(FetchRequest(entityName: "Book"))) == ["Kept"])
        root.reset()
        #expect(try root.object(with: book.objectID).string("title") == "Kept")
        #expect(throws: ContextError.self) { try root.insert("Nope") }
        #expect(throws: ContextError.self) {
            try root.object(with: ObjectID(store: "x", entity: "Book", primaryKey: 9))
        }
    }

    @Test(arguments: StackKind.allCases)
    func performRunsOnTheContextsQueue(stack: StackKind) async throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        let id = try await root.perform {
            let book = try root.insert("Book", values: ["title": .string("Async")])
            try root.save()
            return book.objectID
        }
        let title = try root.performAndWait { try root.performAndWait { try root.object(with: id).string("title") } }
        #expect(title == "Async")
    }
}
