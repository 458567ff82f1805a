import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The points of a save across stores and of its recovery where the crash tests stop the process.
enum CrashPoint: String, Sendable, CaseIterable {
    /// After the commit point committed (the save has happened), before any other participant.
    case afterCommitPoint = "after-commit-point"
    /// After a participant other than the commit point committed, before the next one.
    case betweenCommits = "between-commits"
    /// While recovering: after one participant's missing part was written, before the next.
    case duringRecovery = "during-recovery"
    /// In a migration of several stores: after the first store's migration committed.
    case betweenMigrationCommits = "between-migration-commits"
}

/// The crash tests' hook into a coordinator. Tests of the library set ``stop`` (the save then
/// throws a store error over ``SimulatedCrash``); in debug builds `STRATA_CRASH_AT=<point>[:<n>]` kills the process
/// with SIGKILL the n-th time (default 1) it reaches the point, for the crash harness. Release
/// builds never read the variable.
final class CrashPoints: Sendable {
    /// Whether to stop at a point; nil: never.
    let stop = Locked<(@Sendable (CrashPoint) -> Bool)?>(nil)
    #if DEBUG
        private let environment: (point: CrashPoint, remaining: Locked<Int>)? = {
            guard let value = ProcessInfo.processInfo.environment["STRATA_CRASH_AT"] else { return nil }
            let parts = value.split(separator: ":")
            guard let first = parts.first, let point = CrashPoint(rawValue: String(first)) else { return nil }
            let count = parts.count > 1 ? Int(parts[1]) ?? 1 : 1
            return (point, Locked(count))
        }()
    #endif

    /// Throws a store error over ``SimulatedCrash`` (or, in a debug build told so by the environment, kills the
    /// process) at `point`.
    func reach(_ point: CrashPoint) throws(StoreError) {
        #if DEBUG
            if let environment, environment.point == point,
                environment.remaining.withLock({ remaining -> Bool in
                    remaining -= 1
                    return remaining == 0
                })
            {
                kill(getpid(), SIGKILL)
            }
        #endif
        if let stop = stop.withLock({ $0 }), stop(point) {
            throw StoreError(.io, "simulated crash \(point.rawValue)", underlying: SimulatedCrash(point: point))
        }
    }
}

/// A save stopped at a ``CrashPoint`` by a test, as the underlying error of the store error it
/// throws: the stores are left as a crash there leaves them (what was committed stays, the rest
/// is rolled back, as SQLite does with an open transaction when the process dies).
struct SimulatedCrash: Error, Sendable {
    var point: CrashPoint
}

/// What a coordinator may tell stores to forget of saves across stores that are finished.
struct CrossStoreNotes {
    /// Per commit point (store UUID): finished saves and their other participants.
    var finished: [String: [String: [String]]] = [:]
    /// Per participant (store UUID): saves whose records are gone from their commit points.
    var released: [String: Set<String>] = [:]

    /// Takes what `store` may forget in its next write.
    mutating func take(for store: String) -> (StoreHousekeeping, [String: [String]]) {
        var housekeeping = StoreHousekeeping()
        let records = finished.removeValue(forKey: store) ?? [:]
        housekeeping.finishedRecords = records.keys.sorted()
        housekeeping.releasedMarks = (released.removeValue(forKey: store) ?? []).sorted()
        return (housekeeping, records)
    }

    /// Gives back what a failed write of `store` took.
    mutating func giveBack(_ housekeeping: StoreHousekeeping, records: [String: [String]], for store: String) {
        finished[store, default: [:]].merge(records) { current, _ in current }
        released[store, default: []].formUnion(housekeeping.releasedMarks)
    }

    /// After a write that forgot `records` committed: their participants may forget their marks.
    mutating func forgot(_ records: [String: [String]]) {
        for (save, participants) in records {
            for participant in participants { released[participant, default: []].insert(save) }
        }
    }
}
