import Foundation
import Strata
import StrataCodegen
import StrataTestSupport
import Testing

/// Generated code compiles with `swiftc -swift-version 6 -warnings-as-errors` (type checking and
/// the mandatory SIL passes, see ``TypeChecker``) against the Strata module this build made: for every real Core Data model of the shared
/// material, for the example models with code that uses the typed API, and for a model made of
/// names that collide with Swift; and a misspelt property does not.
@Suite struct GeneratedCodeCompilesTests {
    static let examples = CoreDataMaterial.repositoryRoot.appendingPathComponent("Examples")
    static let material = CoreDataMaterial.folder

    /// Every `.xcdatamodeld`, loose `.xcdatamodel` and `contents`-style XML of the material (not
    /// inside a mapping model), relative to its folder.
    static let realModels: [String] = {
        guard let walker = FileManager.default.enumerator(at: material, includingPropertiesForKeys: nil) else {
            return []
        }
        var found: [String] = []
        for case let url as URL in walker {
            switch url.pathExtension {
            case "xcdatamodeld", "xcdatamodel", "xml":
                found.append(String(url.standardizedFileURL.path.dropFirst(material.path.count + 1)))
                walker.skipDescendants()
            case "xcmappingmodel": walker.skipDescendants()
            default: continue
            }
        }
        return found.sorted()
    }()

    /// The models Strata refuses to load, as Core Data does (see RealCoreDataModelTests): there is
    /// no code to generate for them.
    static let refused: [String: String] = [
        "models/thyme-xcode3-elements/2010-2314e7c/DataModel.xcdatamodel": "Xcode 3",
        "models/thyme-xcode3-elements/HEAD-a8ea0b2/DataModel.xcdatamodel": "Xcode 3",
        "models/twomanycontrollers-xcode3-elements-CORRUPT/MyDocument.xcdatamodel": "Xcode 3",
        "stores/apple-iphonecoredatarecipes/Recipes.xcdatamodel": "Xcode 3",
        "models/momxml/model2.xml": "uniqueness constraint names 'iD'",
    ]

    /// Generates the model at `url` into a fresh folder with `extra` beside it and type-checks them.
    static func typeCheck(modelAt url: URL, extra: String? = nil, access: SwiftGenerator.AccessLevel = .public)
        throws -> TypeChecker.Outcome
    {
        let checker = try TypeChecker.forThisBuild()
        let folder = TemporaryDirectory()
        let file = try SwiftGenerator.generate(modelAt: url.path, into: folder.url.path, options: .init(access: access))
        var files = [file]
        if let extra {
            let use = folder.file("Use.swift")
            try Data(extra.utf8).write(to: use)
            files.append(use)
        }
        return try checker.check(files)
    }

    @Test(
        .serialized, .enabled(if: CoreDataMaterial.requirement.runs, "\(CoreDataMaterial.requirement.skipComment)"),
        arguments: realModels)
    func realModelGeneratesCodeThatCompiles(path: String) throws {
        try CoreDataMaterial.requirement.check()
        let url = Self.material.appendingPathComponent(path)
        do {
            _ = try ObjectModel.load(contentsOf: url)
        } catch {
            let expected = try #require(Self.refused[path], "\(path) does not load: \(error)")
            #expect("\(error)".contains(expected), "\(error)")
            print("generated code for \(path): none, the model is refused as Core Data refuses it")
            return
        }
        let outcome = try Self.typeCheck(modelAt: url)
        #expect(outcome.succeeded, "\(path):\n\(outcome.output)")
        print("generated code for \(path): type-checks in Swift 6 with no warning")
    }

    @Test func theMaterialHasModels() throws {
        try CoreDataMaterial.requirement.check()
        #expect(Self.realModels.count > Self.refused.count, "no model under \(Self.material.path)")
    }

