import Foundation
import Strata

/// The library scenarios through the types the build-tool plugin generates from
/// `Library.xcdatamodel` (`Book(context:)`, `book.title`, `Book.fetchRequest()`), each beside the
/// same work through the string API in the same run: typed objects are views of the context's own
/// objects, so the target is at most 10% more time than the string API.
struct TypedBench {
    let folder: URL
    let objects: Int

    /// Rounds of each measurement; each side keeps its best, and the sides alternate (which one
    /// goes first alternates too) so both see the same machine.
    static let rounds = 5

    /// The most a typed scenario may take, as a multiple of the string API's time.
    static let targetRatio = 1.10

    /// Passes over every book in each round of the read scenario: one pass takes a few tens of
    /// milliseconds, too short to time alone on a shared machine.
    static let readPasses = 10

    /// One scenario's best times, typed and through strings.
    struct Timing {
        var typed = Double.infinity
        var strings = Double.infinity

        /// Runs both sides once, in the order `round` picks, keeping each side's best.
        mutating func measure(round: Int, typed typedBody: () throws -> Void, strings stringsBody: () throws -> Void)
            rethrows
        {
            if round.isMultiple(of: 2) {
                typed = min(typed, try LibraryBench.seconds(typedBody))
                strings = min(strings, try LibraryBench.seconds(stringsBody))
            } else {
                strings = min(strings, try LibraryBench.seconds(stringsBody))
                typed = min(typed, try LibraryBench.seconds(typedBody))
            }
        }
    }

    func run(into table: inout BenchTable) throws {
        let model = try ObjectModel.example
        let (inserts, oneCallInsert) = try measureInserts(model: model)
        let coordinator = try seededCoordinator(model: model)
        let fetches = try measureFetches(coordinator: coordinator)
        let reads = try measureReads(coordinator: coordinator)
        let writes = try measureWrites(coordinator: coordinator)
        for (scenario, timing, passes) in [
            ("typed insert + save", inserts, 1), ("typed fetch (predicate + sort)", fetches, 1),
            ("typed property reads", reads, Self.readPasses), ("typed property writes", writes, 1),
        ] {
            table.rows.append(
                BenchTable.Row(
                    scenario: scenario, connections: "-", throughput: Double(objects * passes) / timing.typed,
                    unit: "objects/s", p50: "", p99: "", baseline: "the string API, same work",
                    baselineValue: Double(objects * passes) / timing.strings,
                    target: (timing.typed / timing.strings, nil, Self.targetRatio)))
        }
        table.notes.append(
            String(
                format:
                    "typed (best of %d rounds, typed vs strings): insert %.3f vs %.3f s; fetch %.3f vs %.3f s; "
                    + "reads (%d passes) %.3f vs %.3f s; writes %.3f vs %.3f s (%d objects, 3 attributes each); "
                    + "the typed insert takes %.2f× the time of insert(_:values:) in one call (%.3f s)",
                Self.rounds, inserts.typed, inserts.strings, fetches.typed, fetches.strings, Self.readPasses,
                reads.typed, reads.strings, writes.typed, writes.strings, objects, inserts.typed / oneCallInsert,
                oneCallInsert))
    }

    /// A new context over a new SQLite file for each side of each round.
    private func freshContext(model: ObjectModel, name: String) throws -> ObjectContext {
        let stack = StoreCoordinator(model: model)
        try stack.addStore(type: .sqlite, configuration: "Catalog", url: folder.appendingPathComponent(name))
        return ObjectContext(coordinator: stack)
    }

    /// Inserting and saving books: `Book(context:)` and three property writes against the same
    /// through strings (`insert(_:)` and three `setValue(_:forKey:)`). Also returns the string
    /// API's one-call `insert(_:values:)` (as `LibraryBench` inserts), which sets the values before
    /// the object is registered and so does less work than any insert followed by writes.
    private func measureInserts(model: ObjectModel) throws -> (Timing, oneCall: Double) {
        var timing = Timing()
        var oneCall = Double.infinity
        for round in 1...Self.rounds {
            let typedContext = try freshContext(model: model, name: "typed-insert-\(round).sqlite")
            let stringContext = try freshContext(model: model, name: "string-insert-\(round).sqlite")
            try timing.measure(
                round: round,
                typed: {
                    for index in 0..<objects {
                        let book = Book(context: typedContext)
                        book.title = "Book \(index)"
                        book.year = Int32(1900 + index % 120)
                        book.rating = Double(index % 50) / 10
                    }
                    try typedContext.save()
                },
                strings: {
                    for index in 0..<objects {
                        let book = try stringContext.insert("Book")
                        try book.setValue(.string("Book \(index)"), forKey: "title")
                        try book.setValue(.integer(Int64(1900 + index % 120)), forKey: "year")
                        try book.setValue(.double(Double(index % 50) / 10), forKey: "rating")
                    }
                    try stringContext.save()
                })
            let oneCallContext = try freshContext(model: model, name: "one-call-insert-\(round).sqlite")
            oneCall = min(
                oneCall,
                try LibraryBench.seconds {
                    for index in 0..<objects {
                        try oneCallContext.insert(
                            "Book",
                            values: [
                                "title": .string("Book \(index)"), "year": .integer(Int64(1900 + index % 120)),
                                "rating": .double(Double(index % 50) / 10),
                            ])
                    }
                    try oneCallContext.save()
                })
        }
        return (timing, oneCall)
    }

