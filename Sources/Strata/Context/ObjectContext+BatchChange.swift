extension ObjectContext {
    /// Runs a batch update in the stores (see ``BatchUpdateRequest`` and
    /// ``StoreCoordinator/execute(_:authorship:)-(BatchUpdateRequest,_)``), as a save of this
    /// context's root: it waits for the root's commits in progress and holds off new ones until it
    /// is done; then this context, its ancestors and the root's save observers learn of every object
    /// it changed, as after a root save (Core Data leaves contexts stale after a batch request).
    ///
    /// The history records it with this context's ``name`` and ``transactionAuthor``. Objects with
    /// unsaved changes keep them (their next save meets the new versions and the merge policy).
    /// - Throws: ``ContextError`` as the coordinator's `execute` does.
    @discardableResult
    public func execute(_ request: BatchUpdateRequest) throws(ContextError) -> BatchResult {
        let authorship = authorship
        return try executeBatch { () throws(ContextError) in
            try coordinator.execute(request, authorship: authorship)
        }
    }

    /// Runs a batch delete in the stores (see ``BatchDeleteRequest`` and
    /// ``StoreCoordinator/execute(_:authorship:)-(BatchDeleteRequest,_)``), as a save of this
    /// context's root, like ``execute(_:)-(BatchUpdateRequest)``: deleted objects leave this
    /// context and its ancestors; objects the delete rules changed are read again when next used.
    /// - Throws: ``ContextError`` as the coordinator's `execute` does.
    @discardableResult
    public func execute(_ request: BatchDeleteRequest) throws(ContextError) -> BatchResult {
        let authorship = authorship
        return try executeBatch { () throws(ContextError) in
            try coordinator.execute(request, authorship: authorship)
        }
    }

    /// Merges changes saved elsewhere (another root's save, or a ``BatchResult/changes``) into each
    /// of `contexts` (Core Data's `mergeChanges(fromRemoteContextSave:into:)`): objects without
    /// unsaved changes take the saved values, deleted ones leave.
    public static func mergeChanges(fromRemoteContextSave changes: ContextChanges, into contexts: [ObjectContext]) {
        for context in contexts { context.mergeChanges(changes) }
    }

    /// Runs `body` under the root's write gate, merges its changes into the root, then into this
    /// context's chain below the root (after the gate: a child's save takes its own lock before the
    /// root's gate), and tells the root's observers.
    private func executeBatch(_ body: () throws(ContextError) -> BatchResult) throws(ContextError) -> BatchResult {
        var root = self
        while let parent = root.parent { root = parent }
        root.writeGate?.lock()
        let result: BatchResult
        do {
            result = try body()
        } catch {
            root.writeGate?.unlock()
            throw error
        }
        root.mergeChanges(result.changes)
        root.writeGate?.unlock()
        var context: ObjectContext? = self
        while let current = context, current !== root {
            current.mergeChanges(result.changes)
            context = current.parent
        }
        if let token = result.historyToken { savedHistoryToken = token }
        if result.count > 0 { root.notify(result.changes) }
        return result
    }
}
