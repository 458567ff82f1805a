import Foundation

/// How an import runs.
public struct CoreDataImportOptions: Sendable, Hashable {
    /// The model version that wrote the store, when its hashes cannot tell (see
    /// ``CoreDataStoreFile/identifyVersion(among:chosen:)``).
    public var sourceVersion: String?
    /// Configurations whose store is created empty (see ``SplitOptions/skip``).
    public var skip: Set<String>
    /// Rows per transaction; a rerun after a crash continues after the last committed chunk.
    public var chunkSize: Int
    /// The new stores' SQLite `synchronous` setting while they are written.
    public var durability: StoreOptions.Durability
    /// Mapping models the migration to the current version runs for the steps they describe.
    public var mappingModels: [MappingModel]

    /// Creates options.
    public init(
        sourceVersion: String? = nil, skip: Set<String> = [], chunkSize: Int = 10_000,
        durability: StoreOptions.Durability = .full, mappingModels: [MappingModel] = []
    ) {
        self.mappingModels = mappingModels
        self.sourceVersion = sourceVersion
        self.skip = skip
        self.chunkSize = chunkSize
        self.durability = durability
    }
}

/// Where an import is, for progress bars and logs.
public struct CoreDataImportProgress: Sendable, Hashable {
    /// What the import is doing.
    public enum Phase: String, Sendable, Hashable {
        case converting, verifying, migrating, splitting, finished
    }

    /// What the import is doing.
    public var phase: Phase
    /// The Core Data table being read, if any.
    public var table: String?
    /// Rows written so far in this phase.
    public var copiedRows: Int
    /// Rows the phase writes.
    public var totalRows: Int
}

/// What an import did.
public struct CoreDataImportReport: Sendable {
    /// How the import ended.
    public enum Outcome: String, Sendable, Hashable {
        /// Imported from the start in this run.
        case imported
        /// An interrupted import finished in this run.
        case resumed
        /// The stores were already imported; nothing was done.
        case alreadyImported
    }

    public var outcome: Outcome
    /// The Core Data store's UUID.
    public var sourceIdentifier: String
    /// The model version that wrote the store, and why that one.
    public var sourceVersion: String
    public var versionReason: String
    /// The model version the stores hold now (a migration ran when it is another).
    public var targetVersion: String
    /// The verification of every entity and join table against the Core Data store.
    public var checks: [SplitCheck]
    /// The stores written.
    public var targets: [SplitTargetReport]
    /// What was not imported as it is, each with the number of values it concerns.
    public var warnings: [String]
    /// Wall-clock time of this run.
    public var seconds: Double
}

/// Imports an SQLite store that Apple's Core Data wrote into Strata stores: one per configuration
/// of the model, or one `Default` store.
///
/// The Core Data store is only read, from a private copy of its files (``CoreDataStoreFile``), so
/// its bytes stay as they are. The version of the model that wrote it is identified by Core
/// Data's entity version hashes. Its objects are written, chunk by chunk, into a staging store of
/// that version next to the targets (`.strata-import-<store UUID>.sqlite`) — primary keys,
/// `Z_OPT` versions, every attribute value, to-one, to-many, many-to-many and ordered
/// relationships and inheritance kept — recording in each chunk's transaction how far it got, so a
/// run killed at any point continues where it stopped. Every entity and join table is then
/// verified (row count and checksum of the values as read from Core Data and from the staging
/// store), the staging store is migrated to the model's current version (the lightweight
/// migration `strata migrate` infers), and split into the targets (verified again, see
/// ``StoreSplitter``) or, for one Default store, moved into place.
public enum CoreDataImporter {
    static let stateKey = "importState"
    static let progressKey = "importProgress"
    static let sourceKey = "importSource"

