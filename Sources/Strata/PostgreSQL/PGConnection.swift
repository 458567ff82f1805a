import CLibPQ
import Foundation

/// A value bound to a query parameter: text, or bytes sent in binary format (for `bytea`).
enum PGValue: Sendable, Hashable {
    case null
    case text(String)
    case bytes(Data)

    static func integer(_ value: Int64) -> PGValue { .text(String(value)) }
    static func double(_ value: Double) -> PGValue {
        value.isNaN ? .text("NaN") : value.isInfinite ? .text(value > 0 ? "Infinity" : "-Infinity") : .text("\(value)")
    }
}

/// A failed libpq call, with PostgreSQL's SQLSTATE when the server gave one.
struct PGError: Error, CustomStringConvertible, Sendable {
    var sqlState: String?
    var message: String
    /// The constraint a violation names (`23505` and friends).
    var constraint: String?
    var description: String { sqlState.map { "\(message) (SQLSTATE \($0))" } ?? message }

    /// The connection is gone or going: no SQLSTATE at all, class 08 (connection exception), or
    /// the server shutting down or not yet accepting connections (57P01, 57P02, 57P03). A commit
    /// that meets one may or may not have happened.
    var isConnectionFailure: Bool {
        guard let sqlState else { return true }
        return sqlState.hasPrefix("08") || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03"
    }
    /// The connection must not be used again: it failed, or its server is a standby now (25006, a
    /// primary demoted under it), so every connection the pool holds is suspect as well.
    var mustReconnect: Bool { isConnectionFailure || isReadOnly }
    var isUniqueViolation: Bool { sqlState == "23505" }
    /// A serialization failure or deadlock: the transaction may simply be run again.
    var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
    var isDiskFull: Bool { sqlState == "53100" }
    var isReadOnly: Bool { sqlState == "25006" }
}

/// The rows of a result, each column as text (`bytea` in its hex form), nil for NULL.
struct PGRows: Sendable {
    var rows: [[String?]]
    /// Rows a command changed (`UPDATE`, `DELETE`, `INSERT`).
    var affected: Int
}

/// One libpq connection. Not thread-safe: a ``PGPool`` lends it to one caller at a time.
///
/// With `prepares`, a statement run a second time on the connection is prepared under a name of
/// its own and run prepared from then on: PostgreSQL then parses and plans it once per connection
/// instead of at every call (for a read by primary key, most of the server's work). A statement
/// seen once is run unnamed, so that one-off SQL (a list's filter) costs no extra round trip.
/// Names carry a random part per connection, so that a pooler mixing sessions can never run
/// another connection's statement under a name of this one; such a pooler (PgBouncer in
/// transaction mode) needs preparation off all the same (`prepare=false` in the store's URI).
final class PGConnection: @unchecked Sendable {
    // Used by one thread at a time (the pool's borrower, or the listener's own thread); the
    // statement tables below are touched only by that thread too.
    let handle: OpaquePointer
    /// The pool generation the connection was opened in (see ``PGPool/invalidate()``).
    var generation = 0
    /// Whether statements run more than once are prepared.
    let prepares: Bool
    /// The statements prepared on this connection, by SQL text.
    private var prepared: [String: String] = [:]
    /// Statements run once and not prepared yet (cleared when it grows past ``preparedLimit``).
    private var seenOnce = Set<String>()
    /// The random part of this connection's statement names.
    private let namePrefix: String
    /// Statements prepared on this connection so far, which numbers their names.
    private var preparations = 0
    /// The most statements prepared on one connection; past it, statements run unnamed.
    static let preparedLimit = 256

