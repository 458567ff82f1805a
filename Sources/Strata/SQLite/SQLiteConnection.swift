import CSQLite
import Foundation

/// How a connection opens its file.
enum SQLiteOpenMode: Sendable, Hashable {
    /// Read and write; the file is created when missing.
    case readWrite
    /// Read only (SQLite may still create the `-shm` index next to a WAL-mode file).
    case readOnly
    /// Read only, and nothing written next to the file either: `immutable=1` when there is no
    /// write-ahead log to read (no locks, no `-wal` or `-shm` made), `mode=ro` when there is one
    /// (committed transactions still in the WAL must be read). For `split` and `inspect`, which
    /// leave their source's bytes as they are; the file must not change while it is open.
    case snapshot
    /// The main file alone, as it is (`immutable=1`): nothing is written and a write-ahead log is
    /// not read. For looking at a schema only.
    case mainFileOnly
}

/// One SQLite connection handle, with a cache of prepared statements: the one owner of `sqlite3`
/// handles in Strata (every statement belongs to one connection and is finalized with it).
///
/// Not thread-safe: its owner serializes access (the store keeps one writer behind a lock and
/// hands reader connections out one caller at a time).
final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String
    private var statements: [String: SQLiteStatement] = [:]
    /// When the statement running must stop (uptime nanoseconds; 0: never). Read by the progress
    /// handler ``limitTime()`` installs.
    var deadline: UInt64 = 0
    /// The read transaction a reader keeps between reads: the stores' write count when it began,
    /// and when (see `SQLiteStore.read`).
    var snapshot: (writes: UInt64, began: UInt64)?

    /// Whether no transaction is open.
    var isInAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// Ends the kept read transaction, if any.
    func endSnapshot() {
        guard snapshot != nil else { return }
        snapshot = nil
        if !isInAutocommit, (try? run("COMMIT")) == nil { try? execute("ROLLBACK") }
    }
    private var limitsTime = false

    /// Process-wide settings, applied once before the first connection opens.
    private static let configured: Bool = {
        _ = csqlite_disable_memory_statistics()
        return true
    }()

    /// Opens the database at `path` (created when missing, unless `readOnly`).
    convenience init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        try self.init(path: path, mode: readOnly ? .readOnly : .readWrite)
    }

    /// Opens the database at `path` in `mode`.
    /// - Throws: ``SQLiteError``; for `.snapshot`, also when the file is missing or not a database.
    init(path: String, mode: SQLiteOpenMode) throws(SQLiteError) {
        _ = Self.configured
        var db: OpaquePointer?
        let status: Int32
        switch mode {
        case .readWrite:
            status = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        case .readOnly:
            status = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        case .mainFileOnly:
            let uri =
                "file:" + Self.uriEncoded(URL(fileURLWithPath: path).standardizedFileURL.path) + "?mode=ro&immutable=1"
            status = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nil)
        case .snapshot:
            guard FileManager.default.fileExists(atPath: path) else {
                throw SQLiteError(code: SQLiteResultCode.cantOpen.rawValue, message: "no such file")
            }
            let walSize =
                (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? NSNumber)?.intValue ?? 0
            let uri =
                "file:" + Self.uriEncoded(URL(fileURLWithPath: path).standardizedFileURL.path)
                + (walSize > 0 ? "?mode=ro" : "?mode=ro&immutable=1")
            status = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nil)
        }
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
        if mode == .snapshot {
            // Opening is lazy: read the schema now so a file that is not a database fails here.
            let statement = try statement("SELECT count(*) FROM sqlite_master")
            defer { statement.reset() }
            _ = try statement.step()
        }
    }

    /// Installs a progress handler that interrupts a statement running past ``deadline``
    /// (`SQLITE_INTERRUPT`); a deadline of 0 lets every statement run.
    func limitTime() {
        guard !limitsTime else { return }
        limitsTime = true
        sqlite3_progress_handler(
            handle, 100,
            { context in
                guard let context else { return 0 }
                let connection = Unmanaged<SQLiteConnection>.fromOpaque(context).takeUnretainedValue()
                let deadline = connection.deadline
                return deadline != 0 && DispatchTime.now().uptimeNanoseconds > deadline ? 1 : 0
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Percent-encodes the characters a URI path cannot hold as they are.
    private static func uriEncoded(_ path: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var result: [UInt8] = []
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7f...0xff:
                result += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xf)]]
            default:
                result.append(byte)
            }
        }
        return String(decoding: result, as: UTF8.self)
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

    /// Whether the connection can only read (SQLite opens a file it cannot write read-only).
    var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

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
