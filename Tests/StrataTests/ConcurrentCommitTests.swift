import Dispatch
import Foundation
import StrataTestSupport
import Testing

@testable import Strata

private let plainSaves = Locked(())

/// The ways a child's changes reach the stores.
enum SavePath: String, CaseIterable, CustomTestStringConvertible, Sendable {
    /// `root.commit(child)`, the group commit the server uses.
    case commit
    /// `child.save()` then `root.save()`.
    case plain

    var testDescription: String { rawValue }

    /// Saves `child` into the stores. The plain path saves the child and then the root as one step
    /// among threads (and rolls the root back when that fails), so each thread's outcome is its own;
    /// the children still read and change concurrently.
    func save(_ child: ObjectContext, into root: ObjectContext) throws {
        switch self {
        case .commit: try root.commit(child)
        case .plain:
            try plainSaves.withLock { _ in
                do {
                    try child.save()
                    try root.save()
                } catch {
                    root.rollback()
                    throw error
                }
            }
        }
    }
}

/// Concurrent children of one root: optimistic locking and delete rules hold whatever lands in
/// the same group commit.
@Suite struct ConcurrentCommitTests {
    /// Read-modify-write increments from several threads through `commit`: with the `.error`
    /// policy, or with expectations under any policy, every acknowledged save is one increment.
    @Test(arguments: [(MergePolicy.error, false), (.objectTrump, true), (.storeTrump, true), (.overwrite, true)])
    func incrementsThroughCommitAreNeverLost(policy: MergePolicy, expecting: Bool) throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder, mergePolicy: policy, durability: .normal)
        let author = try root.insert("Author", values: ["name": .string("Counter"), "rank": .integer(1)])
        let book = try root.insert("Book", values: ["title": .string("Counted"), "year": .integer(0)])
        try book.setObject(author, forKey: "author")
        try root.save()
        let id = book.objectID
        let acknowledged = Locked(0)
        let unexpected = Locked<[String]>([])
        let perThread = 50 * stressFactor
        onThreads(4) { _ in
            var done = 0
            var attempts = 0
            while done < perThread && attempts < perThread * 100 {
                attempts += 1
                let child = root.newChildContext()
                do {
                    let object = try child.object(with: id)
                    guard case .integer(let year) = try object.value(forKey: "year") else { return }
                    try object.setValue(.integer(year + 1), forKey: "year")
                    try root.commit(child, expecting: expecting ? [id: object.version] : [:])
                    done += 1
                    acknowledged.withLock { $0 += 1 }
                } catch let error as ContextError where error.code == .conflict {
                    continue
                } catch {
                    unexpected.withLock { $0.append("\(error)") }
                    return
                }
            }
        }
        #expect(unexpected.current.isEmpty, "\(unexpected.current.prefix(3))")
        let stored = try #require(try root.coordinator.row(for: id))
        #expect(acknowledged.current == 4 * perThread)
        #expect(stored.attributes["year"] == .integer(Int64(acknowledged.current)), "acknowledged increments were lost")
        #expect(stored.version == Int64(1 + acknowledged.current))
    }

    /// Two children change the same object at once, many times over: exactly one of them wins
    /// each round under `.error` (and with expectations), and the version moves one step per win.
    @Test(arguments: [MergePolicy.error, .objectTrump])
    func twoChildrenOnOneObjectHaveOneWinner(policy: MergePolicy) throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder, mergePolicy: policy, durability: .normal)
        let author = try root.insert("Author", values: ["name": .string("Contested"), "rank": .integer(1)])
        try root.save()
        let id = author.objectID
        for round in 0..<(100 * stressFactor) {
            let children = [root.newChildContext(), root.newChildContext()]
            var versions: [Int64] = []
            for (index, child) in children.enumerated() {
                let object = try child.object(with: id)
                versions.append(object.version)
                try object.setValue(.string("r\(round)c\(index)"), forKey: "name")
            }
            let wins = Locked(0)
            let read = versions
            onThreads(2) { index in
                let expecting = policy == .error ? [:] : [id: read[index]]
                if (try? root.commit(children[index], expecting: expecting)) != nil { wins.withLock { $0 += 1 } }
            }
            #expect(wins.current == 1, "round \(round): \(wins.current) winners")
            #expect(try root.coordinator.row(for: id)?.version == Int64(2 + round))
        }
    }

    /// Two children change one author at once, many times over, under each merge policy: A sets
    /// the name and the rank, B only the rank. Whichever commits second meets the policy, and the
    /// result is always what one of the two orders gives when run one after the other.
    @Test(arguments: MergePolicy.allCases)
    func mergePoliciesHoldInOneGroup(policy: MergePolicy) throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder, mergePolicy: policy, durability: .normal)
        let author = try root.insert("Author", values: ["name": .string("Base"), "rank": .integer(1)])
        try root.save()
        let id = author.objectID
        for round in 0..<(60 * stressFactor) {
            let base = try #require(try root.coordinator.row(for: id))
            guard case .string(let baseName)? = base.attributes["name"],
                case .integer(let baseRank)? = base.attributes["rank"]
            else {
                Issue.record("no base values")
                return
            }
            let a = root.newChildContext()
            let b = root.newChildContext()
            try a.object(with: id).setValue(.string("A\(round)"), forKey: "name")
            try a.object(with: id).setValue(.integer(baseRank == 2 ? 4 : 2), forKey: "rank")
            try b.object(with: id).setValue(.integer(baseRank == 3 ? 5 : 3), forKey: "rank")
            let aRank: Int64 = baseRank == 2 ? 4 : 2
            let bRank: Int64 = baseRank == 3 ? 5 : 3
            onThreads(2) { index in _ = try? root.commit(index == 0 ? a : b) }
            let stored = try #require(try root.coordinator.row(for: id))
            let result = (stored.attributes["name"] ?? .null, stored.attributes["rank"] ?? .null)
            // (name, rank) after one order and after the other. Children of one root share its view:
            // what a commit saved is what the root holds, so `storeTrump` and `overwrite` keep the
            // first commit's name like `objectTrump` does.
            let serial: [(AttributeValue, AttributeValue)]
            switch policy {
            case .error: serial = [(.string("A\(round)"), .integer(aRank)), (.string(baseName), .integer(bRank))]
            case .objectTrump:
                serial = [(.string("A\(round)"), .integer(bRank)), (.string("A\(round)"), .integer(aRank))]
            case .storeTrump:
                serial = [(.string("A\(round)"), .integer(aRank)), (.string("A\(round)"), .integer(bRank))]
            // The root's whole object, which already holds what the first commit saved.
            case .overwrite:
                serial = [(.string("A\(round)"), .integer(bRank)), (.string("A\(round)"), .integer(aRank))]
            case .rollback: serial = [(.string("A\(round)"), .integer(aRank)), (.string(baseName), .integer(bRank))]
            }
            #expect(serial.contains { $0 == result }, "round \(round) under \(policy): \(result)")
        }
    }

    /// Two threads insert books of an author while a third deletes the author (cascade), through
    /// both save paths: no book ever names a missing author.
    @Test(arguments: SavePath.allCases)
    func cascadeAgainstInserts(path: SavePath) throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder, mergePolicy: .objectTrump, durability: .normal)
        let unexpected = Locked<[String]>([])
        var violations: [String] = []
        for round in 0..<(200 * stressFactor) {
            let author = try root.insert("Author", values: ["name": .string("D\(round)")])
            try root.save()
            let authorID = author.objectID
            // Each thread's outcome, and the permanent ID of each acknowledged book.
            let outcomes = Locked<[Int: String]>([:])
            let books = Locked<[Int: ObjectID]>([:])
            onThreads(3) { thread in
                let child = root.newChildContext()
                do {
                    var book: ManagedObject?
                    if thread == 2 {
                        try child.delete(try child.object(with: authorID))
                    } else {
                        book = try child.insert("Book", values: ["title": .string("b\(round)-\(thread)")])
                        try book?.setObject(try child.object(with: authorID), forKey: "author")
                    }
                    try path.save(child, into: root)
                    if let book {
                        let id = root.permanentID(for: book.objectID)
                        books.withLock { $0[thread] = id }
                    }
                    outcomes.withLock { $0[thread] = "ok" }
                } catch let error as ContextError where [.missingReference, .notFound].contains(error.code) {
                    // The author was deleted first.
                    outcomes.withLock { $0[thread] = error.code.rawValue }
                } catch {
                    outcomes.withLock { $0[thread] = "\(error)" }
                    unexpected.withLock { $0.append("\(error)") }
                }
            }
            // Checked as the round ends, so a failure names its round and what each thread saw:
            // the delete went through (only it deletes the author), and every acknowledged book
            // either went with the author or was never stored.
            let seen = (0..<3).map { outcomes.current[$0] ?? "-" }.joined(separator: "/")
            if try root.coordinator.row(for: authorID) != nil {
                violations.append("round \(round) (\(seen)): the author survived")
            }
            for (thread, id) in books.current {
                if let row = try root.coordinator.row(for: id) {
                    violations.append(
                        "round \(round) (\(seen)): book of thread \(thread) survived, author \(String(describing: row.toOne["author"] ?? nil))"
                    )
                }
            }
        }
        #expect(unexpected.current.isEmpty, "\(unexpected.current.prefix(3))")
        #expect(violations.isEmpty, "\(violations.prefix(5))")
        #expect(try dangling(root).isEmpty)
        let survivors = try root.coordinator.fetch(FetchRequest(entityName: "Book")).map {
            "\($0.attributes["title"] ?? .null) author \(String(describing: $0.toOne["author"] ?? nil))"
        }
        let authors = try root.coordinator.count(FetchRequest(entityName: "Author"))
        #expect(survivors.isEmpty && authors == 0, "\(authors) authors; books \(survivors.prefix(5))")
    }

    /// One thread links a pet to an owner while another deletes the owner (`Owner.pets` is deny):
    /// exactly one succeeds, and an acknowledged link stands.
    @Test(arguments: SavePath.allCases)
    func denyAgainstLinks(path: SavePath) throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder, mergePolicy: .objectTrump, durability: .normal)
        var outcomes: [String: Int] = [:]
        for round in 0..<(200 * stressFactor) {
            let owner = try root.insert("Owner", values: ["name": .string("O\(round)")])
            try root.save()
            let ownerID = owner.objectID
            let results = Locked<[Int: String]>([:])
            let pet = Locked<ObjectID?>(nil)
            onThreads(2) { thread in
                let child = root.newChildContext()
                do {
                    if thread == 1 {
                        try child.delete(try child.object(with: ownerID))
                    } else {
                        let new = try child.insert("Pet", values: ["name": .string("p\(round)")])
                        try new.setObject(try child.object(with: ownerID), forKey: "owner")
                        try path.save(child, into: root)
                        pet.withLock { $0 = root.permanentID(for: new.objectID) }
                        results.withLock { $0[0] = "ok" }
                        return
                    }
                    try path.save(child, into: root)
                    results.withLock { $0[thread] = "ok" }
                } catch let error as ContextError {
                    let rule = error.failures.first?.rule.rawValue ?? error.code.rawValue
                    results.withLock { $0[thread] = rule }
                } catch {
                    results.withLock { $0[thread] = "\(error)" }
                }
            }
            let outcome = "\(results.current[0] ?? "-")/\(results.current[1] ?? "-")"
            outcomes[outcome, default: 0] += 1
            if results.current[0] == "ok", let id = pet.current {
                #expect(try root.coordinator.row(for: id)?.toOne["owner"] == .some(ownerID), "round \(round)")
                #expect(try root.coordinator.row(for: ownerID) != nil, "round \(round): a denied delete went through")
            }
        }
        #expect(outcomes.keys.allSatisfy { ["ok/deny", "reference/ok", "notFound/ok"].contains($0) }, "\(outcomes)")
        #expect(try dangling(root).isEmpty)
    }

    /// References in the stores that name missing objects.
    func dangling(_ root: ObjectContext) throws -> [String] {
        var problems: [String] = []
        for entity in ["Book", "Pet"] {
            for row in try root.coordinator.fetch(FetchRequest(entityName: entity)) {
                for (name, target) in row.toOne {
                    if let target = target ?? nil, try root.coordinator.row(for: target) == nil {
                        problems.append("\(row.id).\(name) names missing \(target)")
                    }
                }
            }
        }
        return problems
    }
}
