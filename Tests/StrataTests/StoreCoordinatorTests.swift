import Foundation
import StrataTestSupport
import Testing

@testable import Strata

@Suite struct StoreCoordinatorTests {
    /// The example model with its two configurations in two SQLite files.
    func exampleStack(_ folder: TemporaryDirectory) throws -> (
        StoreCoordinator, any PersistentStore, any PersistentStore
    ) {
        let coordinator = StoreCoordinator(model: try ObjectModel.example)
        let catalog = try coordinator.addStore(
            type: .sqlite, configuration: "Catalog", url: folder.file("catalog.sqlite"))
        let activity = try coordinator.addStore(
            type: .sqlite, configuration: "Activity", url: folder.file("activity.sqlite"))
        return (coordinator, catalog, activity)
    }

    @Test func routesEachEntityToItsConfigurationsFile() throws {
        let folder = TemporaryDirectory()
        let (coordinator, catalog, activity) = try exampleStack(folder)
        #expect(coordinator.routes["Book"]?.map(\.storeIdentifier) == [catalog.identifier])
        #expect(coordinator.routes["SearchLog"]?.map(\.storeIdentifier) == [activity.identifier])
        #expect(coordinator.routes["SearchLog"]?.first?.configuration == "Activity")
        #expect(try coordinator.storeForInsert(of: "Tag") === catalog)

        let author = StoreRow(id: .temporary(entity: "Author"), attributes: ["name": .string("Butler")])
        let book = StoreRow(
            id: .temporary(entity: "Book"), attributes: ["title": .string("Kindred")], toOne: ["author": author.id])
        let log = StoreRow(id: .temporary(entity: "SearchLog"), attributes: ["query": .string("kindred")])
        let result = try coordinator.save(SaveRequest(inserts: [book, author, log]))
        let bookID = try #require(result.permanentIDs[book.id])
        let authorID = try #require(result.permanentIDs[author.id])
        #expect(bookID.storeIdentifier == catalog.identifier)
        #expect(result.permanentIDs[log.id]?.storeIdentifier == activity.identifier)
        #expect(result.changesByStore[activity.identifier]?.inserted == [result.permanentIDs[log.id]!])
        #expect(try coordinator.row(for: bookID)?.toOne["author"] == .some(authorID))
        #expect(try coordinator.relatedIDs(of: authorID, relationship: "books") == [bookID])

        // Read the files themselves.
        let catalogDump = try dumpSQLite(folder.file("catalog.sqlite"))
        let activityDump = try dumpSQLite(folder.file("activity.sqlite"))
        #expect(catalogDump.contains { $0.hasPrefix("Book: \(bookID.primaryKey!)|Book|1|Kindred") })
        #expect(catalogDump.contains { $0.hasPrefix("Author: \(authorID.primaryKey!)|Author|1|Butler") })
        #expect(!catalogDump.contains { $0.hasPrefix("SearchLog") })
        #expect(activityDump.contains { $0.hasPrefix("SearchLog: 1|SearchLog|1|kindred") })
        #expect(!activityDump.contains { $0.hasPrefix("Book") || $0.hasPrefix("Author") })
    }

    @Test func addingTheSameFileTwice() throws {
        let folder = TemporaryDirectory()
        let (coordinator, catalog, _) = try exampleStack(folder)
        let again = try coordinator.addStore(
            type: .sqlite, configuration: "Catalog", url: folder.file("./catalog.sqlite"))
        #expect(again === catalog)
        #expect(coordinator.stores.count == 2)
        do {
            try coordinator.addStore(type: .sqlite, configuration: "Activity", url: folder.file("catalog.sqlite"))
            Issue.record("attached one file for two configurations")
        } catch {
            #expect(error.code == .duplicateStore)
            #expect(error.message.contains("'Catalog'") && error.message.contains("'Activity'"))
        }
        coordinator.remove(catalog)
        #expect(coordinator.routes["Book"] == [])
        #expect(throws: StoreError.self) { try coordinator.fetch(FetchRequest(entityName: "Book")) }
    }

