import Foundation
import StrataCodegen
import StrataTestSupport
import Testing

@testable import Strata

/// The README's library example in typed form, against real SQLite stores, and what the typed
/// views are: the context's own objects, seen by the string API alike.
@Suite struct TypedReadmeExampleTests {
    static let examples = CoreDataMaterial.repositoryRoot.appendingPathComponent("Examples")

    @Test func theReadmeExampleInTypedForm() throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(
            model: try ObjectModel.example,
            stores: PersistentContainer.sqliteStores(for: try ObjectModel.example, in: folder.url))
        let context = container.viewContext.newChildContext()
        let author = Author(context: context)
        author.name = "Octavia E. Butler"
        let book = Book(context: context)
        book.title = "Kindred"
        book.year = 1979
        book.author = author  // author.books now holds the book too
        try context.save()  // into the view context
        try container.viewContext.save()  // into catalog.sqlite
        let recent: [Book] = try container.viewContext.fetch(Book.fetchRequest().filter(\.year > 1970))
        #expect(recent.map(\.title) == ["Kindred"])
        #expect(author.books == [book])
        #expect(FileManager.default.fileExists(atPath: folder.file("catalog.sqlite").path))

        // What a new stack over the same files reads.
        let reopened = try PersistentContainer(
            model: try ObjectModel.example,
            stores: PersistentContainer.sqliteStores(for: try ObjectModel.example, in: folder.url)
        ).viewContext
        let books = try reopened.fetch(Book.fetchRequest().sorted(by: \.title))
        #expect(books.map(\.title) == ["Kindred"])
        #expect(books.first?.author?.name == "Octavia E. Butler")
        #expect(books.first?.format == "paperback")  // the model's default
        #expect(books.first?.available == true)
    }

    @Test func typedViewsAreTheContextsOwnObjects() throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(
            model: try ObjectModel.example,
            stores: PersistentContainer.sqliteStores(for: try ObjectModel.example, in: folder.url))
        let context = container.viewContext
        let book = Book(context: context)
        book.title = "Kindred"
        // One object: the view holds the managed object the context keeps, no copy.
        #expect(try context.object(with: book.objectID) === book.managedObject)
        #expect(book.managedObject.string("title") == "Kindred")
        try book.managedObject.setValue(.integer(1979), forKey: "year")
        #expect(book.year == 1979)
        // Every attribute type round-trips through a save and a fresh stack.
        let sku = UUID()
        let published = Date(timeIntervalSince1970: 296_611_200)
        book.pages = 264
        book.wordCount = 99_000
        book.price = Decimal(string: "9.99")
        book.rating = 4.5
        book.weight = 0.25
        book.available = false
        book.published = published
        book.cover = Data([1, 2, 3])
        book.sku = sku
        book.homepage = URL(string: "https://example.com/kindred")
        book.metadata = .object(["awards": .array([.string("none")])])
        let tag = Tag(context: context)
        tag.name = "sf"
        book.addToTags(tag)
        #expect(tag.books == [book])  // the inverse, kept in step
        try context.save()
        let again = try PersistentContainer(
            model: try ObjectModel.example,
            stores: PersistentContainer.sqliteStores(for: try ObjectModel.example, in: folder.url)
        ).viewContext
        let read = try #require(try again.fetch(Book.fetchRequest()).first)
        #expect(read.title == "Kindred" && read.year == 1979 && read.pages == 264 && read.wordCount == 99_000)
        #expect(read.price == Decimal(string: "9.99") && read.rating == 4.5 && read.weight == 0.25)
        #expect(read.available == false && read.published == published && read.cover == Data([1, 2, 3]))
        #expect(read.sku == sku && read.homepage == URL(string: "https://example.com/kindred"))
        #expect(read.metadata == .object(["awards": .array([.string("none")])]))
        #expect(read.tags.map(\.name) == ["sf"])
        read.removeFromTags(try #require(read.tags.first))
        #expect(read.tags.isEmpty)
        // Nil clears an optional attribute; a non-optional one without a value reads as empty.
        read.year = nil
        #expect(read.managedObject["year"] == .null)
        let fresh = Author(context: again)
        #expect(fresh.name == "")
        #expect(fresh.managedObject["name"] == .null)
    }

    @Test func toManyHelpersKeepInversesInStep() throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(
            model: try ObjectModel.example,
            stores: PersistentContainer.sqliteStores(for: try ObjectModel.example, in: folder.url))
        let context = container.viewContext
        let author = Author(context: context)
        author.name = "Octavia E. Butler"
        let (kindred, dawn, wildSeed) = (Book(context: context), Book(context: context), Book(context: context))
        (kindred.title, dawn.title, wildSeed.title) = ("Kindred", "Dawn", "Wild Seed")
        author.addToBooks([kindred, dawn])
        author.addToBooks(kindred)  // already there: nothing changes
        #expect(author.books == [kindred, dawn])
        #expect(kindred.author == author && dawn.author == author)
        author.addToBooks(wildSeed)
        author.removeFromBooks([kindred, dawn])
        #expect(author.books == [wildSeed])
        #expect(kindred.author == nil && dawn.author == nil)
        dawn.author = author
        #expect(author.books == [wildSeed, dawn])
        author.books = [kindred]
        #expect(wildSeed.author == nil && dawn.author == nil && kindred.author == author)
        try context.save()
        #expect(try context.fetch(Book.fetchRequest().filter(\.author == author)) == [kindred])
    }

    @Test func fetchedPropertiesAndConversions() throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(
            model: try ObjectModel.example,
            stores: PersistentContainer.sqliteStores(for: try ObjectModel.example, in: folder.url))
        let context = container.viewContext
        let book = Book(context: context)
        book.title = "Kindred"
        let search = SearchLog(context: context)
        search.query = "who wrote kindred"
        try context.save()
        #expect(try book.searches == [search])
        // A view converts from a managed object of its entity only.
        #expect(Book(book.managedObject) == book)
        #expect(Author(book.managedObject) == nil)
        #expect(try context.object(with: book.typedObjectID) == book)
        #expect(throws: ContextError.self) { try context.object(with: book.objectID, as: Author.self) }
        try context.delete(book)
        #expect(book.isDeleted)
    }

    /// (A key path of a type no attribute has, such as `\.title.count`, does not compile at all.)
    @Test func aKeyPathThatIsNoPropertyFailsTheFetch() throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(
            model: try ObjectModel.example,
            stores: PersistentContainer.sqliteStores(for: try ObjectModel.example, in: folder.url))
        // `description` is a property of every view, not of the model: it compiles, and cannot be fetched.
        let request = Book.fetchRequest().filter(\.description == "Kindred")
        let error = try #require(throws: ContextError.self) { try container.viewContext.fetch(request) }
        #expect(error.code == .invalidPredicate)
        #expect("\(error)".contains("is not a generated property of Book"), "\(error)")
    }

    /// The checked-in generated code is what the generator makes of the example model today.
    @Test func theGeneratedCodeIsCurrent() throws {
        let model = Self.examples.appendingPathComponent("Library.xcdatamodel")
        let generated = SwiftGenerator(
            model: try ObjectModel.load(contentsOf: model), options: .init(fileStem: "Library")
        ).generate()
        let file = try #require(generated.first)
        let checkedIn = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Generated").appendingPathComponent(file.fileName)
        #expect(
            try String(contentsOf: checkedIn, encoding: .utf8) == file.contents,
            "regenerate: swift run strata-codegen --model Examples/Library.xcdatamodel --output Tests/StrataTypedTests/Generated"
        )
    }
}
