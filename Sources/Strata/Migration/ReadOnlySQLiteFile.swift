import CSQLite
import Foundation

/// An SQLite file opened so that nothing is ever written to it: `SQLITE_OPEN_READONLY`, and when
/// it has no write-ahead log to read, `immutable=1` (no locks, no `-wal` or `-shm` files made).
///
/// `split` and `inspect` read stores through it so the file's bytes stay as they are. The file must
/// not be changed by another process while it is open.
final class ReadOnlySQLiteFile {
    let handle: OpaquePointer
    let url: URL

    /// Opens `url` read-only.
    /// - Throws: `.io` when the file is missing or not an SQLite database.
    init(url: URL) throws(StoreError) {
        self.url = url
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError(.io, "no such file", storeURL: url)
        }
        let walSize =
            (try? FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? NSNumber)?.intValue ?? 0
        // Committed transactions still in the WAL must be read, which needs the WAL index; otherwise
        // the file is read as immutable.
        let uri =
            "file:" + Self.encode(url.standardizedFileURL.path) + (walSize > 0 ? "?mode=ro" : "?mode=ro&immutable=1")
        var db: OpaquePointer?
        let status = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw StoreError(.io, "cannot open the file read-only: \(message)", storeURL: url)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 10_000)
        do {
            _ = try query("SELECT count(*) FROM sqlite_master") { $0.int64(0) }
        } catch {
            throw StoreError(.io, "cannot read the file: \(error.message)", storeURL: url, underlying: error)
        }
    }

    deinit { sqlite3_close_v2(handle) }

    /// Percent-encodes the characters a URI path cannot hold as they are.
    private static func encode(_ path: String) -> String {
        var result = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7f...0xff:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            default:
                result.append(Character(UnicodeScalar(byte)))
            }
        }
        return result
    }

    /// Prepares `sql`.
    func prepare(_ sql: String) throws(SQLiteError) -> RawStatement {
        var pointer: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &pointer, nil)
        guard status == SQLITE_OK, let pointer else {
            throw SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
        }
        return RawStatement(pointer, db: handle, sql: sql)
    }

    /// Runs a query and maps each row.
    func query<T>(_ sql: String, _ arguments: [SQLiteValue] = [], _ map: (RawStatement) -> T) throws(SQLiteError)
        -> [T]
    {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        var rows: [T] = []
        while try statement.step() { rows.append(map(statement)) }
        return rows
    }

    /// The metadata table's keys and values; nil when the file is not a Strata store.
    func metadataValues() -> [String: String]? {
        guard
            let exists = try? query(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
                [.text(SQLiteStore.metadataTable)],
                { $0.int64(0) }),
            exists.first == 1,
            let pairs = try? query(
                "SELECT key, value FROM \(SQLiteStore.metadataTable)", [], { ($0.text(0), $0.text(1)) })
        else { return nil }
        return Dictionary(pairs, uniquingKeysWith: { _, last in last })
    }
}

/// A statement of a ``ReadOnlySQLiteFile`` (or any raw handle), finalized when released.
final class RawStatement {
    let handle: OpaquePointer
    let db: OpaquePointer
    let sql: String

    init(_ handle: OpaquePointer, db: OpaquePointer, sql: String) {
        self.handle = handle
        self.db = db
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and binds `values` from the first parameter on.
    func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(handle, index)
            case .integer(let i): status = sqlite3_bind_int64(handle, index, i)
            case .real(let d): status = sqlite3_bind_double(handle, index, d)
            case .text(let s): status = sqlite3_bind_text(handle, index, s, -1, csqlite_transient())
            case .blob(let data):
                status = data.withUnsafeBytes { bytes in
                    sqlite3_bind_blob64(
                        handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64(bytes.count),
                        csqlite_transient())
                }
            }
            guard status == SQLITE_OK else {
                throw SQLiteError(code: status, message: String(cString: sqlite3_errmsg(db)), sql: sql)
            }
        }
    }

    /// Steps once: true when a row is available.
    func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(handle)
        if status == SQLITE_ROW { return true }
        if status == SQLITE_DONE { return false }
        throw SQLiteError(code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)), sql: sql)
    }

    var columnCount: Int32 { sqlite3_column_count(handle) }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
}

/// A 64-bit digest of the current row of `statement`, over each column's storage class and value
/// (integers and reals as 64-bit words, text and blobs as their length and bytes, eight at a time),
/// so equal rows give equal digests whatever connection reads them. Each word is mixed in with an
/// FNV-style multiply and a shift, which spreads every bit of it over the whole digest.
func rowDigest(_ statement: OpaquePointer, columns: Int32) -> UInt64 {
    let prime: UInt64 = 0x0000_0100_0000_01b3
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for column in 0..<columns {
        let type = sqlite3_column_type(statement, column)
        var word: UInt64
        switch type {
        case SQLITE_INTEGER: word = UInt64(bitPattern: sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: word = sqlite3_column_double(statement, column).bitPattern
        case SQLITE_TEXT, SQLITE_BLOB:
            let pointer =
                type == SQLITE_TEXT
                ? UnsafeRawPointer(sqlite3_column_text(statement, column)) : sqlite3_column_blob(statement, column)
            let count = Int(sqlite3_column_bytes(statement, column))
            word = UInt64(count)
            if let pointer, count > 0 {
                var offset = 0
                while offset + 8 <= count {
                    let chunk = pointer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    hash = (hash ^ chunk) &* prime
                    hash ^= hash >> 29
                    offset += 8
                }
                var tail: UInt64 = 0
                while offset < count {
                    tail = tail << 8 | UInt64(pointer.load(fromByteOffset: offset, as: UInt8.self))
                    offset += 1
                }
                word ^= tail << 32
            }
        default: word = 0
        }
        hash = (hash ^ UInt64(UInt32(bitPattern: type))) &* prime
        hash = (hash ^ word) &* prime
        hash ^= hash >> 29
    }
    return hash
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
