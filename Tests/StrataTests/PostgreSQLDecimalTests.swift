import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Decimals in PostgreSQL stores: `numeric` columns, which PostgreSQL itself orders and compares
/// as numbers (the conditions a fetch hands it answer as Strata's evaluator does), and stores whose
/// decimal columns are text converted when opened.
@Suite(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct PostgreSQLDecimalTests {
    static func ledger(_ version: String, _ count: String = "integer64", extra: String = "") throws -> ObjectModel {
        try ObjectModel.load(
            json: Array(
                """
                {"name": "Ledger", "version": "\(version)", "entities": [
                  {"name": "Amount", "attributes": [
                    {"name": "label", "type": "string"}, {"name": "value", "type": "decimal"},
                    {"name": "count", "type": "\(count)"}\(extra)],
                   "indexes": [{"name": "byValue", "properties": ["value"]}]}
                ]}
                """.utf8))
    }

    /// Ascending (``DecimalOrderingTests/prices``): neighbours differ in their last digit or sign.
    static let values = DecimalOrderingTests.prices.map { AttributeValue.parseDecimal($0)! }
    static let labels = values.indices.map { "v\($0)" }

    /// The values saved into a new store at `url` in an order of their own (neither keys nor
    /// insertion order sort them), with `count` the index, and one object without a value.
    static func fill(_ url: URL, model: ObjectModel, decimalCount: Bool = false) throws {
        let store = try PostgreSQLStore(model: model, configuration: nil, url: url)
        defer { store.close() }
        let order = values.indices.sorted { ($0 * 7) % 5 < ($1 * 7) % 5 || (($0 * 7) % 5 == ($1 * 7) % 5 && $0 > $1) }
        var inserts = try order.map { index in
            try newRow(
                store, "Amount",
                [
                    "label": .string("v\(index)"), "value": .decimal(values[index]),
                    "count": decimalCount ? .decimal(Decimal(index)) : .integer(Int64(index)),
                ])
        }
        inserts.append(try newRow(store, "Amount", ["label": .string("none")]))
        try store.save(StoreChanges(inserts: inserts))
    }

    /// The type of column `column` of table `Amount` in the schema of `folder`'s store.
    static func columnType(_ folder: TemporaryDirectory, _ column: String = "value") throws -> String {
        try PostgreSQLTestServer.psql(
            "SELECT data_type FROM information_schema.columns WHERE table_schema = '\(folder.postgreSQLSchema())' AND table_name = 'Amount' AND column_name = '\(column)'"
        ).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The labels a fetch of `format` returns, by value.
    static func fetched(_ store: PostgreSQLStore, _ format: String, _ arguments: [PredicateArgument] = []) throws
        -> [String]
    {
        let request = FetchRequest(
            entityName: "Amount", predicate: try FetchPredicate(format: format, arguments: arguments),
            sortDescriptors: [SortKey("value")])
        return try store.fetch(request).compactMap { $0.attributes["label"]?.textValue }
    }

    static func decimal(_ text: String) -> PredicateArgument { .value(.decimal(AttributeValue.parseDecimal(text)!)) }

    /// Predicates over the values, with the arguments they take: each one PostgreSQL decides alone.
    static let predicates: [(String, [PredicateArgument])] = [
        ("value > 9", []), ("value > 9.99", []), ("value < 10", []), ("value >= 10", []), ("value < 0", []),
        ("value == '10.000'", []), ("value != 10", []), ("value == %@", [decimal("190.123456789012345678901")]),
        ("value > %@", [decimal("12345678901234567890.123456789012345678")]),
        ("value < %@", [decimal("-12345678901234567890.123456789012345678")]), ("value <= %@", [decimal("1e-128")]),
        ("value BETWEEN {-1.5, %@}", [decimal("9.990000000000000000000000000000000001")]),
        ("value IN {%@, 10, 1e127}", [decimal("-1e-128")]), ("NOT (value <= %@)", [decimal("9.99")]),
        ("count > %@", [decimal("9.5")]), ("value == nil", []),
    ]

    @Test func decimalColumnsAreNumericAndPostgreSQLComparesThemAsStrataDoes() throws {
        let folder = TemporaryDirectory()
        let url = try folder.postgreSQLURL()
        let model = try Self.ledger("1")
        try Self.fill(url, model: model)
        #expect(try Self.columnType(folder) == "numeric")
        let table = "\(folder.postgreSQLSchema()).\"Amount\""
        // PostgreSQL orders the stored values as numbers, and holds their digits exactly.
        #expect(
            try PostgreSQLTestServer.psql(
                "SELECT string_agg(convert_from(label, 'UTF8'), ',' ORDER BY value) FROM \(table) WHERE value IS NOT NULL"
            ).trimmingCharacters(in: .whitespacesAndNewlines) == Self.labels.joined(separator: ","))
        for (index, text) in DecimalOrderingTests.prices.enumerated() {
            let stored = try PostgreSQLTestServer.psql(
                "SELECT value::text FROM \(table) WHERE label = convert_to('v\(index)', 'UTF8')")
            #expect(
                stored.trimmingCharacters(in: .whitespacesAndNewlines) == Self.values[index].description, "\(text)")
        }

        let store = try PostgreSQLStore(model: model, configuration: nil, url: url)
        defer { store.close() }
        let (conninfo, _, _) = PostgreSQLStore.connection(from: url, configuration: nil)
        let connection = try PGConnection(conninfo)
        let tableInfo = try #require(store.schema.base.table(for: "Amount"))
        var rows: [[String: AttributeValue]] = zip(Self.labels, Self.values).enumerated().map { index, pair in
            ["label": .string(pair.0), "value": .decimal(pair.1), "count": .integer(Int64(index))]
        }
        rows.append(["label": .string("none")])
        for (format, arguments) in Self.predicates {
            let predicate = try FetchPredicate(format: format, arguments: arguments).bound(to: "Amount", in: model)
            let expected = try rows.filter { row in
                try predicate.evaluate { key -> PredicateOperand in .value(row[key] ?? .null) }
            }.compactMap { $0["label"]?.textValue }
            // The condition handed to PostgreSQL answers alone, and exactly.
            var prefilter = PostgreSQLPrefilter(
                model: model, entity: "Amount", table: tableInfo, storeIdentifier: store.metadata.identifier,
                firstIndex: 1)
            let condition = try prefilter.condition(predicate)
            #expect(condition.exact, "\(format)")
            let sql = try #require(condition.sql, "\(format)")
            let selected = try connection.execute(
                "SELECT t.\"label\" FROM \(store.schema.qualified("Amount")) AS t WHERE \(sql)", prefilter.arguments
            ).rows.compactMap { $0[0].map { String(decoding: PGConnection.bytes($0), as: UTF8.self) } }
            #expect(Set(selected) == Set(expected), "\(format)")
            // And a fetch answers the same, sorted by value.
            let sorted = (expected.contains("none") ? ["none"] : []) + Self.labels.filter { expected.contains($0) }
            #expect(try Self.fetched(store, format, arguments) == sorted, "\(format)")
        }
    }

    /// The conditions a fetch hands PostgreSQL are ones a B-tree index on the column serves (not
    /// `COALESCE(…)` or `IS NOT DISTINCT FROM`, which read every row): with 20,000 objects and the
    /// model's fetch index on `value`, PostgreSQL's plan for each selective comparison uses it.
    @Test func aFetchIndexServesPushedDownComparisons() throws {
        let folder = TemporaryDirectory()
        let url = try folder.postgreSQLURL()
        let model = try Self.ledger("1")
        let store = try PostgreSQLStore(model: model, configuration: nil, url: url)
        defer { store.close() }
        let ids = try store.newObjectIDs(entity: "Amount", count: 20_000)
        try store.save(
            StoreChanges(
                inserts: ids.enumerated().map { index, id in
                    StoreRow(
                        id: id,
                        attributes: [
                            "label": .string("a\(index)"), "value": .decimal(Decimal(index) / 100),
                            "count": .integer(Int64(index)),
                        ])
                }))
        let table = store.schema.qualified("Amount")
        try PostgreSQLTestServer.psql("ANALYZE \(table)")
        let (conninfo, _, _) = PostgreSQLStore.connection(from: url, configuration: nil)
        let connection = try PGConnection(conninfo)
        let tableInfo = try #require(store.schema.base.table(for: "Amount"))
        for format in [
            "value > 199.5", "value == 12.34", "value IN {1.5, 2.5}", "value BETWEEN {10, 10.5}",
            "NOT (value <= 199.5)", "value < 0.25 AND count >= 0",
        ] {
            let predicate = try FetchPredicate(format: format).bound(to: "Amount", in: model)
            var prefilter = PostgreSQLPrefilter(
                model: model, entity: "Amount", table: tableInfo, storeIdentifier: store.metadata.identifier,
                firstIndex: 1)
            let sql = try #require(try prefilter.condition(predicate).sql, "\(format)")
            let plan = try connection.execute(
                "EXPLAIN SELECT t.\"label\" FROM \(table) AS t WHERE \(sql)", prefilter.arguments
            )
            .rows.compactMap { $0[0].map { String(decoding: PGConnection.bytes($0), as: UTF8.self) } }
            .joined(separator: "\n")
            #expect(plan.contains("Index") && !plan.contains("Seq Scan"), "\(format):\n\(plan)")
        }
    }

    /// The column layout of a store whose decimals are text: `value` turned back into the
    /// decimals' digits, and an object whose text is no decimal.
    static func textLayout(_ folder: TemporaryDirectory, columns: [String] = ["value"]) throws {
        let table = "\(folder.postgreSQLSchema()).\"Amount\""
        for column in columns {
            try PostgreSQLTestServer.psql(
                "ALTER TABLE \(table) ALTER COLUMN \"\(column)\" TYPE text USING \"\(column)\"::text")
        }
        if columns.contains("value") {
            try PostgreSQLTestServer.psql("UPDATE \(table) SET value = 'not a number' WHERE value IS NULL")
        }
        #expect(try columns.allSatisfy { try columnType(folder, $0) == "text" })
    }

    @Test func aStoreWithTextDecimalsIsConvertedWhenOpened() throws {
        let folder = TemporaryDirectory()
        let url = try folder.postgreSQLURL()
        let model = try Self.ledger("1")
        try Self.fill(url, model: model)
        try Self.textLayout(folder)

        // Read-only: left as it is, its decimals still read and compared exactly (by Strata).
        let readOnly = try PostgreSQLStore(
            model: model, configuration: nil, url: url, options: StoreOptions(readOnly: true))
        #expect(!readOnly.numericDecimals)
        #expect(try Self.fetched(readOnly, "value > 9") == Array(Self.labels[6...]))
        readOnly.close()
        #expect(try Self.columnType(folder) == "text")

        for _ in 0..<2 {
            let store = try PostgreSQLStore(model: model, configuration: nil, url: url)
            defer { store.close() }
            #expect(store.numericDecimals)
            #expect(try Self.columnType(folder) == "numeric")
            let read = try store.fetch(FetchRequest(entityName: "Amount", sortDescriptors: [SortKey("value")]))
            #expect(read.map { $0.attributes["value"] ?? .null } == [.null] + Self.values.map { .decimal($0) })
            #expect(read.first?.attributes["label"] == .string("none"))
            #expect(try Self.fetched(store, "value > 9") == Array(Self.labels[6...]))
            #expect(try Self.fetched(store, "value <= %@", [Self.decimal("-1.5")]) == Array(Self.labels[...2]))
        }
        // The fetch index is kept, over the numeric column.
        let index = try PostgreSQLTestServer.psql(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = '\(folder.postgreSQLSchema())' AND indexname = 'Amount_byValue'"
        )
        #expect(index.contains("(value)"), "\(index)")
    }

    @Test func aStoreWithTextDecimalsMigrates() throws {
        let folder = TemporaryDirectory()
        let url = try folder.postgreSQLURL()
        try Self.fill(url, model: try Self.ledger("1", "decimal"), decimalCount: true)
        try Self.textLayout(folder, columns: ["value", "count"])
        // Version 2 adds an attribute and makes `count` an integer: both columns are copied.
        let v2 = try Self.ledger("2", "integer64", extra: #", {"name": "note", "type": "string"}"#)
        let store = try PostgreSQLStore(model: v2, configuration: nil, url: url, options: StoreOptions(migrate: true))
        defer { store.close() }
        #expect(store.metadata.modelVersion == "2")
        #expect(try Self.columnType(folder) == "numeric")
        #expect(try Self.columnType(folder, "count") == "bigint")
        let read = try store.fetch(FetchRequest(entityName: "Amount", sortDescriptors: [SortKey("value")]))
        #expect(read.map { $0.attributes["value"] ?? .null } == [.null] + Self.values.map { .decimal($0) })
        #expect(read.dropFirst().map { $0.attributes["count"] } == Self.values.indices.map { .integer(Int64($0)) })
        #expect(try Self.fetched(store, "value > 10") == Array(Self.labels[9...]))
    }
}
