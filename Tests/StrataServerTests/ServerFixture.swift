import Foundation
import StrataServer
import StrataTestSupport

@testable import Strata

/// Every row of every table of an SQLite file, read through a separate connection.
func sqliteDump(_ url: URL) throws -> [String] {
    let db = try SQLiteConnection(path: url.path, readOnly: true)
    // A full-text table's rows are its entity table's (its own data is in its shadow tables).
    let tables = try db.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
    ) { $0.text(0) }
    var lines: [String] = []
    for table in tables {
        lines += try db.query("SELECT * FROM \(SQLiteSchema.quote(table)) ORDER BY 1, 2") { statement in
            "\(table): "
                + (0..<sqlite3ColumnCount(statement)).map { statement.isNull($0) ? "NULL" : statement.text($0) }.joined(
                    separator: "|")
        }
    }
    return lines
}

extension ServerFixture {
    /// Every table and row of both store files, read with a separate SQLite connection.
    func dump() throws -> [String] {
        try sqliteDump(catalogURL) + sqliteDump(activityURL)
    }

    /// ``dump()`` without the history tables, their `AUTOINCREMENT` counter and the key floors
    /// deletes raise (`SQLiteStore.keyFloorKey(_:)`): the objects alone.
    func dataDump() throws -> [String] {
        try dump().filter {
            !$0.hasPrefix("_strata_history") && !$0.hasPrefix("sqlite_sequence: _strata_history")
                && !$0.hasPrefix("\(SQLiteStore.metadataTable): \(SQLiteStore.keyFloorKey(""))")
        }
    }
}
