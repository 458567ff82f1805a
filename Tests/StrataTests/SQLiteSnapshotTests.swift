import Foundation
import StrataTestSupport
import Synchronization
import Testing

@testable import Strata

/// SQLite readers keep their snapshot from one read to the next: what they may and may not miss.
@Suite struct SQLiteSnapshotTests {
    func open(_ url: URL) throws -> SQLiteStore {
        try SQLiteStore(model: conformanceModel, configuration: nil, url: url)
    }

    /// Runs `body` with a store in a fresh folder and its file, then closes the store.
    func withStore(_ body: (URL, SQLiteStore) throws -> Void) throws {
        let folder = TemporaryDirectory()
        let url = folder.file("s.sqlite")
        let store = try open(url)
        defer { store.close() }
        try withExtendedLifetime(folder) { try body(url, store) }
    }

    /// Writers update one book over and over while readers keep reading it on every reader of the
    /// pool: each writer, right after its save returns, reads the book and must see its own
    /// version or a later one, and no reader ever sees versions go backwards.
    @Test func aReadAfterASaveReturnsSeesItUnderLoad() throws {
        try withStore { _, store in
            let book = try newRow(store, "Book", ["title": .string("b")])
            _ = try store.save(StoreChanges(inserts: [book]))
            let id = book.id
            let stop = Atomic<Bool>(false)
            let failures = Locked<[String]>([])
            let readers = DispatchGroup()
            for _ in 0..<4 {
                DispatchQueue.global().async(group: readers) {
                    var last: Int64 = 0
                    while !stop.load(ordering: .relaxed) {
                        guard let version = (try? store.row(for: id))??.version else {
                            failures.withLock { $0.append("a reader found no book") }
                            return
                        }
                        if version < last {
                            failures.withLock { $0.append("a reader went back from \(last) to \(version)") }
                        }
                        last = version
                    }
                }
            }
            let saves = 300
            DispatchQueue.concurrentPerform(iterations: 3) { writer in
                for index in 0..<saves / 3 {
                    do {
                        let current = try #require(try store.row(for: id))
                        let versions = try store.save(
                            StoreChanges(updates: [
                                StoreUpdate(
                                    id: id, expectedVersion: current.version,
                                    attributes: ["title": .string("w\(writer)-\(index)")])
                            ]))
                        let written = try #require(versions[id])
                        let read = try #require(try store.rowWithToMany(for: id, model: conformanceModel))
                        if read.version < written {
                            failures.withLock { $0.append("wrote version \(written), then read \(read.version)") }
                        }
                    } catch let error as StoreError where error.code == .conflict {
                        continue  // another writer came first: optimistic locking, not a stale read
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            stop.store(true, ordering: .relaxed)
            readers.wait()
            #expect(failures.withLock { $0 } == [])
            #expect(try store.row(for: id)!.version > 1)
        }
    }

    /// Two stores open on one file in one process: a save through one is seen at once by a reader
    /// of the other that already held a snapshot.
    @Test func aWriteThroughAnotherStoreOnTheFileIsSeenAtOnce() throws {
        let folder = TemporaryDirectory()
        let url = folder.url.appendingPathComponent("s.sqlite")
        let first = try open(url)
        defer { first.close() }
        let second = try open(url)
        defer { second.close() }
        let book = try newRow(first, "Book", ["title": .string("one")])
        _ = try first.save(StoreChanges(inserts: [book]))
        #expect(try second.row(for: book.id)?.attributes["title"] == .string("one"))
        _ = try first.save(
            StoreChanges(updates: [StoreUpdate(id: book.id, expectedVersion: 1, attributes: ["title": .string("two")])])
        )
        #expect(try second.row(for: book.id)?.attributes["title"] == .string("two"))
    }

    /// A write by a connection outside every store (another process, say) is seen once the kept
    /// snapshot is older than ``SQLiteStore/snapshotLifetime``.
    @Test func aWriteFromOutsideIsSeenWithinTheSnapshotLifetime() throws {
        try withStore { url, store in
            let book = try newRow(store, "Book", ["title": .string("one")])
            _ = try store.save(StoreChanges(inserts: [book]))
            #expect(try store.row(for: book.id)?.attributes["title"] == .string("one"))
            let outside = try SQLiteConnection(path: url.path, readOnly: false)
            try outside.run(
                "UPDATE \"Book\" SET \"title\" = 'two', \"_version\" = 2 WHERE \"_pk\" = ?",
                [.integer(book.id.primaryKey!)]
            )
            #expect(try eventually { try store.row(for: book.id)?.attributes["title"] == .string("two") })
        }
    }

    /// Readers idle in the pool end their snapshots when the store writes, so a checkpoint can
    /// empty the WAL while they sit there.
    @Test func idleReadersDoNotHoldTheWALBack() throws {
        try withStore { url, store in
            var rows: [StoreRow] = []
            for index in 0..<200 { rows.append(try newRow(store, "Book", ["title": .string("b\(index)")])) }
            _ = try store.save(StoreChanges(inserts: rows))
            // Two readers left in the pool, each in a snapshot.
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                _ = try? store.fetch(FetchRequest(entityName: "Book"))
            }
            _ = try store.save(
                StoreChanges(updates: [
                    StoreUpdate(id: rows[0].id, expectedVersion: 1, attributes: ["year": .integer(1)])
                ]))
            let outside = try SQLiteConnection(path: url.path, readOnly: false)
            // No waiting for readers (the store's sweeper would end idle snapshots within a second).
            try outside.execute("PRAGMA busy_timeout = 0")
            let result = try outside.query("PRAGMA wal_checkpoint(TRUNCATE)") {
                [$0.int64(0), $0.int64(1), $0.int64(2)]
            }
            // busy = 0: no reader kept the checkpoint from finishing.
            #expect(result.first?[0] == 0)
            #expect(try store.row(for: rows[0].id)?.attributes["year"] == .integer(1))
        }
    }
}
