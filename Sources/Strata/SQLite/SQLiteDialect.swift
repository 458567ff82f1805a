import Foundation

/// SQLite's spelling of the shared SQL statements: `?` parameters, tables by their quoted name,
/// values as SQLite's storage classes (see `SQLiteSchema.encode(_:)`).
struct SQLiteDialect: SQLDialect {
    static var null: SQLiteValue { .null }
    static func integer(_ value: Int64) -> SQLiteValue { .integer(value) }
    static func text(_ value: String) -> SQLiteValue { .text(value) }
    static func encode(_ value: AttributeValue) -> SQLiteValue { SQLiteSchema.encode(value) }

    func table(_ name: String) -> String { SQLiteSchema.quote(name) }

    /// `?`: parameters are numbered by their place in the text, and SQLite needs no type.
    func placeholder(_ index: Int, for column: SQLiteSchema.Column?) -> String { "?" }

    /// `column NOT IN (?, ?, …)`.
    func excludes(_ column: String, _ keys: [Int64], _ arguments: inout SQLArguments<Self>) -> String {
        "\(column) NOT IN (" + keys.map { arguments.add(.integer($0)) }.joined(separator: ", ") + ")"
    }

    /// Integers kept, reals cast, decimal text cast; a real becomes decimal text without a
    /// fraction when it has none (`21`, not `21.0`).
    func convert(_ column: String, from: AttributeType, to: AttributeType) -> String {
        switch to {
        case .boolean:
            return "CASE WHEN \(column) IS NULL THEN NULL WHEN CAST(\(column) AS REAL) <> 0 THEN 1 ELSE 0 END"
        case .integer16, .integer32, .integer64:
            return Self.isInteger(from) ? column : "CAST(\(column) AS INTEGER)"
        case .double, .float:
            return from == .double || from == .float ? column : "CAST(\(column) AS REAL)"
        default:
            guard from == .double || from == .float else { return "CAST(\(column) AS TEXT)" }
            return
                "CASE WHEN \(column) = CAST(\(column) AS INTEGER) AND ABS(\(column)) < 1e15 THEN CAST(CAST(\(column) AS INTEGER) AS TEXT) ELSE CAST(\(column) AS TEXT) END"
        }
    }

    func misfits(_ column: String, from: AttributeType, to: AttributeType) -> String {
        if let range = Self.range(of: to) {
            let bounds = { (value: String) in "\(value) < \(range.lowerBound) OR \(value) > \(range.upperBound)" }
            if Self.isInteger(from) { return "(\(bounds(column)))" }
            let integer = "CAST(\(column) AS INTEGER)"
            if from == .decimal { return "(CAST(\(integer) AS TEXT) <> \(column) OR \(bounds(integer)))" }
            return "(\(column) <> \(integer) OR \(bounds(column)))"
        }
        if to == .float { return "ABS(CAST(\(column) AS REAL)) > \(Self.floatLimit)" }
        return "1 = 0"
    }

    func createMembersTable(_ name: String) -> String {
        "CREATE TEMP TABLE \(name) (\"owner\" INTEGER PRIMARY KEY, \"member\" INTEGER)"
    }
}

extension SQLiteConnection: SQLExecutor {
    typealias Value = SQLiteValue
    typealias Failure = SQLiteError

    func texts(_ sql: String, _ arguments: [SQLiteValue]) throws(SQLiteError) -> [[String?]] {
        do {
            return try query(sql, arguments) { row in
                (0..<row.columnCount).map { row.isNull($0) ? nil : row.text($0) }
            }
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw SQLiteError(code: SQLiteResultCode.error.rawValue, message: "\(error)")
        }
    }
}
