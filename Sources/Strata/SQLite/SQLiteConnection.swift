import CSQLite
import Foundation

/// One SQLite connection handle, with a cache of prepared statements.
///
/// Not thread-safe: its owner serializes access (the store keeps one writer behind a lock and
/// hands reader connections out one caller at a time).
final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String
    private var statements: [String: SQLiteStatement] = [:]

    /// Process-wide settings, applied once before the first connection opens.
    private static let configured: Bool = {
        _ = csqlite_disable_memory_statistics()
        return true
    }()

    /// Opens (and creates, unless `readOnly`) the database at `path`.
    init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        _ = Self.configured
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: status, message: message)
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 10_000)
        SQLiteFunctions.register(on: db)
    }

    deinit {
        statementsByText.removeAll()
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// The last error on this connection.
    func error(sql: String? = nil, code: Int32? = nil) -> SQLiteError {
        SQLiteError(
            code: code ?? sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements that take no arguments and return no rows.
    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        if status != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error"
            sqlite3_free(message)
            throw SQLiteError(code: sqlite3_extended_errcode(handle), message: text, sql: sql)
        }
    }

    private var statementsByText: [ObjectIdentifier: SQLiteStatement] = [:]

    /// The prepared statement of a statement text built once (looked up by identity, not by
    /// hashing the text), reset and with cleared bindings.
    func statement(_ text: SQLText) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statementsByText[ObjectIdentifier(text)] {
            cached.reset()
            return cached
        }
        let statement = try statement(text.sql)
        statementsByText[ObjectIdentifier(text)] = statement
        return statement
    }

    /// Runs a query from a statement text built once, mapping each row.
    func query<T>(_ text: SQLText, _ arguments: [SQLiteValue], _ map: (SQLiteStatement) throws -> T) throws -> [T] {
        try statement(text).rows(arguments, map)
    }

    /// A prepared statement for `sql`, reset and with cleared bindings; cached for reuse.
    func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var pointer: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard status == SQLITE_OK, let pointer else { throw error(sql: sql) }
        let statement = SQLiteStatement(pointer, connection: self, sql: sql)
        if statements.count > 512 { statements.removeAll() }
        statements[sql] = statement
        return statement
    }

    /// Runs `sql` with `arguments`, returning nothing.
    func run(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) {
        let statement = try statement(sql)
        try statement.bind(arguments)
        while try statement.step() {}
        statement.reset()
    }

    /// Runs a query and maps each row.
    func query<T>(_ sql: String, _ arguments: [SQLiteValue] = [], _ map: (SQLiteStatement) throws -> T) throws -> [T] {
        try statement(sql).rows(arguments, map)
    }

    /// The number of rows the last statement changed.
    var changes: Int { Int(sqlite3_changes(handle)) }
}

/// A statement's text, built once and kept (a schema's per-table statements): connections cache
/// its prepared statement under the object's identity.
final class SQLText: Sendable {
    let sql: String
    init(_ sql: String) { self.sql = sql }
}

/// A value bound to or read from SQLite.
enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

/// A prepared statement, owned by its connection's cache.
final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String
    unowned let connection: SQLiteConnection

    init(_ handle: OpaquePointer, connection: SQLiteConnection, sql: String) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        for (offset, value) in values.enumerated() { try bind(value, at: Int32(offset + 1)) }
    }

    /// Binds one value to parameter `index` (1-based).
    func bind(_ value: SQLiteValue, at index: Int32) throws(SQLiteError) {
        let status: Int32
        switch value {
        case .null: status = sqlite3_bind_null(handle, index)
        case .integer(let i): status = sqlite3_bind_int64(handle, index, i)
        case .real(let d): status = sqlite3_bind_double(handle, index, d)
        case .text(let s):
            // An explicit byte count keeps text with NUL characters whole.
            var text = s
            status = text.withUTF8 { bytes in
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_text(handle, index, "", 0, nil)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text(handle, index, $0, Int32(bytes.count), csqlite_transient())
                }
            }
        case .blob(let data):
            status = data.withUnsafeBytes { bytes in
                sqlite3_bind_blob64(
                    handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64(bytes.count),
                    csqlite_transient())
            }
        }
        guard status == SQLITE_OK else { throw connection.error(sql: sql, code: status) }
    }

    /// Binds `arguments`, maps every row, and resets the statement.
    func rows<T>(_ arguments: [SQLiteValue], _ map: (SQLiteStatement) throws -> T) throws -> [T] {
        defer { reset() }
        try bind(arguments)
        var rows: [T] = []
        while try step() { rows.append(try map(self)) }
        return rows
    }

    /// Steps once: true when a row is available.
    func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(handle)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.error(sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
    func blob(_ column: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: pointer, count: count)
    }
}

/// The number of columns of a statement's result.
func sqlite3ColumnCount(_ statement: SQLiteStatement) -> Int32 { sqlite3_column_count(statement.handle) }
