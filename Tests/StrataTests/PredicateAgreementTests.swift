import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// SQLite, in-memory and PostgreSQL stores filled with the same data must return the same objects
/// for the same predicates: a seeded random walk over the predicate language.
@Suite struct PredicateAgreementTests {
    /// The data, independent of any store: objects are referred to by their index.
    struct Library {
        var authors: [[String: AttributeValue]] = []
        var tags: [[String: AttributeValue]] = []
        var books: [[String: AttributeValue]] = []
        var bookAuthor: [Int?] = []
        var bookTags: [[Int]] = []
    }

    static let titleWords = [
        "Dune", "dune", "DUNE", "Émile", "Emile", "e\u{301}mile", "émile", "Zoë", "Zoe", "zoë", "Straße", "STRASSE",
        "日本語", "🚀 Rocket", "rocket 🚀", "👩‍👩‍👧 family", "Ünïcödé", "naïve", "naive", "Kindred", "kindred",
        "x'); DROP TABLE Book; --", "100% *wild?* [card]", "back\\slash", "", " ",
    ]
    static let names = ["Le Guin", "le guin", "Herbert", "Ōe", "O\u{304}e", "Butler", "BUTLER", "Çelik", "🦊"]
    static let tagNames = ["sf", "SF", "fantasy", "Fantasy", "clásico", "Cla\u{301}sico", "日本"]

    static func makeLibrary(_ random: inout SplitMix64) -> Library {
        func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        var library = Library()
        for name in names + [nil] {
            library.authors.append([
                "name": name.map { .string($0) } ?? .null,
                "born": chance(70) ? .date(Date(timeIntervalSince1970: Double(random.next() % 2_000_000_000))) : .null,
            ])
        }
        for name in tagNames { library.tags.append(["name": .string(name)]) }
        library.tags.append(["name": .null])
        var used: Set<String> = []
        for index in 0..<90 {
            let author: Int? = chance(80) ? Int(random.next() % UInt64(library.authors.count)) : nil
            var title: AttributeValue = .null
            if chance(92) {
                var text = pick(titleWords)
                if chance(30) { text += " " + pick(titleWords) }
                if used.contains("\(author ?? -1)|\(text)") { text += " \(index)" }
                used.insert("\(author ?? -1)|\(text)")
                title = .string(text)
            }
            let cents = Int64(random.next() % 5000)
            library.books.append([
                "title": title,
                "year": chance(85) ? .integer(1900 + Int64(random.next() % 125)) : .null,
                "pages": chance(85) ? .integer(Int64(random.next() % 1200)) : .null,
                "rating": chance(80) ? .double(Double(random.next() % 50) / 10) : .null,
                "price": chance(80) ? .decimal(Decimal(cents) / 100) : .null,
                "available": chance(85) ? .boolean(chance(50)) : .null,
                "published": chance(80)
                    ? .date(Date(timeIntervalSince1970: Double(random.next() % 1_800_000_000) + 0.25)) : .null,
                "homepage": chance(30) ? .uri("https://example.org/\(pick(["a", "B", "ü"]))") : .null,
            ])
            library.bookAuthor.append(author)
            var tags: [Int] = []
            for _ in 0..<Int(random.next() % 4) {
                let tag = Int(random.next() % UInt64(library.tags.count))
                if !tags.contains(tag) { tags.append(tag) }
            }
            library.bookTags.append(tags)
        }
        return library
    }

