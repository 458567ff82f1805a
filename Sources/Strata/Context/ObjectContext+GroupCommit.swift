import Dispatch

/// One child's changes waiting for the root's next group commit.
final class CommitTicket: @unchecked Sendable {
    // Safe to share: `pushed` and `expectations` are immutable; `error` is written by the
    // committing thread before `done` is signalled and read by the waiting thread after.
    let pushed: PushedChanges
    let expectations: [ObjectID: Int64]
    var error: ContextError?
    let done = DispatchSemaphore(value: 0)

    init(pushed: PushedChanges, expectations: [ObjectID: Int64]) {
        self.pushed = pushed
        self.expectations = expectations
    }
}

/// The queue of a root context's group commit.
struct CommitQueue {
    var waiting: [CommitTicket] = []
    var committing = false
}

extension ObjectContext {
    /// Saves a child of this root context into the stores as part of a group commit, and returns
    /// once the transaction holding its changes is durable.
    ///
    /// Children committed while a store transaction is in progress wait and are written together in
    /// the next one, so many concurrent writers share each commit (and its fsync). Each child's
    /// outcome is its own: when a group fails, its children are retried one by one, so one child's
    /// unique violation or stale version never fails another's save.
    /// - Parameters:
    ///   - child: a child of this context; its changes stay in place when the commit fails.
    ///   - expectations: versions the objects must still have when the commit happens (an HTTP
    ///     `If-Match`); a mismatch fails this child with `.conflict`.
    /// - Throws: ``ContextError``: `.validation`, `.conflict`, `.store`.
    public func commit(_ child: ObjectContext, expecting expectations: [ObjectID: Int64] = [:]) throws(ContextError) {
        precondition(parent == nil && child.parent === self, "commit(_:) takes a child of a root context")
        let pushed = try child.storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            try child.pushedChanges(&s)
        }
        let ticket = CommitTicket(pushed: pushed, expectations: expectations)
        let leads = commitQueue.withLock { queue -> Bool in
            queue.waiting.append(ticket)
            if queue.committing { return false }
            queue.committing = true
            return true
        }
        if leads {
            // This thread commits groups until nobody is waiting; its own ticket is in the first.
            while let group = commitQueue.withLock({ queue -> [CommitTicket]? in
                if queue.waiting.isEmpty {
                    queue.committing = false
                    return nil
                }
                defer { queue.waiting.removeAll() }
                return queue.waiting
            }) {
                let changes = commitGroup(group)
                for change in changes { notify(change) }
                for member in group where member !== ticket { member.done.signal() }
            }
        } else {
            ticket.done.wait()
        }
        if let error = ticket.error { throw error }
        child.storage.withLock { $0.clearPending() }
    }

    /// Writes a group: all together first, with the storage lock released while the stores
    /// write (children keep reading through this context meanwhile); if that fails, each member
    /// alone.
    private func commitGroup(_ group: [CommitTicket]) -> [ContextChanges] {
        let (ready, request) = storage.withLock { s -> ([CommitTicket], SaveRequest?) in
            var ready: [CommitTicket] = []
            for ticket in group {
                if let stale = staleExpectation(ticket, &s) { ticket.error = stale } else { ready.append(ticket) }
            }
            guard !ready.isEmpty else { return ([], nil) }
            do throws(ContextError) {
                for ticket in ready { try receive(ticket.pushed, &s) }
                let failures = try validationFailures(&s)
                if !failures.isEmpty { throw ContextError(.validation, "validation failed", failures: failures) }
                return (ready, try saveRequest(&s))
            } catch {
                rollback(&s)
                if ready.count == 1 { ready[0].error = error }
                return (ready.count == 1 ? [] : ready, nil)
            }
        }
        if let request {
            if request.inserts.isEmpty && request.updates.isEmpty && request.deletes.isEmpty {
                storage.withLock { $0.clearPending() }
                return []
            }
            do {
                let result = try coordinator.save(request)
                return storage.withLock { s in [finish(result, &s)] }
            } catch {
                storage.withLock { s in rollback(&s) }
                // A lone member's failure is its own, except a conflict: that is retried below,
                // where the merge policy resolves it as a plain save would.
                if ready.count == 1 && error.code != .conflict {
                    ready[0].error = Self.contextError(error)
                    return []
                }
            }
        }
        guard !ready.isEmpty else { return [] }
        // One by one, so each member's outcome is its own (merge policies apply here).
        return storage.withLock { s in
            var published: [ContextChanges] = []
            for ticket in ready {
                do throws(ContextError) {
                    if let stale = staleExpectation(ticket, &s) { throw stale }
                    try receive(ticket.pushed, &s)
                    if let changes = try saveToStores(&s) { published.append(changes) }
                } catch {
                    rollback(&s)
                    ticket.error = error
                }
            }
            return published
        }
    }

    static func contextError(_ error: StoreError) -> ContextError {
        if error.code == .conflict {
            return ContextError(
                .conflict,
                "objects changed in the store since they were read: "
                    + error.conflicts.map(\.description).joined(separator: "; "),
                conflicts: error.conflicts, storeError: error)
        }
        return ContextError(.store, error.message, storeError: error)
    }

    private func staleExpectation(_ ticket: CommitTicket, _ s: inout ContextStorage) -> ContextError? {
        var conflicts: [VersionConflict] = []
        for (id, expected) in ticket.expectations.sorted(by: { Self.tieOrder($0.key, $1.key) }) {
            let current = (try? loadState(id, &s))?.map(\.version)
            if current != expected {
                conflicts.append(VersionConflict(id: id, expectedVersion: expected, storedVersion: current ?? nil))
            }
        }
        guard !conflicts.isEmpty else { return nil }
        return ContextError(
            .conflict, "objects changed since they were read: " + conflicts.map(\.description).joined(separator: "; "),
            conflicts: conflicts)
    }
}
