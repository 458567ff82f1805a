import Foundation
import Testing

@testable import Strata

/// What of a predicate PostgreSQL checks itself; the predicate agreement test proves the results.
@Suite struct PostgreSQLPrefilterTests {
    static func condition(_ format: String, _ arguments: [PredicateArgument] = []) throws -> (
        sql: String?, exact: Bool, arguments: [PGValue]
    ) {
        let entities = conformanceModel.entityNames(inConfiguration: "Main") ?? []
        let schema = PostgreSQLSchema(model: conformanceModel, entities: entities, namespace: "s")
        let table = try #require(schema.base.table(for: "Book"))
        var prefilter = PostgreSQLPrefilter(
            model: conformanceModel, entity: "Book", table: table, storeIdentifier: "S", firstIndex: 2)
        let predicate = try FetchPredicate(format: format, arguments: arguments).bound(
            to: "Book", in: conformanceModel)
        let result = try prefilter.condition(predicate)
        return (result.sql, result.exact, prefilter.arguments)
    }

    @Test func attributeComparisonsBecomeSQLNumberedAfterTheFamilyParameter() throws {
        let result = try Self.condition("year > 2000 AND title == 'Dune'")
        #expect(
            result.sql == #"(COALESCE(t."year" > $2::bigint, false)) AND (t."title" IS NOT DISTINCT FROM $3::bytea)"#)
        #expect(result.exact)
        #expect(result.arguments == [.integer(2000), .bytes(Data("Dune".utf8))])
    }

    @Test func whatPostgreSQLCannotDecideReadsEveryRowButKeepsTheRest() throws {
        // CONTAINS[c] is Strata's: the AND keeps the year range, not exact any more.
        let mixed = try Self.condition("year BETWEEN {1950, 1960} AND title CONTAINS[c] 'dune'")
        #expect(mixed.sql == #"(COALESCE(t."year" >= $2::bigint AND t."year" <= $3::bigint, false))"#)
        #expect(!mixed.exact)
        // An OR with an undecidable branch, and NOT over an inexact part, say nothing and bind nothing.
        let or = try Self.condition("year == 1 OR author.name == 'x'")
        #expect(or.sql == nil && or.arguments.isEmpty)
        let not = try Self.condition("NOT (year == 1 AND tags.@count > 2)")
        #expect(not.sql == nil && not.arguments.isEmpty)
        // NOT over an exact part is kept.
        let exactNot = try Self.condition("NOT (rating < 2.5 OR published == nil)")
        #expect(
            exactNot.sql == #"NOT ((COALESCE(t."rating" < $2::double precision, false)) OR (t."published" IS NULL))"#)
    }

    @Test func prefixesAreByteRangesAndNaNIsNeverExact() throws {
        let prefix = try Self.condition("title BEGINSWITH 'Du'")
        #expect(prefix.sql == #"COALESCE(t."title" >= $2::bytea AND t."title" < $3::bytea, false)"#)
        #expect(prefix.arguments == [.bytes(Data("Du".utf8)), .bytes(Data("Du".utf8) + [0xFF])])
        let nan = try Self.condition("rating == %@", [.value(.double(.nan))])
        #expect(nan.sql == nil)
    }

    @Test func aConstantThatCannotCompareIsRefusedAsSQLiteRefusesIt() throws {

        var thrown: (any Error)?
        do { _ = try Self.condition("year == 'soon'") } catch { thrown = error }
        #expect(thrown is Strata.PredicateError)
    }
}
