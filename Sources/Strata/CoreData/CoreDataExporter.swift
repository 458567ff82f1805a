import Foundation

/// How an export runs.
public struct CoreDataExportOptions: Sendable, Hashable {
    /// Whether an existing file at the target is replaced.
    public var overwrite: Bool
    /// The new store's UUID (`Z_UUID`); a new random one when nil.
    public var storeIdentifier: String?
    /// The `NSPersistenceFrameworkVersion` recorded in the metadata.
    public var frameworkVersion: Int
    /// The model version the store is written for, when not the one the objects are in (an older
    /// version an app still ships): its entities, columns, hashes and identifiers. Objects are
    /// mapped onto it as a migration back to it would map them where that is well-defined (the
    /// entities, attributes and relationships of the same name, or renaming identifier, and type);
    /// objects of entities it lacks are left out; what it cannot represent refuses the export.
    public var version: ObjectModel?
    /// Per entity (of the model the objects are in), the predicate its objects must match to be
    /// written; it applies to the objects of its subentities too (with their own, when they have
    /// one). A relationship to an object left out is cleared; a required one refuses the export.
    public var filters: [String: FetchPredicate]
    /// The largest Binary value (in bytes) of an attribute that allows external storage kept in
    /// the store; larger ones go to files in `.<store name>_SUPPORT/_EXTERNAL_DATA/` beside it.
    public var externalDataThreshold: Int
    /// Whether every object is read from one read snapshot across the stores
    /// (``StoreCoordinator/withReadSnapshot(_:)``), so that the file holds exactly the state of
    /// ``CoreDataExportReport/historyToken`` while saves go on; on by default. Off, each page of
    /// objects is read from the state committed when it is read.
    public var consistentSnapshot: Bool
    /// Told how far the export is as it writes the objects.
    public var progress: CoreDataExportProgress?
    /// Entities (of the model the objects are in) whose objects are left out, a server's hidden
    /// entities: their tables are written empty, and relationships to their objects are cleared as
    /// for objects a filter leaves out.
    public var leavingOut: Set<String>

    /// Creates options.
    public init(
        overwrite: Bool = false, storeIdentifier: String? = nil, frameworkVersion: Int = 1338,
        version: ObjectModel? = nil, filters: [String: FetchPredicate] = [:], externalDataThreshold: Int = 100 * 1024,
        consistentSnapshot: Bool = true, progress: CoreDataExportProgress? = nil, leavingOut: Set<String> = []
    ) {
        self.consistentSnapshot = consistentSnapshot
        self.progress = progress
        self.leavingOut = leavingOut
        self.overwrite = overwrite
        self.storeIdentifier = storeIdentifier
        self.frameworkVersion = frameworkVersion
        self.version = version
        self.filters = filters
        self.externalDataThreshold = externalDataThreshold
    }

    /// Options are equal when every option is (versions compared as models).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.overwrite == rhs.overwrite && lhs.storeIdentifier == rhs.storeIdentifier
            && lhs.frameworkVersion == rhs.frameworkVersion && lhs.version == rhs.version && lhs.filters == rhs.filters
            && lhs.externalDataThreshold == rhs.externalDataThreshold
            && lhs.consistentSnapshot == rhs.consistentSnapshot && lhs.leavingOut == rhs.leavingOut
    }

    /// Hashes the options (a version by its name and identifier).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(overwrite)
        hasher.combine(storeIdentifier)
        hasher.combine(frameworkVersion)
        hasher.combine(version?.name)
        hasher.combine(version?.version)
        hasher.combine(filters)
        hasher.combine(externalDataThreshold)
        hasher.combine(consistentSnapshot)
        hasher.combine(leavingOut)
    }
}

/// Told, after each page of objects an export writes, how many objects it has written of how many
/// it holds (called on the exporting thread). Progress reporters are all equal: options that
/// differ only in theirs are the same options.
public struct CoreDataExportProgress: Sendable, Hashable {
    /// Called with the objects written so far and the objects the export holds.
    public let report: @Sendable (_ written: Int, _ total: Int) -> Void

    /// Creates a reporter.
    public init(_ report: @escaping @Sendable (_ written: Int, _ total: Int) -> Void) { self.report = report }

    public static func == (lhs: Self, rhs: Self) -> Bool { true }
    public func hash(into hasher: inout Hasher) {}
}

