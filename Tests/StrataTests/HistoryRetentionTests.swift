import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// What history a store lets go (``HistoryRetention``): always its oldest part, by age and by a
/// cap on changes, pruned in batches, also by two servers at once over one PostgreSQL store.
@Suite struct HistoryRetentionTests {
    /// Five transactions in `Main` holding 3, 1, 1, 2 and 1 changes, books titled `prefix` and a number.
    static func fiveTransactions(_ coordinator: StoreCoordinator, prefix: String = "b") throws {
        var title = 0
        for size in [3, 1, 1, 2, 1] {
            var rows: [StoreRow] = []
            for _ in 0..<size {
                title += 1
                rows.append(
                    StoreRow(id: .temporary(entity: "Book"), attributes: ["title": .string("\(prefix)\(title)")]))
            }
            _ = try coordinator.save(SaveRequest(inserts: rows))
        }
    }

    /// Sets the times the history of `Main` says its transactions were written, as clocks that
    /// disagree would: 100, 300, 200, 400 and 500 seconds after 1970.
    static func skewTimes(_ kind: StoreUnderTest, _ folder: TemporaryDirectory) throws {
        let times: [Int64: Double] = [1: 100, 2: 300, 3: 200, 4: 400, 5: 500]
        switch kind {
        case .sqlite:
            let db = try SQLiteConnection(path: folder.file("main.sqlite").path)
            for (number, at) in times {
                try db.run("UPDATE _strata_history SET at = ? WHERE number = ?", [.real(at), .integer(number)])
            }
        case .postgresql:
            let schema = folder.postgreSQLSchema(name: "main")
            for (number, at) in times {
                try PostgreSQLTestServer.psql(
                    "UPDATE \(schema)._strata_history SET at = \(at) WHERE number = \(number)")
            }
        case .memory:
            Issue.record("the in-memory store's times cannot be set")
        }
    }

    @Test(arguments: StoreUnderTest.allCases)
    func aCapKeepsTheNewestChangesInWholeTransactions(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try HistoryTests.open(kind, folder)
        defer { HistoryTests.close(coordinator) }
        try Self.fiveTransactions(coordinator)
        let store = HistoryTests.main(coordinator)
        // Newest first: 1 (5th), 2 (4th), 1 (3rd), 1 (2nd), 3 (1st): 8 changes.
        let expected: [Int: Int64] = [100: 0, 8: 0, 7: 1, 5: 1, 4: 2, 3: 3, 2: 4, 1: 4, 0: 5]
        for (cap, bound) in expected {
            #expect(try store.expiredHistoryNumber(HistoryRetention(maxChanges: cap)) == bound, "cap \(cap)")
        }
        #expect(try store.expiredHistoryNumber(HistoryRetention()) == 0)
        #expect(try store.expiredHistoryNumber(HistoryRetention(writtenBefore: .distantPast)) == 0)
        #expect(try store.expiredHistoryNumber(HistoryRetention(writtenBefore: Date().addingTimeInterval(60))) == 5)

        // Pruned in batches, the oldest first; `proceed` stops it between batches.
        var calls = 0
        let first = try store.pruneHistory(HistoryRetention(maxChanges: 3), batch: 1) {
            calls += 1
            return calls == 1
        }
        #expect(first == 1 && calls == 2)
        #expect(try coordinator.history().map(\.number) == [2, 3, 4, 5])
        calls = 0
        let rest = try store.pruneHistory(HistoryRetention(maxChanges: 3), batch: 2) {
            calls += 1
            return true
        }
        #expect(rest == 2 && calls == 1)
        #expect(try coordinator.history().map(\.number) == [4, 5])
        #expect(try coordinator.oldestHistoryToken().number(for: store.identifier) == 3)
        // Nothing more expires; the next transaction is number 6.
        #expect(try store.pruneHistory(HistoryRetention(maxChanges: 3)) == 0)
        try Self.fiveTransactions(coordinator, prefix: "c")
        #expect(try coordinator.history().first?.number == 4)
        #expect(try store.pruneHistory(HistoryRetention(maxChanges: 1), batch: 3) == 6)
        #expect(try coordinator.history().map(\.number) == [10])
        #expect(try coordinator.currentHistoryToken().number(for: store.identifier) == 10)
    }

