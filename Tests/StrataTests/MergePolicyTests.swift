import Foundation
import StrataTestSupport
import Testing

@testable import Strata

@Suite struct MergePolicyTests {
    struct Outcome: Equatable {
        var name: String?
        var email: String?
        var rank: Int64?
    }

    /// Context A changes name and email of an author whose email and rank context B changed and
    /// saved first; A then saves with `policy`. Returns the stored outcome and A's error, if any.
    func conflict(_ policy: MergePolicy, stack: StackKind) throws -> (Outcome, ContextError?, ObjectContext, ObjectID) {
        let folder = TemporaryDirectory()
        let setup = try stack.make(folder)
        let author = try setup.insert(
            "Author", values: ["name": .string("N"), "email": .string("a@x.y"), "rank": .integer(1)])
        try setup.save()
        let id = author.objectID
        let a = ObjectContext(coordinator: setup.coordinator, mergePolicy: policy)
        let b = ObjectContext(coordinator: setup.coordinator)
        let mine = try a.object(with: id)
        #expect(mine.version == 1)
        let theirs = try b.object(with: id)
        try theirs.setValue(.string("b@x.y"), forKey: "email")
        try theirs.setValue(.integer(2), forKey: "rank")
        try b.save()
        try mine.setValue(.string("A-name"), forKey: "name")
        try mine.setValue(.string("a2@x.y"), forKey: "email")
        var failure: ContextError?
        do {
            try a.save()
        } catch {
            failure = error
        }
        let row = try #require(try setup.coordinator.row(for: id))
        func text(_ key: String) -> String? { if case .string(let s) = row.attributes[key] { s } else { nil } }
        let rank: Int64? = if case .integer(let i) = row.attributes["rank"] { i } else { nil }
        return (Outcome(name: text("name"), email: text("email"), rank: rank), failure, a, id)
    }

    @Test(arguments: StackKind.allCases)
    func errorPolicyNamesTheObjectsAndBothVersions(stack: StackKind) throws {
        let (outcome, failure, context, id) = try conflict(.error, stack: stack)
        let error = try #require(failure)
        #expect(error.code == .conflict)
        #expect(error.conflicts == [VersionConflict(id: id, expectedVersion: 1, storedVersion: 2)])
        #expect(
            error.message.contains(id.uri) && error.message.contains("expected version 1")
                && error.message.contains("store has 2"))
        #expect(outcome == Outcome(name: "N", email: "b@x.y", rank: 2))
        #expect(context.hasChanges)
    }

    @Test(arguments: StackKind.allCases)
    func storeTrumpKeepsTheStoresChangedValues(stack: StackKind) throws {
        let (outcome, failure, _, _) = try conflict(.storeTrump, stack: stack)
        #expect(failure == nil)
        #expect(outcome == Outcome(name: "A-name", email: "b@x.y", rank: 2))
    }

    @Test(arguments: StackKind.allCases)
    func objectTrumpKeepsTheContextsChangedValues(stack: StackKind) throws {
        let (outcome, failure, context, id) = try conflict(.objectTrump, stack: stack)
        #expect(failure == nil)
        #expect(outcome == Outcome(name: "A-name", email: "a2@x.y", rank: 2))
        #expect(try context.object(with: id).version == 3)
    }

    @Test(arguments: StackKind.allCases)
    func overwriteWritesTheWholeObject(stack: StackKind) throws {
        let (outcome, failure, _, _) = try conflict(.overwrite, stack: stack)
        #expect(failure == nil)
        #expect(outcome == Outcome(name: "A-name", email: "a2@x.y", rank: 1))
    }

    @Test(arguments: StackKind.allCases)
    func rollbackDropsTheContextsChanges(stack: StackKind) throws {
        let (outcome, failure, context, id) = try conflict(.rollback, stack: stack)
        #expect(failure == nil)
        #expect(outcome == Outcome(name: "N", email: "b@x.y", rank: 2))
        #expect(!context.hasChanges)
        #expect(try context.object(with: id).string("email") == "b@x.y")
    }
}

@Suite struct ContainerTests {
    @Test func loadFailuresAreStructured() throws {
        let folder = TemporaryDirectory()
        let blocker = folder.file("not-a-folder")
        try Data("x".utf8).write(to: blocker)
        let bad = StoreDescription(
            type: .sqlite, configuration: "Logs", url: blocker.appendingPathComponent("logs.sqlite"))
        let good = StoreDescription(type: .sqlite, configuration: "Main", url: folder.file("main.sqlite"))
        do {
            _ = try PersistentContainer(model: contextModel, stores: [good, bad])
            Issue.record("loaded a store under a file")
        } catch {
            #expect(error.store == bad)
            #expect(error.underlying.storeURL == bad.url)
            #expect(error.description.contains("Logs") && error.description.contains("not-a-folder"))
        }
        let unknown = StoreDescription(type: .inMemory, configuration: "Nope")
        do {
            _ = try PersistentContainer(model: contextModel, stores: [unknown])
            Issue.record("loaded an unknown configuration")
        } catch {
            #expect(error.underlying.code == .unknownConfiguration)
        }
        // The good store was closed again, so it can be loaded by a new container.
        let container = try PersistentContainer(model: contextModel, stores: [good])
        #expect(container.coordinator.stores.count == 1)
    }

    @Test func backgroundContextsShareTheCoordinator() async throws {
        let folder = TemporaryDirectory()
        let container = try PersistentContainer(
            model: contextModel, stores: PersistentContainer.sqliteStores(for: contextModel, in: folder.url))
        let id = try await container.performBackgroundTask { context in
            let visit = try context.insert("Visit", values: ["path": .string("/x")])
            try context.save()
            return visit.objectID
        }
        #expect(try container.viewContext.object(with: id).string("path") == "/x")
        #expect(container.newBackgroundContext() !== container.viewContext)
    }
}
