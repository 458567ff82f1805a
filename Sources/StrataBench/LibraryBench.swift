import CSQLite
import Foundation
import Strata

/// Library scenarios: inserting and fetching N objects through a context, against the same rows
/// written and read with raw prepared statements in one transaction.
struct LibraryBench {
    let folder: URL
    let objects: Int

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// Rounds of each measurement; the table keeps each side's best, alternating Strata and raw
    /// SQLite so both see the same machine (a shared machine's noise only ever adds time).
    static let rounds = 3

    /// The most either scenario may take, as a multiple of raw SQLite's time.
    static let targetRatio = 2.0

    func run(into table: inout BenchTable) throws {
        let model = try ObjectModel.example
        var insertSeconds = Double.infinity
        var rawInsertSeconds = Double.infinity
        var coordinator: StoreCoordinator?
        var raw: RawSQLite?
        for round in 1...Self.rounds {
            let file = folder.appendingPathComponent("library-\(round).sqlite")
            let stack = StoreCoordinator(model: model)
            try stack.addStore(type: .sqlite, configuration: "Catalog", url: file)
            let context = ObjectContext(coordinator: stack)
            insertSeconds = min(
                insertSeconds,
                try Self.seconds {
                    for index in 0..<objects {
                        try context.insert(
                            "Book",
                            values: [
                                "title": .string("Book \(index)"), "year": .integer(Int64(1900 + index % 120)),
                                "rating": .double(Double(index % 50) / 10),
                            ])
                    }
                    try context.save()
                })
            coordinator = stack
            // The baseline writes the same rows into the same table: Strata's own DDL for Book (its
            // indexes included) and every column, unset ones NULL, as a hand-written client would.
            let baseline = try RawSQLite(
                path: folder.appendingPathComponent("raw-\(round).sqlite").path,
                schema: try RawSQLite.schema(of: "Book", in: file.path))
            rawInsertSeconds = min(rawInsertSeconds, try Self.seconds { try baseline.insertBooks(objects) })
            raw = baseline
        }
        guard let coordinator, let raw else { return }
        table.rows.append(
            BenchTable.Row(
                scenario: "library insert + save", connections: "-", throughput: Double(objects) / insertSeconds,
                unit: "objects/s", p50: "", p99: "", baseline: "raw INSERTs, same table, one transaction",
                baselineValue: Double(objects) / rawInsertSeconds,
                target: (insertSeconds / rawInsertSeconds, nil, Self.targetRatio)))

        let request = FetchRequest(
            entityName: "Book", predicate: try FetchPredicate(format: "year >= 1900"),
            sortDescriptors: [SortKey("title")])
        var fetched = 0
        var rawFetched = 0
        var fetchSeconds = Double.infinity
        var rawFetchSeconds = Double.infinity
        for _ in 1...Self.rounds {
            // A new context each round: every object is registered afresh, as in a first fetch.
            let reader = ObjectContext(coordinator: coordinator)
            fetchSeconds = min(
                fetchSeconds,
                try Self.seconds {
                    let results = try reader.fetch(request)
                    fetched = results.filter { $0.string("title") != nil }.count
                })
            rawFetchSeconds = min(rawFetchSeconds, try Self.seconds { rawFetched = try raw.fetchBooks() })
        }
        table.rows.append(
            BenchTable.Row(
                scenario: "library fetch (predicate + sort)", connections: "-",
                throughput: Double(objects) / fetchSeconds,
                unit: "objects/s", p50: "", p99: "", baseline: "raw SELECT, same table and query",
                baselineValue: Double(objects) / rawFetchSeconds,
                target: (fetchSeconds / rawFetchSeconds, nil, Self.targetRatio)))
        if fetched != objects || rawFetched != objects {
            table.notes.append(
                "warning: fetched \(fetched) objects through the context and \(rawFetched) raw, expected \(objects)")
        }
        table.notes.append(
            String(
                format:
                    "library (best of %d rounds): insert %.3f s vs raw %.3f s; fetch %.3f s vs raw %.3f s (%d objects)",
                Self.rounds, insertSeconds, rawInsertSeconds, fetchSeconds, rawFetchSeconds, objects))
    }
}

/// The baseline: the same table written and read with plain SQLite calls.
final class RawSQLite {
    let db: OpaquePointer
    /// The Book table's columns, in table order.
    let columns: [String]

    /// The simple table the commit-rate baseline writes to.
    static let plainSchema = [
        "CREATE TABLE Book (_pk INTEGER PRIMARY KEY, _entity TEXT NOT NULL, _version INTEGER NOT NULL, title TEXT, year INTEGER, rating REAL)"
    ]

