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

/// Reads a store's metadata and contents without changing a byte, and dry-runs a migration.
public enum StoreInspector {
    /// Inspects the SQLite store at `url`.
    /// - Parameters:
    ///   - model: a model to check the store against, if any.
    ///   - history: earlier versions of the model, oldest first, for a multi-step migration.
    /// - Throws: ``StoreError``: `.io` for a missing or unreadable file, `.incompatibleModel` for a
    ///   file that is not a Strata store.
    public static func inspect(_ url: URL, model: ObjectModel? = nil, history: [ObjectModel] = []) throws(StoreError)
        -> StoreInspection
    {
        let file = try ReadOnlySQLiteFile(url: url)
        guard let values = file.metadataValues() else {
            throw StoreError(.incompatibleModel, "the file is not a Strata store", storeURL: url)
        }
        let metadata = try SQLiteStore.metadata(from: values, url: url)
        var recordedName: String?
        if let text = values["model"], case .object(let object)? = try? JSONValue.parse(text) {
            recordedName = object["name"]?.stringValue
        }
        var inspection = StoreInspection(
            url: url, metadata: metadata, format: values["format"], recordedModelName: recordedName, rowCounts: [:],
            joinTableRows: [:], splitState: values[SQLiteStore.splitStateKey],
            splitSource: values[SQLiteStore.splitSourceKey])
        let tables =
            (try? file.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", [],
                { $0.text(0) })) ?? []
        for table in tables where table != SQLiteStore.metadataTable {
            let quoted = SQLiteSchema.quote(table)
            if table.hasPrefix("_join_") {
                inspection.joinTableRows[table] = Int(
                    (try? file.query("SELECT count(*) FROM \(quoted)", [], { $0.int64(0) }))?.first ?? 0)
            } else if let counts = try? file.query(
                "SELECT \"_entity\", count(*) FROM \(quoted) GROUP BY \"_entity\"", [], { ($0.text(0), $0.int64(1)) })
            {
                for (entity, count) in counts { inspection.rowCounts[entity, default: 0] += Int(count) }
            }
        }
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
        if hashes == metadata.entityHashes {
            inspection.isCompatible = true
            return inspection
        }
        inspection.isCompatible = false
        inspection.plan = SQLiteMigrator.plan(
            values: values, storedHashes: metadata.entityHashes, configuration: metadata.configuration, model: model,
            history: history, url: url)
        return inspection
    }
}
