import Foundation

/// What finishing interrupted saves across stores did.
public struct RecoveryReport: Sendable, Hashable, CustomStringConvertible {
    /// Saves that a crash had interrupted and that are now complete in every store.
    public var finishedSaves = 0
    /// For each store (UUID) that was missing parts of such saves, how many were written into it.
    public var repairedStores: [String: Int] = [:]
    /// Saves still waiting for a participant that is not attached (they finish when it is).
    public var waitingSaves = 0

    /// Whether there was nothing to recover.
    public var isEmpty: Bool { finishedSaves == 0 && repairedStores.isEmpty && waitingSaves == 0 }

    public var description: String {
        var text = "finished \(finishedSaves) interrupted save\(finishedSaves == 1 ? "" : "s") across stores"
        if !repairedStores.isEmpty {
            text +=
                " (missing parts written into "
                + repairedStores.sorted { $0.key < $1.key }.map { "store \($0.key): \($0.value)" }.joined(
                    separator: ", ") + ")"
        }
        if waitingSaves > 0 { text += "; \(waitingSaves) wait for stores that are not attached" }
        return text
    }

    mutating func merge(_ other: RecoveryReport) {
        finishedSaves += other.finishedSaves
        repairedStores.merge(other.repairedStores, uniquingKeysWith: +)
        waitingSaves = other.waitingSaves
    }
}

extension StoreCoordinator {
    /// Finishes every save across stores that a crash interrupted after its commit point
    /// committed (see ``SaveParticipation``), among the attached stores: each participant that
    /// lacks its part gets it written, oldest save first, then the record and the notes are
    /// forgotten. ``addStore(type:configuration:url:options:)`` and ``addStores(_:)`` run it
    /// after attaching; a save waiting for a store that is not attached finishes when it is.
    /// - Returns: what was recovered (also kept as ``lastRecovery``).
    /// - Throws: ``StoreError`` when a missing part cannot be written (the store is full, say, or
    ///   was written before the commit point's store was attached, so the part no longer fits).
    @discardableResult
    public func recoverInterruptedSaves() throws(StoreError) -> RecoveryReport {
        var report = RecoveryReport()
        var pending: [(holder: any PersistentStore, record: CrossStoreRecord)] = []
        for store in stores where store.isDurable {
            for record in try store.crossStoreRecords() { pending.append((store, record)) }
        }
        for (holder, record) in pending.sorted(by: { $0.record.sequence < $1.record.sequence }) {
            var complete = true
            var repaired = false
            var participants: [any PersistentStore] = []
            for (identifier, encoded) in record.parts.sorted(by: { $0.key < $1.key }) {
                guard let participant = store(withIdentifier: identifier) else {
                    complete = false
                    continue
                }
                participants.append(participant)
                if try participant.hasApplied(saveID: record.saveID) { continue }
                var changes = try StoreChanges(decoding: encoded, in: model, store: identifier)
                changes.participation = SaveParticipation(
                    saveID: record.saveID, commitPoint: holder.identifier, record: nil)
                do {
                    try participant.save(changes)
                } catch {
                    throw StoreError(
                        error.code,
                        "cannot finish the interrupted save \(record.saveID) recorded in store \(holder.identifier): \(error.message)",
                        storeURL: participant.url, underlying: error)
                }
                report.repairedStores[identifier, default: 0] += 1
                repaired = true
                try crashPoints.reach(.duringRecovery)
            }
            guard complete else {
                report.waitingSaves += 1
                continue
            }
            // The record first: while it exists, the marks are what say a participant has its part.
            var finished = StoreHousekeeping()
            finished.finishedRecords = [record.saveID]
            try holder.forget(finished)
            var released = StoreHousekeeping()
            released.releasedMarks = [record.saveID]
            for participant in participants { try participant.forget(released) }
            // A record whose save every participant had is only forgotten, not finished.
            if repaired { report.finishedSaves += 1 }
        }
        // Notes of saves whose records are gone (the crash came before the notes were forgotten).
        for store in stores where store.isDurable {
            var released = StoreHousekeeping()
            for applied in try store.appliedSaves() {
                guard let point = self.store(withIdentifier: applied.commitPoint),
                    try !point.crossStoreRecords().contains(where: { $0.saveID == applied.saveID })
                else { continue }
                released.releasedMarks.append(applied.saveID)
            }
            try store.forget(released)
        }
        lastRecoveryBox.withLock { $0.merge(report) }
        return report
    }

    /// What the recoveries of this coordinator's stores have finished so far.
    public var lastRecovery: RecoveryReport { lastRecoveryBox.withLock { $0 } }
}
