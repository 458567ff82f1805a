import Dispatch
import Foundation
import StrataTestSupport
import Testing

@testable import Strata

@Suite struct ConcurrencyTests {
    /// 8 threads, each making 1,000 child-context saves into one root: every save inserts a book,
    /// links it to one of 16 authors shared by all threads, and updates that author, with the
    /// objectTrump policy.
    @Test func manyThreadsSavingChildrenIntoOneRoot() throws {
        let folder = TemporaryDirectory()
        let root = try StackKind.explicit.make(folder, mergePolicy: .objectTrump, durability: .normal)
        let authors = try (0..<16).map {
            try root.insert("Author", values: ["name": .string("Shared \($0)"), "rank": .integer(1)])
        }
        try root.save()
        let sharedIDs = authors.map(\.objectID)
        let threads = 8
        let saves = 1_000
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<saves {
                do {
                    let child = root.newChildContext()
                    let author = try child.object(with: sharedIDs[(thread * saves + index) % sharedIDs.count])
                    let book = try child.insert(
                        "Book", values: ["title": .string("t\(thread)-\(index)"), "year": .integer(Int64(index))])
                    try book.setObject(author, forKey: "author")
                    try author.setValue(.string("t\(thread)@x.y"), forKey: "email")
                    try author.setValue(.integer(Int64(1 + (thread + index) % 10)), forKey: "rank")
                    try child.save()
                    try root.save()
                } catch {
                    failures.withLock { $0.append("\(thread)/\(index): \(error)") }
                }
            }
        }
        #expect(failures.current.isEmpty, "\(failures.current.prefix(3))")
        #expect(!root.hasChanges)
        let total = threads * saves
        #expect(try root.coordinator.count(FetchRequest(entityName: "Book")) == total)
        for id in sharedIDs {
            #expect(try root.coordinator.relatedIDs(of: id, relationship: "books").count == total / sharedIDs.count)
            #expect(try root.object(with: id).objectIDs(forKey: "books").count == total / sharedIDs.count)
        }
        let titles = Set(
            try root.coordinator.fetch(FetchRequest(entityName: "Book")).compactMap { row -> String? in
                if case .string(let s) = row.attributes["title"] { s } else { nil }
            })
        #expect(titles.count == total)
        let stored = try #require(try root.coordinator.row(for: sharedIDs[0]))
        #expect(stored.version > 1)
        #expect(stored.attributes["email"]?.json.stringValue?.hasSuffix("@x.y") == true)
    }
}
