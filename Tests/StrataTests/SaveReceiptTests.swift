import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Receipts kept with saves (``SaveReceipt``): written in the save's own transaction by the store
/// that decides it, with permanent IDs and committed versions; none for a save that fails or
/// writes nothing; one key never saved twice.
@Suite struct SaveReceiptTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqlite, postgresql
        var testDescription: String { rawValue }
        static var available: [Kind] { PostgreSQLTestServer.requirement.runs ? [.sqlite, .postgresql] : [.sqlite] }

        /// A coordinator over the three configurations of `CrossStoreSaveTests.model`, the
        /// `Orders` store of this kind, the others SQLite (`Gauges` in memory with `memoryGauges`).
        func coordinator(_ folder: TemporaryDirectory, memoryGauges: Bool = false) throws -> StoreCoordinator {
            let coordinator = StoreCoordinator(model: CrossStoreSaveTests.model)
            switch self {
            case .sqlite:
                try coordinator.addStore(type: .sqlite, configuration: "Orders", url: folder.file("orders.sqlite"))
            case .postgresql:
                try coordinator.addStore(
                    type: .postgresql, configuration: "Orders", url: try folder.postgreSQLURL(name: "orders"))
            }
            try coordinator.addStore(type: .sqlite, configuration: "Audits", url: folder.file("audits.sqlite"))
            if memoryGauges {
                try coordinator.addStore(type: .inMemory, configuration: "Gauges")
            } else {
                try coordinator.addStore(type: .sqlite, configuration: "Gauges", url: folder.file("gauges.sqlite"))
            }
            return coordinator
        }
    }

    static func receipt(_ key: String, _ objects: [ObjectID]) -> SaveReceipt {
        SaveReceipt(
            scope: "s", key: key, note: "note \(key)", objects: objects, expires: Date(timeIntervalSinceNow: 60))
    }

    @Test(arguments: Kind.available) func aReceiptKeepsPermanentIDsAndCommittedVersions(kind: Kind) throws {
        let folder = TemporaryDirectory()
        let coordinator = try kind.coordinator(folder)
        let root = ObjectContext(coordinator: coordinator)
        let order = try root.insert("Order", values: ["code": .string("o1")])
        let audit = try root.insert("Audit", values: ["code": .string("a1")])
        try root.save()
        // An insert, an update (version 2) and a delete, across two stores.
        let child = root.newChildContext()
        let gauge = try child.insert("Gauge", values: ["code": .string("g1")])
        let changed = try child.object(with: order.objectID)
        try changed.setValue(.string("o2"), forKey: "code")
        try child.delete(try child.object(with: audit.objectID))
        child.keepReceipt(Self.receipt("k", [gauge.objectID, order.objectID, audit.objectID]))
        try child.save()
        try root.save()
        let kept = try #require(try coordinator.receipt(scope: "s", key: "k"))
        #expect(kept.note == "note k")
        #expect(kept.objects.count == 3)
        #expect(kept.objects[0].id == gauge.objectID && !(kept.objects[0].id?.isTemporary ?? true))
        #expect(kept.objects[0].version == 1)
        #expect(kept.objects[1] == KeptReceipt.Object(id: order.objectID, version: 2))
        #expect(kept.objects[2] == KeptReceipt.Object(id: audit.objectID, version: nil))
        #expect(try coordinator.receipt(scope: "s", key: "other") == nil)
        #expect(try coordinator.receipt(scope: "other", key: "k") == nil)
        // Read by another coordinator over the same stores (a server after a restart).
        CrossStoreSaveTests.close(coordinator)
        let reopened = try kind.coordinator(folder)
        #expect(try reopened.receipt(scope: "s", key: "k") == kept)
    }

    @Test(arguments: Kind.available) func aFailedOrEmptySaveKeepsNoneAndAKeyIsSavedOnce(kind: Kind) throws {
        let folder = TemporaryDirectory()
        let coordinator = try kind.coordinator(folder)
        let root = ObjectContext(coordinator: coordinator)
        let order = try root.insert("Order", values: ["code": .string("o1")])
        try root.save()
        // A save that fails (a stale version) keeps no receipt.
        let stale = ObjectContext(coordinator: coordinator)
        let staleOrder = try stale.object(with: order.objectID)
        _ = try staleOrder.value(forKey: "code")
        try order.setValue(.string("o2"), forKey: "code")
        try root.save()
        try staleOrder.setValue(.string("o3"), forKey: "code")
        stale.keepReceipt(Self.receipt("failed", [order.objectID]))
        #expect(throws: ContextError.self) { try stale.save() }
        #expect(try coordinator.receipt(scope: "s", key: "failed") == nil)
        // A save that writes nothing keeps none, and forgets it.
        let idle = ObjectContext(coordinator: coordinator)
        idle.keepReceipt(Self.receipt("idle", []))
        try idle.save()
        _ = try idle.insert("Audit", values: ["code": .string("later")])
        try idle.save()
        #expect(try coordinator.receipt(scope: "s", key: "idle") == nil)
        // The same key again, for a save that writes the same store (as a second attempt of one
        // request does): the second save fails and changes nothing.
        let first = ObjectContext(coordinator: coordinator)
        _ = try first.insert("Order", values: ["code": .string("once")])
        first.keepReceipt(Self.receipt("once", []))
        try first.save()
        let second = ObjectContext(coordinator: coordinator)
        _ = try second.insert("Order", values: ["code": .string("twice")])
        _ = try second.insert("Order", values: ["code": .string("thrice")])
        second.keepReceipt(Self.receipt("once", []))
        let error = try #require(throws: ContextError.self) { try second.save() }
        #expect(error.storeError?.code == .uniqueViolation)
        let codes = try CrossStoreSaveTests.codes(coordinator)
        #expect(codes["Order"] == ["o2", "once"] && codes["Audit"] == ["later"])
    }

    @Test func aSaveWritingOnlyMemoryKeepsNone() throws {
        let folder = TemporaryDirectory()
        let coordinator = try Kind.sqlite.coordinator(folder, memoryGauges: true)
        let root = ObjectContext(coordinator: coordinator)
        let gauge = try root.insert("Gauge", values: ["code": .string("g")])
        root.keepReceipt(Self.receipt("memory", [gauge.objectID]))
        try root.save()
        #expect(try coordinator.receipt(scope: "s", key: "memory") == nil)
    }
}
