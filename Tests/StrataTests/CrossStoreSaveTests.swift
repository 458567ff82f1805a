import Foundation
import StrataTestSupport
import Synchronization
import Testing

@testable import Strata

/// Saves across several SQLite stores are all or nothing across a crash: stopped at every point
/// of the commit sequence and of the recovery, and with a commit that fails.
@Suite struct CrossStoreSaveTests {
    /// Three configurations, one entity each.
    static let model = try! ObjectModel.load(
        json: Array(
            #"""
            {"name": "Ledger", "version": "1", "entities": [
              {"name": "Order", "attributes": [{"name": "code", "type": "string"}, {"name": "total", "type": "double"},
                                               {"name": "placed", "type": "date"}]},
              {"name": "Audit", "attributes": [{"name": "code", "type": "string"}, {"name": "note", "type": "string"}]},
              {"name": "Gauge", "attributes": [{"name": "code", "type": "string"}, {"name": "value", "type": "integer64"}]}
            ], "configurations": [
              {"name": "Orders", "entities": ["Order"]},
              {"name": "Audits", "entities": ["Audit"]},
              {"name": "Gauges", "entities": ["Gauge"]}
            ]}
            """#.utf8))
    static let entities = ["Order", "Audit", "Gauge"]

    static func descriptions(_ folder: TemporaryDirectory) -> [StoreDescription] {
        ["Orders", "Audits", "Gauges"].map {
            StoreDescription(type: .sqlite, configuration: $0, url: folder.file("\($0.lowercased()).sqlite"))
        }
    }

    static func open(_ folder: TemporaryDirectory) throws -> StoreCoordinator {
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStores(descriptions(folder))
        return coordinator
    }

    /// Closes every store, as the end of a process does (what was committed stays).
    static func close(_ coordinator: StoreCoordinator) {
        for store in coordinator.stores { coordinator.remove(store) }
    }

    /// Saves one object of each entity, all with `code`, in one root save.
    static func saveAcross(_ root: ObjectContext, code: String) throws {
        try root.insert(
            "Order",
            values: ["code": .string(code), "total": .double(12.5), "placed": .date(Date(timeIntervalSince1970: 1e9))])
        try root.insert("Audit", values: ["code": .string(code), "note": .string("made \(code)")])
        try root.insert("Gauge", values: ["code": .string(code), "value": .integer(42)])
        try root.save()
    }

    /// The codes of each entity's objects.
    static func codes(_ coordinator: StoreCoordinator) throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for entity in entities {
            result[entity] = try coordinator.fetch(FetchRequest(entityName: entity)).compactMap {
                if case .string(let code) = $0[attribute: "code"] { code } else { nil }
            }.sorted()
        }
        return result
    }

    /// Records and marks left in the stores.
    static func notes(_ coordinator: StoreCoordinator) throws -> (records: Int, marks: Int) {
        var records = 0
        var marks = 0
        for store in coordinator.stores {
            records += try store.crossStoreRecords().count
            guard let sqlite = store as? SQLiteStore else { continue }
            marks += try sqlite.read { db in
                try db.query(
                    "SELECT count(*) FROM sqlite_master WHERE name = ?", [.text(SQLiteStore.appliedTable)]
                ) { $0.int64(0) }.first == 1
                    ? Int(try db.query("SELECT count(*) FROM \(SQLiteStore.appliedTable)") { $0.int64(0) }.first ?? 0)
                    : 0
            }
        }
        return (records, marks)
    }

    /// The entities in the order their stores commit (by store UUID: the first is the commit point).
    static func commitOrder(_ coordinator: StoreCoordinator) -> [String] {
        coordinator.stores.sorted { $0.identifier < $1.identifier }.map { $0.entityNames.first! }
    }

    static func sqliteStore(_ coordinator: StoreCoordinator, holding entity: String) -> SQLiteStore {
        coordinator.stores(for: entity).first as! SQLiteStore
    }

    /// Stops the coordinator's next save at `point` (the `times`-th time it is reached).
    static func stop(_ coordinator: StoreCoordinator, at point: CrashPoint, times: Int = 1) {
        let seen = Locked(0)
        coordinator.crashPoints.stop.withLock {
            $0 = { reached in
                reached == point
                    && seen.withLock { count -> Bool in
                        count += 1
                        return count == times
                    }
            }
        }
    }

    static func isSimulatedCrash(_ error: any Error) -> Bool {
        ((error as? ContextError)?.storeError?.underlying ?? (error as? StoreError)?.underlying) is SimulatedCrash
    }

    @Test(arguments: [CrashPoint.afterCommitPoint, .betweenCommits])
    func aCrashInTheCommitSequenceIsFinishedOnTheNextOpen(point: CrashPoint) throws {
        let folder = TemporaryDirectory()
        do {
            let coordinator = try Self.open(folder)
            let root = ObjectContext(coordinator: coordinator)
            try Self.saveAcross(root, code: "before")
            Self.stop(coordinator, at: point)
            #expect(throws: (any Error).self) { try Self.saveAcross(root, code: "crashed") }
            // What the crash left: the commit point (and, between the commits, the second store)
            // has its part; the last store in commit order does not.
            let order = Self.commitOrder(coordinator)
            let left = try Self.codes(coordinator)
            #expect(left[order[0]] == ["before", "crashed"])
            #expect(left[order[1]] == (point == .betweenCommits ? ["before", "crashed"] : ["before"]))
            #expect(left[order[2]] == ["before"])
            Self.close(coordinator)
        }
        let reopened = try Self.open(folder)
        #expect(reopened.lastRecovery.finishedSaves == 1)
        #expect(
            try Self.codes(reopened)
                == ["Order": ["before", "crashed"], "Audit": ["before", "crashed"], "Gauge": ["before", "crashed"]])
        // The values are exactly the save's, and nothing of it is left behind.
        let audit = try reopened.fetch(
            FetchRequest(entityName: "Audit", predicate: try FetchPredicate(format: "code == 'crashed'")))
        #expect(audit.first?[attribute: "note"] == .string("made crashed"))
        #expect(audit.first?.version == 1)
        #expect(try Self.notes(reopened).records == 0)
        #expect(try Self.notes(reopened).marks == 0)
        Self.close(reopened)
        // Opening again finds nothing more to do.
        let again = try Self.open(folder)
        #expect(again.lastRecovery.isEmpty)
        #expect(try again.count(FetchRequest(entityName: "Gauge")) == 2)
    }

    @Test func aCrashDuringRecoveryIsFinishedByTheNextRecovery() throws {
        let folder = TemporaryDirectory()
        do {
            let coordinator = try Self.open(folder)
            Self.stop(coordinator, at: .afterCommitPoint)
            #expect(throws: (any Error).self) {
                try Self.saveAcross(ObjectContext(coordinator: coordinator), code: "x")
            }
            Self.close(coordinator)
        }
        // The first recovery writes one of the two missing parts, then "crashes".
        do {
            let coordinator = StoreCoordinator(model: Self.model)
            Self.stop(coordinator, at: .duringRecovery)
            do {
                try coordinator.addStores(Self.descriptions(folder))
                Issue.record("the recovery was not stopped")
            } catch {
                #expect(Self.isSimulatedCrash(error))
            }
            Self.close(coordinator)
        }
        let reopened = try Self.open(folder)
        #expect(reopened.lastRecovery.finishedSaves == 1)
        #expect(
            reopened.lastRecovery.repairedStores.values.reduce(0, +) == 1,
            "the part written before the crash is not written twice")
        #expect(try Self.codes(reopened) == ["Order": ["x"], "Audit": ["x"], "Gauge": ["x"]])
        #expect(try Self.notes(reopened).records == 0)
    }

    @Test func aFailedCommitOfTheCommitPointWritesNothingAnywhere() throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(folder)
        let root = ObjectContext(coordinator: coordinator)
        try Self.saveAcross(root, code: "first")
        let point = Self.sqliteStore(coordinator, holding: Self.commitOrder(coordinator)[0])
        let recordsBefore = try Self.notes(coordinator).records
        point.failingCommits.store(1, ordering: .relaxed)
        do {
            try Self.saveAcross(root, code: "lost")
            Issue.record("the save went through")
        } catch {
            #expect((error as? ContextError)?.storeError?.code == .full, "\(error)")
        }
        root.rollback()
        #expect(try Self.codes(coordinator).values.allSatisfy { $0 == ["first"] })
        #expect(try Self.notes(coordinator).records == recordsBefore, "the failed save left a record")
        Self.close(coordinator)
        let reopened = try Self.open(folder)
        #expect(reopened.lastRecovery.isEmpty)
        #expect(try Self.codes(reopened).values.allSatisfy { $0 == ["first"] })
    }

    @Test func aFullDiskFailsTheSaveAndWritesNothingUntilThereIsRoom() throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(folder)
        let root = ObjectContext(coordinator: coordinator)
        try Self.saveAcross(root, code: "first")
        let full = Self.sqliteStore(coordinator, holding: Self.commitOrder(coordinator)[1])
        try full.limitPages(to: 0)
        let big = String(repeating: "x", count: 20_000)
        for entity in Self.entities { try root.insert(entity, values: ["code": .string(big)]) }
        do {
            try root.save()
            Issue.record("the save went through")
        } catch {
            #expect(error.storeError?.code == .full, "\(error)")
            #expect(error.storeError?.storeURL == full.url)
        }
        root.rollback()
        #expect(try Self.codes(coordinator).values.allSatisfy { $0 == ["first"] })
        // Reads go on meanwhile; once there is room the same save goes through, without reopening.
        #expect(try coordinator.count(FetchRequest(entityName: "Order")) == 1)
        try full.limitPages(to: nil)
        for entity in Self.entities { try root.insert(entity, values: ["code": .string(big)]) }
        try root.save()
        #expect(try Self.codes(coordinator).values.allSatisfy { $0.count == 2 })
    }

    @Test func aFailedCommitOfAnotherParticipantIsWrittenLater() throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(folder)
        let root = ObjectContext(coordinator: coordinator)
        try Self.saveAcross(root, code: "first")
        let lastEntity = Self.commitOrder(coordinator)[2]
        let last = Self.sqliteStore(coordinator, holding: lastEntity)
        last.failingCommits.store(1_000, ordering: .relaxed)
        // The commit point committed: the save has happened, and its last part waits.
        try Self.saveAcross(root, code: "kept")
        #expect(try coordinator.count(FetchRequest(entityName: lastEntity)) == 1)
        #expect(try coordinator.count(FetchRequest(entityName: Self.commitOrder(coordinator)[0])) == 2)
        // Meanwhile that store takes no other save and says why; reads go on.
        try root.insert(lastEntity, values: ["code": .string("blocked")])
        do {
            try root.save()
            Issue.record("a store owing a part took another save")
        } catch {
            #expect(error.storeError?.code == .unsettled, "\(error)")
        }
        root.rollback()
        #expect(try coordinator.count(FetchRequest(entityName: lastEntity)) == 1)
        // Commits work again: the next save writes the owed part first.
        last.failingCommits.store(0, ordering: .relaxed)
        try root.insert(lastEntity, values: ["code": .string("after")])
        try root.save()
        #expect(try Self.codes(coordinator)[lastEntity] == ["after", "first", "kept"])
    }

    @Test func anOwedPartIsWrittenByTheNextOpenAfterACrash() throws {
        let folder = TemporaryDirectory()
        do {
            let coordinator = try Self.open(folder)
            let last = Self.sqliteStore(coordinator, holding: Self.commitOrder(coordinator)[2])
            last.failingCommits.store(1_000, ordering: .relaxed)
            try Self.saveAcross(ObjectContext(coordinator: coordinator), code: "owed")
            // The process ends before the part could be written.
            Self.close(coordinator)
        }
        let reopened = try Self.open(folder)
        #expect(reopened.lastRecovery.finishedSaves == 1)
        #expect(try Self.codes(reopened).values.allSatisfy { $0 == ["owed"] })
        #expect(try Self.notes(reopened).records == 0)
        #expect(try Self.notes(reopened).marks == 0)
    }

    @Test func savesOfOneStoreKeepNoNotesAndFinishedNotesAreForgotten() throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(folder)
        let root = ObjectContext(coordinator: coordinator)
        try root.insert("Order", values: ["code": .string("alone")])
        try root.save()
        for store in coordinator.stores {
            guard let sqlite = store as? SQLiteStore else { continue }
            let tables = try sqlite.read { db in
                try db.query("SELECT count(*) FROM sqlite_master WHERE name LIKE '_strata_%_saves'") { $0.int64(0) }
            }
            #expect(tables == [0], "a save of one store made note tables")
        }
        for index in 0..<30 { try Self.saveAcross(root, code: "c\(index)") }
        // Each save forgets the notes of the ones before it: what is left is bounded.
        let (records, marks) = try Self.notes(coordinator)
        #expect(records <= 2 && marks <= 4, "records \(records), marks \(marks)")
        #expect(try coordinator.count(FetchRequest(entityName: "Gauge")) == 30)
    }

    @Test func recordedChangesDecodeToTheSameChanges() throws {
        let coordinator = StoreCoordinator(model: Self.model)
        let store = "00000000-0000-0000-0000-000000000001"
        let id = ObjectID(store: store, entity: "Order", primaryKey: 7)
        var changes = StoreChanges(
            inserts: [
                StoreRow(
                    id: id, version: 0,
                    attributes: [
                        "code": .string("a\u{0}b é"), "total": .double(0.1 + 0.2),
                        "placed": .date(Date(timeIntervalSince1970: 1_700_000_000.123456)),
                    ])
            ],
            updates: [
                StoreUpdate(
                    id: ObjectID(store: store, entity: "Order", primaryKey: 3), expectedVersion: 4,
                    attributes: ["total": .null])
            ],
            deletes: [StoreDeletion(id: ObjectID(store: store, entity: "Order", primaryKey: 2), expectedVersion: nil)])
        changes.participation = nil
        let decoded = try StoreChanges(
            decoding: changes.encoded(in: coordinator.model), in: coordinator.model, store: store)
        #expect(decoded.inserts.first?.attributes.dictionary == changes.inserts.first?.attributes.dictionary)
        #expect(decoded.inserts.first?.id == id)
        #expect(decoded.updates == changes.updates)
        #expect(decoded.deletes == changes.deletes)
    }
}
