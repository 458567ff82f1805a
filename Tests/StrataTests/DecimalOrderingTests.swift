import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Decimals as `NSDecimalNumber` holds them order and filter exactly, and alike, in every store:
/// values that differ only in their 38th digit, of differing lengths and signs, at the limits.
@Suite struct DecimalOrderingTests {
    /// Ascending; neighbours differ in their last digit or their sign.
    static let prices = [
        "-12345678901234567890.123456789012345679", "-12345678901234567890.123456789012345678", "-1.5",
        "-1e-128", "0", "1e-128", "9.99", "9.990000000000000000000000000000000001", "10",
        "190.123456789012345678901", "12345678901234567890.123456789012345678",
        "12345678901234567890.123456789012345679", "1e127", String(repeating: "9", count: 38) + "e127",
    ]

    static func value(_ index: Int) -> PredicateArgument {
        .value(.decimal(AttributeValue.parseDecimal(prices[index])!))
    }

    @Test(arguments: StoreUnderTest.allCases)
    func decimalsOrderAndFilterExactly(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let store = try kind.open(folder)
        // Saved in an order of their own, so that neither the keys nor the insertion order sorts them.
        let order = Array(Self.prices.indices).sorted {
            ($0 * 7) % 5 < ($1 * 7) % 5 || (($0 * 7) % 5 == ($1 * 7) % 5 && $0 > $1)
        }
        let ids = try store.newObjectIDs(entity: "Book", count: order.count)
        try store.save(
            StoreChanges(
                inserts: zip(ids, order).map { id, index in
                    StoreRow(
                        id: id,
                        attributes: [
                            "title": .string("v\(index)"),
                            "price": .decimal(AttributeValue.parseDecimal(Self.prices[index])!),
                        ])
                } + [
                    StoreRow(
                        id: try store.newObjectIDs(entity: "Book", count: 1)[0], attributes: ["title": .string("none")])
                ]))

        func titles(_ format: String, _ arguments: PredicateArgument..., ascending: Bool = true) throws -> [String] {
            let request = FetchRequest(
                entityName: "Book", predicate: try FetchPredicate(format: format, arguments: arguments),
                sortDescriptors: [SortKey("price", ascending: ascending)])
            let rows = try store.fetch(request)
            #expect(try store.count(request) == rows.count, "\(format)")
            return rows.compactMap { $0.attributes["title"]?.json.stringValue }
        }
        func named(_ range: some Sequence<Int>) -> [String] { range.map { "v\($0)" } }
        let all = named(Self.prices.indices)

        #expect(try titles("price != nil") == all)
        #expect(try titles("price != nil", ascending: false) == all.reversed())
        #expect(try titles("TRUEPREDICATE") == ["none"] + all)
        #expect(try titles("price == %@", Self.value(10)) == ["v10"])
        #expect(
            try titles("price != %@ AND price != nil", Self.value(10))
                == named([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13]))
        #expect(try titles("price > %@", Self.value(10)) == named(11...13))
        #expect(try titles("price < %@", Self.value(1)) == ["v0"])
        #expect(try titles("price >= %@", Self.value(7)) == named(7...13))
        #expect(try titles("price <= %@", Self.value(6)) == named(0...6))
        #expect(try titles("price < 0") == named(0...3))
        #expect(try titles("price > 0") == named(5...13))
        #expect(try titles("price == 0") == ["v4"])
        #expect(try titles("price > 10") == named(9...13))
        #expect(try titles("price BETWEEN {%@, %@}", Self.value(2), Self.value(8)) == named(2...8))
        #expect(try titles("price IN {%@, %@, 7}", Self.value(3), Self.value(12)) == ["v3", "v12"])
        #expect(try titles("NOT (price <= %@)", Self.value(5)) == ["none"] + named(6...13))
        for (index, text) in Self.prices.enumerated() {
            let read = try titles("price == %@", Self.value(index))
            #expect(read == ["v\(index)"], "\(text)")
        }
    }

    /// A decimal's order key orders as its value: every pair of the values above, both ways.
    @Test func orderKeysOrderAsTheValues() {
        let values = Self.prices.map { AttributeValue.parseDecimal($0)! }
        for (i, a) in values.enumerated() {
            for (j, b) in values.enumerated() {
                let keys = ValueOrdering.decimalKey(a) < ValueOrdering.decimalKey(b)
                #expect(keys == (i < j), "\(Self.prices[i]) \(Self.prices[j])")
                #expect(ValueOrdering.compare(.decimal(a), .decimal(b)) == (i < j ? -1 : (i == j ? 0 : 1)))
            }
        }
        #expect(ValueOrdering.decimalKey(Decimal(string: "1.50")!) == ValueOrdering.decimalKey(text: "1.5"))
        #expect(ValueOrdering.decimalKey(Decimal(0)) == ValueOrdering.decimalKey(text: "-0.000"))
    }
}