    /// The library saved into `store`; returns the IDs of the authors, tags and books in order.
    static func fill(_ store: any PersistentStore, with library: Library) throws -> (
        authors: [ObjectID], tags: [ObjectID], books: [ObjectID]
    ) {
        let authors = try store.newObjectIDs(entity: "Author", count: library.authors.count)
        let tags = try store.newObjectIDs(entity: "Tag", count: library.tags.count)
        let books = try store.newObjectIDs(entity: "Book", count: library.books.count)
        var rows: [StoreRow] = []
        for (id, attributes) in zip(authors, library.authors) { rows.append(StoreRow(id: id, attributes: attributes)) }
        for (id, attributes) in zip(tags, library.tags) { rows.append(StoreRow(id: id, attributes: attributes)) }
        for (index, id) in books.enumerated() {
            var row = StoreRow(id: id, attributes: library.books[index])
            row.toOne["author"] = library.bookAuthor[index].map { authors[$0] }
            row.toMany["tags"] = library.bookTags[index].map { tags[$0] }
            rows.append(row)
        }
        try store.save(StoreChanges(inserts: rows))
        return (authors, tags, books)
    }

    /// A placeholder argument; object references are resolved per store.
    enum Argument {
        case plain(PredicateArgument)
        case author(Int?)
        case tag(Int)
    }

    /// Generates random predicate format strings over the conformance model's `Book`.
    struct Generator {
        var random: SplitMix64
        let authorCount: Int
        let tagCount: Int
        var arguments: [Argument] = []

        mutating func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
        mutating func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }

        static func quoted(_ text: String) -> String {
            let escaped = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
            return "'\(escaped)'"
        }

        /// A literal, or `%@` with the value as an argument.
        mutating func value(_ value: AttributeValue, literal: String) -> String {
            if chance(30) {
                arguments.append(.plain(.value(value)))
                return "%@"
            }
            return literal
        }

        mutating func text() -> String {
            let samples =
                PredicateAgreementTests.titleWords + PredicateAgreementTests.names
                + PredicateAgreementTests.tagNames + ["e", "E", "é", "ss", "ß", "🚀", "une", "ÜN", "o\u{304}", "a"]
            var sample = pick(samples)
            if chance(40), !sample.isEmpty {
                let scalars = Array(sample.unicodeScalars)
                let start = Int(random.next() % UInt64(scalars.count))
                let end = start + 1 + Int(random.next() % UInt64(scalars.count - start))
                sample = String(String.UnicodeScalarView(scalars[start..<end]))
            }
            return sample
        }

        mutating func stringValue() -> String {
            let sample = text()
            return value(.string(sample), literal: Self.quoted(sample))
        }

        mutating func options() -> String { pick(["", "", "[c]", "[d]", "[cd]"]) }

        mutating func stringComparison(_ path: String) -> String {
            switch random.next() % 9 {
            case 0:
                let pattern = pick(["*une*", "d?ne*", "*é*", "*🚀*", "?", "*", "Z*", "*\\\\*", "*a?e*"])
                return "\(path) LIKE\(options()) \(value(.string(pattern), literal: Self.quoted(pattern)))"
            case 1:
                let pattern = pick(["D.*", ".*e", "[a-z ]+", ".*(ss|ß).*", "É.*", ".*[0-9]+"])
                return "\(path) MATCHES\(options()) \(value(.string(pattern), literal: Self.quoted(pattern)))"
            case 2:
                let items = (0..<Int(random.next() % 4)).map { _ in chance(15) ? "nil" : Self.quoted(text()) }
                return "\(path) IN\(options()) {\(items.joined(separator: ", "))}"
            case 3: return "\(path) BETWEEN\(options()) {\(stringValue()), \(stringValue())}"
            case 4: return "\(path) \(pick(["==", "!=", "=", "<>"])) nil"
            default:
                let op = pick(["==", "!=", "<", "<=", ">", ">=", "BEGINSWITH", "ENDSWITH", "CONTAINS", "beginswith"])
                return "\(path) \(op)\(options()) \(stringValue())"
            }
        }