    init(path: String, schema: [String] = plainSchema) throws {
        var handle: OpaquePointer?
        guard sqlite3_open(path, &handle) == SQLITE_OK, let handle else { throw BenchError("cannot open \(path)") }
        db = handle
        var names: [String] = []
        func run(_ sql: String) throws {
            guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
                throw BenchError(String(cString: sqlite3_errmsg(handle)))
            }
        }
        try run("PRAGMA journal_mode=WAL")
        try run("PRAGMA synchronous=FULL")
        for statement in schema { try run(statement) }
        var info: OpaquePointer?
        sqlite3_prepare_v2(handle, "PRAGMA table_info(Book)", -1, &info, nil)
        while sqlite3_step(info) == SQLITE_ROW { names.append(String(cString: sqlite3_column_text(info, 1))) }
        sqlite3_finalize(info)
        columns = names
    }

    deinit { sqlite3_close(db) }

    /// The statements that created `table` and its indexes in the SQLite file at `path`.
    static func schema(of table: String, in path: String) throws -> [String] {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let handle else {
            throw BenchError("cannot open \(path)")
        }
        defer { sqlite3_close(handle) }
        var statement: OpaquePointer?
        // The table, then its full-text index when it has one (FTS5 makes its shadow tables
        // itself), then indexes, then the triggers that keep the full-text index.
        sqlite3_prepare_v2(
            handle,
            """
            SELECT sql FROM sqlite_master WHERE tbl_name IN (?1, ?2) AND sql IS NOT NULL
            ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, tbl_name != ?1, rowid
            """, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_text(statement, 1, table, -1, csqlite_transient())
        sqlite3_bind_text(statement, 2, "_strata_fts_" + table, -1, csqlite_transient())
        var statements: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            statements.append(String(cString: sqlite3_column_text(statement, 0)))
        }
        return statements
    }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchError(String(cString: sqlite3_errmsg(db)))
        }
    }

    /// Inserts `count` books, every column bound (NULL where the scenario sets nothing), in one
    /// transaction with one prepared statement.
    func insertBooks(_ count: Int) throws {
        var statement: OpaquePointer?
        let sql =
            "INSERT INTO Book (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw BenchError(String(cString: sqlite3_errmsg(db)))
        }
        defer { sqlite3_finalize(statement) }
        func index(_ name: String) -> Int32 { Int32((columns.firstIndex(of: name) ?? -1) + 1) }
        let (pk, entity, version, title, year, rating) = (
            index("_pk"), index("_entity"), index("_version"), index("title"), index("year"), index("rating")
        )
        try execute("BEGIN")
        for row in 0..<count {
            for column in 1...Int32(columns.count) { sqlite3_bind_null(statement, column) }
            sqlite3_bind_int64(statement, pk, Int64(row + 1))
            sqlite3_bind_text(statement, entity, "Book", -1, csqlite_transient())
            sqlite3_bind_int64(statement, version, 1)
            sqlite3_bind_text(statement, title, "Book \(row)", -1, csqlite_transient())
            sqlite3_bind_int64(statement, year, Int64(1900 + row % 120))
            sqlite3_bind_double(statement, rating, Double(row % 50) / 10)
            guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(statement)
        }
        try execute("COMMIT")
    }

    /// A column value as a client reads it.
    enum Value {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
        case blob([UInt8])
    }

    /// Reads every column of every matching row into Swift values, as a client of SQLite would.
    func fetchBooks() throws -> Int {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(
            db, "SELECT \(columns.joined(separator: ", ")) FROM Book WHERE year >= ? ORDER BY title", -1, &statement,
            nil
        )
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_int64(statement, 1, 1900)
        var rows: [[Value]] = []
        let count = Int32(columns.count)
        while sqlite3_step(statement) == SQLITE_ROW {
            var row: [Value] = []
            row.reserveCapacity(Int(count))
            for column in 0..<count {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let bytes = sqlite3_column_blob(statement, column)?.assumingMemoryBound(to: UInt8.self)
                    row.append(
                        .blob(
                            Array(
                                UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column)))))
                    )
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
        return rows.count
    }

    /// Single-row commits per second for `seconds`, each its own transaction.
    static func singleRowCommits(path: String, seconds: Double, synchronous: String) throws -> Double {
        let raw = try RawSQLite(path: path)
        try raw.execute("PRAGMA synchronous=\(synchronous)")
        var statement: OpaquePointer?
        sqlite3_prepare_v2(
            raw.db, "INSERT INTO Book (_entity, _version, title, year, rating) VALUES ('Book', 1, 'x', 2000, 1.0)", -1,
            &statement, nil)
        defer { sqlite3_finalize(statement) }
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        var count = 0
        let start = DispatchTime.now().uptimeNanoseconds
        while DispatchTime.now().uptimeNanoseconds < end {
            sqlite3_step(statement)
            sqlite3_reset(statement)
            count += 1
        }
        return Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
