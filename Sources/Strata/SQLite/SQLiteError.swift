import CSQLite
import Foundation

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

    /// The store error for this failure while `doing` something: a full disk and a read-only
    /// file get their own codes (so a server can answer 503 naming the store); the rest is `.io`.
    func storeError(_ doing: String, url: URL?, entity: String? = nil) -> StoreError {
        let code: StoreError.Code = isFull ? .full : isReadOnly ? .notWritable : .io
        let reason =
            isFull
            ? "the disk or the store's size limit is full" : isReadOnly ? "the store's file cannot be written" : message
        return StoreError(code, "\(doing): \(reason)", storeURL: url, entity: entity, underlying: self)
    }

    /// The result code as a named value, matchable in `catch` and `switch`.
    public var resultCode: SQLiteResultCode { SQLiteResultCode(rawValue: code) }

    /// Whether a UNIQUE or PRIMARY KEY constraint failed.
    public var isUniqueViolation: Bool {
        resultCode == .constraintUnique || resultCode == .constraintPrimaryKey
    }

    /// Whether the disk or the file system is full (or the file reached its page limit).
    public var isFull: Bool { resultCode.primary == .full }

    /// Whether the file cannot be written (read-only file system, file or folder).
    public var isReadOnly: Bool { resultCode.primary == .readOnly }

    public var description: String {
        var text = "SQLite error \(code): \(message)"
        if let sql { text += " (in \(sql))" }
        return text
    }
}

/// An SQLite result code (primary or extended) as a named value, after GRDB's `ResultCode`: the
/// extended codes are macros Swift does not import, so the ones Strata tells apart are named here.
public struct SQLiteResultCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The code SQLite returned.
    public var rawValue: Int32

    /// Wraps a code.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code of an extended one (`constraint` for every constraint failure, say).
    public var primary: SQLiteResultCode { SQLiteResultCode(rawValue: rawValue & 0xff) }

    /// `SQLITE_OK`.
    public static let ok = SQLiteResultCode(rawValue: 0)
    /// `SQLITE_ERROR`: a generic error (a bad statement, say).
    public static let error = SQLiteResultCode(rawValue: 1)
    /// `SQLITE_BUSY`.
    public static let busy = SQLiteResultCode(rawValue: 5)
    /// `SQLITE_NOMEM`.
    public static let noMemory = SQLiteResultCode(rawValue: 7)
    /// `SQLITE_READONLY`: the file, its folder or the file system cannot be written.
    public static let readOnly = SQLiteResultCode(rawValue: 8)
    /// `SQLITE_INTERRUPT`: `sqlite3_interrupt` or a progress handler stopped the statement.
    public static let interrupt = SQLiteResultCode(rawValue: 9)
    /// `SQLITE_IOERR`.
    public static let ioError = SQLiteResultCode(rawValue: 10)
    /// `SQLITE_CORRUPT`.
    public static let corrupt = SQLiteResultCode(rawValue: 11)
    /// `SQLITE_FULL`: the disk is full, or the file reached `max_page_count`.
    public static let full = SQLiteResultCode(rawValue: 13)
    /// `SQLITE_CANTOPEN`.
    public static let cantOpen = SQLiteResultCode(rawValue: 14)
    /// `SQLITE_CONSTRAINT`.
    public static let constraint = SQLiteResultCode(rawValue: 19)
    /// `SQLITE_NOTADB`: the file is not a database.
    public static let notADatabase = SQLiteResultCode(rawValue: 26)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`.
    public static let constraintPrimaryKey = SQLiteResultCode(rawValue: 19 | (6 << 8))
    /// `SQLITE_CONSTRAINT_UNIQUE`.
    public static let constraintUnique = SQLiteResultCode(rawValue: 19 | (8 << 8))

    public var description: String { "SQLite result code \(rawValue)" }
}