    /// A store of `objects` books that the read scenarios share.
    private func seededCoordinator(model: ObjectModel) throws -> StoreCoordinator {
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(
            type: .sqlite, configuration: "Catalog", url: folder.appendingPathComponent("typed-reads.sqlite"))
        let context = ObjectContext(coordinator: coordinator)
        for index in 0..<objects {
            try context.insert(
                "Book",
                values: [
                    "title": .string("Book \(index)"), "year": .integer(Int64(1900 + index % 120)),
                    "rating": .double(Double(index % 50) / 10),
                ])
        }
        try context.save()
        return coordinator
    }

    /// `LibraryBench`'s fetch, typed (`[Book]`, key-path filter and sort, `book.title`) and by
    /// strings (a format string, `object.string("title")`), each in a new context.
    private func measureFetches(coordinator: StoreCoordinator) throws -> Timing {
        let typedRequest = Book.fetchRequest().filter(\.year >= 1900).sorted(by: \.title)
        let request = FetchRequest(
            entityName: "Book", predicate: try FetchPredicate(format: "year >= 1900"),
            sortDescriptors: [SortKey("title")])
        var timing = Timing()
        var counts = (typed: 0, strings: 0)
        for round in 1...Self.rounds {
            let typedReader = ObjectContext(coordinator: coordinator)
            let stringReader = ObjectContext(coordinator: coordinator)
            try timing.measure(
                round: round,
                typed: { counts.typed = try typedReader.fetch(typedRequest).filter { !$0.title.isEmpty }.count },
                strings: { counts.strings = try stringReader.fetch(request).filter { $0.string("title") != nil }.count }
            )
        }
        guard counts.typed == objects, counts.strings == objects else {
            throw BenchError(
                "typed fetch read \(counts.typed) books and the string fetch \(counts.strings), not \(objects)")
        }
        return timing
    }

    /// Reading three attributes of every fetched book: typed properties against the string API's
    /// typed getters (`string(_:)`, `integer(_:)`, `double(_:)`).
    private func measureReads(coordinator: StoreCoordinator) throws -> Timing {
        let context = ObjectContext(coordinator: coordinator)
        let books = try context.fetch(Book.fetchRequest())
        let objects = books.map(\.managedObject)
        var timing = Timing()
        var sums = (typed: 0.0, strings: 0.0)
        for round in 1...Self.rounds {
            timing.measure(
                round: round,
                typed: {
                    var sum = 0.0
                    for _ in 0..<Self.readPasses {
                        for book in books {
                            sum += Double(book.title.utf8.count) + Double(book.year ?? 0) + (book.rating ?? 0)
                        }
                    }
                    sums.typed = sum
                },
                strings: {
                    var sum = 0.0
                    for _ in 0..<Self.readPasses {
                        for object in objects {
                            sum +=
                                Double(object.string("title")?.utf8.count ?? 0) + Double(object.integer("year") ?? 0)
                                + (object.double("rating") ?? 0)
                        }
                    }
                    sums.strings = sum
                })
        }
        guard sums.typed == sums.strings else {
            throw BenchError("typed reads summed \(sums.typed), strings \(sums.strings)")
        }
        return timing
    }

    /// Writing three attributes of every fetched book (in a context that is then rolled back):
    /// typed property setters against `setValue(_:forKey:)`.
    private func measureWrites(coordinator: StoreCoordinator) throws -> Timing {
        let typedContext = ObjectContext(coordinator: coordinator)
        let stringContext = ObjectContext(coordinator: coordinator)
        let books = try typedContext.fetch(Book.fetchRequest())
        let objects = try stringContext.fetch(FetchRequest(entityName: "Book"))
        var timing = Timing()
        for round in 1...Self.rounds {
            try timing.measure(
                round: round,
                typed: {
                    for (index, book) in books.enumerated() {
                        book.title = "Title \(index + round)"
                        book.year = Int32(2000 + round)
                        book.rating = Double(round)
                    }
                },
                strings: {
                    for (index, object) in objects.enumerated() {
                        try object.setValue(.string("Title \(index + round)"), forKey: "title")
                        try object.setValue(.integer(Int64(2000 + round)), forKey: "year")
                        try object.setValue(.double(Double(round)), forKey: "rating")
                    }
                })
        }
        typedContext.rollback()
        stringContext.rollback()
        return timing
    }
}
