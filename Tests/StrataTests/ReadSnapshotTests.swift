import Foundation
import StrataTestSupport
import Synchronization
import Testing

@testable import Strata

/// ``StoreCoordinator/withReadSnapshot(_:)``: one snapshot across every store of a coordinator,
/// with the history token of exactly what it holds, while saves go on.
@Suite struct ReadSnapshotTests {
    static func count(_ coordinator: StoreCoordinator, _ entity: String) throws -> Int {
        try coordinator.count(FetchRequest(entityName: entity))
    }

    /// Inserts one book and one visit in one save (across both stores).
    static func saveAcross(_ coordinator: StoreCoordinator, _ index: Int) throws {
        let context = ObjectContext(coordinator: coordinator)
        try context.insert("Book", values: ["title": .string("Book \(index)"), "year": .integer(Int64(index))])
        try context.insert("Visit", values: ["path": .string("/books/\(index)")])
        try context.save()
    }

    @Test(arguments: StoreUnderTest.allCases)
    func aSnapshotHoldsTheStateOfItsTokenWhileSavesGoOn(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try HistoryTests.open(kind, folder)
        defer { HistoryTests.close(coordinator) }
        try Self.saveAcross(coordinator, 1)
        let before = try coordinator.currentHistoryToken()
        let seen = try coordinator.withReadSnapshot { (token) throws(StoreError) -> (HistoryToken, Int, Int) in
            do {
                try Self.saveAcross(coordinator, 2)
                return (token, try Self.count(coordinator, "Book"), try Self.count(coordinator, "Visit"))
            } catch {
                throw StoreError(.io, "\(error)")
            }
        }
        #expect(seen.0 == before)
        #expect(seen.1 == 1 && seen.2 == 1)
        #expect(try Self.count(coordinator, "Book") == 2)
        let later = try coordinator.history(after: seen.0)
        #expect(later.flatMap(\.changes).map(\.kind) == [.insert, .insert])
        #expect(Set(later.map(\.storeIdentifier)) == Set(coordinator.stores.map(\.identifier)))
    }

    /// Saves across both stores race with snapshots: every snapshot holds as many books as
    /// visits (a snapshot begun between the two stores' commits would hold one more of either),
    /// and its token names exactly the saves it holds.
    @Test(arguments: [StoreUnderTest.sqlite, .memory])
    func aSnapshotHoldsAllOfASaveAcrossStoresOrNone(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try HistoryTests.open(
            kind, folder, options: StoreOptions(durability: .normal, recordsHistory: true))
        defer { HistoryTests.close(coordinator) }
        let done = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        onThreads(2) { thread in
            if thread == 0 {
                defer { done.store(true, ordering: .releasing) }
                for index in 0..<300 {
                    do {
                        try Self.saveAcross(coordinator, index)
                    } catch {
                        failures.withLock { $0.append("save \(index): \(error)") }
                        return
                    }
                }
                return
            }
            while !done.load(ordering: .acquiring) {
                do {
                    let (books, visits, transactions) = try coordinator.withReadSnapshot {
                        (token) throws(StoreError) -> (Int, Int, Int) in
                        let books = try coordinator.count(FetchRequest(entityName: "Book"))
                        let visits = try coordinator.count(FetchRequest(entityName: "Visit"))
                        return (books, visits, Int(token.components.values.reduce(0, +)))
                    }
                    if books != visits || transactions != 2 * books {
                        failures.withLock {
                            if $0.count < 5 {
                                $0.append(
                                    "\(books) books, \(visits) visits, \(transactions) transactions in one snapshot")
                            }
                        }
                    }
                } catch {
                    failures.withLock { $0.append("snapshot: \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(try Self.count(coordinator, "Book") == 300)
    }

    @Test func aThreadCannotBeginASecondSnapshot() throws {
        let folder = TemporaryDirectory()
        let coordinator = try HistoryTests.open(.sqlite, folder)
        defer { HistoryTests.close(coordinator) }
        let error = #expect(throws: StoreError.self) {
            try coordinator.withReadSnapshot { (_) throws(StoreError) in
                try coordinator.withReadSnapshot { (_) throws(StoreError) in () }
            }
        }
        #expect(error?.code == .invalidRequest)
        // Both ended: a new one begins.
        #expect(
            try coordinator.withReadSnapshot { (token) throws(StoreError) in token }
                == coordinator.currentHistoryToken())
    }

    /// The exporter pages through every kind of store (more objects than one page) in a snapshot,
    /// and its file imports back to the same objects.
    @Test(arguments: StoreUnderTest.allCases)
    func anExportOfEveryKindOfStoreReadsBackTheSame(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try HistoryTests.open(kind, folder)
        defer { HistoryTests.close(coordinator) }
        let context = ObjectContext(coordinator: coordinator)
        let tags = try (0..<3).map { try context.insert("Tag", values: ["name": .string("tag \($0)")]) }
        for index in 0..<(CoreDataExportObjects.pageSize + 500) {
            let book = try context.insert(
                "Book", values: ["title": .string("Book \(index)"), "year": .integer(Int64(index))])
            if index % 7 == 0 { try book.setObjects([tags[index % 3]], forKey: "tags") }
        }
        try context.insert("Visit", values: ["path": .string("/")])
        try context.save()
        let file = folder.file("Export.sqlite")
        let report = try CoreDataExporter.export(model: HistoryTests.model, coordinator: coordinator, to: file)
        #expect(report.objects["Book"] == CoreDataExportObjects.pageSize + 500)
        #expect(report.historyToken == (try coordinator.currentHistoryToken()))
        let again = folder.file("again.sqlite")
        _ = try CoreDataImporter.importStore(at: file, model: HistoryTests.model, targets: ["Default": again])
        let reread = StoreCoordinator(model: HistoryTests.model)
        try reread.addStore(type: .sqlite, url: again)
        defer { HistoryTests.close(reread) }
        try expectSameObjects(HistoryTests.model, coordinator, reread, "\(kind)")
    }
}
