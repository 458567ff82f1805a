import Dispatch

/// One child's changes waiting for the root's next group commit.
final class CommitTicket: @unchecked Sendable {
    // Safe to share: `pushed`, `expectations`, `claims`, `child` and `completion` are immutable;
    // `error` is written by the committing thread before `done` is signalled (or `completion`
    // called) and read by the waiting thread after.
    let pushed: PushedChanges
    let expectations: [ObjectID: Int64]
    /// The existing objects the changes write, delete or link to: a group holds no two tickets
    /// whose claims collide (see ``CommitClaims``).
    let claims: CommitClaims
    /// Objects whose states as committed the caller wants back, and those states once committed.
    let keeping: [ObjectID]
    var snapshots: [ObjectID: StoreRow] = [:]
    /// The history token of the transaction that saved the ticket's changes.
    var historyToken: HistoryToken?
    var error: ContextError?
    let done = DispatchSemaphore(value: 0)
    /// For a commit nobody waits for: the child, whose changes are cleared once committed, and
    /// what to call with the outcome.
    let child: ObjectContext?
    let completion: (@Sendable (Result<[ObjectID: StoreRow], ContextError>) -> Void)?

    init(
        pushed: PushedChanges, expectations: [ObjectID: Int64], claims: CommitClaims, keeping: [ObjectID] = [],
        child: ObjectContext? = nil, completion: (@Sendable (Result<[ObjectID: StoreRow], ContextError>) -> Void)? = nil
    ) {
        self.pushed = pushed
        self.expectations = expectations
        self.claims = claims
        self.keeping = keeping
        self.child = child
        self.completion = completion
    }

    /// Tells the waiting thread, or the completion, that the ticket's commit is over.
    func finish() {
        guard let completion else {
            done.signal()
            return
        }
        if let error {
            completion(.failure(error))
            return
        }
        child?.storage.withLock { $0.clearPending() }
        child?.savedHistoryToken = historyToken
        completion(.success(snapshots))
    }
}

/// The existing objects one child's changes touch, by how they touch them.
///
/// A group commit writes its members in one transaction, merged into the root; two members that
/// change the same object would be merged into one version step, so a write that named a version
/// (`If-Match`) or that the merge policy would have refused could succeed beside a write that
/// already replaced that version. So a group never holds two members whose claims collide: the
/// later one waits for the next group, where it meets the version the earlier one left (and its
/// expectations, or the merge policy, decide). Links collide only with deletes: a save that links
/// to an object deleted by an earlier member meets the deletion, and a delete meets the links.
struct CommitClaims: Sendable {
    /// Objects whose stored row the changes write (attributes, to-one references, join-table
    /// lists under the `.error` policy) or whose version they expect.
    var written: Set<ObjectID> = []
    /// Objects the changes delete.
    var deleted: Set<ObjectID> = []
    /// Objects the changes refer to, or change only through inverse lists that merge.
    var linked: Set<ObjectID> = []

    var isEmpty: Bool { written.isEmpty && deleted.isEmpty && linked.isEmpty }

    /// Whether a member with `other`'s claims must wait for one with these.
    func collides(with other: CommitClaims) -> Bool {
        !written.isDisjoint(with: other.written) || !written.isDisjoint(with: other.deleted)
            || !deleted.isDisjoint(with: other.written) || !deleted.isDisjoint(with: other.deleted)
            || !deleted.isDisjoint(with: other.linked) || !linked.isDisjoint(with: other.deleted)
    }

    mutating func formUnion(_ other: CommitClaims) {
        written.formUnion(other.written)
        deleted.formUnion(other.deleted)
        linked.formUnion(other.linked)
    }
}

/// The queue of a root context's group commit.
struct CommitQueue {
    var waiting: [CommitTicket] = []
    var committing = false

    /// Takes the next group: every waiting ticket whose claims collide with no ticket ahead of
    /// it (taken or left waiting), in order. The first ticket is always taken.
    mutating func takeGroup() -> [CommitTicket] {
        if waiting.count == 1 || waiting.allSatisfy({ $0.claims.isEmpty }) {
            defer { waiting.removeAll() }
            return waiting
        }
        var taken: [CommitTicket] = []
        var left: [CommitTicket] = []
        var ahead = CommitClaims()
        for ticket in waiting {
            if ticket.claims.isEmpty || !ahead.collides(with: ticket.claims) {
                taken.append(ticket)
            } else {
                left.append(ticket)
            }
            ahead.formUnion(ticket.claims)
        }
        waiting = left
        return taken
    }
}