    @Test(arguments: StoreUnderTest.allCases.filter { $0 != .memory })
    func byAgeOnlyTheOldestGoEvenWhenTimesDisagree(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        var coordinator = try HistoryTests.open(kind, folder)
        try Self.fiveTransactions(coordinator)
        HistoryTests.close(coordinator)
        try Self.skewTimes(kind, folder)
        coordinator = try HistoryTests.open(kind, folder)
        defer { HistoryTests.close(coordinator) }
        let store = HistoryTests.main(coordinator)
        func bound(_ seconds: Double, cap: Int? = nil) throws -> Int64 {
            try store.expiredHistoryNumber(
                HistoryRetention(writtenBefore: Date(timeIntervalSince1970: seconds), maxChanges: cap))
        }
        // Transaction 3 was written "before" 250, but 2, kept, comes before it: 3 stays with it.
        #expect(try bound(50) == 0)
        #expect(try bound(250) == 1)
        #expect(try bound(350) == 3)
        #expect(try bound(450) == 4)
        #expect(try bound(1000) == 5)
        // Age and cap together: whichever lets more go.
        #expect(try bound(250, cap: 3) == 3)
        #expect(try bound(450, cap: 5) == 4)

        #expect(try store.pruneHistory(HistoryRetention(writtenBefore: Date(timeIntervalSince1970: 250))) == 1)
        #expect(try coordinator.history().map(\.number) == [2, 3, 4, 5])
        #expect(try coordinator.oldestHistoryToken().number(for: store.identifier) == 1)
    }

    @Test(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
    func twoProcessesPruneOneStoreTogetherWhileAThirdWrites() throws {
        let folder = TemporaryDirectory()
        let url = try folder.postgreSQLURL(name: "main")
        let coordinators = try (0..<3).map { _ in
            let coordinator = StoreCoordinator(model: HistoryTests.model)
            try coordinator.addStore(
                type: .postgresql, configuration: "Main", url: url, options: HistoryTests.recording)
            return coordinator
        }
        defer { coordinators.forEach(HistoryTests.close) }
        let writer = coordinators[2]
        for index in 0..<300 {
            _ = try writer.save(
                SaveRequest(inserts: [
                    StoreRow(id: .temporary(entity: "Book"), attributes: ["title": .string("w\(index)")])
                ]))
        }
        // Both prune to the newest 10 changes in batches of 7 while more are written.
        let pruned = Locked<[Int]>([])
        let failures = Locked<[String]>([])
        onThreads(3) { index in
            if index == 2 {
                for more in 0..<50 {
                    do {
                        _ = try writer.save(
                            SaveRequest(inserts: [
                                StoreRow(id: .temporary(entity: "Book"), attributes: ["title": .string("m\(more)")])
                            ]))
                    } catch {
                        failures.withLock { $0.append("write: \(error)") }
                    }
                }
                return
            }
            let store = HistoryTests.main(coordinators[index])
            for _ in 0..<20 {
                do {
                    let count = try store.pruneHistory(HistoryRetention(maxChanges: 10), batch: 7)
                    pruned.withLock { $0.append(count) }
                } catch {
                    failures.withLock { $0.append("prune: \(error)") }
                }
            }
        }
        #expect(failures.current.isEmpty, "\(failures.current)")
        let store = HistoryTests.main(writer)
        let last = try store.lastHistoryNumber()
        #expect(last == 350)
        // Whatever either deleted was deleted once, and what is kept has no hole.
        let kept = try writer.history().map(\.number)
        #expect(kept == Array((last - Int64(kept.count) + 1)...last))
        #expect(pruned.current.reduce(0, +) == 350 - kept.count)
        // What expired after the last round goes now: the newest 10 stay.
        #expect(try kept.count - store.pruneHistory(HistoryRetention(maxChanges: 10)) == 10)
        #expect(try writer.history().map(\.number) == Array((last - 9)...last))
    }
}
