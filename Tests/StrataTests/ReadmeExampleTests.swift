import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// The README's library examples, run as written (paths moved into a temporary folder).
@Suite struct ReadmeExampleTests {
    @Test func explicitStackAndContainerSideBySide() throws {
        let folder = TemporaryDirectory()
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Examples")

        // Explicit: model, coordinator with one store per configuration, root and child contexts.
        let model = try ObjectModel.load(contentsOf: examples.appendingPathComponent("Library.xcdatamodel"))
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(type: .sqlite, configuration: "Catalog", url: folder.file("explicit/catalog.sqlite"))
        try coordinator.addStore(type: .sqlite, configuration: "Activity", url: folder.file("explicit/activity.sqlite"))
        let root = ObjectContext(coordinator: coordinator)
        #expect(root.coordinator.routes["SearchLog"]?.first?.configuration == "Activity")

        // One call: the same coordinator and a view context.
        let container = try PersistentContainer(
            model: try ObjectModel.example,
            stores: PersistentContainer.sqliteStores(for: try ObjectModel.example, in: folder.url))
        let context = container.viewContext.newChildContext()
        let author = try context.insert("Author", values: ["name": .string("Octavia E. Butler")])
        let book = try context.insert("Book", values: ["title": .string("Kindred"), "year": .integer(1979)])
        try book.setObject(author, forKey: "author")  // author.books now holds the book too
        try context.save()  // into the view context
        try container.viewContext.save()  // into catalog.sqlite
        let recent = try container.viewContext.fetch(
            FetchRequest(entityName: "Book", predicate: try FetchPredicate(format: "year > 1970")))
        #expect(recent.map { $0.string("title") } == ["Kindred"])
        #expect(try author.objectIDs(forKey: "books") == [book.objectID])
        #expect(FileManager.default.fileExists(atPath: folder.file("catalog.sqlite").path))
    }
}
