import Dispatch

/// One child's changes waiting for the root's next group commit.
final class CommitTicket: @unchecked Sendable {
    // Safe to share: `pushed`, `expectations`, `child` and `completion` are immutable; `error` is
    // written by the committing thread before `done` is signalled (or `completion` called) and
    // read by the waiting thread after.
    let pushed: PushedChanges
    let expectations: [ObjectID: Int64]
    var error: ContextError?
    let done = DispatchSemaphore(value: 0)
    /// For a commit nobody waits for: the child, whose changes are cleared once committed, and
    /// what to call with the outcome.
    let child: ObjectContext?
    let completion: (@Sendable (ContextError?) -> Void)?

    init(
        pushed: PushedChanges, expectations: [ObjectID: Int64], child: ObjectContext? = nil,
        completion: (@Sendable (ContextError?) -> Void)? = nil
    ) {
        self.pushed = pushed
        self.expectations = expectations
        self.child = child
        self.completion = completion
    }

    /// Tells the waiting thread, or the completion, that the ticket's commit is over.
    func finish() {
        guard let completion else {
            done.signal()
            return
        }
        if error == nil { child?.storage.withLock { $0.clearPending() } }
        completion(error)
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
        if enqueue(ticket) {
            commitGroups(leader: ticket)
        } else {
            ticket.done.wait()
        }
        if let error = ticket.error { throw error }
        child.storage.withLock { $0.clearPending() }
    }

    /// Saves a child of this root context into the stores as part of a group commit, like
    /// ``commit(_:expecting:)``, without waiting: `completion` gets the outcome (`nil` once the
    /// transaction holding the child's changes is durable) on the thread that committed it.
    ///
    /// When no commit is in progress, the group commit needs a thread to run on: `lead` gets a
    /// closure that commits groups until nobody is waiting, to run on a thread that may block
    /// (it writes to the stores). Validation failures are reported before this returns.
    /// - Parameters:
    ///   - child: a child of this context; its changes stay in place when the commit fails.
    ///   - expectations: versions the objects must still have when the commit happens.
    ///   - lead: runs the commit loop elsewhere, e.g. on a thread pool.
    ///   - completion: called once with the outcome, after the child's changes are cleared on
    ///     success.
    /// - Throws: ``ContextError`` with `.validation` when the child's changes are not valid
    ///   (`completion` is then never called).
    public func commit(
        _ child: ObjectContext, expecting expectations: [ObjectID: Int64] = [:],
        lead: (@escaping @Sendable () -> Void) -> Void, completion: @escaping @Sendable (ContextError?) -> Void
    ) throws(ContextError) {
        precondition(parent == nil && child.parent === self, "commit(_:) takes a child of a root context")
        let pushed = try child.storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            try child.pushedChanges(&s)
        }
        let ticket = CommitTicket(pushed: pushed, expectations: expectations, child: child, completion: completion)
        if enqueue(ticket) { lead { [self] in commitGroups(leader: nil) } }
    }

    /// Queues `ticket` for the next group; true when the caller must lead the commits.
    private func enqueue(_ ticket: CommitTicket) -> Bool {
        commitQueue.withLock { queue -> Bool in
            queue.waiting.append(ticket)
            if queue.committing { return false }
            queue.committing = true
            return true
        }
    }

    /// Commits groups until nobody is waiting, telling each member but `leader` its outcome.
    private func commitGroups(leader: CommitTicket?) {
        while let group = commitQueue.withLock({ queue -> [CommitTicket]? in
            if queue.waiting.isEmpty {
                queue.committing = false
                return nil
            }
            defer { queue.waiting.removeAll() }
            return queue.waiting
        }) {
            writeGate?.lock()
            let changes = commitGroup(group)
            writeGate?.unlock()
            for change in changes { notify(change) }
            for member in group where member !== leader { member.finish() }
        }
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