    @Test func anEntityInTwoWritableStoresGoesToTheFirstUnlessAssigned() throws {
        let coordinator = StoreCoordinator(model: conformanceModel)
        let first = try coordinator.addStore(type: .inMemory, configuration: "Main")
        let folder = TemporaryDirectory()
        let second = try coordinator.addStore(type: .sqlite, configuration: nil, url: folder.file("all.sqlite"))
        let tag = StoreRow(id: .temporary(entity: "Tag"), attributes: ["name": .string("a")])
        let unassigned = StoreRow(id: .temporary(entity: "Tag"), attributes: ["name": .string("first")])
        let routed = try coordinator.save(SaveRequest(inserts: [unassigned]))
        #expect(routed.permanentIDs[unassigned.id]?.storeIdentifier == first.identifier)
        _ = try coordinator.save(
            SaveRequest(deletes: [
                StoreDeletion(id: try #require(routed.permanentIDs[unassigned.id]), expectedVersion: nil)
            ]))
        let saved = try coordinator.save(SaveRequest(inserts: [tag], assignments: [tag.id: second.identifier]))
        #expect(saved.permanentIDs[tag.id]?.storeIdentifier == second.identifier)
        let other = StoreRow(id: .temporary(entity: "Tag"), attributes: ["name": .string("b")])
        let third = StoreRow(id: .temporary(entity: "Tag"), attributes: ["name": .string("c")])
        _ = try coordinator.save(
            SaveRequest(
                inserts: [other, third], assignments: [other.id: first.identifier, third.id: second.identifier]))
        // Fetches span both stores, sorted and windowed as one.
        let all = try coordinator.fetch(
            FetchRequest(entityName: "Tag", sortDescriptors: [SortKey("name", ascending: false)]))
        #expect(all.map { $0.attributes["name"] } == [.string("c"), .string("b"), .string("a")])
        let window = try coordinator.fetch(
            FetchRequest(entityName: "Tag", sortDescriptors: [SortKey("name")], fetchLimit: 1, fetchOffset: 1))
        #expect(window.map { $0.attributes["name"] } == [.string("b")])
        #expect(try coordinator.count(FetchRequest(entityName: "Tag")) == 3)
        // A read-only store is not a candidate.
        let readOnly = StoreCoordinator(model: conformanceModel)
        try readOnly.addStore(type: .inMemory, configuration: "Main")
        try readOnly.addStore(type: .inMemory, configuration: nil, options: StoreOptions(readOnly: true))
        #expect(try readOnly.storeForInsert(of: "Tag").configuration == "Main")
    }

    @Test(arguments: [false, true])
    func aFailingStoreLeavesEveryStoreAsItWas(failInFirstPrepared: Bool) throws {
        let folder = TemporaryDirectory()
        let (coordinator, catalog, activity) = try exampleStack(folder)
        let tag = StoreRow(id: .temporary(entity: "Tag"), attributes: ["name": .string("sf")])
        let log = StoreRow(id: .temporary(entity: "SearchLog"), attributes: ["query": .string("first")])
        _ = try coordinator.save(SaveRequest(inserts: [tag, log]))
        let before = (try dumpSQLite(folder.file("catalog.sqlite")), try dumpSQLite(folder.file("activity.sqlite")))
        // The stores are prepared in UUID order; put the failure in the first or the last one.
        let catalogFirst = catalog.identifier < activity.identifier
        let failInCatalog = failInFirstPrepared == catalogFirst
        var inserts = [
            StoreRow(id: .temporary(entity: "Tag"), attributes: ["name": .string("new")]),
            StoreRow(id: .temporary(entity: "SearchLog"), attributes: ["query": .string("second")]),
        ]
        if failInCatalog {
            inserts.append(StoreRow(id: .temporary(entity: "Tag"), attributes: ["name": .string("sf")]))
        } else {
            let stale = try #require(try coordinator.fetch(FetchRequest(entityName: "SearchLog")).first)
            inserts.removeLast()
            _ = try coordinator.save(
                SaveRequest(updates: [
                    StoreUpdate(id: stale.id, expectedVersion: 1, attributes: ["results": .integer(1)])
                ]))
            let afterUpdate = try dumpSQLite(folder.file("activity.sqlite"))
            do {
                _ = try coordinator.save(
                    SaveRequest(
                        inserts: inserts,
                        updates: [StoreUpdate(id: stale.id, expectedVersion: 1, attributes: ["results": .integer(2)])]))
                Issue.record("a stale save succeeded")
            } catch {
                #expect(error.code == .conflict)
            }
            #expect(try dumpSQLite(folder.file("catalog.sqlite")) == before.0)
            #expect(try dumpSQLite(folder.file("activity.sqlite")) == afterUpdate)
            return
        }
        do {
            _ = try coordinator.save(SaveRequest(inserts: inserts))
            Issue.record("a duplicate was saved")
        } catch {
            #expect(error.code == .uniqueViolation)
        }
        #expect(try dumpSQLite(folder.file("catalog.sqlite")) == before.0)
        #expect(try dumpSQLite(folder.file("activity.sqlite")) == before.1)
    }

    @Test func referencesAcrossStoresAreRefused() throws {
        let folder = TemporaryDirectory()
        let (coordinator, _, _) = try exampleStack(folder)
        let author = StoreRow(id: .temporary(entity: "Author"), attributes: ["name": .string("A")])
        let saved = try coordinator.save(SaveRequest(inserts: [author]))
        let log = StoreRow(id: .temporary(entity: "SearchLog"), attributes: ["query": .string("q")])
        let logID = try #require(try coordinator.save(SaveRequest(inserts: [log])).permanentIDs[log.id])
        let authorID = try #require(saved.permanentIDs[author.id])
        // A Book's author must be in the Book's store; a SearchLog's ID there is refused.
        let book = StoreRow(
            id: .temporary(entity: "Book"), attributes: ["title": .string("t")],
            toOne: [
                "author": ObjectID(store: logID.storeIdentifier!, entity: "Author", primaryKey: authorID.primaryKey!)
            ])
        do {
            _ = try coordinator.save(SaveRequest(inserts: [book]))
            Issue.record("saved a reference across stores")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("fetched property"))
        }
        let dangling = StoreRow(
            id: .temporary(entity: "Book"), attributes: ["title": .string("t")],
            toOne: ["author": .temporary(entity: "Author")])
        #expect(throws: StoreError.self) { try coordinator.save(SaveRequest(inserts: [dangling])) }
    }
}
