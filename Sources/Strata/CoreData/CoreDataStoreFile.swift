import Foundation

/// An SQLite store that Apple's Core Data wrote, read without changing a byte of it.
///
/// The store's files (`.sqlite`, `-wal`, `-shm`) are copied together into a private folder and
/// the copy is opened: opening a write-ahead-logged store in place rewrites its `-shm` (or, read
/// and written, checkpoints and deletes its `-wal`), and `immutable=1` would silently miss the
/// data still in the log. What it reads: `Z_PRIMARYKEY` (entity numbers, inheritance, the last
/// primary key), `Z_METADATA` (the store UUID and the metadata property list), and each table's
/// real columns (`PRAGMA table_info`: names can carry numeric suffixes).
public final class CoreDataStoreFile {
    /// An entity as `Z_PRIMARYKEY` lists it.
    public struct EntityRow: Sendable, Hashable {
        /// `Z_ENT`.
        public var number: Int
        /// `Z_NAME`.
        public var name: String
        /// `Z_SUPER`: the parent's number, 0 for a root.
        public var parent: Int
        /// `Z_MAX`: the last primary key handed out (kept on the root for its hierarchy).
        public var maxPrimaryKey: Int64
    }

    /// The original file.
    public let url: URL
    /// `Z_UUID`: the store's UUID.
    public let identifier: String
    /// Every entity of `Z_PRIMARYKEY`.
    public let entities: [EntityRow]
    /// `NSStoreModelVersionHashes`: each entity's version hash.
    public let versionHashes: [String: [UInt8]]
    /// `NSStoreModelVersionIdentifiers`.
    public let versionIdentifiers: [String]
    /// `NSPersistenceFrameworkVersion`.
    public let frameworkVersion: Int?
    /// `NSStoreType`.
    public let storeType: String?
    /// The metadata keys besides Core Data's own (an app's; they may hold secrets, so only their
    /// names are shown).
    public let otherMetadataKeys: [String]
    /// The copy's connection.
    let db: SQLiteConnection
    private let folder: URL
    /// Each table's columns, by table name.
    private(set) var columns: [String: [String]] = [:]