    /// The typed API as a program uses it, against both example models.
    static let libraryUse = """
        import Foundation
        import Strata

        func use(_ context: ObjectContext) throws -> [Book] {
            let author = Author(context: context)
            author.name = "Octavia E. Butler"
            let book = Book(context: context)
            book.title = "Kindred"
            book.year = 1979
            book.pages = 264
            book.wordCount = nil
            book.price = Decimal(string: "9.99")
            book.rating = 4.5
            book.weight = 0.3
            book.available = true
            book.published = Date()
            book.cover = Data([1, 2])
            book.sku = UUID()
            book.homepage = URL(string: "https://example.com")
            book.metadata = .object(["k": .integer(1)])
            book.author = author
            let tag = Tag(context: context)
            tag.name = "sf"
            book.addToTags(tag)
            book.removeFromTags(tag)
            book.tags = [tag]
            let titles: Set<Book> = author.books
            _ = titles
            _ = try book.searches
            let ids: [TypedObjectID<Book>] = try context.fetchIDs(Book.fetchRequest())
            _ = ids
            return try context.fetch(
                Book.fetchRequest()
                    .filter(\\.year > 1960 && \\.title != "Dawn" || !(\\.available == false))
                    .filter(.contains(\\.title, "ind", options: .caseInsensitive))
                    .filter(\\.author == author)
                    .filter(.in(\\.year, [1979, 1980]))
                    .sorted(by: \\.title).sorted(by: \\.year, ascending: false)
                    .limit(10))
        }

        /// What crosses contexts and tasks: the typed ID, not the view.
        func elsewhere(_ book: Book) async throws -> String {
            let id = book.typedObjectID
            let other = try require(book.context).newChildContext()
            return try await other.perform { try other.object(with: id).title }
        }

        struct Missing: Error {}
        func require<T>(_ value: T?) throws -> T {
            guard let value else { throw Missing() }
            return value
        }
        """

    @Test(arguments: ["Library.json", "Library.xcdatamodel"])
    func exampleModelCompilesWithTheTypedAPI(file: String) throws {
        let outcome = try Self.typeCheck(modelAt: Self.examples.appendingPathComponent(file), extra: Self.libraryUse)
        #expect(outcome.succeeded, "\(file):\n\(outcome.output)")
    }

    @Test func internalDeclarationsCompileToo() throws {
        let outcome = try Self.typeCheck(
            modelAt: Self.examples.appendingPathComponent("Library.json"), extra: Self.libraryUse, access: .internal)
        #expect(outcome.succeeded, "\(outcome.output)")
    }

    /// A compile-failure test: a misspelt property is a compile error that names it.
    @Test func aMisspeltPropertyDoesNotCompile() throws {
        let misspelt = """
            import Strata

            func use(_ context: ObjectContext) {
                let book = Book(context: context)
                book.titel = "Kindred"
            }
            """
        let outcome = try Self.typeCheck(modelAt: Self.examples.appendingPathComponent("Library.json"), extra: misspelt)
        #expect(!outcome.succeeded)
        #expect(outcome.output.contains("value of type 'Book' has no member 'titel'"), "\(outcome.output)")
    }

    /// Views are not `Sendable`, as managed objects are not: Swift 6 refuses to send one to
    /// another task while this one still uses it.
    @Test func aViewCannotCrossIntoAnotherTask() throws {
        let sending = """
            import Strata

            func use(_ context: ObjectContext) async {
                let book = Book(context: context)
                let task = Task.detached { _ = book.title }
                book.title = "Kindred"
                await task.value
            }
            """
        let outcome = try Self.typeCheck(modelAt: Self.examples.appendingPathComponent("Library.json"), extra: sending)
        #expect(!outcome.succeeded)
        #expect(outcome.output.contains("risks causing data races"), "\(outcome.output)")
    }

    /// And a value of the wrong type, where the string API accepts any `AttributeValue` until run.
    @Test func aValueOfTheWrongTypeDoesNotCompile() throws {
        let wrong = """
            import Strata

            func use(_ context: ObjectContext) {
                let book = Book(context: context)
                book.year = "1979"
            }
            """
        let outcome = try Self.typeCheck(modelAt: Self.examples.appendingPathComponent("Library.json"), extra: wrong)
        #expect(!outcome.succeeded)
        #expect(outcome.output.contains("cannot assign value of type 'String' to type 'Int32'"), "\(outcome.output)")
    }
}
