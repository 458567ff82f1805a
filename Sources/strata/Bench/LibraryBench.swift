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

    func run(into table: inout BenchTable) throws {
        let model = try ObjectModel.example
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(
            type: .sqlite, configuration: "Catalog", url: folder.appendingPathComponent("library.sqlite"))
        let context = ObjectContext(coordinator: coordinator)
        let insertSeconds = try Self.seconds {
            for index in 0..<objects {
                try context.insert(
                    "Book",
                    values: [
                        "title": .string("Book \(index)"), "year": .integer(Int64(1900 + index % 120)),
                        "rating": .double(Double(index % 50) / 10),
                    ])
            }
            try context.save()
        }
        let raw = try RawSQLite(path: folder.appendingPathComponent("raw.sqlite").path)
        let rawInsertSeconds = try Self.seconds { try raw.insertBooks(objects) }
        table.rows.append(
            BenchTable.Row(
                scenario: "library insert + save", connections: "-", throughput: Double(objects) / insertSeconds,
                unit: "objects/s", p50: "", p99: "", baseline: "raw prepared INSERTs, one transaction",
                baselineValue: Double(objects) / rawInsertSeconds,
                target: (insertSeconds / rawInsertSeconds, nil, 3)))

        let request = FetchRequest(
            entityName: "Book", predicate: try FetchPredicate(format: "year >= 1900"),
            sortDescriptors: [SortKey("title")])
        let reader = ObjectContext(coordinator: coordinator)
        var fetched = 0
        let fetchSeconds = try Self.seconds {
            let results = try reader.fetch(request)
            fetched = results.filter { $0.string("title") != nil }.count
        }
        var rawFetched = 0
        let rawFetchSeconds = try Self.seconds { rawFetched = try raw.fetchBooks() }
        table.rows.append(
            BenchTable.Row(
                scenario: "library fetch (predicate + sort)", connections: "-",
                throughput: Double(objects) / fetchSeconds,
                unit: "objects/s", p50: "", p99: "", baseline: "raw SELECT … WHERE … ORDER BY",
                baselineValue: Double(objects) / rawFetchSeconds, target: (fetchSeconds / rawFetchSeconds, nil, 3)))
        if fetched != objects || rawFetched != objects {
            table.notes.append(
                "warning: fetched \(fetched) objects through the context and \(rawFetched) raw, expected \(objects)")
        }
        table.notes.append(
            String(
                format: "library: insert %.3f s vs raw %.3f s; fetch %.3f s vs raw %.3f s (%d objects)", insertSeconds,
                rawInsertSeconds, fetchSeconds, rawFetchSeconds, objects))
    }
}

/// The baseline: the same table written and read with plain SQLite calls.
final class RawSQLite {
    let db: OpaquePointer

    init(path: String) throws {
        var handle: OpaquePointer?
        guard sqlite3_open(path, &handle) == SQLITE_OK, let handle else { throw BenchError("cannot open \(path)") }
        db = handle
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=FULL")
        try execute(
            "CREATE TABLE Book (_pk INTEGER PRIMARY KEY, _entity TEXT NOT NULL, _version INTEGER NOT NULL, title TEXT, year INTEGER, rating REAL)"
        )
    }

    deinit { sqlite3_close(db) }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchError(String(cString: sqlite3_errmsg(db)))
        }
    }

    func insertBooks(_ count: Int) throws {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(
            db, "INSERT INTO Book (_pk, _entity, _version, title, year, rating) VALUES (?, 'Book', 1, ?, ?, ?)", -1,
            &statement, nil)
        defer { sqlite3_finalize(statement) }
        try execute("BEGIN")
        for index in 0..<count {
            sqlite3_bind_int64(statement, 1, Int64(index + 1))
            sqlite3_bind_text(statement, 2, "Book \(index)", -1, csqlite_transient())
            sqlite3_bind_int64(statement, 3, Int64(1900 + index % 120))
            sqlite3_bind_double(statement, 4, Double(index % 50) / 10)
            guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(statement)
        }
        try execute("COMMIT")
    }

    /// Reads every row into Swift values, as a client of SQLite would.
    func fetchBooks() throws -> Int {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(
            db, "SELECT _pk, _entity, _version, title, year, rating FROM Book WHERE year >= ? ORDER BY title", -1,
            &statement, nil)
        defer { sqlite3_finalize(statement) }
        sqlite3_bind_int64(statement, 1, 1900)
        var rows: [(Int64, String, Int64, String, Int64, Double)] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            rows.append(
                (
                    sqlite3_column_int64(statement, 0), String(cString: sqlite3_column_text(statement, 1)),
                    sqlite3_column_int64(statement, 2),
                    String(cString: sqlite3_column_text(statement, 3)), sqlite3_column_int64(statement, 4),
                    sqlite3_column_double(statement, 5)
                ))
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
