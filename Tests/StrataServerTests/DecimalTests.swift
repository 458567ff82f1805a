import Foundation
import Strata
import StrataTestSupport
import Testing

/// Decimals as `NSDecimalNumber` holds them (at most 38 significant digits, exponent -128 to 127)
/// round-trip exactly over HTTP in every store type, and order and filter alike in each.
@Suite(.serialized) struct DecimalTests {
    static let model = #"""
        {"name": "Ledger", "version": "1", "entities": [
          {"name": "Amount", "attributes": [
            {"name": "label", "type": "string", "optional": false},
            {"name": "value", "type": "decimal"}
          ]}
        ]}
        """#

    /// Text sent and the text read back: plain digits, no exponent, no trailing zeros after the point.
    static let values: [(sent: String, read: String)] = [
        ("-12345678901234567890.123456789012345678", "-12345678901234567890.123456789012345678"),
        ("-1.50", "-1.5"),
        ("-1e-128", "-0." + String(repeating: "0", count: 127) + "1"),
        ("0.000", "0"),
        ("." + String(repeating: "0", count: 127) + "1", "0." + String(repeating: "0", count: 127) + "1"),
        ("9.99", "9.99"),
        ("10", "10"),
        ("190.123456789012345678901", "190.123456789012345678901"),
        ("12345678901234567890.123456789012345678", "12345678901234567890.123456789012345678"),
        ("1" + String(repeating: "0", count: 127), "1" + String(repeating: "0", count: 127)),
        (
            String(repeating: "9", count: 38) + "e127",
            String(repeating: "9", count: 38) + String(repeating: "0", count: 127)
        ),
    ]

    /// A server over the store `store` names (`memory`, an SQLite file, a PostgreSQL URL).
    static func serve(_ store: (TemporaryDirectory) throws -> String) throws -> (
        StrataProcess, TestClient, TemporaryDirectory
    ) {
        let folder = TemporaryDirectory()
        let modelFile = folder.file("ledger.json")
        try model.write(to: modelFile, atomically: true, encoding: .utf8)
        let process = try StrataProcess([
            "serve", "--port", "0", "--model", modelFile.path, "--data-dir", folder.file("data").path,
            "--store", "Default=\(try store(folder))",
        ])
        let client = TestClient(port: try #require(process.port(), "\(process.stderr.current)"))
        return (process, client, folder)
    }

    /// Creates every value, reads each back, then checks ordering, filters and the refusals.
    static func check(_ client: TestClient) throws {
        for (index, value) in values.enumerated() {
            let created = try client.send(
                "POST", "/amounts", json: #"{"label": "v\#(index)", "value": "\#(value.sent)"}"#)
            #expect(created.status == 201, "\(value.sent): \(created.text)")
            let id = try #require(created.json.objectValue?["_id"]?.doubleValue.map { Int64($0) })
            #expect(created.json.objectValue?["value"] == .string(value.read), "\(value.sent)")
            let read = try client.send("GET", "/amounts/\(id)")
            #expect(read.json.objectValue?["value"] == .string(value.read), "\(value.sent)")
        }
        func labels(_ query: String) throws -> [String] {
            let response = try client.send("GET", "/amounts?\(query)")
            #expect(response.status == 200, "\(query): \(response.text)")
            return (response.json.objectValue?["items"]?.arrayValue ?? []).compactMap {
                $0.objectValue?["label"]?.stringValue
            }
        }
        let all = (0..<values.count).map { "v\($0)" }
        #expect(try labels("order=value&limit=100") == all)
        #expect(try labels("order=value.desc&limit=100") == all.reversed())
        #expect(try labels("value=gt.9.99&order=value") == Array(all[6...]))
        #expect(try labels("value=lt.0&order=value") == Array(all[..<3]))
        #expect(try labels("value=eq.190.123456789012345678901") == ["v7"])
        #expect(try labels("value=gte.-1.5&value=lte.1e-128&order=value") == ["v1", "v2", "v3", "v4"])

        // Refused in a body; in a filter, compared as what they are (past the largest two values,
        // between 0 and the smallest positive one).
        let outOfRange = [
            (String(repeating: "1", count: 39), 9), ("1e128", 10), ("10e127", 10), ("1e-129", 4), ("0.1e-128", 4),
        ]
        for (text, firstGreater) in outOfRange {
            let refused = try client.send("POST", "/amounts", json: #"{"label": "x", "value": "\#(text)"}"#)
            #expect(refused.status == 422, "\(text): \(refused.text)")
            #expect(refused.text.contains("at most 38 significant digits and an exponent from -128 to 127"), "\(text)")
            #expect(try labels("value=gt.\(text)&order=value") == Array(all[firstGreater...]), "\(text)")
            #expect(try labels("value=lte.\(text)&order=value") == Array(all[..<firstGreater]), "\(text)")
        }
    }

    @Test func sqlite() throws {
        let (process, client, _) = try Self.serve { "sqlite:" + $0.file("ledger.sqlite").path }
        try Self.check(client)
        _ = process
    }

    @Test func inMemory() throws {
        let (process, client, _) = try Self.serve { _ in "memory" }
        try Self.check(client)
        _ = process
    }

    @Test(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
    func postgreSQL() throws {
        let (process, client, folder) = try Self.serve { try $0.postgreSQLURL(name: "ledger").absoluteString }
        try Self.check(client)
        _ = process
        // Held in a `numeric` column, with the digits read back, which PostgreSQL itself orders.
        let schema = folder.postgreSQLSchema(name: "ledger")
        func psql(_ sql: String) throws -> String {
            try PostgreSQLTestServer.psql(sql).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(
            try psql(
                "SELECT data_type FROM information_schema.columns WHERE table_schema = '\(schema)' AND table_name = 'Amount' AND column_name = 'value'"
            ) == "numeric")
        let table = "\(schema).\"Amount\""
        #expect(
            try psql("SELECT string_agg(convert_from(label, 'UTF8'), ',' ORDER BY value) FROM \(table)")
                == Self.values.indices.map { "v\($0)" }.joined(separator: ","))
        for (index, value) in Self.values.enumerated() {
            let stored = try psql("SELECT value::text FROM \(table) WHERE label = convert_to('v\(index)', 'UTF8')")
            #expect(stored == value.read, "\(value.sent)")
        }
    }
}