    /// Opens a private copy of the store at `url`.
    /// - Throws: ``StoreError``: `.io` when it cannot be read, `.incompatibleModel` when it is not a
    ///   Core Data SQLite store.
    public init(url: URL) throws(StoreError) {
        self.url = url
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError(.io, "no such file", storeURL: url)
        }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-coredata-\(UUID().uuidString)")
        let copy = folder.appendingPathComponent(url.lastPathComponent)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path + suffix)
            }
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw StoreError(.io, "cannot copy the store to read it: \(error.localizedDescription)", storeURL: url)
        }
        let fail = { [folder] (message: String) -> StoreError in
            try? FileManager.default.removeItem(at: folder)
            return StoreError(.incompatibleModel, message, storeURL: url)
        }
        do {
            db = try SQLiteConnection(path: copy.path, mode: .readOnly)
            let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table'") { $0.text(0) }
            guard tables.contains("Z_PRIMARYKEY"), tables.contains("Z_METADATA") else {
                throw fail("the file is not a Core Data store (it has no Z_PRIMARYKEY and Z_METADATA tables)")
            }
            entities = try db.query("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT") {
                EntityRow(
                    number: Int($0.int64(0)), name: $0.text(1), parent: Int($0.int64(2)), maxPrimaryKey: $0.int64(3))
            }
            let rows = try db.query("SELECT Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1") {
                ($0.text(0), $0.blob(1))
            }
            guard let (uuid, plist) = rows.first else { throw fail("the store's Z_METADATA is empty") }
            identifier = uuid
            guard
                let metadata = try? PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any]
            else { throw fail("the store's metadata (Z_METADATA.Z_PLIST) is not a property list") }
            var hashes: [String: [UInt8]] = [:]
            for (name, value) in metadata["NSStoreModelVersionHashes"] as? [String: Any] ?? [:] {
                if let data = value as? Data { hashes[name] = Array(data) }
            }
            versionHashes = hashes
            versionIdentifiers = (metadata["NSStoreModelVersionIdentifiers"] as? [Any] ?? []).compactMap {
                $0 as? String
            }
            frameworkVersion = (metadata["NSPersistenceFrameworkVersion"] as? NSNumber)?.intValue
            storeType = metadata["NSStoreType"] as? String
            let known: Set<String> = [
                "NSStoreModelVersionHashes", "NSStoreModelVersionIdentifiers", "NSPersistenceFrameworkVersion",
                "NSStoreType", "NSStoreModelVersionHashesDigest", "NSStoreModelVersionHashesVersion",
                "NSStoreModelVersionChecksumKey", "NSStoreUUID", "_NSAutoVacuumLevel",
            ]
            otherMetadataKeys = metadata.keys.filter { !known.contains($0) }.sorted()
            for table in tables {
                columns[table] = try db.query("SELECT name FROM pragma_table_info(?)", [.text(table)]) { $0.text(0) }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw fail("the file cannot be read as an SQLite database: \(error)")
        }
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// Whether the file at `url` is an SQLite database with Core Data's `Z_PRIMARYKEY` and
    /// `Z_METADATA` tables (read without changing it).
    public static func recognizes(_ url: URL) -> Bool {
        let log = (try? FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? NSNumber)?.intValue
        // A store whose tables are still only in its write-ahead log is read from a copy.
        if (log ?? 0) > 0 { return (try? CoreDataStoreFile(url: url)) != nil }
        guard let header = FileManager.default.contents(atPath: url.path)?.prefix(16),
            header.elementsEqual(Array("SQLite format 3\0".utf8)),
            let db = try? SQLiteConnection(path: url.path, mode: .mainFileOnly),
            let tables = try? db.query("SELECT name FROM sqlite_master WHERE type = 'table'", [], { $0.text(0) })
        else { return false }
        return tables.contains("Z_PRIMARYKEY") && tables.contains("Z_METADATA")
    }

    /// The entity numbered `number`.
    public func entity(number: Int) -> EntityRow? { entities.first { $0.number == number } }

    /// The entity named `name`.
    public func entity(named name: String) -> EntityRow? { entities.first { $0.name == name } }

    /// The root of `entity`'s hierarchy.
    func root(of entity: EntityRow) -> EntityRow {
        var current = entity
        while current.parent != 0, let parent = self.entity(number: current.parent) { current = parent }
        return current
    }

    /// `entity` and the entities below it.
    func family(of entity: EntityRow) -> [EntityRow] {
        [entity] + entities.filter { $0.parent == entity.number }.flatMap { family(of: $0) }
    }

    /// The table holding `entity`'s rows: `Z` + its root's name, upper-cased.
    func table(of entity: EntityRow) -> String { CoreDataNaming.table(root(of: entity).name) }

    /// The columns of `table`; empty when there is no such table.
    public func columns(of table: String) -> [String] { columns[table] ?? [] }

    /// The tables of the store.
    public var tables: [String] { columns.keys.sorted() }

    /// Objects per entity (counted by `Z_ENT`, so a parent's count leaves out its subentities').
    public func rowCounts() throws(StoreError) -> [String: Int] {
        var counts: [String: Int] = [:]
        for entity in entities {
            let table = table(of: entity)
            guard columns[table] != nil else {
                counts[entity.name] = 0
                continue
            }
            counts[entity.name] = Int(
                try read {
                    try db.query(
                        "SELECT count(*) FROM \(SQLiteSchema.quote(table)) WHERE Z_ENT = ?",
                        [.integer(Int64(entity.number))]
                    ) { $0.int64(0) }.first ?? 0
                })
        }
        return counts
    }

    /// The rows of table `table` (a join table, say); 0 when it cannot be read.
    public func joinRowCount(_ table: String) -> Int {
        Int((try? db.query("SELECT count(*) FROM \(SQLiteSchema.quote(table))") { $0.int64(0) })?.first ?? 0)
    }

    func read<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw StoreError(.io, "cannot read the Core Data store: \(error)", storeURL: url)
        }
    }
}
