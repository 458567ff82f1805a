import Foundation
import StrataTestSupport
import Testing

@testable import Strata

@Suite struct ContextPredicateTests {
    @Test(arguments: StackKind.allCases)
    func relationshipPredicatesSeeUnsavedChanges(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        let author = try root.insert("Author", values: ["name": .string("Le Guin")])
        let book = try root.insert("Book", values: ["title": .string("Earthsea")])
        try book.setObject(author, forKey: "author")
        let tag = try root.insert("Tag", values: ["name": .string("fantasy")])
        try root.save()
        let child = root.newChildContext()
        let request = { (format: String) throws -> [String] in
            titles(
                try child.fetch(
                    FetchRequest(
                        entityName: "Book", predicate: try FetchPredicate(format: format),
                        sortDescriptors: [SortKey("title")])))
        }
        #expect(try request("author.name == 'Le Guin'") == ["Earthsea"])
        #expect(try request("ANY tags.name == 'fantasy'").isEmpty)
        // Unsaved: a new book and a new tag link, seen through relationship paths.
        let other = try child.insert("Book", values: ["title": .string("Tehanu")])
        try other.setObject(try child.object(with: author.objectID), forKey: "author")
        try other.add(try child.object(with: tag.objectID), toKey: "tags")
        #expect(try request("author.name BEGINSWITH[c] 'le'") == ["Earthsea", "Tehanu"])
        #expect(try request("ANY tags.name == 'fantasy'") == ["Tehanu"])
        #expect(try request("tags.@count == 0") == ["Earthsea"])
        #expect(try request("NONE tags.name == 'fantasy'") == ["Earthsea"])
        #expect(try request("author == %@".replacingOccurrences(of: "%@", with: "nil")).isEmpty)
        let byObject = try FetchPredicate(format: "author == %@", .object(author.objectID))
        #expect(
            titles(
                try child.fetch(
                    FetchRequest(entityName: "Book", predicate: byObject, sortDescriptors: [SortKey("title")]))) == [
                    "Earthsea", "Tehanu",
                ])
        try child.save()
        try root.save()
        // After saving, the stores answer the same.
        let fresh = ObjectContext(coordinator: root.coordinator)
        #expect(
            titles(
                try fresh.fetch(
                    FetchRequest(
                        entityName: "Book", predicate: try FetchPredicate(format: "ANY tags.name == 'fantasy'")))) == [
                    "Tehanu"
                ])
    }

    @Test(arguments: StackKind.allCases)
    func fetchedPropertyReadsAnotherStore(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder)
        let book = try root.insert("Book", values: ["title": .string("Dune")])
        for path in ["/search/dune", "/search/DUNE-messiah", "/search/kindred"] {
            try root.insert("Visit", values: ["path": .string(path)])
        }
        try root.save()
        let visits = try root.fetch(fetchedProperty: "visits", of: book, sortedBy: [SortKey("path")])
        #expect(visits.compactMap { $0.string("path") } == ["/search/DUNE-messiah", "/search/dune"])
        #expect(visits.allSatisfy { $0.objectID.storeIdentifier != book.objectID.storeIdentifier })
        // The coordinator reads the Logs store for a Main object.
        #expect(root.coordinator.routes["Visit"]?.first?.configuration == "Logs")
        #expect(throws: ContextError.self) { try root.fetch(fetchedProperty: "nope", of: book) }
    }
}