    /// Imports the Core Data store at `source`.
    /// - Parameters:
    ///   - source: the Core Data SQLite store (its `-wal` and `-shm` beside it are read too); it is
    ///     read from a private copy and left as it was.
    ///   - model: the model the stores will hold (the current version).
    ///   - versions: every version of the model (an `.xcdatamodeld`'s), to find the one that wrote
    ///     the store and to migrate from it; `model` alone when empty.
    ///   - targets: the file of every configuration of `model`, or `["Default": file]` for one
    ///     store holding every entity.
    ///   - options: the version that wrote the store when the hashes cannot tell, configurations to
    ///     leave empty, the chunk size and the targets' durability.
    ///   - progress: called as the import goes, with its phase, table and rows copied.
    /// - Throws: ``StoreError``: `.incompatibleModel` when no version (or several) wrote the store,
    ///   `.invalidRequest`, `.duplicateStore` for targets that hold other stores, `.io`, including
    ///   a failed verification.
    public static func importStore(
        at source: URL, model: ObjectModel, versions: [ObjectModel] = [], targets: [String: URL],
        options: CoreDataImportOptions = CoreDataImportOptions(),
        progress: ((CoreDataImportProgress) -> Void)? = nil
    ) throws(StoreError) -> CoreDataImportReport {
        let started = Date()
        let file = try CoreDataStoreFile(url: source)
        let candidates = versions.isEmpty ? [model] : versions
        let match = try file.identifyVersion(among: candidates, chosen: options.sourceVersion)
        let single = targets.keys.sorted() == [ObjectModel.defaultConfiguration]
        guard !targets.isEmpty, single || !model.configurations.isEmpty else {
            throw StoreError(
                .invalidRequest,
                "the model declares no configurations: import into one store (Default=PATH, or a data folder)",
                storeURL: source)
        }
        guard options.chunkSize > 0 else { throw StoreError(.invalidRequest, "the chunk size must be positive") }
        let folder = targets.values.sorted { $0.path < $1.path }.first!.deletingLastPathComponent()
        let staging = folder.appendingPathComponent(".strata-import-\(file.identifier).sqlite")
        var report = CoreDataImportReport(
            outcome: .imported, sourceIdentifier: file.identifier, sourceVersion: match.model.name,
            versionReason: match.reason, targetVersion: model.name, checks: [], targets: [], warnings: [],
            seconds: 0)

        if try alreadyImported(file, model: model, targets: targets, single: single, options: options) {
            removeStore(staging)
            report.outcome = .alreadyImported
            report.targets = targets.keys.sorted().map {
                SplitTargetReport(
                    configuration: $0, url: targets[$0]!, storeIdentifier: "", skipped: options.skip.contains($0),
                    checks: [])
            }
            report.seconds = Date().timeIntervalSince(started)
            return report
        }

        var writer = try CoreDataStagingWriter(
            file: file, model: match.model, url: staging, options: options, progress: progress)
        if writer.resumed { report.outcome = .resumed }
        if writer.state == "converting" {
            try writer.convert()
            report.checks = try writer.verify()
            try writer.setState("converted")
        } else {
            report.checks = writer.recordedChecks()
        }
        report.warnings = writer.warnings
        writer.close()

        // Migrate the staging store from the version that wrote the source to the current one.
        progress?(CoreDataImportProgress(phase: .migrating, table: nil, copiedRows: 0, totalRows: 0))
        do {
            let coordinator = StoreCoordinator(model: model)
            let store = try coordinator.addStore(
                type: .sqlite, configuration: nil, url: staging,
                options: StoreOptions(
                    durability: options.durability, migrate: true, modelHistory: candidates,
                    mappingModels: options.mappingModels))
            coordinator.remove(store)
        } catch {
            throw StoreError(
                error.code,
                "cannot migrate the imported objects from model version \(match.model.name) to \(model.name): \(error.message)"
                    + " (the objects as version \(match.model.name) has them are kept in \(staging.path): give --model that version's .xcdatamodel to import them as they are, or remove it)",
                storeURL: source)
        }

        if single {
            try moveIntoPlace(staging, target: targets[ObjectModel.defaultConfiguration]!, source: source)
            report.targets = [
                SplitTargetReport(
                    configuration: ObjectModel.defaultConfiguration, url: targets[ObjectModel.defaultConfiguration]!,
                    storeIdentifier: file.identifier, skipped: false, checks: report.checks)
            ]
        } else {
            let split = try StoreSplitter.split(
                model: model, source: staging, targets: targets,
                options: SplitOptions(skip: options.skip, chunkSize: options.chunkSize, durability: options.durability)
            ) { step in
                progress?(
                    CoreDataImportProgress(
                        phase: .splitting, table: step.table, copiedRows: step.copiedRows, totalRows: step.totalRows))
            }
            report.targets = split.targets
            removeStore(staging)
        }
        progress?(CoreDataImportProgress(phase: .finished, table: nil, copiedRows: 0, totalRows: 0))
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// Whether every target already holds this import, finished.
    private static func alreadyImported(
        _ file: CoreDataStoreFile, model: ObjectModel, targets: [String: URL], single: Bool,
        options: CoreDataImportOptions
    ) throws(StoreError) -> Bool {
        var complete = true
        for (configuration, url) in targets {
            guard FileManager.default.fileExists(atPath: url.path) else {
                complete = false
                continue
            }
            let values = (try? SQLiteStore.snapshot(of: url)).flatMap { SQLiteStore.metadataValues(in: $0) }
            guard let values else {
                throw StoreError(
                    .duplicateStore,
                    "\(url.path) already exists and is not a Strata store; remove it or choose another path",
                    storeURL: url)
            }
            let ours =
                single
                ? values["uuid"] == file.identifier && values[stateKey] == nil
                : values[SQLiteStore.splitSourceKey] == file.identifier
                    && values[SQLiteStore.splitStateKey] == SQLiteStore.splitStateComplete
            if !ours {
                let fromThisImport =
                    single ? values["uuid"] == file.identifier : values[SQLiteStore.splitSourceKey] == file.identifier
                if !fromThisImport {
                    throw StoreError(
                        .duplicateStore,
                        "\(url.path) already holds another store (configuration '\(values["configuration"] ?? ObjectModel.defaultConfiguration)', UUID \(values["uuid"] ?? "?")), not an import of \(file.url.path) for '\(configuration)'; remove it or choose another path",
                        storeURL: url)
                }
                complete = false
            }
        }
        return complete
    }

    /// The staging store, verified and migrated, becomes the one Default store.
    private static func moveIntoPlace(_ staging: URL, target: URL, source: URL) throws(StoreError) {
        do {
            let db = try SQLiteConnection(path: staging.path)
            try db.execute("BEGIN IMMEDIATE")
            for key in [stateKey, progressKey] {
                try db.run("DELETE FROM \(SQLiteStore.metadataTable) WHERE key = ?", [.text(key)])
            }
            try db.run(
                "INSERT OR REPLACE INTO \(SQLiteStore.metadataTable) (key, value) VALUES ('importedFrom', ?)",
                [.text(source.path)])
            try db.execute("COMMIT")
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            throw StoreError(
                .io, "cannot finish the imported store: \(error.message)", storeURL: staging, underlying: error)
        }
        do {
            try FileManager.default.createDirectory(
                at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: staging.path + suffix) }
            // rename(2): the store appears whole or not at all.
            guard rename(staging.path, target.path) == 0 else {
                throw CocoaError(
                    .fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(errno))])
            }
        } catch {
            throw StoreError(
                .io, "cannot move the imported store to \(target.path): \(error.localizedDescription)", storeURL: target
            )
        }
    }

    static func removeStore(_ url: URL) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    }
}
