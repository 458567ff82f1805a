import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Stores in Core Data's own format, built by `scripts/coredata-fixtures.py` (Python's sqlite3,
/// following the format exactly, with its own implementation of Core Data's version hashes),
/// imported and compared object by object with what the script wrote.
@Suite(.serialized) struct CoreDataImportTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let zoo = root.appendingPathComponent("Tests/Fixtures/CoreData/Zoo.xcdatamodeld")

    /// The fixture stores, written into `folder`, and what they hold.
    static func fixtures(in folder: TemporaryDirectory) throws -> [String: JSONValue] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", root.appendingPathComponent("scripts/coredata-fixtures.py").path, folder.url.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "scripts/coredata-fixtures.py failed")
        let text = try Data(contentsOf: folder.file("expected.json"))
        return try #require(try JSONValue.parse(Array(text)).objectValue)
    }

    static func digest(_ url: URL) throws -> [String: String] {
        var result: [String: String] = [:]
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            var hasher = SHA256()
            hasher.update(Array(try Data(contentsOf: URL(fileURLWithPath: url.path + suffix))))
            result[suffix] = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        }
        return result
    }

    /// Every expected object is in the stores with the values, versions and links the script wrote.
    static func expectObjects(
        _ expected: [String: JSONValue], in container: PersistentContainer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let context = container.viewContext
        let model = container.model
        for (entity, items) in expected {
            let list = items.arrayValue ?? []
            #expect(
                try context.count(FetchRequest(entityName: entity, includesSubentities: false)) == list.count,
                "\(entity) count", sourceLocation: sourceLocation)
            for item in list.compactMap(\.objectValue) {
                guard case .integer(let pk)? = item["_id"],
                    let id = container.coordinator.objectID(of: entity, primaryKey: pk)
                else {
                    Issue.record("\(entity) has no id", sourceLocation: sourceLocation)
                    continue
                }
                let object = try context.object(with: id)
                #expect(
                    .integer(object.version) == item["_version"], "\(entity) \(pk) version",
                    sourceLocation: sourceLocation)
                for (key, value) in item where !key.hasPrefix("_") {
                    let place = "\(entity) \(pk).\(key)"
                    if let relationship = model.relationship(key, of: entity) {
                        if relationship.isToMany {
                            let got = try object.objectIDs(forKey: key).compactMap(\.primaryKey)
                            let want = (value.arrayValue ?? []).compactMap { $0.doubleValue.map { Int64($0) } }
                            #expect(
                                relationship.isOrdered ? got == want : Set(got) == Set(want), "\(place): \(got)",
                                sourceLocation: sourceLocation)
                        } else {
                            #expect(
                                try object.objectID(forKey: key)?.primaryKey == value.doubleValue.map { Int64($0) },
                                "\(place)", sourceLocation: sourceLocation)
                        }
                        continue
                    }
                    guard let attribute = model.attribute(key, of: entity) else {
                        Issue.record("\(place) is not in the model", sourceLocation: sourceLocation)
                        continue
                    }
                    let stored = try object.value(forKey: key)
                    switch attribute.type {
                    case .json:
                        #expect(
                            stored == (value == .null ? .null : .json(value)), "\(place)",
                            sourceLocation: sourceLocation)
                    case .binary:
                        let want = value.stringValue.flatMap { Data(base64Encoded: $0) }
                        #expect(
                            stored == (want.map { .binary($0) } ?? .null), "\(place)", sourceLocation: sourceLocation)
                    case .uuid, .decimal, .date:
                        #expect(
                            stored == (AttributeValue(json: value, as: attribute.type) ?? .null), "\(place): \(stored)",
                            sourceLocation: sourceLocation)
                    default:
                        #expect(stored.json == value, "\(place): \(stored)", sourceLocation: sourceLocation)
                    }
                }
            }
        }
    }

    @Test func aWALStoreOfAnOlderVersionIsImportedMigratedAndSplit() throws {
        let folder = TemporaryDirectory()
        let expected = try Self.fixtures(in: folder)
        let source = folder.file("zoo-v1-wal.sqlite")
        let before = try Self.digest(source)
        #expect(before.count == 3)
        let model = try ObjectModel.load(contentsOf: Self.zoo)
        let versions = try ObjectModel.loadCoreDataModelVersions(at: Self.zoo)
        let file = try CoreDataStoreFile(url: source)
        // Python's own implementation of Core Data's hashes and Strata's agree.
        let hashes = try #require(expected["zoo-v1-wal.sqlite"]?.objectValue?["hashes"]?.objectValue)
        for (name, value) in versions[0].coreDataVersionHashes {
            #expect(value.map { String(format: "%02x", $0) }.joined() == hashes[name]?.stringValue, "\(name)")
        }
        #expect(try file.identifyVersion(among: versions).model.name == "Zoo")
        #expect(file.otherMetadataKeys == ["AppSyncToken"])
        let targets = ["Park": folder.file("out/park.sqlite"), "Log": folder.file("out/log.sqlite")]
        var phases: Set<CoreDataImportProgress.Phase> = []
        let report = try CoreDataImporter.importStore(
            at: source, model: model, versions: versions, targets: targets,
            options: CoreDataImportOptions(chunkSize: 4)
        ) { phases.insert($0.phase) }
        #expect(report.outcome == .imported && report.sourceVersion == "Zoo" && report.targetVersion == "Zoo 2")
        #expect(phases == [.converting, .verifying, .migrating, .splitting, .finished])
        #expect(report.checks.first { $0.name == "Visit" }?.rows == 30)
        #expect(report.warnings.contains { $0.contains("Cat.photo") && $0.contains("missing") })
        #expect(report.warnings.contains { $0.contains("ZooTrait") })
        #expect(try Self.digest(source) == before)
        // Nothing of the staging store is left.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.file("out").path).sorted() == [
                "log.sqlite", "park.sqlite",
            ])

        let stores = targets.map { StoreDescription(type: .sqlite, configuration: $0.key, url: $0.value) }
        let container = try PersistentContainer(model: model, stores: stores)
        var objects = try #require(expected["zoo-v1-wal.sqlite"]?.objectValue?["objects"]?.objectValue)
        // Version 2 renamed Keeper.name to fullName and added Visit.rating (default 3).
        objects["Keeper"] = .array(
            (objects["Keeper"]?.arrayValue ?? []).map { keeper in
                var members = keeper.objectValue ?? [:]
                members["fullName"] = members.removeValue(forKey: "name")
                return .object(members)
            })
        objects["Visit"] = .array(
            (objects["Visit"]?.arrayValue ?? []).map { visit in
                var members = visit.objectValue ?? [:]
                members["rating"] = .integer(3)
                return .object(members)
            })
        try Self.expectObjects(objects, in: container)
        // A new object gets a key after the imported ones.
        let added = try container.viewContext.insert("Visit", values: ["note": .string("new")])
        try container.viewContext.save()
        #expect(added.objectID.primaryKey == 31)

        // Importing again changes nothing.
        let again = try CoreDataImporter.importStore(at: source, model: model, versions: versions, targets: targets)
        #expect(again.outcome == .alreadyImported)
    }

    @Test func aStoreOfTheCurrentVersionIsImportedIntoOneStore() throws {
        let folder = TemporaryDirectory()
        let expected = try Self.fixtures(in: folder)
        let source = folder.file("zoo-v2.sqlite")
        let model = try ObjectModel.load(contentsOf: Self.zoo)
        let versions = try ObjectModel.loadCoreDataModelVersions(at: Self.zoo)
        let target = folder.file("all.sqlite")
        let report = try CoreDataImporter.importStore(
            at: source, model: model, versions: versions, targets: ["Default": target])
        #expect(report.sourceVersion == "Zoo 2" && report.versionReason.contains("only version"))
        let container = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: target)])
        let objects = try #require(expected["zoo-v2.sqlite"]?.objectValue?["objects"]?.objectValue)
        try Self.expectObjects(objects, in: container)
        // The comparison does see a difference (a negative control).
        var changed = objects
        var keepers = changed["Keeper"]?.arrayValue ?? []
        var first = keepers[0].objectValue ?? [:]
        first["shifts"] = .double(99)
        keepers[0] = .object(first)
        changed["Keeper"] = .array(keepers)
        withKnownIssue("a negative control: the comparison sees the changed value") {
            try Self.expectObjects(changed, in: container)
        }
        // The one store keeps the Core Data store's UUID.
        #expect(container.coordinator.stores.first?.identifier == report.sourceIdentifier)
        // Cat.ageWeeks (Integer 64) came from ZAGEWEEKS and Puppy.ageWeeks (Integer 32) from
        // ZAGEWEEKS1; Strata's own table names them the same way.
        let db = try SQLiteConnection(path: target.path, readOnly: true)
        let columns = try db.query("SELECT name FROM pragma_table_info('Animal')") { $0.text(0) }
        #expect(columns.filter { $0.hasPrefix("ageWeeks") }.sorted() == ["ageWeeks", "ageWeeks1"])
    }

    @Test func aVersionIsChosenByHashesThenIdentifiersAndRefusedWhenAmbiguous() throws {
        let folder = TemporaryDirectory()
        _ = try Self.fixtures(in: folder)
        let file = try CoreDataStoreFile(url: folder.file("zoo-v2.sqlite"))
        let versions = try ObjectModel.loadCoreDataModelVersions(at: Self.zoo)
        // The same version twice under two names and identifiers: the recorded identifier decides.
        let twin = try ObjectModel(
            name: "Zoo 2 copy", version: "2b", entities: versions[1].entities,
            configurations: versions[1].configurations)
        let match = try file.identifyVersion(among: [versions[0], versions[1], twin])
        #expect(match.model.name == "Zoo 2" && match.reason.contains("version identifier '2'"))
        let sameIdentifier = try ObjectModel(name: "Zoo 2 again", version: "2", entities: versions[1].entities)
        do {
            _ = try file.identifyVersion(among: [versions[1], sameIdentifier])
            Issue.record("an ambiguous match was accepted")
        } catch {
            #expect(error.message.contains("--source-version") && error.message.contains("Zoo 2 again"))
        }
        #expect(
            try file.identifyVersion(among: [versions[1], sameIdentifier], chosen: "Zoo 2 again").model.name
                == "Zoo 2 again")
        do {
            _ = try file.identifyVersion(among: [versions[0]])
            Issue.record("a version that did not write the store was accepted")
        } catch {
            #expect(error.message.contains("no version of the model") && error.message.contains("Keeper"))
        }
    }

    @Test func keyedArchivesDecodeToJSON() throws {
        let folder = TemporaryDirectory()
        _ = try Self.fixtures(in: folder)
        let file = try CoreDataStoreFile(url: folder.file("zoo-v2.sqlite"))
        let archives = try file.db.query("SELECT Z_PK, ZTRAITS FROM ZANIMAL ORDER BY Z_PK") {
            ($0.int64(0), $0.blob(1))
        }
        let decoded = archives.map { (try? KeyedArchive.decode($0.1)) }
        #expect(decoded[0] == .object(["meals": .integer(3), "vet": .string("Dr. Rao")]))
        #expect(
            decoded[4] == .array([.integer(1), .double(2.5), .bool(true), .object(["deep": .array([.string("x")])])]))
        #expect(decoded[5] == nil)  // an app's own class
        #expect(throws: KeyedArchive.Unsupported.self) { try KeyedArchive.decode(Data("not an archive".utf8)) }
        #expect(throws: KeyedArchive.Unsupported.self) {
            try KeyedArchive.decode(Data("bplist00".utf8) + Data(count: 40))
        }
    }
}
