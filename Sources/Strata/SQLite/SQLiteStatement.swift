import CSQLite
import Foundation

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

    /// Column `column` of the current row, as the storage class it has.
    func value(_ column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: .integer(int64(column))
        case SQLITE_FLOAT: .real(double(column))
        case SQLITE_TEXT: .text(text(column))
        case SQLITE_BLOB: .blob(blob(column))
        default: .null
        }
    }

    /// The number of columns of the statement's result.
    var columnCount: Int32 { sqlite3_column_count(handle) }

    /// The bytes of text column `column` of the current row.
    func textBytes(_ column: Int32) -> [UInt8] {
        guard let pointer = sqlite3_column_text(handle, column) else { return [] }
        return Array(UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(handle, column))))
    }

    /// The integers of column `column` of the current row written as `4,-2,17` (what
    /// `group_concat` makes of integers): empty for NULL, nil for any other text.
    func integerList(_ column: Int32) -> [Int64]? {
        guard let pointer = sqlite3_column_text(handle, column) else { return [] }
        let bytes = UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(handle, column)))
        var values: [Int64] = []
        var value: Int64 = 0
        var negative = false
        var digits = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
                let (sum, overflowSum) = times.addingReportingOverflow(Int64(byte &- UInt8(ascii: "0")))
                guard !overflowTimes, !overflowSum else { return nil }
                value = sum
                digits += 1
            case UInt8(ascii: "-") where digits == 0 && !negative: negative = true
            case UInt8(ascii: ","):
                guard digits > 0 else { return nil }
                values.append(negative ? -value : value)
                (value, negative, digits) = (0, false, 0)
            default: return nil
            }
        }
        guard digits > 0 else { return bytes.isEmpty ? [] : nil }
        values.append(negative ? -value : value)
        return values
    }

    /// Whether text column `column` of the current row holds exactly `bytes` (without copying it).
    func textBytes(_ column: Int32, equal bytes: [UInt8]) -> Bool {
        guard let pointer = sqlite3_column_text(handle, column) else { return bytes.isEmpty }
        let count = Int(sqlite3_column_bytes(handle, column))
        return count == bytes.count && bytes.withUnsafeBytes { memcmp($0.baseAddress!, pointer, count) == 0 }
    }

    /// Binds the first `columns` values of `other`'s current row (of another connection, say) as
    /// they are, runs this statement once and resets it, keeping nothing bound.
    func copyRow(of other: SQLiteStatement, columns: Int32) throws(SQLiteError) {
        for column in 0..<columns {
            let status = sqlite3_bind_value(handle, column + 1, sqlite3_column_value(other.handle, column))
            guard status == SQLITE_OK else { throw connection.error(sql: sql, code: status) }
        }
        _ = try step()
        reset()
    }
}

/// The number of columns of a statement's result.
func sqlite3ColumnCount(_ statement: SQLiteStatement) -> Int32 { statement.columnCount }
