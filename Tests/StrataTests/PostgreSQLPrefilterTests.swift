import Foundation
import Testing

@testable import Strata

/// What of a predicate PostgreSQL checks itself; the predicate agreement test proves the results.
@Suite struct PostgreSQLPrefilterTests {
    static func condition(_ format: String, _ arguments: [PredicateArgument] = [], numericDecimals: Bool = true)
        throws -> (sql: String?, exact: Bool, arguments: [PGValue])
    {
        let entities = conformanceModel.entityNames(inConfiguration: "Main") ?? []
        let schema = PostgreSQLSchema(model: conformanceModel, entities: entities, namespace: "s")
        let table = try #require(schema.base.table(for: "Book"))
        var prefilter = PostgreSQLPrefilter(
            model: conformanceModel, entity: "Book", table: table, storeIdentifier: "S", firstIndex: 2,
            numericDecimals: numericDecimals)
        let predicate = try FetchPredicate(format: format, arguments: arguments).bound(
            to: "Book", in: conformanceModel)
        let result = try prefilter.condition(predicate)
        return (result.sql, result.exact, prefilter.arguments)
    }

    @Test func attributeComparisonsBecomeSQLNumberedAfterTheFamilyParameter() throws {
        let result = try Self.condition("year > 2000 AND title == 'Dune'")
        #expect(
            result.sql
                == #"((t."year" > $2::bigint AND t."year" IS NOT NULL)) AND ((t."title" = $3::bytea AND t."title" IS NOT NULL))"#
        )
        #expect(result.exact)
        #expect(result.arguments == [.integer(2000), .bytes(Data("Dune".utf8))])
    }

    @Test func whatPostgreSQLCannotDecideReadsEveryRowButKeepsTheRest() throws {
        // CONTAINS[c] is Strata's: the AND keeps the year range, not exact any more.
        let mixed = try Self.condition("year BETWEEN {1950, 1960} AND title CONTAINS[c] 'dune'")
        #expect(mixed.sql == #"((t."year" >= $2::bigint AND t."year" <= $3::bigint AND t."year" IS NOT NULL))"#)
        #expect(!mixed.exact)
        // An OR with an undecidable branch, and NOT over an inexact part, say nothing and bind nothing.
        let or = try Self.condition("year == 1 OR author.name == 'x'")
        #expect(or.sql == nil && or.arguments.isEmpty)
        let not = try Self.condition("NOT (year == 1 AND tags.@count > 2)")
        #expect(not.sql == nil && not.arguments.isEmpty)
        // NOT over an exact part is kept.
        let exactNot = try Self.condition("NOT (rating < 2.5 OR published == nil)")
        #expect(
            exactNot.sql
                == #"NOT (((t."rating" < $2::double precision AND t."rating" IS NOT NULL)) OR (t."published" IS NULL))"#
        )
    }

    @Test func prefixesAreByteRangesAndNaNIsNeverExact() throws {
        let prefix = try Self.condition("title BEGINSWITH 'Du'")
        #expect(prefix.sql == #"(t."title" >= $2::bytea AND t."title" < $3::bytea AND t."title" IS NOT NULL)"#)
        #expect(prefix.arguments == [.bytes(Data("Du".utf8)), .bytes(Data("Du".utf8) + [0xFF])])
        let nan = try Self.condition("rating == %@", [.value(.double(.nan))])
        #expect(nan.sql == nil)
    }

    /// A decimal, and any number beside one, is compared as `numeric` by its exact digits (a text
    /// comparison would put 10 before 9, a double one merge values that differ in their 38th digit).
    @Test func decimalsAreComparedAsNumericByTheirDigits() throws {
        let greater = try Self.condition("price > 9")
        #expect(greater.sql == #"(t."price" > $2::numeric AND t."price" IS NOT NULL)"#)
        #expect(greater.exact && greater.arguments == [.text("9")])
        let digits = "12345678901234567890.123456789012345678"
        let equal = try Self.condition(
            "price == %@ OR price IN {'1.50', 0.25}", [.value(.decimal(AttributeValue.parseDecimal(digits)!))])
        #expect(
            equal.sql
                == #"((t."price" = $2::numeric AND t."price" IS NOT NULL)) OR (((t."price" IN ($3::numeric, $4::numeric) AND t."price" IS NOT NULL)))"#
        )
        #expect(equal.exact && equal.arguments == [.text(digits), .text("1.5"), .text("0.25")])
        // An integer column beside a decimal compares exactly too; a double column is left to Strata.
        let year = try Self.condition("year >= %@", [.value(.decimal(Decimal(string: "1999.5")!))])
        #expect(year.sql == #"(t."year" >= $2::numeric AND t."year" IS NOT NULL)"#)
        #expect(try Self.condition("rating > %@", [.value(.decimal(1))]).sql == nil)
        // A double whose Decimal is NaN cannot be compared in SQL.
        #expect(try Self.condition("price < %@", [.value(.double(1e300))]).sql == nil)
        // A store whose decimal columns are still text leaves them to Strata.
        #expect(try Self.condition("price > 9", numericDecimals: false).sql == nil)
    }

    @Test func aConstantThatCannotCompareIsRefusedAsSQLiteRefusesIt() throws {

        var thrown: (any Error)?
        do { _ = try Self.condition("year == 'soon'") } catch { thrown = error }
        #expect(thrown is Strata.PredicateError)
    }
}
