import Foundation
import Strata

// The README's library example in typed form. `Author`, `Book` and `Tag` are generated from
// Library.xcdatamodel by the StrataModelPlugin build-tool plugin: a misspelt property is a compile
// error, and the types are views of the context's own objects, so the string API sees the same
// values. The stores go into a temporary folder, removed at the end.

/// The explicit stack and the one-call container side by side, then typed inserts, relationships
/// and fetches.
func runExample(in folder: URL) throws {
    // The model the types were generated from, copied beside the executable as a resource.
    guard let modelURL = Bundle.module.url(forResource: "Library", withExtension: "xcdatamodel") else {
        throw ExampleError("Library.xcdatamodel is not among the executable's resources")
    }
    let model = try ObjectModel.load(contentsOf: modelURL)

    // Explicit: model, coordinator with one store per configuration, root context.
    let coordinator = StoreCoordinator(model: model)
    try coordinator.addStore(
        type: .sqlite, configuration: "Catalog", url: folder.appendingPathComponent("explicit/catalog.sqlite"))
    try coordinator.addStore(
        type: .sqlite, configuration: "Activity", url: folder.appendingPathComponent("explicit/activity.sqlite"))
    let root = ObjectContext(coordinator: coordinator)
    print("explicit stack: SearchLog in \(root.coordinator.routes["SearchLog"]?.first?.configuration ?? "?")")

    // One call: the same coordinator and a view context.
    let container = try PersistentContainer(
        model: model, stores: PersistentContainer.sqliteStores(for: model, in: folder))
    let context = container.viewContext.newChildContext()
    let author = Author(context: context)
    author.name = "Octavia E. Butler"
    let book = Book(context: context)
    book.title = "Kindred"
    book.year = 1979
    book.author = author  // author.books now holds the book too
    let dawn = Book(context: context)
    dawn.title = "Dawn"
    dawn.year = 1987
    dawn.author = author
    let tag = Tag(context: context)
    tag.name = "science fiction"
    book.addToTags(tag)  // tag.books now holds the book too
    try context.save()  // into the view context
    try container.viewContext.save()  // into catalog.sqlite

    print("inserted: \(book.title) by \(book.author?.name ?? "nobody")")
    print("author.books: \(author.books.map(\.title).sorted().joined(separator: ", "))")
    print("tags: \(book.tags.map(\.name).sorted().joined(separator: ", "))")
    print("string API: \(book.managedObject.string("title") ?? "nil")")
    try fetchBothWays(container.viewContext)

    // Views stay in their context; a typed ID crosses to another context or task.
    let id = book.typedObjectID
    let background = container.newBackgroundContext()
    let title = try background.performAndWait { try background.object(with: id).title }
    print("background context: \(title)")
}

/// The same fetch typed (key paths) and by format string: the same request reaches the stores.
func fetchBothWays(_ context: ObjectContext) throws {
    let recent = try context.fetch(Book.fetchRequest().filter(\.year > 1970).sorted(by: \.title))
    print("recent: \(recent.map { "\($0.title) (\($0.year.map(String.init) ?? "?"))" }.joined(separator: ", "))")
    let strings = try context.fetch(
        FetchRequest(
            entityName: "Book", predicate: try FetchPredicate(format: "year > 1970"),
            sortDescriptors: [SortKey("title")]))
    print("typed and format-string fetches agree: \(recent.map(\.objectID) == strings.map(\.objectID))")
    // Key-path filters combine, and a format string still narrows a typed request.
    let both = try context.fetch(
        Book.fetchRequest().filter(\.year > 1960 && \.title != "").filter(format: "title BEGINSWITH[c] %@", "k"))
    print("typed and format filters together: \(both.map(\.title).joined(separator: ", "))")
}

/// A failure of the example itself.
struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("typed-library-\(UUID().uuidString)")
do {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try runExample(in: folder)
    try FileManager.default.removeItem(at: folder)
} catch {
    try? FileManager.default.removeItem(at: folder)
    print("error: \(error)")
    exit(1)
}
