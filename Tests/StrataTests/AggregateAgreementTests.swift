import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// SQLite, in-memory and PostgreSQL stores filled with the same data must answer the same random
/// aggregate fetches: random grouping, functions, predicates (the predicate agreement test's),
/// having, order and window.
@Suite struct AggregateAgreementTests {
    /// Functions that fit each attribute of `Book` the generator uses.
    static let operands: [(key: String, functions: [AggregateFunction])] = [
        ("year", [.count, .sum, .average, .min, .max]), ("pages", [.count, .sum, .average, .min, .max]),
        ("rating", [.count, .sum, .average, .min, .max]), ("price", [.count, .sum, .average, .min, .max]),
        ("title", [.count, .min, .max]), ("published", [.count, .min, .max]), ("available", [.count]),
        ("author", [.count]), ("homepage", [.count]),
    ]
    static let groupable = ["year", "available", "author", "price", "rating", "published", "title", "homepage"]

    /// Whether an expression's result is a double, whose last bits depend on the order of addition.
    static func isInexact(_ expression: AggregateExpression) -> Bool {
        (expression.keyPath == "rating" && [.sum, .average].contains(expression.function))
            || (expression.function == .average && ["year", "pages"].contains(expression.keyPath ?? ""))
    }

    struct RequestGenerator {
        var random: SplitMix64
        mutating func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
        mutating func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }

        /// A request over `Book` (without its predicate), and the columns it may sort and filter
        /// groups by exactly.
        mutating func request() -> AggregateRequest {
            var groups: [String] = []
            for _ in 0..<Int(random.next() % 3) {
                let key = pick(AggregateAgreementTests.groupable)
                if !groups.contains(key) { groups.append(key) }
            }
            var expressions: [AggregateExpression] = []
            if chance(60) { expressions.append(AggregateExpression(name: "n", function: .count)) }
            for index in 0..<Int(random.next() % 4) {
                let operand = pick(AggregateAgreementTests.operands)
                expressions.append(
                    AggregateExpression(name: "e\(index)", function: pick(operand.functions), keyPath: operand.key))
            }
            if groups.isEmpty && expressions.isEmpty {
                expressions.append(AggregateExpression(name: "n", function: .count))
            }
            var request = AggregateRequest(entityName: "Book", propertiesToGroupBy: groups, expressions: expressions)
            // Order and having over exact columns only: a double's last bits could reorder rows.
            let exact = groups + expressions.filter { !AggregateAgreementTests.isInexact($0) }.map(\.name)
            for _ in 0..<Int(random.next() % 3) where !exact.isEmpty {
                request.sortDescriptors.append(SortKey(pick(exact), ascending: chance(50)))
            }
            let counts = expressions.filter { $0.function == .count }.map(\.name)
            if !counts.isEmpty, chance(35) {
                request.havingPredicate = .comparison(
                    Comparison(
                        .keyPath(pick(counts)), pick([.greater, .less, .greaterOrEqual, .equal]),
                        .constant(.integer(Int64(random.next() % 6)))))
            }
            if chance(30) { request.fetchLimit = Int(random.next() % 5) }
            if chance(20) { request.fetchOffset = Int(random.next() % 4) }
            return request
        }
    }

    /// Two values equal, doubles to 1e-9 relative.
    static func agree(_ lhs: AttributeValue, _ rhs: AttributeValue) -> Bool {
        if case .double(let a) = lhs, case .double(let b) = rhs {
            return a == b || abs(a - b) <= 1e-9 * max(abs(a), abs(b))
        }
        return lhs == rhs
    }

    @Test func storesAgreeOnRandomAggregates() throws {
        let seed = ProcessInfo.processInfo.environment["STRATA_AGGREGATE_SEED"].flatMap { UInt64($0) } ?? 0x0A66_9E6A
        var random = SplitMix64(seed: seed)
        let library = PredicateAgreementTests.makeLibrary(&random)
        let folder = TemporaryDirectory()
        var stores: [(store: any PersistentStore, ids: (authors: [ObjectID], tags: [ObjectID], books: [ObjectID]))] = []
        for kind in StoreUnderTest.allCases {
            let store = try kind.open(folder)
            stores.append((store, try PredicateAgreementTests.fill(store, with: library)))
        }
        var predicates = PredicateAgreementTests.Generator(
            random: random, authorCount: library.authors.count, tagCount: library.tags.count)
        var requests = RequestGenerator(random: SplitMix64(seed: seed &+ 1))
        var grouped = 0
        for round in 0..<300 {
            predicates.arguments = []
            let format: String? = requests.chance(70) ? predicates.predicate() : nil
            let shape = requests.request()
            var results: [[AggregateRow]] = []
            for (store, ids) in stores {
                var request = shape
                let arguments: [PredicateArgument] = predicates.arguments.map { argument in
                    switch argument {
                    case .plain(let value): value
                    case .author(let index): .object(index.map { ids.authors[$0] })
                    case .tag(let index): .object(ids.tags[index])
                    }
                }
                do {
                    request.predicate = try format.map { try FetchPredicate(format: $0, arguments: arguments) }
                    // Related objects by the author's index, the same in every store.
                    results.append(
                        try store.aggregate(request, model: conformanceModel).map { row in
                            var row = row
                            for (name, id) in row.objectIDs {
                                row.values[name] = .integer(Int64(ids.authors.firstIndex(of: id) ?? -1))
                            }
                            row.objectIDs = [:]
                            return row
                        })
                } catch {
                    Issue.record("round \(round), \(store.type): \(shape) where \(format ?? "-") failed: \(error)")
                    results.append([])
                }
            }
            for (index, result) in results.enumerated().dropFirst() {
                let same =
                    result.count == results[0].count
                    && zip(result, results[0]).allSatisfy { lhs, rhs in
                        lhs.values.keys == rhs.values.keys
                            && lhs.values.allSatisfy { Self.agree($0.value, rhs[$0.key]) }
                    }
                #expect(
                    same,
                    "round \(round) (seed \(seed)): \(shape) where \(format ?? "-"): \(stores[0].store.type) \(results[0]) \(stores[index].store.type) \(result)"
                )
            }
            if results[0].count > 1 { grouped += 1 }
        }
        // The generator must not only make requests that answer one row or none.
        #expect(grouped > 100, "only \(grouped) requests answered several groups")
    }
}
