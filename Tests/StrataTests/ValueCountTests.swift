import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Grouped counts (`valueCounts`) agree across SQLite (`GROUP BY`), in-memory and PostgreSQL
/// stores, and with a count of the data made without any store.
@Suite struct ValueCountTests {
    static let keys = ["year", "available", "price", "rating", "published", "homepage", "title", "author"]
    /// Without a predicate, ones PostgreSQL answers exactly in SQL (grouped there), and ones it only
    /// prefilters (counted over the evaluated rows).
    static let predicates = [
        "", "year > 1950", "author == nil OR rating < 2.5", "FALSEPREDICATE", "title CONTAINS[cd] 'e'",
        "NOT (author.name BEGINSWITH[c] 'b') AND price >= 10",
    ]

    /// The counts as a dictionary, a related primary key replaced by the related author's index.
    static func table(_ counts: [ValueCount], key: String, authors: [ObjectID]) -> [AttributeValue: Int] {
        var table: [AttributeValue: Int] = [:]
        for group in counts {
            var value = group.value
            if key == "author", case .integer(let pk) = value {
                value = .integer(Int64(authors.firstIndex { $0.primaryKey == pk } ?? -1))
            }
            #expect(table[value] == nil, "\(key): \(value) in two groups")
            table[value, default: 0] += group.count
        }
        return table
    }

    @Test func storesAgreeWithACountOfTheData() throws {
        var random = SplitMix64(seed: 0x0FAC_E75)
        let library = PredicateAgreementTests.makeLibrary(&random)
        let folder = TemporaryDirectory()
        var first: [String: [AttributeValue: Int]] = [:]
        for kind in StoreUnderTest.allCases {
            let store = try kind.open(folder)
            let ids = try PredicateAgreementTests.fill(store, with: library)
            for format in Self.predicates {
                let predicate = format.isEmpty ? nil : try FetchPredicate(format: format)
                let request = FetchRequest(entityName: "Book", predicate: predicate, fetchLimit: 3, fetchOffset: 1)
                var every = request
                (every.fetchLimit, every.fetchOffset) = (nil, 0)
                let rows = try store.fetch(every)
                for key in Self.keys {
                    let counted = Self.table(try store.valueCounts(request, key: key), key: key, authors: ids.authors)
                    // The same as counting the matching rows, every match counted (not the window).
                    #expect(counted.values.reduce(0, +) == rows.count, "\(kind) \(format) \(key)")
                    let fromRows = Self.table(ValueCount.counting(rows, key: key), key: key, authors: ids.authors)
                    #expect(counted == fromRows, "\(kind) \(format) \(key)")
                    if format.isEmpty {
                        // Without a predicate: the library itself, counted by hand.
                        var expected: [AttributeValue: Int] = [:]
                        for (index, book) in library.books.enumerated() {
                            let value: AttributeValue =
                                key == "author"
                                ? library.bookAuthor[index].map { .integer(Int64($0)) } ?? .null : book[key] ?? .null
                            expected[value, default: 0] += 1
                        }
                        #expect(counted == expected, "\(kind) \(key)")
                    }
                    // Every store answers as the first.
                    let label = "\(format)|\(key)"
                    if let known = first[label] {
                        #expect(counted == known, "\(kind) \(label)")
                    } else {
                        first[label] = counted
                    }
                }
            }
        }
    }

    @Test func aKeyThatIsNoAttributeOrToOneIsRefused() throws {
        let folder = TemporaryDirectory()
        let coordinator = StoreCoordinator(model: conformanceModel)
        try coordinator.addStore(type: .sqlite, url: folder.file("counts.sqlite"))
        for key in ["nothing", "tags"] {
            #expect(throws: StoreError.self) {
                try coordinator.valueCounts(FetchRequest(entityName: "Book"), key: key)
            }
        }
    }
}
