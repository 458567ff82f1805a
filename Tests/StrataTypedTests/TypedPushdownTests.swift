import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Typed filters and sorts lower to the request a format string gives, so the stores build the
/// same SQL for both: asserted on the `FetchRequest` itself and on the SQL the SQLite store
/// prepares for each.
@Suite struct TypedPushdownTests {
    /// Pairs of a typed request and the format string it stands for.
    static func pairs(author: Author, tag: Tag) throws -> [(TypedFetchRequest<Book>, FetchRequest)] {
        func format(_ text: String, _ arguments: PredicateArgument..., sort: [SortKey] = []) throws -> FetchRequest {
            FetchRequest(
                entityName: "Book", predicate: try FetchPredicate(format: text, arguments: arguments),
                sortDescriptors: sort)
        }
        let books = Book.fetchRequest()
        return [
            (books.filter(\.year > 1960), try format("year > 1960")),
            (books.filter(\.title == "Kindred" && \.year >= 1979), try format("title == 'Kindred' AND year >= 1979")),
            (
                books.filter(\.year < 1900 || \.year > 2000 || \.year == nil),
                try format("year < 1900 OR year > 2000 OR year == nil")
            ),
            (books.filter(!(\.available == true)), try format("NOT available == YES")),
            (books.filter(.contains(\.title, "ind", options: .caseInsensitive)), try format("title CONTAINS[c] 'ind'")),
            (books.filter(.beginsWith(\.title, "Kin")), try format("title BEGINSWITH 'Kin'")),
            (books.filter(.in(\.year, [1979, 1980])), try format("year IN {1979, 1980}")),
            (books.filter(.between(\.pages, 100...300)), try format("pages BETWEEN {100, 300}")),
            (books.filter(\.rating >= 3.5), try format("rating >= 3.5")),
            (books.filter(\.author == author), try format("author == %@", .object(author.objectID))),
            (books.filter(\.author == nil), try format("author == nil")),
            (books.filter(.contains(\.tags, tag)), try format("ANY tags == %@", .object(tag.objectID))),
            (
                books.filter(\.year > 1960).sorted(by: \.title).sorted(by: \.year, ascending: false),
                try format("year > 1960", sort: [SortKey("title"), SortKey("year", ascending: false)])
            ),
            (
                books.filter(\.year > 1960).filter(\.format == "paperback"),
                try format("year > 1960 AND format == 'paperback'")
            ),
        ]
    }

    @Test func typedRequestsEqualTheirFormatStrings() throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(
            model: try ObjectModel.example,
            stores: PersistentContainer.sqliteStores(for: try ObjectModel.example, in: folder.url))
        let author = Author(context: container.viewContext)
        let tag = Tag(context: container.viewContext)
        for (typed, format) in try Self.pairs(author: author, tag: tag) {
            #expect(typed.problems.isEmpty)
            #expect(typed.request == format, "\(typed.request.predicate.map { "\($0)" } ?? "-")")
        }
    }

    @Test func theSQLiteStorePreparesTheSameSQLForBoth() throws {
        let folder = TemporaryDirectory()
        let model = try ObjectModel.example
        let container = try PersistentContainer(
            model: model, stores: PersistentContainer.sqliteStores(for: model, in: folder.url))
        let context = container.viewContext
        let author = Author(context: context)
        author.name = "Octavia E. Butler"
        let book = Book(context: context)
        book.title = "Kindred"
        book.year = 1979
        book.author = author
        let tag = Tag(context: context)
        tag.name = "sf"
        book.addToTags(tag)
        try context.save()
        let store = try #require(
            container.coordinator.stores.compactMap { $0 as? SQLiteStore }.first { $0.entityNames.contains("Book") })
        /// The SQL the store prepared for one fetch.
        func sql(_ fetch: () throws -> [Book]) throws -> (sql: [String], titles: [String]) {
            store.fetchSQL.withLock { $0.removeAll() }
            let titles = try fetch().map(\.title)
            return (store.fetchSQL.withLock { $0.values.map(\.sql) }, titles)
        }
        for (typed, format) in try Self.pairs(author: author, tag: tag) {
            let fromFormat = try sql { try context.fetch(format).compactMap(Book.init) }
            let fromTyped = try sql { try context.fetch(typed) }
            #expect(fromFormat.sql.count == 1, "\(format.predicate.map { "\($0)" } ?? "-"): \(fromFormat.sql)")
            #expect(fromTyped.sql == fromFormat.sql)
            #expect(fromTyped.titles == fromFormat.titles)
        }
    }

    /// A generated template function builds the request the model's template gives.
    @Test func templateRequestsEqualTheModelsTemplates() throws {
        let example = try ObjectModel.example
        let template = FetchRequestTemplate(
            name: "recent", entity: "Book", predicate: "year > $YEAR AND title BEGINSWITH $prefix")
        let model = try ObjectModel(
            name: example.name, entities: example.entities, configurations: example.configurations,
            fetchRequestTemplates: [template])
        let variables: [String: PredicateArgument] = [
            "YEAR": .value(Int32(1960).attributeValue), "prefix": .value(.string("K")),
        ]
        let typed = TypedFetchRequest<Book>(template: "recent", format: template.predicate, substituting: variables)
        #expect(typed.request == (try model.fetchRequest(fromTemplate: "recent", substitutionVariables: variables)))
        #expect(
            TypedFetchRequest<Book>(template: "all", format: "", substituting: [:]).request
                == Book.fetchRequest().request)
    }
}