        /// A number near `range` (so that comparisons split the objects), as an integer, a double,
        /// a decimal argument or a fixed literal.
        mutating func numberLiteral(_ range: ClosedRange<Int64>, decimal: Bool = false) -> String {
            let span = UInt64(range.upperBound - range.lowerBound + 1)
            let whole = range.lowerBound + Int64(random.next() % span)
            switch random.next() % 5 {
            case 0, 1: return value(.integer(whole), literal: String(whole))
            case 2:
                let number = Double(whole) + Double(random.next() % 10) / 10
                return value(.double(number), literal: "\(number)")
            case 3 where decimal:
                let cents = Decimal(whole * 100 + Int64(random.next() % 100)) / 100
                arguments.append(.plain(.value(.decimal(cents))))
                return "%@"
            default: return pick(["0", "1", "-1", "2.5", "49.99", "1965", "1e3", "12.5", "0x10"])
            }
        }

        mutating func numberComparison(_ path: String, _ range: ClosedRange<Int64>, decimal: Bool = false) -> String {
            switch random.next() % 6 {
            case 0:
                let items = (0..<Int(random.next() % 4)).map { _ in
                    chance(15) ? "nil" : numberLiteral(range, decimal: decimal)
                }
                return "\(path) IN {\(items.joined(separator: ", "))}"
            case 1:
                return
                    "\(path) BETWEEN {\(numberLiteral(range, decimal: decimal)), \(numberLiteral(range, decimal: decimal))}"
            case 2: return "\(path) \(pick(["==", "!="])) \(pick(["nil", "NULL"]))"
            default:
                let op = pick(["==", "!=", "<", "<=", "=<", ">", ">=", "=>"])
                return "\(path) \(op) \(numberLiteral(range, decimal: decimal))"
            }
        }

        mutating func dateComparison(_ path: String) -> String {
            let date = Date(timeIntervalSince1970: Double(random.next() % 1_800_000_000))
            let literal = Self.quoted(AttributeValue.formatDate(date))
            let op = pick(["==", "!=", "<", "<=", ">", ">="])
            if chance(20) { return "\(path) \(pick(["==", "!="])) nil" }
            if chance(20) { return "\(path) BETWEEN {\(literal), \(Self.quoted("2030-01-01T00:00:00Z"))}" }
            return "\(path) \(op) \(value(.date(date), literal: literal))"
        }

        mutating func modifier() -> String { pick(["", "ANY ", "SOME ", "ALL ", "NONE ", "any "]) }

        mutating func comparison() -> String {
            switch random.next() % 22 {
            case 0, 1, 2: return stringComparison("title")
            case 3: return numberComparison("year", 1900...2025)
            case 4: return numberComparison("pages", 0...1200)
            case 5: return numberComparison("rating", 0...5)
            case 6: return numberComparison("price", 0...50, decimal: true)
            case 7: return dateComparison("published")
            case 8:
                let literal = pick(["YES", "NO", "TRUE", "false", "1", "0", "nil"])
                return "available \(pick(["==", "!="])) \(literal)"
            case 9, 10: return stringComparison("author.name")
            case 11: return dateComparison("author.born")
            case 12, 13: return modifier() + stringComparison("tags.name")
            case 14: return numberComparison("tags.@count", 0...3)
            case 15: return numberComparison("author.books.@count", 0...15)
            case 16:
                arguments.append(.author(chance(85) ? Int(random.next() % UInt64(authorCount)) : nil))
                return "author \(pick(["==", "!="])) %@"
            case 17:
                arguments.append(.tag(Int(random.next() % UInt64(tagCount))))
                return "\(modifier())tags \(pick(["==", "!="])) %@"
            case 18: return modifier() + numberComparison("tags.books.year", 1900...2025)
            case 19: return modifier() + stringComparison("author.books.title")
            case 20:
                let path = pick(["title", "author.name"])
                let other = pick(["author.name", "title"])
                return "\(path) \(pick(["==", "!=", "<", ">=", "BEGINSWITH", "CONTAINS"]))\(options()) \(other)"
            default:
                return
                    "homepage \(pick(["==", "BEGINSWITH", "CONTAINS"]))\(options()) 'https://example.org/\(pick(["a", "b", "Ü", ""]))'"
            }
        }

