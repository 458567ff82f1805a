import Dispatch
import Foundation
import StrataTestSupport
import Testing

@testable import Strata

@Suite struct GroupCommitTests {
    /// Concurrent children committed through one root: each child's outcome is its own, even when
    /// it shares a transaction with children that fail.
    @Test(arguments: [StackKind.explicit, StackKind.memory])
    func concurrentCommitsIsolateFailures(stack: StackKind) throws {
        let folder = TemporaryDirectory()
        let root = try stack.make(folder, durability: .normal)
        try root.insert("Tag", values: ["name": .string("taken")])
        let author = try root.insert("Author", values: ["name": .string("A"), "rank": .integer(1)])
        try root.save()
        let authorID = author.objectID
        let threads = 8
        let commits = 150
        let outcomes = Locked<[String: Int]>([:])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<commits {
                let child = root.newChildContext()
                do throws(ContextError) {
                    let duplicate = index % 10 == 0
                    try child.insert("Tag", values: ["name": .string(duplicate ? "taken" : "t\(thread)-\(index)")])
                    let book = try child.insert("Book", values: ["title": .string("b\(thread)-\(index)")])
                    try book.setObject(try child.object(with: authorID), forKey: "author")
                    try root.commit(child)
                    outcomes.withLock { $0["ok", default: 0] += 1 }
                } catch {
                    let code = error.storeError?.code.rawValue ?? error.code.rawValue
                    outcomes.withLock { $0[code, default: 0] += 1 }
                    #expect(child.hasChanges)
                }
            }
        }
        let duplicates = threads * commits / 10
        #expect(outcomes.current == ["ok": threads * commits - duplicates, "uniqueViolation": duplicates])
        #expect(!root.hasChanges)
        #expect(try root.coordinator.count(FetchRequest(entityName: "Tag")) == 1 + threads * commits - duplicates)
        #expect(try root.coordinator.count(FetchRequest(entityName: "Book")) == threads * commits - duplicates)
        #expect(
            try root.coordinator.relatedIDs(of: authorID, relationship: "books").count == threads * commits - duplicates
        )
    }

    @Test func expectationsFailOnlyTheirOwnChild() throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder)
        let author = try root.insert("Author", values: ["name": .string("A")])
        try root.save()
        let child = root.newChildContext()
        try child.object(with: author.objectID).setValue(.string("B"), forKey: "name")
        do {
            try root.commit(child, expecting: [author.objectID: 7])
            Issue.record("a stale expectation was committed")
        } catch {
            #expect(error.code == .conflict)
            #expect(error.conflicts == [VersionConflict(id: author.objectID, expectedVersion: 7, storedVersion: 1)])
        }
        try root.commit(child, expecting: [author.objectID: 1])
        let reader = ObjectContext(coordinator: root.coordinator)
        #expect(try reader.object(with: author.objectID).string("name") == "B")
    }

    /// A lone child whose object changed in the store since it read it is resolved by the root's
    /// merge policy, as a plain save is, rather than failed.
    @Test func aLoneStaleChildMeetsTheMergePolicy() throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder)
        root.mergePolicy = .objectTrump
        let author = try root.insert("Author", values: ["name": .string("A"), "rank": .integer(1)])
        try root.save()
        let child = root.newChildContext()
        try child.object(with: author.objectID).setValue(.string("B"), forKey: "name")
        // Another writer changes the object underneath both contexts.
        let other = ObjectContext(coordinator: root.coordinator)
        try other.object(with: author.objectID).setValue(.integer(2), forKey: "rank")
        try other.save()
        try root.commit(child)
        let reader = ObjectContext(coordinator: root.coordinator)
        let stored = try reader.object(with: author.objectID)
        #expect(stored.string("name") == "B")
        #expect(stored.integer("rank") == 2)
        #expect(stored.version == 3)
    }

    /// Commits that nobody waits for: each completion gets its own outcome once, the group runs on
    /// the thread `lead` provides, and invalid changes are refused before anything is queued.
    @Test func commitsWithoutWaitingReportEachOutcomeOnce() throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder, durability: .normal)
        try root.insert("Tag", values: ["name": .string("taken")])
        try root.save()
        let outcomes = Locked<[String: Int]>([:])
        let leaders = Locked(0)
        let finished = DispatchGroup()
        let commits = 200
        DispatchQueue.concurrentPerform(iterations: commits) { index in
            let child = root.newChildContext()
            do throws(ContextError) {
                try child.insert("Tag", values: ["name": .string(index % 20 == 0 ? "taken" : "tag \(index)")])
                finished.enter()
                try root.commit(
                    child,
                    lead: { job in
                        leaders.withLock { $0 += 1 }
                        Thread.detachNewThread { job() }
                    },
                    completion: { result in
                        let error: ContextError?
                        if case .failure(let failure) = result { error = failure } else { error = nil }
                        let outcome = error?.storeError?.code.rawValue ?? error?.code.rawValue ?? "ok"
                        outcomes.withLock { $0[outcome, default: 0] += 1 }
                        // Committed changes are cleared; a failed child keeps its changes.
                        #expect(child.hasChanges == (error != nil))
                        finished.leave()
                    })
            } catch {
                Issue.record("\(error)")
                finished.leave()
            }
        }
        #expect(finished.wait(timeout: .now() + 60) == .success)
        #expect(outcomes.current == ["ok": commits - commits / 20, "uniqueViolation": commits / 20])
        #expect(leaders.current >= 1 && leaders.current <= commits)
        #expect(try root.coordinator.count(FetchRequest(entityName: "Tag")) == 1 + commits - commits / 20)

        let invalid = root.newChildContext()
        try invalid.insert("Author", values: ["name": .string("A"), "rank": .integer(99)])
        do {
            try root.commit(invalid, lead: { _ in Issue.record("an invalid child started a commit") }) { _ in
                Issue.record("an invalid child was queued")
            }
            Issue.record("an invalid child was accepted")
        } catch {
            #expect(error.code == .validation)
        }
    }

    /// Writes made straight into the root, and plain child saves into it, while group commits run
    /// on other threads: every object is written exactly once.
    @Test func rootWritesBesideGroupCommitsAreNeitherLostNorDoubled() throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder, durability: .normal)
        let rounds = 300
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for index in 0..<rounds {
                do throws(ContextError) {
                    switch worker {
                    case 0:
                        try root.insert("Tag", values: ["name": .string("root \(index)")])
                        if index % 3 == 2 { try root.save() }
                    case 1:
                        let child = root.newChildContext()
                        try child.insert("Tag", values: ["name": .string("saved \(index)")])
                        try child.save()
                    default:
                        let child = root.newChildContext()
                        try child.insert("Tag", values: ["name": .string("committed \(worker) \(index)")])
                        try root.commit(child)
                    }
                } catch {
                    Issue.record("\(error)")
                }
            }
        }
        try root.save()
        #expect(!root.hasChanges)
        let names = try root.coordinator.fetch(FetchRequest(entityName: "Tag")).compactMap { row -> String? in
            if case .string(let name) = row.attributes["name"] { return name }
            return nil
        }
        #expect(names.count == 4 * rounds)
        #expect(Set(names).count == names.count)
    }
}