/// What an export wrote.
public struct CoreDataExportReport: Sendable {
    /// The store written.
    public var url: URL
    /// Its UUID (`Z_UUID`).
    public var storeIdentifier: String
    /// Objects written per entity (subentities counted apart).
    public var objects: [String: Int]
    /// Rows written into many-to-many join tables.
    public var joinRows: Int
    /// Binary values written to files in `.<store name>_SUPPORT/_EXTERNAL_DATA/`.
    public var externalFiles: Int
    /// Entities of the model the objects are in that the version written lacks: their objects
    /// are left out.
    public var entitiesLeftOut: [String]
    /// Wall-clock time.
    public var seconds: Double
    /// The history token of the snapshot the file holds (see
    /// ``CoreDataExportOptions/consistentSnapshot``): history after it is exactly what the file
    /// lacks. Nil without a snapshot; empty when no store records history.
    public var historyToken: HistoryToken? = nil
}

/// Writes a single-file SQLite store in Core Data's own format for a model version (the one its
/// objects are in, or ``CoreDataExportOptions/version``), holding the objects a
/// ``StoreCoordinator`` reads (those ``CoreDataExportOptions/filters`` keep): the store an app
/// bundles, opened by Core Data as it is.
///
/// What it holds (see `CoreDataLayout` for the names): `Z_PRIMARYKEY` with Core Data's entity
/// numbers, parents and last primary keys; `Z_METADATA` with the store UUID and a binary property
/// list of `NSStoreType`, `NSStoreModelVersionHashes` (Core Data's own, see
/// ``ObjectModel/coreDataVersionHashes``), their digest and checksum,
/// `NSStoreModelVersionHashesVersion` 3, `NSStoreModelVersionIdentifiers`,
/// `NSPersistenceFrameworkVersion` and `_NSAutoVacuumLevel`; one table per hierarchy, the join
/// table of each many-to-many, `Z_FOK_` positions of ordered relationships, and the indexes.
/// Values are encoded as Core Data encodes them (see `CoreDataExportValues`): Transformable values
/// as keyed archives, large Binary values of attributes that allow external storage in files of
/// `.<store name>_SUPPORT/_EXTERNAL_DATA/` beside the store. It writes no `Z_MODELCACHE` (Core
/// Data's compressed archive of the model, which stores Core Data wrote also go without). Primary
/// keys are kept where they are unique within a hierarchy (objects of one store) and renumbered
/// otherwise.
///
/// The file (and its external data) is built beside the target under a temporary name in
/// rollback-journal mode and renamed into place when complete, so a failure, a refusal among
/// them, leaves no partial store.
public enum CoreDataExporter {
    /// Exports the objects `coordinator` reads into a Core Data store at `url`.
    /// - Throws: ``StoreError``: `.duplicateStore` when `url` exists and `options.overwrite` is
    ///   off, `.invalidRequest` for objects the store cannot represent (a required relationship to
    ///   an object left out, an attribute the version requires and the data lacks, a value of a
    ///   transformer whose format Strata cannot write), `.io` when the file cannot be written,
    ///   errors of the reads.
    public static func export(
        model: ObjectModel, coordinator: StoreCoordinator, to url: URL,
        options: CoreDataExportOptions = CoreDataExportOptions()
    ) throws(StoreError) -> CoreDataExportReport {
        if FileManager.default.fileExists(atPath: url.path), !options.overwrite {
            throw StoreError(
                .duplicateStore, "\(url.path) already exists; remove it or choose to replace it", storeURL: url)
        }
        guard options.consistentSnapshot else {
            return try write(model: model, coordinator: coordinator, to: url, options: options)
        }
        return try coordinator.withReadSnapshot { (token) throws(StoreError) in
            var report = try write(model: model, coordinator: coordinator, to: url, options: options)
            report.historyToken = token
            return report
        }
    }

