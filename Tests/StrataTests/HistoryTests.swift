import Foundation
import StrataTestSupport
import Synchronization
import Testing

@testable import Strata

/// Persistent history: every commit of a store opened with `recordsHistory` writes one history
/// transaction in the same store transaction, in every kind of store.
@Suite struct HistoryTests {
    /// Books (title preserved after deletion, unique) with tags in `Main`; visits (path preserved)
    /// in `Logs`.
    static let modelJSON = #"""
        {"name": "History", "version": "1", "entities": [
          {"name": "Book", "attributes": [
             {"name": "title", "type": "string", "coreData": {"attributeType": "String", "preservesValueInHistoryOnDeletion": true}},
             {"name": "year", "type": "integer32"}],
           "relationships": [{"name": "tags", "destination": "Tag", "toMany": true, "inverse": "books"}],
           "uniqueness": [["title"]]},
          {"name": "Tag", "attributes": [{"name": "name", "type": "string"}],
           "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "tags"}]},
          {"name": "Visit", "attributes": [
             {"name": "path", "type": "string", "coreData": {"attributeType": "String", "preservesValueInHistoryOnDeletion": true}}]}
        ], "configurations": [
          {"name": "Main", "entities": ["Book", "Tag"]},
          {"name": "Logs", "entities": ["Visit"]}
        ]}
        """#
    static let model = try! ObjectModel.load(json: Array(modelJSON.utf8))

    static let recording = StoreOptions(recordsHistory: true)

    /// A coordinator over `Main` (of `kind`) and `Logs` (SQLite, in memory for `.memory`), both
    /// recording history unless `options` says otherwise.
    static func open(
        _ kind: StoreUnderTest, _ folder: TemporaryDirectory, options: StoreOptions = recording,
        model: ObjectModel = model
    ) throws -> StoreCoordinator {
        let coordinator = StoreCoordinator(model: model)
        switch kind {
        case .sqlite:
            try coordinator.addStore(
                type: .sqlite, configuration: "Main", url: folder.file("main.sqlite"), options: options)
        case .memory: try coordinator.addStore(type: .inMemory, configuration: "Main", options: options)
        case .postgresql:
            try coordinator.addStore(
                type: .postgresql, configuration: "Main", url: try folder.postgreSQLURL(name: "main"), options: options)
        }
        if kind == .memory {
            try coordinator.addStore(type: .inMemory, configuration: "Logs", options: options)
        } else {
            try coordinator.addStore(
                type: .sqlite, configuration: "Logs", url: folder.file("logs.sqlite"), options: options)
        }
        return coordinator
    }

    static func close(_ coordinator: StoreCoordinator) {
        for store in coordinator.stores {
            coordinator.remove(store)
            store.close()
        }
    }

    static func main(_ coordinator: StoreCoordinator) -> any PersistentStore {
        coordinator.stores.first { $0.configuration == "Main" }!
    }

    @Test(arguments: StoreUnderTest.allCases)
    func recordsInsertsUpdatesAndDeletes(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        defer { Self.close(coordinator) }
        let context = ObjectContext(coordinator: coordinator)
        context.name = "editor"
        context.transactionAuthor = "zoë"
        let published = Locked<[HistoryToken?]>([])
        context.observeSaves { changes in published.withLock { $0.append(changes.historyToken) } }

        let book = try context.insert("Book", values: ["title": .string("Dune"), "year": .integer(1965)])
        let other = try context.insert("Book", values: ["title": .string("Emma"), "year": .integer(1815)])
        let tag = try context.insert("Tag", values: ["name": .string("classic")])
        try context.save()
        try book.setValue(.string("Dune — Messiah"), forKey: "title")
        try book.setValue(.integer(1969), forKey: "year")
        try context.save()
        try other.add(tag, toKey: "tags")
        try context.save()
        try context.delete(book)
        try context.save()

        let history = try coordinator.history()
        #expect(history.map(\.number) == [1, 2, 3, 4])
        #expect(history.allSatisfy { $0.author == "zoë" && $0.contextName == "editor" })
        #expect(history.allSatisfy { $0.storeIdentifier == Self.main(coordinator).identifier })
        #expect(Set(history[0].changes.map(\.objectID)) == [book.objectID, other.objectID, tag.objectID])
        #expect(history[0].changes.allSatisfy { $0.kind == .insert && $0.version == 1 && $0.updatedProperties == nil })
        #expect(
            history[1].changes == [
                HistoryChange(objectID: book.objectID, kind: .update, updatedProperties: ["title", "year"], version: 2)
            ])
        let linked = history[2].changes.first { $0.objectID == other.objectID }
        #expect(linked?.kind == .update && linked?.updatedProperties == ["tags"])
        #expect(
            history[3].changes == [
                HistoryChange(
                    objectID: book.objectID, kind: .delete, tombstone: ["title": .string("Dune — Messiah")], version: 2)
            ])
        // The save notifications carry the tokens their transactions produced.
        #expect(published.withLock { $0 } == history.map { $0.token as HistoryToken? })
        #expect(
            try coordinator.currentHistoryToken()
                == history[3].token.merging(HistoryToken([coordinator.stores[1].identifier: 0])))
        // Filtered by entity: the tag's insert, and its side of the link.
        let tags = try coordinator.history(entities: ["Tag"])
        #expect(tags.map(\.number) == [1, 3])
        #expect(tags.flatMap(\.changes).map(\.objectID) == [tag.objectID, tag.objectID])
        #expect(tags.last?.changes.first?.updatedProperties == ["books"])
    }

    @Test(arguments: StoreUnderTest.allCases)
    func aFailedSaveRecordsNothing(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        defer { Self.close(coordinator) }
        let store = Self.main(coordinator)
        let row = try newRow(store, "Book", ["title": .string("Dune"), "year": .integer(1965)])
        try store.save(StoreChanges(inserts: [row]))
        let before = try coordinator.currentHistoryToken()
        // A version conflict.
        #expect(throws: StoreError.self) {
            try store.save(
                StoreChanges(updates: [StoreUpdate(id: row.id, expectedVersion: 7, attributes: ["year": .integer(1)])]))
        }
        // A unique violation.
        #expect(throws: StoreError.self) {
            try store.save(StoreChanges(inserts: [try newRow(store, "Book", ["title": .string("Dune")])]))
        }
        // A save rolled back after it was prepared.
        let prepared = try store.prepare(StoreChanges(deletes: [StoreDeletion(id: row.id, expectedVersion: 1)]))
        #expect(prepared.historyNumber == 2)
        prepared.rollback()
        #expect(try coordinator.currentHistoryToken() == before)
        #expect(try coordinator.history().map(\.number) == [1])
        // The next save takes the next number: none was lost.
        let next = try store.prepare(StoreChanges(deletes: [StoreDeletion(id: row.id, expectedVersion: 1)]))
        try next.commit()
        #expect(next.historyNumber == 2)
        #expect(try coordinator.history().map(\.number) == [1, 2])
    }

    @Test(arguments: StoreUnderTest.allCases.filter { $0 != .memory })
    func historySurvivesReopening(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        var coordinator = try Self.open(kind, folder)
        let context = ObjectContext(coordinator: coordinator)
        context.transactionAuthor = "importer"
        let book = try context.insert("Book", values: ["title": .string("Dune")])
        _ = try context.insert("Visit", values: ["path": .string("/dune")])
        try context.save()
        try context.delete(book)
        try context.save()
        let kept = try coordinator.history()
        let token = try coordinator.currentHistoryToken()
        Self.close(coordinator)

        coordinator = try Self.open(kind, folder)
        defer { Self.close(coordinator) }
        #expect(try coordinator.history() == kept)
        #expect(try coordinator.currentHistoryToken() == token)
        #expect(HistoryToken(token.description) == token)
        let data = try JSONEncoder().encode(token)
        #expect(try JSONDecoder().decode(HistoryToken.self, from: data) == token)
        let again = ObjectContext(coordinator: coordinator)
        _ = try again.insert("Book", values: ["title": .string("Emma")])
        try again.save()
        let after = try coordinator.history(after: token)
        #expect(after.count == 1 && after[0].number == token.number(for: Self.main(coordinator).identifier) + 1)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func fetchAfterAndDelete(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        defer { Self.close(coordinator) }
        let store = Self.main(coordinator)
        var tokens: [HistoryToken] = []
        for index in 1...5 {
            let result = try coordinator.save(
                SaveRequest(inserts: [
                    StoreRow(id: ObjectID.temporary(entity: "Book"), attributes: ["title": .string("b\(index)")])
                ]))
            tokens.append(try #require(result.historyToken))
        }
        #expect(tokens.map { $0.number(for: store.identifier) } == [1, 2, 3, 4, 5])
        #expect(try coordinator.history(after: tokens[1]).map(\.number) == [3, 4, 5])
        #expect(try coordinator.history(after: tokens[1], limit: 2).map(\.number) == [3, 4])
        #expect(try coordinator.history(after: tokens[4]).isEmpty)
        #expect(try coordinator.oldestHistoryToken().number(for: store.identifier) == 0)

        #expect(try coordinator.deleteHistory(through: tokens[2]) == 3)
        #expect(try coordinator.history().map(\.number) == [4, 5])
        let oldest = try coordinator.oldestHistoryToken()
        #expect(oldest.number(for: store.identifier) == 3)
        #expect(tokens[2].covers(oldest) && !tokens[1].covers(oldest))

        #expect(try coordinator.deleteHistory(before: Date().addingTimeInterval(60)) == 2)
        #expect(try coordinator.history().isEmpty)
        #expect(try coordinator.currentHistoryToken().number(for: store.identifier) == 5)
        #expect(try coordinator.oldestHistoryToken().number(for: store.identifier) == 5)
        let next = try coordinator.save(
            SaveRequest(inserts: [
                StoreRow(id: ObjectID.temporary(entity: "Book"), attributes: ["title": .string("b6")])
            ]))
        #expect(next.historyToken?.number(for: store.identifier) == 6)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func aSaveAcrossStoresHasOneToken(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        defer { Self.close(coordinator) }
        let context = ObjectContext(coordinator: coordinator)
        _ = try context.insert("Book", values: ["title": .string("Dune")])
        try context.save()
        let first = try coordinator.currentHistoryToken()
        let tokens = Locked<[HistoryToken?]>([])
        context.observeSaves { changes in tokens.withLock { $0.append(changes.historyToken) } }
        _ = try context.insert("Book", values: ["title": .string("Emma")])
        _ = try context.insert("Visit", values: ["path": .string("/emma")])
        try context.save()
        let token = try #require(tokens.withLock { $0.first } ?? nil)
        let main = Self.main(coordinator).identifier
        let logs = coordinator.stores.first { $0.configuration == "Logs" }!.identifier
        #expect(token.components == [main: 2, logs: 1])
        #expect(token.covers(first) && !first.covers(token))
        #expect(try coordinator.currentHistoryToken() == token)
        let after = try coordinator.history(after: first)
        #expect(Set(after.map(\.storeIdentifier)) == [main, logs])
        #expect(after.allSatisfy { !token.precedes($0) && first.precedes($0) })
        #expect(try coordinator.history(after: token).isEmpty)
        #expect(HistoryToken(token.description) == token)
    }

    @Test(arguments: StoreUnderTest.allCases)
    func historyIsOffUnlessAsked(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        var coordinator = try Self.open(kind, folder, options: StoreOptions())
        let context = ObjectContext(coordinator: coordinator)
        _ = try context.insert("Book", values: ["title": .string("Dune")])
        try context.save()
        #expect(try coordinator.history().isEmpty)
        #expect(try coordinator.currentHistoryToken().components.isEmpty)
        #expect(Self.main(coordinator).options.recordsHistory == false)
        if kind == .sqlite {
            #expect(try !dumpSQLite(folder.file("main.sqlite")).contains { $0.hasPrefix(SQLHistory.transactions) })
        }
        guard kind != .memory else { return Self.close(coordinator) }
        Self.close(coordinator)
        // An existing store opened with history on gets its tables, and records from then on.
        coordinator = try Self.open(kind, folder)
        defer { Self.close(coordinator) }
        let again = ObjectContext(coordinator: coordinator)
        _ = try again.insert("Book", values: ["title": .string("Emma")])
        try again.save()
        #expect(try coordinator.history().map(\.number) == [1])
    }

    @Test(arguments: StoreUnderTest.allCases)
    func concurrentSavesGiveAGapFreeHistoryThatReplays(_ kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let coordinator = try Self.open(kind, folder)
        defer { Self.close(coordinator) }
        let shared = try coordinator.save(
            SaveRequest(inserts: [StoreRow(id: .temporary(entity: "Tag"), attributes: ["name": .string("shared")])]))
        let tag = shared.issuedIDs[0]
        let failures = Locked<[String]>([])
        let writers = 8
        let rounds = 15
        DispatchQueue.concurrentPerform(iterations: writers) { writer in
            var mine: [ObjectID] = []
            for round in 0..<rounds {
                do {
                    var request = SaveRequest(
                        inserts: [
                            StoreRow(
                                id: .temporary(entity: "Book"), attributes: ["title": .string("w\(writer)-\(round)")])
                        ],
                        updates: [
                            StoreUpdate(id: tag, expectedVersion: nil, attributes: ["name": .string("w\(writer)")])
                        ])
                    if let last = mine.last {
                        request.updates.append(
                            StoreUpdate(id: last, expectedVersion: nil, attributes: ["year": .integer(Int64(round))]))
                    }
                    if round % 4 == 3, let first = mine.first {
                        request.deletes.append(StoreDeletion(id: first, expectedVersion: nil))
                        mine.removeFirst()
                    }
                    let result = try coordinator.save(request)
                    mine.append(result.issuedIDs[0])
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let history = try coordinator.history()
        #expect(history.map(\.number) == Array(1...Int64(1 + writers * rounds)))
        // Replaying the history gives exactly the stored objects, at their stored versions.
        var replayed: [ObjectID: Int64] = [:]
        for transaction in history {
            for change in transaction.changes {
                switch change.kind {
                case .insert:
                    #expect(replayed[change.objectID] == nil && change.version == 1)
                    replayed[change.objectID] = change.version
                case .update:
                    #expect(replayed[change.objectID].map { $0 + 1 } == change.version)
                    replayed[change.objectID] = change.version
                case .delete:
                    #expect(replayed[change.objectID] == change.version)
                    replayed[change.objectID] = nil
                }
            }
        }
        var stored: [ObjectID: Int64] = [:]
        for entity in ["Book", "Tag"] {
            for row in try coordinator.fetch(FetchRequest(entityName: entity)) { stored[row.id] = row.version }
        }
        #expect(replayed == stored)
    }

    /// The model with an attribute more (`Book.pages`), version 2.
    static let migrated = try! ObjectModel.load(
        json: Array(
            modelJSON.replacingOccurrences(of: #""version": "1""#, with: #""version": "2""#)
                .replacingOccurrences(
                    of: #"{"name": "year", "type": "integer32"}"#,
                    with: #"{"name": "year", "type": "integer32"}, {"name": "pages", "type": "integer16"}"#
                ).utf8))

    @Test(arguments: StoreUnderTest.allCases.filter { $0 != .memory })
    func historySurvivesAMigration(_ kind: StoreUnderTest) throws {
        #expect(Self.migrated.attribute("pages", of: "Book") != nil)
        let folder = TemporaryDirectory()
        var coordinator = try Self.open(kind, folder)
        let context = ObjectContext(coordinator: coordinator)
        let book = try context.insert("Book", values: ["title": .string("Dune")])
        try context.save()
        try book.setValue(.integer(1965), forKey: "year")
        try context.save()
        let kept = try coordinator.history()
        Self.close(coordinator)

        coordinator = try Self.open(
            kind, folder, options: StoreOptions(migrate: true, recordsHistory: true), model: Self.migrated)
        defer { Self.close(coordinator) }
        #expect(try coordinator.history() == kept)
        let again = ObjectContext(coordinator: coordinator)
        try again.object(with: book.objectID).setValue(.integer(412), forKey: "pages")
        try again.save()
        let last = try #require(try coordinator.history().last)
        #expect(last.number == 3)
        #expect(
            last.changes == [
                HistoryChange(objectID: book.objectID, kind: .update, updatedProperties: ["pages"], version: 3)
            ])
    }

    /// The history names objects by their keys, so a deleted object's key is never handed out
    /// again, also when it was the largest and the store was closed in between: the feed would
    /// show the deleted object inserted anew at version 1.
    @Test(arguments: StoreUnderTest.allCases.filter { $0 != .memory }, [true, false])
    func keysOfDeletedObjectsAreNotHandedOutAgain(_ kind: StoreUnderTest, recording: Bool) throws {
        let folder = TemporaryDirectory()
        let options = StoreOptions(recordsHistory: recording)
        var coordinator = try Self.open(kind, folder, options: options)
        var context = ObjectContext(coordinator: coordinator)
        let kept = try context.insert("Book", values: ["title": .string("Dune")])
        let deleted = try context.insert("Book", values: ["title": .string("Emma")])
        try context.save()
        try context.delete(deleted)
        try context.save()
        Self.close(coordinator)

        coordinator = try Self.open(kind, folder, options: options)
        defer { Self.close(coordinator) }
        context = ObjectContext(coordinator: coordinator)
        let inserted = try context.insert("Book", values: ["title": .string("Ulysses")])
        try context.save()
        let keys = [kept, deleted, inserted].map { $0.objectID.primaryKey ?? 0 }
        #expect(keys[2] > keys[1] && keys[1] > keys[0])
        guard recording else { return }
        let changes = try coordinator.history().flatMap(\.changes).filter { $0.objectID == deleted.objectID }
        #expect(changes.map(\.kind) == [.insert, .delete])
    }
}