    /// Connects with a libpq connection URI or key=value string.
    init(_ conninfo: String, prepares: Bool = false) throws(PGError) {
        self.prepares = prepares
        namePrefix = "strata_" + String(UInt32.random(in: 0...UInt32.max), radix: 36) + "_"
        guard let handle = PQconnectdb(conninfo) else {
            throw PGError(message: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(handle)
            throw PGError(message: "cannot connect to PostgreSQL: \(message)")
        }
        self.handle = handle
        // Notices (an index that already exists, say) are not Strata's to print.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// Whether the connection is usable.
    var isOK: Bool { PQstatus(handle) == CONNECTION_OK }
    /// Whether a transaction is open (or failed and not rolled back).
    var inTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }
    /// The server's version number (160004 for 16.4).
    var serverVersion: Int { Int(PQserverVersion(handle)) }
    /// The backend's process id, which its notifications carry.
    var backendPID: Int32 { PQbackendPID(handle) }

    /// Runs one statement with parameters (`$1`, `$2`, …; never interpolated): prepared when the
    /// connection ``prepares`` and has run the same text before, else unnamed (which works through
    /// poolers in transaction mode).
    @discardableResult
    func execute(_ sql: String, _ parameters: [PGValue] = []) throws(PGError) -> PGRows {
        try withParameters(parameters) { (count, values, lengths, formats) throws(PGError) -> PGRows in
            if prepares, let name = try statementName(sql, parameterCount: count) {
                guard let result = PQexecPrepared(handle, name, count, values, lengths, formats, 0) else {
                    throw PGError(message: String(cString: PQerrorMessage(handle)))
                }
                defer { PQclear(result) }
                do throws(PGError) {
                    return try Self.read(result, connection: handle)
                } catch  where Self.isStalePreparation(error) {
                    // The statement is gone (a pooler or `DISCARD`) or its result changed shape (the
                    // table was altered): it did not run. Outside a transaction it runs unnamed now,
                    // and is prepared afresh later.
                    prepared[sql] = nil
                    if inTransaction { throw error }
                }
            }
            guard let result = PQexecParams(handle, sql, count, nil, values, lengths, formats, 0) else {
                throw PGError(message: String(cString: PQerrorMessage(handle)))
            }
            defer { PQclear(result) }
            return try Self.read(result, connection: handle)
        }
    }

    /// The name `sql` is prepared under: known, prepared now (the second time it is run), or nil
    /// to run it unnamed.
    private func statementName(_ sql: String, parameterCount: Int32) throws(PGError) -> String? {
        if let name = prepared[sql] { return name }
        guard prepared.count < Self.preparedLimit else { return nil }
        guard seenOnce.remove(sql) != nil else {
            if seenOnce.count >= Self.preparedLimit * 4 { seenOnce.removeAll(keepingCapacity: true) }
            seenOnce.insert(sql)
            return nil
        }
        let name = namePrefix + String(preparations)
        preparations += 1
        guard let result = PQprepare(handle, name, sql, parameterCount, nil) else {
            throw PGError(message: String(cString: PQerrorMessage(handle)))
        }
        defer { PQclear(result) }
        do throws(PGError) {
            _ = try Self.read(result, connection: handle)
        } catch {
            // Inside a transaction the failure aborted it, as running the statement would have;
            // outside one the statement runs unnamed and reports its own error, if any.
            if inTransaction { throw error }
            return nil
        }
        prepared[sql] = name
        return name
    }

    /// A prepared statement that no longer exists (26000) or whose result changed shape ("cached
    /// plan must not change result type", 0A000).
    static func isStalePreparation(_ error: PGError) -> Bool {
        error.sqlState == "26000" || (error.sqlState == "0A000" && error.message.contains("cached plan"))
    }

    /// Calls `body` with libpq's parameter arrays for `parameters`: text as C strings, bytes in
    /// binary format, NULL as a null pointer.
    private func withParameters<T>(
        _ parameters: [PGValue],
        _ body: (Int32, [UnsafePointer<CChar>?], [Int32], [Int32]) throws(PGError) -> T
    ) throws(PGError) -> T {
        var buffers: [UnsafeMutableRawPointer] = []
        buffers.reserveCapacity(parameters.count)
        defer { for buffer in buffers { buffer.deallocate() } }
        var values: [UnsafePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        values.reserveCapacity(parameters.count)
        lengths.reserveCapacity(parameters.count)
        formats.reserveCapacity(parameters.count)
        for parameter in parameters {
            switch parameter {
            case .null:
                values.append(nil)
                lengths.append(0)
                formats.append(0)
            case .text(let text):
                // A NUL-terminated copy, alive for the call.
                let utf8 = text.utf8
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: utf8.count + 1, alignment: 1)
                let bytes = buffer.assumingMemoryBound(to: UInt8.self)
                _ = UnsafeMutableBufferPointer(start: bytes, count: utf8.count).initialize(fromContentsOf: utf8)
                bytes[utf8.count] = 0
                buffers.append(buffer)
                values.append(UnsafePointer(buffer.assumingMemoryBound(to: CChar.self)))
                lengths.append(0)
                formats.append(0)
            case .bytes(let data):
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(data.count, 1), alignment: 1)
                data.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), count: data.count)
                buffers.append(buffer)
                values.append(UnsafePointer(buffer.assumingMemoryBound(to: CChar.self)))
                lengths.append(Int32(data.count))
                formats.append(1)
            }
        }
        return try body(Int32(parameters.count), values, lengths, formats)
    }

    static func read(_ result: OpaquePointer, connection: OpaquePointer) throws(PGError) -> PGRows {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            return PGRows(rows: [], affected: Int(String(cString: PQcmdTuples(result))) ?? 0)
        case PGRES_TUPLES_OK:
            let count = Int(PQntuples(result))
            let width = Int(PQnfields(result))
            var rows: [[String?]] = []
            rows.reserveCapacity(count)
            for row in 0..<Int32(count) {
                var values: [String?] = []
                values.reserveCapacity(width)
                for column in 0..<Int32(width) {
                    if PQgetisnull(result, row, column) == 1 {
                        values.append(nil)
                    } else {
                        values.append(String(cString: PQgetvalue(result, row, column)))
                    }
                }
                rows.append(values)
            }
            return PGRows(rows: rows, affected: count)
        default:
            func field(_ code: UInt8) -> String? {
                PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
            }
            let message =
                field(UInt8(ascii: "M"))
                ?? String(cString: PQerrorMessage(connection)).trimmingCharacters(
                    in: .whitespacesAndNewlines)
            throw PGError(sqlState: field(UInt8(ascii: "C")), message: message, constraint: field(UInt8(ascii: "n")))
        }
    }

    /// The socket, for waiting on notifications.
    var socket: Int32 { PQsocket(handle) }

    /// Reads what the server sent and returns the notifications received: (channel, payload, pid).
    func notifications() throws(PGError) -> [(channel: String, payload: String, pid: Int32)] {
        guard PQconsumeInput(handle) == 1 else {
            throw PGError(
                message: String(cString: PQerrorMessage(handle)).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        var received: [(String, String, Int32)] = []
        while let notify = PQnotifies(handle) {
            received.append(
                (String(cString: notify.pointee.relname), String(cString: notify.pointee.extra), notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return received
    }

    /// `bytea` in PostgreSQL's hex output form (`\x0102…`) as bytes.
    static func bytes(_ text: String) -> Data {
        var data = Data()
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x") else {
            return Data(text.utf8)
        }
        data.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: c - UInt8(ascii: "A") + 10
            }
        }
        while index + 1 < utf8.count {
            data.append(nibble(utf8[index]) << 4 | nibble(utf8[index + 1]))
            index += 2
        }
        return data
    }

    /// A connection string with its password left out, for logs and errors.
    static func redacted(_ conninfo: String) -> String {
        guard var components = URLComponents(string: conninfo), components.scheme?.hasPrefix("postgres") == true else {
            // Not a URL Foundation parses (a key=value string, or a URI listing several hosts).
            return conninfo.replacingOccurrences(
                of: #"password\s*=\s*[^\s&]+"#, with: "password=***", options: .regularExpression
            ).replacingOccurrences(of: #"(://[^:/@?]*:)[^@/?]*@"#, with: "$1***@", options: .regularExpression)
        }
        if components.password != nil { components.password = "***" }
        components.queryItems = components.queryItems?.map {
            $0.name == "password" ? URLQueryItem(name: "password", value: "***") : $0
        }
        return components.string ?? conninfo
    }
}

/// Lends libpq connections to one caller at a time; results are plain values that may cross
/// threads. A connection that failed at the connection level, or found its server a standby, is
/// closed, never returned, and with it every idle connection opened before (they lead to the same
/// server): the next checkout connects afresh, which with several hosts and
/// `target_session_attrs=read-write` finds the primary of the moment.
final class PGPool: @unchecked Sendable {
    // Safe to share: `idle`, `open` and `generation` are guarded by `condition`; `onInvalidate`
    // is set once, before the pool is shared.
    let conninfo: String
    /// The most connections open at once; a caller past it waits for one to come back.
    let limit: Int
    /// Whether the connections prepare the statements they run more than once (see
    /// ``PGConnection``).
    let prepares: Bool
    private let condition = NSCondition()
    private var idle: [PGConnection] = []
    private var open = 0
    private var generation = 0
    /// How long a caller waits for a connection when all are lent out.
    static let waitSeconds = 30.0

    init(conninfo: String, limit: Int = 32, prepares: Bool = false) {
        self.conninfo = conninfo
        self.limit = max(1, limit)
        self.prepares = prepares
    }

    /// Lends a connection: an idle one, a new one while fewer than ``limit`` are open, or the
    /// first one given back.
    func checkout() throws(PGError) -> PGConnection {
        let deadline = Date(timeIntervalSinceNow: Self.waitSeconds)
        while true {
            condition.lock()
            while idle.isEmpty && open >= limit {
                guard condition.wait(until: deadline) else {
                    condition.unlock()
                    throw PGError(
                        sqlState: "53300",
                        message: "all \(limit) PostgreSQL connections stayed busy for \(Int(Self.waitSeconds)) s")
                }
            }
            if let connection = idle.popLast() {
                condition.unlock()
                if connection.isOK { return connection }
                discard()
                continue
            }
            open += 1
            let current = generation
            condition.unlock()
            do {
                let connection = try PGConnection(conninfo, prepares: prepares)
                connection.generation = current
                return connection
            } catch {
                discard()
                throw error
            }
        }
    }

    /// Takes a lent connection back; a broken one, one left inside a transaction, or one opened
    /// before the pool was invalidated is closed.
    func checkin(_ connection: PGConnection) {
        guard connection.isOK, !connection.inTransaction else {
            discard()
            return
        }
        condition.lock()
        guard connection.generation == generation else {
            condition.unlock()
            discard()
            return
        }
        idle.append(connection)
        condition.signal()
        condition.unlock()
    }

    /// Takes back a lent connection that met `error`: closed, with every idle one, when the error
    /// says its server is gone or read-only; else returned as ``checkin(_:)`` does.
    func checkin(_ connection: PGConnection, after error: PGError) {
        guard error.mustReconnect else {
            if connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
            checkin(connection)
            return
        }
        invalidate()
        discard()
    }

    /// Closes every idle connection and marks the lent ones to be closed when they come back;
    /// then calls ``onInvalidate`` (the store's pipelined reader drops its connections too).
    func invalidate() {
        condition.lock()
        generation += 1
        open -= idle.count
        idle.removeAll()
        let hook = onInvalidate
        condition.broadcast()
        condition.unlock()
        hook?()
    }

    /// Called after ``invalidate()``; set once, before the pool is shared.
    var onInvalidate: (@Sendable () -> Void)?

    /// Counts a lent connection as closed.
    private func discard() {
        condition.lock()
        open -= 1
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` on a connection; a connection failure (or a read-only server) is retried once
    /// on a new connection.
    func with<T>(_ body: (PGConnection) throws(PGError) -> T) throws(PGError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            let connection = try checkout()
            do {
                let result = try body(connection)
                checkin(connection)
                return result
            } catch {
                checkin(connection, after: error)
                if error.mustReconnect && attempt < 2 { continue }
                throw error
            }
        }
    }

    func drain() {
        condition.lock()
        open -= idle.count
        idle.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}
