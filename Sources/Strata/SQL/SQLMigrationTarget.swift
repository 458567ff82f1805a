import Foundation

/// A lightweight migration an SQL store needs, planned from its metadata: what applying it
/// takes, and the entity hashes the store has before and after it.
struct SQLMigrationTarget {
    let plan: MigrationPlan
    let model: ObjectModel
    let configuration: String?
    let url: URL
    /// The store's UUID.
    let storeIdentifier: String
    /// The hashes the store has when planned.
    let sourceHashes: [String: String]
    /// The hashes of `model` for `configuration`: the store's after the migration.
    let targetHashes: [String: String]

    /// Plans the migration of a store at `url` whose metadata `values` say it is `found`, to
    /// `model`'s `hashes`.
    /// - Throws: `.incompatibleModel` when the options do not allow migrating the store, naming
    ///   what differs and what a migration would do; or when the plan refuses a change.
    init(
        values: [String: String], found: StoreMetadata, model: ObjectModel, configuration: String?,
        hashes: [String: String], options: StoreOptions, url: URL
    ) throws(StoreError) {
        let plan = SQLiteMigrator.plan(
            values: values, storedHashes: found.entityHashes, configuration: configuration, model: model,
            history: options.modelHistory, url: url
        ).using(options.mappingModels, policies: options.migrationPolicies)
        guard options.migrate, !options.readOnly else {
            throw StoreError(
                .incompatibleModel, SQLiteStore.incompatibility(stored: found.entityHashes, model: hashes, plan: plan),
                storeURL: url)
        }
        guard plan.isPossible else { throw StoreError(.incompatibleModel, plan.refusalMessage, storeURL: url) }
        self.plan = plan
        self.model = model
        self.configuration = configuration
        self.url = url
        storeIdentifier = found.identifier
        sourceHashes = found.entityHashes
        targetHashes = hashes
    }
}