extension ObjectContext {
    /// Saves a child of this root context into the stores as part of a group commit, and returns
    /// once the transaction holding its changes is durable.
    ///
    /// Children committed while a store transaction is in progress wait and are written together in
    /// the next one, so many concurrent writers share each commit (and its fsync). Each child's
    /// outcome is its own: when a group fails, its children are retried one by one, so one child's
    /// unique violation or stale version never fails another's save.
    ///
    /// A commit is serializable with every other: two children that change (or expect a version
    /// of) the same object never share a group, so the later one meets the version the earlier
    /// one left, and its expectations, or the merge policy, decide.
    /// - Parameters:
    ///   - child: a child of this context; its changes stay in place when the commit fails.
    ///   - expectations: versions the objects must still have when the commit happens (an HTTP
    ///     `If-Match`); a mismatch fails this child with `.conflict`, whatever the merge policy.
    ///   - keeping: objects (by the child's IDs) whose states exactly as this commit saved them to
    ///     return (later commits may already have changed the stored ones).
    /// - Returns: the saved states of the objects in `keeping`, keyed by the IDs given.
    /// - Throws: ``ContextError``: `.validation`, `.conflict`, `.missingReference`, `.notFound`,
    ///   `.store`.
    @discardableResult
    public func commit(
        _ child: ObjectContext, expecting expectations: [ObjectID: Int64] = [:], keeping: [ObjectID] = []
    ) throws(ContextError) -> [ObjectID: StoreRow] {
        precondition(parent == nil && child.parent === self, "commit(_:) takes a child of a root context")
        let pushed = try child.storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            try child.pushedChanges(&s)
        }
        let ticket = CommitTicket(
            pushed: pushed, expectations: expectations, claims: claims(pushed, expectations), keeping: keeping)
        if enqueue(ticket) {
            commitGroups(leader: ticket)
        } else {
            ticket.done.wait()
        }
        if let error = ticket.error { throw error }
        child.storage.withLock { $0.clearPending() }
        child.savedHistoryToken = ticket.historyToken
        return ticket.snapshots
    }

    /// Saves a child of this root context into the stores as part of a group commit, like
    /// ``commit(_:expecting:keeping:)``, without waiting: `completion` gets the outcome (`nil` once the
    /// transaction holding the child's changes is durable) on the thread that committed it.
    ///
    /// When no commit is in progress, the group commit needs a thread to run on: `lead` gets a
    /// closure that commits groups until nobody is waiting, to run on a thread that may block
    /// (it writes to the stores). Validation failures are reported before this returns.
    /// - Parameters:
    ///   - child: a child of this context; its changes stay in place when the commit fails.
    ///   - expectations: versions the objects must still have when the commit happens.
    ///   - keeping: objects whose states as this commit saved them `completion` gets.
    ///   - lead: runs the commit loop elsewhere, e.g. on a thread pool.
    ///   - completion: called once with the outcome (the saved states of `keeping`, or the error),
    ///     after the child's changes are cleared on success.
    /// - Throws: ``ContextError`` with `.validation` when the child's changes are not valid
    ///   (`completion` is then never called).
    public func commit(
        _ child: ObjectContext, expecting expectations: [ObjectID: Int64] = [:], keeping: [ObjectID] = [],
        lead: (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (Result<[ObjectID: StoreRow], ContextError>) -> Void
    ) throws(ContextError) {
        precondition(parent == nil && child.parent === self, "commit(_:) takes a child of a root context")
        let pushed = try child.storage.withLock { (s: inout ContextStorage) throws(ContextError) in
            try child.pushedChanges(&s)
        }
        let ticket = CommitTicket(
            pushed: pushed, expectations: expectations, claims: claims(pushed, expectations), keeping: keeping,
            child: child, completion: completion)
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
            return queue.takeGroup()
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
                try computeDerived(&s)
                let failures = try validationFailures(&s)
                if !failures.isEmpty { throw ContextError(.validation, "validation failed", failures: failures) }
                let request = try saveRequest(&s)
                s.staging = true
                return (ready, request)
            } catch {
                rollback(&s)
                if ready.count == 1 { ready[0].error = error }
                return (ready.count == 1 ? [] : ready, nil)
            }
        }
        if var request {
            // Conflicts the merge policy resolves are resolved in the group, which is written again;
            // versions a member expects are never resolved away.
            let strict = Set(ready.flatMap { $0.expectations.keys.map(registry.canonical) })
            var attempts = 0
            while true {
                attempts += 1
                if request.inserts.isEmpty && request.updates.isEmpty && request.deletes.isEmpty {
                    storage.withLock { s in
                        s.staging = false
                        s.clearPending()
                    }
                    return []
                }
                let failure: StoreError
                do {
                    let result = try coordinator.save(request)
                    return storage.withLock { s in
                        s.staging = false
                        var snapshots: [ObjectID: StoreRow] = [:]
                        let changes = finish(result, &s, keeping: ready.flatMap(\.keeping), into: &snapshots)
                        for ticket in ready { ticket.historyToken = result.historyToken }
                        if !snapshots.isEmpty {
                            for ticket in ready {
                                for id in ticket.keeping { ticket.snapshots[id] = snapshots[id] }
                            }
                        }
                        return [changes]
                    }
                } catch {
                    failure = error
                }
                let retry = storage.withLock { s -> SaveRequest? in
                    if failure.code == .conflict, s.mergePolicy != .error, attempts < 10,
                        !failure.conflicts.contains(where: { strict.contains($0.id) })
                    {
                        do throws(ContextError) {
                            try resolve(failure.conflicts, &s)
                            return try saveRequest(&s)
                        } catch {}
                    }
                    s.staging = false
                    rollback(&s)
                    return nil
                }
                if let retry {
                    request = retry
                    continue
                }
                // A lone member's failure is its own, except a conflict: that is retried below,
                // where the merge policy or its expectations decide as for a plain save.
                if ready.count == 1 && failure.code != .conflict {
                    ready[0].error = Self.contextError(failure)
                    return []
                }
                break
            }
        }
        guard !ready.isEmpty else { return [] }
        return commitOneByOne(ready)
    }

    /// Writes the members of a group that failed together one by one, so each member's outcome
    /// is its own (merge policies apply here).
    private func commitOneByOne(_ ready: [CommitTicket]) -> [ContextChanges] {
        storage.withLock { s in
            var published: [ContextChanges] = []
            for ticket in ready {
                do throws(ContextError) {
                    if let stale = staleExpectation(ticket, &s) { throw stale }
                    try receive(ticket.pushed, &s)
                    let strict = Set(ticket.expectations.keys.map(registry.canonical))
                    if let changes = try saveToStores(
                        &s, strict: strict, keeping: ticket.keeping, into: &ticket.snapshots)
                    {
                        ticket.historyToken = changes.historyToken
                        published.append(changes)
                    }
                } catch {
                    rollback(&s)
                    ticket.error = error
                }
            }
            return published
        }
    }

    /// What `pushed` (a child's changes, with the versions it expects) claims of existing objects.
    func claims(_ pushed: PushedChanges, _ expectations: [ObjectID: Int64]) -> CommitClaims {
        var claims = CommitClaims()
        // Under `.error` a second change to a join-table list must meet the version the first left.
        let strictLists = mergePolicy == .error
        func link(_ id: ObjectID?) {
            if let id, !id.isTemporary { claims.linked.insert(registry.canonical(id)) }
        }
        for id in expectations.keys { claims.written.insert(registry.canonical(id)) }
        for state in pushed.inserts {
            for target in state.toOne.values { link(target) }
            for targets in state.toMany.values { for target in targets { link(target) } }
        }
        for (id, change, state) in pushed.updates {
            let k = registry.canonical(id)
            if !change.attributes.isEmpty || !change.toOne.isEmpty { claims.written.insert(k) }
            for name in change.toOne { link(state.toOne[name] ?? nil) }
            for (name, delta) in change.toMany {
                if strictLists, case .joinTable? = model.storage(of: name, in: k.entityName) {
                    claims.written.insert(k)
                } else {
                    claims.linked.insert(k)
                }
                for target in delta.added { link(target) }
            }
        }
        for (id, _) in pushed.deletes { claims.deleted.insert(registry.canonical(id)) }
        return claims
    }

    /// A store's failure as a context error: a conflict names every stale object.
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
        for (id, expected) in ticket.expectations.sorted(by: { ObjectID.precedes($0.key, $1.key) }) {
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