    /// Writes the store, reading through whatever snapshot the calling thread is in.
    private static func write(
        model: ObjectModel, coordinator: StoreCoordinator, to url: URL, options: CoreDataExportOptions
    ) throws(StoreError) -> CoreDataExportReport {
        let started = Date()
        let target = options.version ?? model
        let mapping = CoreDataExportMapping(source: model, target: target)
        let layout = CoreDataLayout(model: target)
        var objects = try CoreDataExportObjects(
            mapping: mapping, layout: layout, coordinator: coordinator, filters: options.filters,
            leavingOut: options.leavingOut)
        objects.progress = options.progress?.report
        let identifier = options.storeIdentifier ?? UUID().uuidString
        let folder = url.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).export-\(UUID().uuidString)")
        var values = CoreDataExportValues(
            externalFolder: temporary.appendingPathExtension("external"),
            externalThreshold: options.externalDataThreshold)
        var joinRows = 0
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let db = try SQLiteConnection(path: temporary.path)
            try db.execute("PRAGMA auto_vacuum = 2")
            try db.execute("PRAGMA journal_mode = DELETE")
            try db.execute("BEGIN IMMEDIATE")
            for statement in layout.statements { try db.execute(statement) }
            try writeMetadata(
                db, model: target, layout: layout, objects: objects, identifier: identifier, options: options)
            for hierarchy in layout.hierarchies { try objects.writeRows(of: hierarchy, into: db, values: &values) }
            for join in layout.joins { joinRows += try objects.writeJoin(join, into: db) }
            try db.execute("COMMIT")
        } catch {
            removeFiles(of: temporary, external: values.externalFolder)
            if let error = error as? StoreError { throw error }
            throw StoreError(.io, "cannot write the Core Data store: \(error)", storeURL: url)
        }
        try moveIntoPlace(temporary, external: values.externalFiles > 0 ? values.externalFolder : nil, to: url)
        return CoreDataExportReport(
            url: url, storeIdentifier: identifier, objects: objects.counts, joinRows: joinRows,
            externalFiles: values.externalFiles, entitiesLeftOut: mapping.unmappedSourceEntities,
            seconds: Date().timeIntervalSince(started))
    }

    /// The external data folder of the store at `url`: `.<store name>_SUPPORT/_EXTERNAL_DATA`.
    public static func externalDataFolder(of url: URL) -> URL {
        CoreDataValues(storeURL: url).externalDataFolder
    }

    /// Renames the store built at `temporary` (and its external data, if any) into place: the
    /// external data replaces the `_EXTERNAL_DATA` folder of a store at `url` (which belongs to
    /// the store replaced), then the store replaces the file.
    private static func moveIntoPlace(_ temporary: URL, external: URL?, to url: URL) throws(StoreError) {
        let folder = externalDataFolder(of: url)
        do {
            if FileManager.default.fileExists(atPath: folder.path) { try FileManager.default.removeItem(at: folder) }
            if let external {
                try FileManager.default.createDirectory(
                    at: folder.deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.moveItem(at: external, to: folder)
            }
        } catch {
            removeFiles(of: temporary, external: external)
            throw StoreError(.io, "cannot move the external data into \(folder.path): \(error)", storeURL: url)
        }
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            removeFiles(of: temporary, external: external)
            if external != nil { try? FileManager.default.removeItem(at: folder) }
            throw StoreError(.io, "cannot move the exported store into place: \(reason)", storeURL: url)
        }
    }

    /// Removes a store being built, with its rollback journal and external data.
    private static func removeFiles(of url: URL, external: URL?) {
        for suffix in ["", "-journal", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
        if let external { try? FileManager.default.removeItem(at: external) }
    }

    /// `Z_PRIMARYKEY` and `Z_METADATA`.
    private static func writeMetadata(
        _ db: SQLiteConnection, model: ObjectModel, layout: CoreDataLayout, objects: CoreDataExportObjects,
        identifier: String, options: CoreDataExportOptions
    ) throws {
        for entity in model.entityNames.sorted(by: { layout.numbers[$0]! < layout.numbers[$1]! }) {
            let parent = model.entity(named: entity)?.parent.flatMap { layout.numbers[$0] } ?? 0
            let max = parent == 0 ? objects.maxPrimaryKey[entity] ?? 0 : 0
            try db.run(
                "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)",
                [.integer(Int64(layout.numbers[entity]!)), .text(entity), .integer(Int64(parent)), .integer(max)])
        }
        let plist = metadataPropertyList(model: model, frameworkVersion: options.frameworkVersion)
        try db.run(
            "INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)", [.text(identifier), .blob(plist)])
    }

    /// The binary property list of `Z_METADATA.Z_PLIST` for `model`, written by Strata's own
    /// writer: Foundation's `PropertyListSerialization` refuses this dictionary in release builds
    /// on Linux ("property lists cannot contain objects of type 'Not A Type'").
    static func metadataPropertyList(model: ObjectModel, frameworkVersion: Int) -> Data {
        let hashes = model.coreDataVersionHashes
        let metadata: [String: PropertyListValue] = [
            "NSStoreType": .string("SQLite"),
            "NSStoreModelVersionHashes": .dictionary(hashes.mapValues { .data(Data($0)) }),
            "NSStoreModelVersionHashesDigest": .string(CoreDataNaming.hashesDigest(hashes)),
            "NSStoreModelVersionChecksumKey": .string(CoreDataNaming.hashesChecksum(hashes)),
            "NSStoreModelVersionHashesVersion": .integer(3),
            "NSStoreModelVersionIdentifiers": .array([.string(model.version ?? "")]),
            "NSPersistenceFrameworkVersion": .integer(Int64(frameworkVersion)),
            "_NSAutoVacuumLevel": .string("2"),
        ]
        return BinaryPropertyList.serialize(.dictionary(metadata))
    }
}
