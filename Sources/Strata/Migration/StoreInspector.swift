import Foundation

/// What a store file records about itself, and how it stands against a model.
public struct StoreInspection: Sendable {
    /// The file.
    public var url: URL
    /// UUID, configuration, model version and entity hashes.
    public var metadata: StoreMetadata
    /// The store format version.
    public var format: String?
    /// The name of the model the store recorded, if it recorded one.
    public var recordedModelName: String?
    /// Objects per entity.
    public var rowCounts: [String: Int]
    /// Pairs per join table.
    public var joinTableRows: [String: Int]
    /// For a store written by `split`: `copying` or `complete`.
    public var splitState: String?
    /// For a store written by `split`: the source store's UUID.
    public var splitSource: String?
    /// Whether the store opens with the given model as it is; nil when no model was given.
    public var isCompatible: Bool?
    /// Why the store cannot be used with the model at all (another configuration, say).
    public var incompatibility: String?
    /// What a migration to the given model would do (a dry run); nil when none is needed or no
    /// model was given.
    public var plan: MigrationPlan?
}

extension StoreInspection {
    /// The inspection with the counts of entities that hold no objects filled in, and checked
    /// against `model` with `plan` (what a migration to it would do), when a model is given.
    func completed(with model: ObjectModel?, plan: MigrationPlan?) -> StoreInspection {
        var inspection = self
        for entity in metadata.entityHashes.keys where inspection.rowCounts[entity] == nil {
            inspection.rowCounts[entity] = 0
        }
        guard let model else { return inspection }
        guard let hashes = MigrationPlanner.hashes(of: model, configuration: metadata.configuration) else {
            inspection.isCompatible = false
            inspection.incompatibility =
                "the model has no configuration '\(metadata.configuration ?? ObjectModel.defaultConfiguration)'"
            return inspection
        }
        inspection.isCompatible = hashes == metadata.entityHashes
        if inspection.isCompatible == false { inspection.plan = plan }
        return inspection
    }
}

/// Reads a store's metadata and contents without changing a byte, and dry-runs a migration,
/// through the kind of store it is (see ``StoreKind/inspect(_:model:history:)``).
public enum StoreInspector {
    /// Inspects the store at `url`.
    /// - Parameters:
    ///   - url: the store's file (or a PostgreSQL connection URI).
    ///   - model: a model to check the store against, if any.
    ///   - history: earlier versions of the model, oldest first (see ``StoreOptions/modelHistory``).
    /// - Throws: ``StoreError``: `.io` for a missing or unreadable file, `.incompatibleModel` for a
    ///   file that is not a Strata store.
    public static func inspect(_ url: URL, model: ObjectModel? = nil, history: [ObjectModel] = []) throws(StoreError)
        -> StoreInspection
    {
        guard let kind = StoreType.kind(recognizing: url) else {
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw StoreError(.io, "no such file", storeURL: url)
            }
            throw StoreError(.incompatibleModel, "the file is not a Strata store", storeURL: url)
        }
        return try kind.inspect(url, model: model, history: history)
    }

    /// Inspects the store at `url`, its migration planned with mapping models.
    /// - Parameters:
    ///   - url: the store's file (or a PostgreSQL connection URI).
    ///   - model: a model to check the store against.
    ///   - history: earlier versions of the model, oldest first (see ``StoreOptions/modelHistory``).
    ///   - mappings: mapping models for the steps they describe (see ``MigrationPlan/using(_:policies:)``).
    /// - Throws: ``StoreError``, as ``inspect(_:model:history:)`` does.
    public static func inspect(_ url: URL, model: ObjectModel, history: [ObjectModel], mappings: [MappingModel])
        throws(StoreError) -> StoreInspection
    {
        var inspection = try inspect(url, model: model, history: history)
        inspection.plan = inspection.plan?.using(mappings)
        return inspection
    }
}
