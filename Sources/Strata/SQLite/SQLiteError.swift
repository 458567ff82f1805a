import CSQLite

/// A failed SQLite call: the result code, SQLite's message, and the SQL that ran.
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The extended result code.
    public var code: Int32
    /// SQLite's message.
    public var message: String
    /// The statement that failed, if any.
    public var sql: String?

    /// Creates an error.
    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code (`SQLITE_CONSTRAINT` for every constraint failure, say).
    public var primaryCode: Int32 { code & 0xff }

    /// Whether a UNIQUE or PRIMARY KEY constraint failed.
    public var isUniqueViolation: Bool {
        // SQLITE_CONSTRAINT_UNIQUE (2067) and SQLITE_CONSTRAINT_PRIMARYKEY (1555) are macros Swift
        // does not import.
        code == 2067 || code == 1555
    }

    public var description: String {
        var text = "SQLite error \(code): \(message)"
        if let sql { text += " (in \(sql))" }
        return text
    }
}
