import Foundation

extension StoreCoordinator {
    /// Splits a single-file store (every entity in one file, as an older version of an app kept it)
    /// into one store of its kind per configuration of the model, then attaches the new stores.
    ///
    /// See ``StoreSplitter`` for how the split copies, resumes and verifies. Object primary keys,
    /// versions and relationships are kept; each new store gets a new UUID. The source is only read.
    /// Running it again after it completed does nothing but attach the stores
    /// (``SplitReport/Outcome-swift.enum/alreadySplit``); after an interruption it continues.
    /// - Parameters:
    ///   - source: the single-file store; it must not be attached.
    ///   - targets: the file of every configuration; none may be attached already.
    ///   - options: configurations to leave empty (`skip`), chunk size, durability while copying.
    ///   - storeOptions: how the new stores are attached.
    ///   - progress: called after every chunk and phase, on the calling thread.
    /// - Returns: what the split did, with the verification of every entity.
    /// - Throws: ``StoreError``: `.duplicateStore` when the source or a target is already attached
    ///   (or a target file holds another store), and the errors of ``StoreSplitter/split(model:source:targets:options:progress:)``.
    @discardableResult
    public func splitStore(
        at source: URL, into targets: [String: URL], options: SplitOptions = SplitOptions(),
        storeOptions: StoreOptions = StoreOptions(), progress: ((SplitProgress) -> Void)? = nil
    ) throws(StoreError) -> SplitReport {
        let attached = stores
        func attachment(_ url: URL) -> (any PersistentStore)? {
            attached.first { $0.url.map(Self.canonical) == Self.canonical(url) }
        }
        if let store = attachment(source) {
            throw StoreError(
                .duplicateStore,
                "the source \(source.path) is attached to this coordinator (configuration '\(store.configuration ?? ObjectModel.defaultConfiguration)'); remove it before splitting it",
                storeURL: source)
        }
        for (configuration, url) in targets.sorted(by: { $0.key < $1.key }) {
            if let store = attachment(url) {
                throw StoreError(
                    .duplicateStore,
                    "\(url.path) is already attached to this coordinator (configuration '\(store.configuration ?? ObjectModel.defaultConfiguration)'); split '\(configuration)' into another file",
                    storeURL: url)
            }
        }
        let kind = try StoreSplitter.sourceKind(source)
        let report = try kind.split(
            model: model, source: source, targets: targets, options: options, progress: progress)
        let descriptions = model.configurations.compactMap { configuration in
            targets[configuration.name].map {
                StoreDescription(type: kind.type, configuration: configuration.name, url: $0, options: storeOptions)
            }
        }
        try addStores(descriptions)
        return report
    }
}