        mutating func predicate(depth: Int = 0) -> String {
            let roll = random.next() % 10
            if depth < 3 {
                switch roll {
                case 0, 1:
                    let items = (0..<Int(2 + random.next() % 2)).map { _ in predicate(depth: depth + 1) }
                    return "(" + items.joined(separator: pick([" AND ", " && ", " and "])) + ")"
                case 2, 3:
                    let items = (0..<Int(2 + random.next() % 2)).map { _ in predicate(depth: depth + 1) }
                    return "(" + items.joined(separator: pick([" OR ", " || ", " or "])) + ")"
                case 4: return pick(["NOT ", "!", "not "]) + "(" + predicate(depth: depth + 1) + ")"
                default: break
                }
            }
            if roll == 9 && chance(10) { return pick(["TRUEPREDICATE", "FALSEPREDICATE"]) }
            return comparison()
        }
    }

    @Test func storesAgreeOnRandomPredicates() throws {
        // STRATA_PREDICATE_SEED=<n> replays another seed; every failure message names its seed.
        let seed = ProcessInfo.processInfo.environment["STRATA_PREDICATE_SEED"].flatMap { UInt64($0) } ?? 0x00C0_FFEE
        var random = SplitMix64(seed: seed)
        let library = Self.makeLibrary(&random)
        let folder = TemporaryDirectory()
        var stores: [(store: any PersistentStore, ids: (authors: [ObjectID], tags: [ObjectID], books: [ObjectID]))] = []
        for kind in StoreUnderTest.allCases {
            let store = try kind.open(folder)
            stores.append((store, try Self.fill(store, with: library)))
        }
        var generator = Generator(random: random, authorCount: library.authors.count, tagCount: library.tags.count)
        var checked = 0
        var nonTrivial = 0
        for round in 0..<700 {
            generator.arguments = []
            let format = generator.predicate()
            var results: [[Int]] = []
            var counts: [Int] = []
            for (store, ids) in stores {
                let arguments: [PredicateArgument] = generator.arguments.map { argument in
                    switch argument {
                    case .plain(let value): value
                    case .author(let index): .object(index.map { ids.authors[$0] })
                    case .tag(let index): .object(ids.tags[index])
                    }
                }
                let request: FetchRequest
                do {
                    let predicate = try FetchPredicate(format: format, arguments: arguments)
                    request = FetchRequest(
                        entityName: "Book", predicate: predicate, sortDescriptors: [SortKey("title"), SortKey("year")])
                    let rows = try store.fetch(request)
                    // Object IDs in this store → the index of the book in the library.
                    results.append(rows.map { row in ids.books.firstIndex(of: row.id) ?? -1 })
                    counts.append(try store.count(request))
                } catch {
                    Issue.record("round \(round), \(store.type): \(format) failed: \(error)")
                    results.append([-2])
                    counts.append(-2)
                }
            }
            // Every store (PostgreSQL too, when its tests run) answers as the first.
            for (index, result) in results.enumerated().dropFirst() {
                #expect(
                    result == results[0],
                    "round \(round) (seed \(seed)): \(format) \(generator.arguments.count) argument(s): \(stores[0].store.type) \(results[0]) \(stores[index].store.type) \(result)"
                )
            }
            #expect(
                counts.allSatisfy { $0 == results[0].count }, "round \(round): \(format) counts \(counts)")
            checked += 1
            if !results[0].isEmpty && results[0].count < library.books.count { nonTrivial += 1 }
        }
        #expect(checked >= 500)
        // The generator must not only produce predicates that match nothing or everything.
        #expect(nonTrivial > checked / 3, "only \(nonTrivial) of \(checked) predicates selected some but not all books")
    }

    /// Case-sensitive prefixes (BEGINSWITH, LIKE up to a wildcard) are also index ranges in SQL:
    /// every store answers as the evaluator does, over titles at the edges of those ranges.
    @Test(arguments: StoreUnderTest.allCases)
    func prefixMatchesAgreeAtTheEdgesOfTheirRanges(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        let titles = [
            "a", "ab", "abc", "abd", "ab\u{10FFFF}", "ab\u{10FFFF}x", "ac", "b", "Ab", "", "é", "e\u{301}", "éa",
            "\u{10FFFF}", "\u{10FFFF}\u{10FFFF}", "\u{D7FF}", "\u{E000}", "a*b", "a?", "a\\b", "x\u{0}y", "x",
        ]
        var library = Library()
        library.authors = [["name": .string("A")]]
        library.books = titles.map { ["title": .string($0), "year": .integer(1)] }
        library.bookAuthor = titles.map { _ in nil }
        library.bookTags = titles.map { _ in [] }
        _ = try Self.fill(store, with: library)
        let patterns = [
            "a", "ab", "ab\u{10FFFF}", "\u{10FFFF}", "\u{D7FF}", "é", "e", "A", "x\u{0}", "a*", "ab*", "a?", "a\\*b",
        ]
        for pattern in patterns {
            for format in [
                "title BEGINSWITH %@", "title LIKE %@", "title LIKE %@ AND year == 1", "NOT title BEGINSWITH %@",
            ] {
                let predicate = try FetchPredicate(
                    format: format, arguments: [.value(.string(pattern + (format.contains("LIKE") ? "*" : "")))])
                let fetched = Set(
                    try store.fetch(FetchRequest(entityName: "Book", predicate: predicate)).compactMap {
                        $0.attributes["title"]?.textValue
                    })
                let evaluated = Set(
                    try titles.filter { title in
                        try predicate.evaluate { path -> PredicateOperand in
                            .value(path == "title" ? .string(title) : .integer(1))
                        }
                    })
                #expect(fetched == evaluated, "\(kind) \(format) '\(pattern)'")
            }
        }
    }

    @Test(arguments: StoreUnderTest.allCases)
    func relationshipPathsMatchByHand(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        var library = Library()
        library.authors = [["name": .string("Herbert")], ["name": .string("Butler")]]
        library.tags = [["name": .string("sf")], ["name": .string("classic")], ["name": .string("Fantasy")]]
        library.books = [
            ["title": .string("Dune"), "year": .integer(1965)], ["title": .string("Kindred"), "year": .integer(1979)],
            ["title": .string("Lone"), "year": .null], ["title": .string("Messiah"), "year": .integer(1969)],
        ]
        library.bookAuthor = [0, 1, nil, 0]
        library.bookTags = [[0, 1], [1], [], [0]]
        let ids = try Self.fill(store, with: library)
        func titles(_ format: String, _ arguments: PredicateArgument...) throws -> [String] {
            let request = FetchRequest(
                entityName: "Book", predicate: try FetchPredicate(format: format, arguments: arguments),
                sortDescriptors: [SortKey("title")])
            return try store.fetch(request).compactMap { $0.attributes["title"]?.textValue }
        }
        #expect(try titles("author.name == 'Herbert'") == ["Dune", "Messiah"])
        #expect(try titles("author.name == nil") == ["Lone"])
        #expect(try titles("author.name BEGINSWITH[c] 'b'") == ["Kindred"])
        #expect(try titles("ANY tags.name == 'sf'") == ["Dune", "Messiah"])
        #expect(try titles("tags.name == 'classic'") == ["Dune", "Kindred"])
        #expect(try titles("ALL tags.name == 'sf'") == ["Lone", "Messiah"])
        #expect(try titles("NONE tags.name == 'sf'") == ["Kindred", "Lone"])
        #expect(try titles("tags.@count == 0") == ["Lone"])
        #expect(try titles("tags.@count >= 1 AND tags.@count < 2") == ["Kindred", "Messiah"])
        #expect(try titles("author.books.@count == 2") == ["Dune", "Messiah"])
        #expect(try titles("author.books.@count == nil") == ["Lone"])
        #expect(try titles("ANY author.books.title == 'Dune'") == ["Dune", "Messiah"])
        #expect(try titles("ANY tags.books.year > 1970") == ["Dune", "Kindred"])
        #expect(try titles("ALL tags.books.year < 1970") == ["Lone", "Messiah"])
        #expect(try titles("ANY tags == %@", .object(ids.tags[1])) == ["Dune", "Kindred"])
        #expect(
            try titles("SELF IN %@", .list([.object(ids.books[2]), .object(ids.books[3])])) == ["Lone", "Messiah"])
        #expect(try titles("ANY tags.name IN {'Fantasy', 'classic'}") == ["Dune", "Kindred"])
        #expect(try titles("%K CONTAINS %@", "author.name", "erb") == ["Dune", "Messiah"])
        // Variables substitute before fetching.
        let template = try FetchPredicate(format: "author.name == $FETCH_SOURCE.name AND year > $SINCE")
        let bound = try template.substituting(["FETCH_SOURCE.name": "Herbert", "SINCE": 1966])
        #expect(try store.fetch(FetchRequest(entityName: "Book", predicate: bound)).map(\.id) == [ids.books[3]])
        // From the other side of the relationships.
        let authors = try store.fetch(
            FetchRequest(
                entityName: "Author", predicate: try FetchPredicate(format: "ANY books.tags.name == 'classic'")))
        #expect(authors.map(\.id) == [ids.authors[0], ids.authors[1]])
        let tags = try store.fetch(
            FetchRequest(entityName: "Tag", predicate: try FetchPredicate(format: "books.@count == 0")))
        #expect(tags.map(\.id) == [ids.tags[2]])
        // Misuse is an error in every store.
        for format in [
            "ANY title == 'x'", "title.name == 'x'", "tags.@sum == 1", "author.@count == 1", "author == 'x'",
            "'x' == tags.name", "nope.name == 1", "title == year", "author == tags",
        ] {
            #expect(throws: StoreError.self, "\(format)") {
                try store.fetch(FetchRequest(entityName: "Book", predicate: try FetchPredicate(format: format)))
            }
        }
    }

    /// Two subentities sharing one table, each with a relationship named `box` to a different
    /// inverse: a path through `notes` must only see notes.
    static let sharedColumnModel: ObjectModel = try! ObjectModel.load(
        json: Array(
            #"""
            {"name": "Shared", "entities": [
              {"name": "Box", "attributes": [{"name": "label", "type": "string"}],
               "relationships": [{"name": "notes", "destination": "Note", "toMany": true, "inverse": "box"},
                                 {"name": "photos", "destination": "Photo", "toMany": true, "inverse": "box"}]},
              {"name": "Item", "abstract": true, "attributes": [{"name": "title", "type": "string"}]},
              {"name": "Note", "parent": "Item", "relationships": [{"name": "box", "destination": "Box", "inverse": "notes"}]},
              {"name": "Photo", "parent": "Item", "relationships": [{"name": "box", "destination": "Box", "inverse": "photos"}]}
            ]}
            """#.utf8))

    @Test(arguments: StoreUnderTest.allCases)
    func pathsIntoASharedTableSeeOnlyTheirEntity(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder, model: Self.sharedColumnModel)
        let box = try newRow(store, "Box", ["label": .string("b")])
        var note = try newRow(store, "Note", ["title": .string("n")])
        note.toOne["box"] = box.id
        var photo = try newRow(store, "Photo", ["title": .string("p")])
        photo.toOne["box"] = box.id
        try store.save(StoreChanges(inserts: [box, note, photo]))
        func count(_ format: String) throws -> Int {
            try store.count(FetchRequest(entityName: "Box", predicate: try FetchPredicate(format: format)))
        }
        #expect(try count("ANY notes.title == 'n'") == 1)
        #expect(try count("ANY notes.title == 'p'") == 0)
        #expect(try count("ANY photos.title == 'p'") == 1)
        #expect(try count("notes.@count == 1 AND photos.@count == 1") == 1)
        #expect(try count("ALL notes.title == 'n'") == 1)
        let notes = try store.fetch(
            FetchRequest(entityName: "Note", predicate: try FetchPredicate(format: "box.label == 'b'")))
        #expect(notes.map(\.id) == [note.id])
        // 'box' is not a property of Item, only of its subentities.
        #expect(throws: StoreError.self) {
            try store.fetch(FetchRequest(entityName: "Item", predicate: try FetchPredicate(format: "box.label == 'b'")))
        }
    }

    @Test func generatedSQLBindsEveryValue() throws {
        let schema = SQLiteSchema(
            model: conformanceModel, entities: conformanceModel.entityNames(inConfiguration: "Main")!)
        let hostile = "x'); DROP TABLE Book; --"
        let predicate = try FetchPredicate(
            format:
                "title ==[c] %@ AND author.name BEGINSWITH %@ AND ALL tags.name != %@ AND tags.@count > 2 AND year IN {1, 2.5}",
            arguments: [.value(.string(hostile)), "Le", "sf"]
        ).bound(to: "Book", in: conformanceModel)
        var builder = SQLPredicateBuilder(model: conformanceModel, schema: schema, entity: "Book", storeIdentifier: "s")
        let sql = try builder.build(predicate)
        #expect(!sql.contains("DROP") && !sql.contains("'Le") && !sql.contains("2.5"), "\(sql)")
        #expect(sql.filter { $0 == "?" }.count == builder.arguments.count, "\(sql)")
        #expect(builder.arguments.contains(.text(hostile)))
        #expect(sql.contains(#"strata_fold(t0."title", 1)"#), "\(sql)")
        #expect(sql.contains(#"(SELECT t1."name" FROM "Author" AS t1 WHERE t1."_pk" = t0."author")"#), "\(sql)")
        #expect(sql.contains(#"NOT EXISTS (SELECT 1 FROM "Tag" AS t2 WHERE t2."_pk" IN (SELECT"#), "\(sql)")
        #expect(sql.contains("(SELECT count(*) FROM \"Tag\" AS t3"), "\(sql)")
    }

    @Test func injectedTextIsAPlainValueInSQLite() throws {
        let folder = TemporaryDirectory()
        let store = try StoreUnderTest.sqlite.open(folder)
        let hostile = "x'); DROP TABLE Book; --"
        let book = try newRow(store, "Book", ["title": .string(hostile)])
        let other = try newRow(store, "Book", ["title": .string("x")])
        try store.save(StoreChanges(inserts: [book, other]))
        for format in [
            "title == %@", "title BEGINSWITH %@", "title IN {%@}", "title LIKE %@",
            "ANY author.books.title == %@ OR title == %@",
        ] {
            let arguments = Array(
                repeating: PredicateArgument.value(.string(hostile)),
                count: format.components(separatedBy: "%@").count - 1)
            let predicate = try FetchPredicate(format: format, arguments: arguments)
            #expect(
                try store.fetch(FetchRequest(entityName: "Book", predicate: predicate)).map(\.id) == [book.id],
                "\(format)")
        }
        // As a key path it is refused before it reaches SQL.
        #expect(throws: Strata.PredicateError.self) { try FetchPredicate(format: "%K == 1", .keyPath(hostile)) }
        #expect(throws: StoreError.self) {
            try store.fetch(FetchRequest(entityName: "Book", predicate: .equal(hostile, .integer(1))))
        }
        #expect(try store.count(FetchRequest(entityName: "Book")) == 2)
        let tables = try dumpSQLite(folder.file("store.sqlite")).filter { $0.hasPrefix("Book:") }
        #expect(tables.count == 2)
    }
}
