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
}

extension SQLiteConnection: SQLExecutor {
    typealias Value = SQLiteValue
    typealias Failure = SQLiteError
}
