import Foundation
import StrataServer

@testable import Strata

/// A fresh temporary folder, removed when released.
final class TemporaryFolder: Sendable {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-server-tests-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The real server, in process, on a free loopback port, serving the example model from SQLite
/// files in a temporary folder.
final class ServerFixture: Sendable {
    let folder = TemporaryFolder()
    let server: StrataServerInstance
    let client: TestClient
    let logLines = Locked<[String]>([])

    init(options modify: (inout ServerOptions) -> Void = { _ in }) throws {
        var options = ServerOptions()
        options.port = 0
        options.dataDirectory = folder.url.path
        options.durability = .normal
        modify(&options)
        let lines = logLines
        server = StrataServerInstance(
            model: try ObjectModel.example, options: options, log: { line in lines.withLock { $0.append(line) } })
        try server.start()
        client = TestClient(port: server.port)
    }

    deinit { server.stop() }

    var catalogURL: URL { folder.file("catalog.sqlite") }
    var activityURL: URL { folder.file("activity.sqlite") }

    /// Every table and row of both store files, read with a separate SQLite connection.
    func dump() throws -> [String] {
        try sqliteDump(catalogURL) + sqliteDump(activityURL)
    }
}

/// Every row of every table of an SQLite file, read through a separate connection.
func sqliteDump(_ url: URL) throws -> [String] {
    let db = try SQLiteConnection(path: url.path, readOnly: true)
    let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") { $0.text(0) }
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
