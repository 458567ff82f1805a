import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Statements prepared per connection, the `prepare=false` opt-out, and the pipelined reader.
@Suite(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct PostgreSQLPreparedTests {
    /// A table of its own with one row, and the connection URI of the test database.
    static func table() throws -> (uri: String, table: String) {
        let uri = try PostgreSQLTestServer.databaseURI()
        let table = "prep_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        let c = try PGConnection(uri)
        try c.execute("CREATE TABLE \(table) (id bigint PRIMARY KEY, n integer)")
        try c.execute("INSERT INTO \(table) VALUES (1, 10), (2, 20)")
        return (uri, table)
    }

    static func preparedCount(_ c: PGConnection) throws -> Int {
        Int(try c.execute("SELECT count(*) FROM pg_prepared_statements").rows.first?[0] ?? "") ?? -1
    }

    @Test func aStatementRunTwiceIsPreparedAndAnsweredAlike() throws {
        let (uri, table) = try Self.table()
        let c = try PGConnection(uri, prepares: true)
        let sql = "SELECT n FROM \(table) WHERE id = $1"
        var answers: [String?] = []
        for key in [1, 2, 1, 2] { answers.append(try c.execute(sql, [.integer(Int64(key))]).rows.first?[0] ?? nil) }
        #expect(answers == ["10", "20", "10", "20"])
        // Seen once: unnamed; the second time on: prepared, once.
        #expect(try Self.preparedCount(c) == 1)
        let plain = try PGConnection(uri)
        for key in [1, 2, 1] { _ = try plain.execute(sql, [.integer(Int64(key))]) }
        #expect(try Self.preparedCount(plain) == 0)
    }

    @Test func aStatementWhoseResultChangedShapeRunsAgainUnprepared() throws {
        let (uri, table) = try Self.table()
        let c = try PGConnection(uri, prepares: true)
        let sql = "SELECT n FROM \(table) WHERE id = $1"
        for _ in 0..<3 { _ = try c.execute(sql, [.integer(1)]) }
        // Another connection changes the column's type: the prepared plan's result changed shape.
        try PGConnection(uri).execute("ALTER TABLE \(table) ALTER COLUMN n TYPE text")
        #expect(try c.execute(sql, [.integer(1)]).rows == [["10"]])
        try PGConnection(uri).execute("ALTER TABLE \(table) ALTER COLUMN n TYPE bigint USING n::bigint")
        // Inside a transaction the failure aborted it, as the statement's own failure would.
        _ = try c.execute(sql, [.integer(1)])
        _ = try c.execute(sql, [.integer(1)])
        try PGConnection(uri).execute("ALTER TABLE \(table) ALTER COLUMN n TYPE text")
        try c.execute("BEGIN")
        #expect(throws: PGError.self) { try c.execute(sql, [.integer(1)]) }
        try c.execute("ROLLBACK")
        #expect(try c.execute(sql, [.integer(2)]).rows == [["20"]])
    }

    @Test func theURIsPrepareParameterTurnsPreparationOffAndIsNotLibpqs() throws {
        let url = try PostgreSQLTestServer.storeURL()
        #expect(PostgreSQLStore.preparesStatements(url))
        let off = URL(string: url.absoluteString + "&prepare=false")!
        #expect(!PostgreSQLStore.preparesStatements(off))
        #expect(!PostgreSQLStore.connection(from: off, configuration: nil).conninfo.contains("prepare"))
        let store = try PostgreSQLStore(model: try ObjectModel.example, configuration: nil, url: off)
        defer { store.close() }
        #expect(!store.pool.prepares)
        let book = try store.newObjectIDs(entity: "Book", count: 1)[0]
        try store.save(
            StoreChanges(inserts: [
                StoreRow(id: book, attributes: ["title": .string("Unprepared"), "format": .string("paperback")])
            ]))
        for _ in 0..<3 { #expect(try store.row(for: book)?.attributes["title"] == .string("Unprepared")) }
    }

    @Test func thePipelinedReaderAnswersManyReadsAndSurvivesItsConnectionsDying() throws {
        let (uri, table) = try Self.table()
        let reader = PGPipelineReader(conninfo: uri, width: 2, prepares: true)
        defer { reader.stop() }
        let sql = "SELECT n FROM \(table) WHERE id = $1"
        func readAll(_ keys: [Int64]) -> [Result<PGRows, PGError>] {
            let results = Locked<[Int: Result<PGRows, PGError>]>([:])
            let group = DispatchGroup()
            for (index, key) in keys.enumerated() {
                group.enter()
                reader.read(sql, [.integer(key)]) { result in
                    results.withLock { $0[index] = result }
                    group.leave()
                }
            }
            group.wait()
            return results.withLock { all in keys.indices.map { all[$0]! } }
        }
        // Until its first connection is open, reads fail at once (their callers read the blocking
        // way); then every read is answered.
        func recovers() -> Bool { eventually { readAll([1, 2]).allSatisfy { (try? $0.get()) != nil } } }
        #expect(recovers())
        let keys: [Int64] = (0..<500).map { Int64($0 % 3) }
        let answers = readAll(keys).map { try? $0.get().rows.first?[0] ?? nil }
        #expect(answers == keys.map { $0 == 0 ? nil : String($0 * 10) })
        // Its connections killed: the reads in flight fail, and later reads run on new connections.
        try PGConnection(uri).execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1", [.text(sql)])
        #expect(recovers())
        #expect(readAll([1, 2]).map { try? $0.get().rows.first?[0] ?? nil } == ["10", "20"])
        // A statement that fails fails alone.
        let results = Locked<[String: Bool]>([:])
        let group = DispatchGroup()
        let broken = "SELECT n FROM no_such_table WHERE id = $1"
        for statement in [broken, sql] {
            group.enter()
            reader.read(statement, [.integer(1)]) { result in
                results.withLock { $0[statement] = (try? result.get()) != nil }
                group.leave()
            }
        }
        group.wait()
        #expect(results.current == [broken: false, sql: true])
        reader.stop()
        let stopped = Locked<Bool?>(nil)
        reader.read(sql, [.integer(1)]) { result in stopped.withLock { $0 = (try? result.get()) == nil } }
        #expect(stopped.current == true)
    }
}
