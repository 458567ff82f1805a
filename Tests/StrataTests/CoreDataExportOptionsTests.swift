import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// What an export writes beyond the plain columns: keyed archives of Transformable values, external
/// binary data, an older model version, and filtered objects; each read back with `strata import`'s
/// library (``CoreDataImporter``) and, where it applies, by Python's `plistlib` and `sqlite3`.
@Suite(.serialized) struct CoreDataExportOptionsTests {
    /// Runs Python on `script` with `arguments`; its output, after checking it succeeded.
    static func python(_ script: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        return text
    }

    /// Imports `store` (written for `model`'s versions) into one Default store.
    static func imported(_ store: URL, versions: [ObjectModel], current: ObjectModel, into url: URL) throws
        -> PersistentContainer
    {
        _ = try CoreDataImporter.importStore(
            at: store, model: current, versions: versions, targets: ["Default": url],
            options: CoreDataImportOptions(durability: .normal))
        return try PersistentContainer(
            model: current, stores: [StoreDescription(type: .sqlite, configuration: nil, url: url)])
    }

    static let values: [JSONValue] = [
        .string("plain"), .string("Zürich ☃︎, a string long enough for a length object"), .integer(0),
        .integer(-7), .integer(300), .integer(70_000), .integer(5_000_000_000), .double(2.5), .bool(true),
        .array([.string("a"), .integer(1), .null, .array([]), .object([:])]),
        .object([
            "b": .integer(2), "a": .array([.string("x"), .string("x")]), "nested": .object(["deep": .bool(false)]),
        ]),
        .array((0..<300).map { .string("item \($0)") }),
    ]

    /// Every JSON value's archive decodes to that value, in Strata and in Python (`plistlib` and a
    /// dozen lines of unarchiving written here, not Strata's reader).
    @Test func transformableValuesAreKeyedArchivesThatReadBackTheSame() throws {
        let unarchive = #"""
            import plistlib, sys, json
            def value(objects, ref):
                o = objects[ref.data] if isinstance(ref, plistlib.UID) else ref
                if isinstance(o, dict):
                    name = objects[o["$class"].data]["$classname"]
                    if name == "NSArray": return [value(objects, r) for r in o["NS.objects"]]
                    if name == "NSDictionary":
                        return {value(objects, k): value(objects, v) for k, v in zip(o["NS.keys"], o["NS.objects"])}
                    if name == "NSNull": return None
                    raise ValueError(name)
                return o
            out = []
            for path in sys.argv[1:]:
                archive = plistlib.loads(open(path, "rb").read())
                assert archive["$archiver"] == "NSKeyedArchiver" and archive["$version"] == 100000
                assert archive["$objects"][0] == "$null"
                out.append(value(archive["$objects"], archive["$top"]["root"]))
            print(json.dumps(out))
            """#
        let folder = TemporaryDirectory()
        var paths: [String] = []
        for (index, value) in Self.values.enumerated() {
            let bytes = KeyedArchive.encode(value)
            #expect(try KeyedArchive.decode(bytes) == value, "\(value)")
            let file = folder.file("\(index).archive")
            try bytes.write(to: file)
            paths.append(file.path)
        }
        let text = try Self.python(unarchive, paths)
        let decoded = try JSONValue.parse(Array(text.utf8))
        #expect(decoded == .array(Self.values), "\(text)")
    }

    /// A property list with every kind of object, past 255 objects and 255 bytes, reads back the same.
    @Test func binaryPropertyListsReadBackTheSame() throws {
        let value: PropertyListValue = .dictionary([
            "integers": .array([.integer(0), .integer(255), .integer(256), .integer(-1), .integer(Int64.max)]),
            "reals": .array([.real(0.1), .real(-2)]), "flags": .array([.bool(true), .bool(false)]),
            "date": .date(731_947_175.405035), "data": .data(Data(repeating: 7, count: 300)),
            "uid": .uid(70_000), "strings": .array((0..<400).map { .string("s\($0 % 50)") }),
            "unicode": .string("naïve"),
        ])
        #expect(try BinaryPropertyList.parse(Array(BinaryPropertyList.serialize(value))) == value)
    }

    /// The Zoo fixture store (inheritance, sibling columns, ordered one-to-many and many-to-many,
    /// a self-referential many-to-many, Transformable archives, external binary data, renamed and
    /// added attributes across two versions), imported, exported for each version and imported
    /// again: the same objects. Values Strata kept as bytes go back byte for byte; Binary values
    /// over the threshold go to `_EXTERNAL_DATA` files.
    @Test func theZooExportsForEachVersionAndImportsBackTheSame() throws {
        let folder = TemporaryDirectory()
        _ = try CoreDataImportTests.fixtures(in: folder)
        let versions = try ObjectModel.loadCoreDataModelVersions(at: CoreDataImportTests.zoo)
        let current = try ObjectModel.load(contentsOf: CoreDataImportTests.zoo)
        // Version Zoo wrote it: the import migrates it to Zoo 2 (Keeper.name renamed fullName,
        // Visit.rating added), as an export for Zoo and its import again do.
        let report = try CoreDataImporter.importStore(
            at: folder.file("zoo-v1-wal.sqlite"), model: current, versions: versions,
            targets: ["Default": folder.file("first.sqlite")], options: CoreDataImportOptions(durability: .normal))
        let first = try PersistentContainer(
            model: current,
            stores: [StoreDescription(type: .sqlite, configuration: nil, url: folder.file("first.sqlite"))])

        for version in versions {
            let out = folder.file("Zoo-\(version.name.replacingOccurrences(of: " ", with: "")).sqlite")
            let written = try CoreDataExporter.export(
                model: current, coordinator: first.coordinator, to: out,
                options: CoreDataExportOptions(version: version, externalDataThreshold: 32))
            #expect(written.objects.values.reduce(0, +) == 59, "\(written.objects)")
            #expect(written.entitiesLeftOut == [])
            let files = try FileManager.default.contentsOfDirectory(
                atPath: CoreDataExporter.externalDataFolder(of: out).path)
            #expect(files.count == written.externalFiles && written.externalFiles == 4, "\(files)")
            let file = try CoreDataStoreFile(url: out)
            #expect(try file.identifyVersion(among: versions).model.name == version.name)
            let again = try Self.imported(
                out, versions: versions, current: current, into: folder.file("again-\(version.name).sqlite"))
            try expectSameObjects(current, first.coordinator, again.coordinator, "Zoo exported for \(version.name)")
        }

        // Archives of JSON values (lists, dictionaries, numbers) laid out as NSKeyedArchiver lays
        // them out, and those Strata keeps as bytes (an app's own class), are written back byte
        // for byte; dates, UUIDs and URLs are JSON strings since the import, and so archived.
        #expect(
            report.warnings.contains { $0.contains(".traits") && $0.contains("not these bytes") }, "\(report.warnings)")
        let original = try SQLiteConnection(path: folder.file("zoo-v1-wal.sqlite").path, mode: .readOnly)
        let exported = try SQLiteConnection(path: folder.file("Zoo-Zoo.sqlite").path, mode: .readOnly)
        let sql = "SELECT Z_PK, ZTRAITS FROM ZANIMAL ORDER BY Z_PK"
        let before = try original.query(sql) { ($0.int64(0), $0.blob(1)) }
        let after = Dictionary(uniqueKeysWithValues: try exported.query(sql) { ($0.int64(0), $0.blob(1)) })
        #expect(before.count == 21)
        for (key, bytes) in before {
            // The fixture's archives go round by primary key: a list, a dictionary, a date, a
            // UUID, a URL, a mixed list, an object of the app's own class.
            #expect((after[key] == bytes) == ![2, 3, 4].contains(key % 7), "Animal \(key)")
        }

        // Python reads the export on its own: photos inline or in _EXTERNAL_DATA, archives
        // through plistlib, all as the fixture wrote them.
        let text = try Self.python(
            Self.readZoo, [folder.file("Zoo-Zoo.sqlite").path, folder.file("expected.json").path])
        #expect(text.contains("ok 4 external"), "\(text)")
    }

    /// The export of the Zoo fixture has the schema and metadata of the store
    /// `scripts/coredata-fixtures.py` writes on its own (its tables, column types, `Z_PRIMARYKEY`
    /// numbering and version hashes computed in Python from the model's XML), for each version.
    @Test func theZooExportHasTheShapeThePythonWriterGivesIt() throws {
        let folder = TemporaryDirectory()
        _ = try CoreDataImportTests.fixtures(in: folder)
        let versions = try ObjectModel.loadCoreDataModelVersions(at: CoreDataImportTests.zoo)
        let current = try ObjectModel.load(contentsOf: CoreDataImportTests.zoo)
        let container = try Self.imported(
            folder.file("zoo-v2.sqlite"), versions: versions, current: current, into: folder.file("zoo.sqlite"))
        for (version, written) in [("Zoo 2", "zoo-v2.sqlite"), ("Zoo", "zoo-v1-wal.sqlite")] {
            let out = folder.file("export-\(written)")
            _ = try CoreDataExporter.export(
                model: current, coordinator: container.coordinator, to: out,
                options: CoreDataExportOptions(version: versions.first { $0.name == version }))
            let exported = try CoreDataExportTests.Shape(out)
            let python = try CoreDataExportTests.Shape(folder.file(written))
            #expect(!python.tables.isEmpty && !python.hashes.isEmpty)
            // The Python writer declares no indexes; every other part must agree.
            let differences = exported.differences(from: python).filter { !$0.hasPrefix("index only in the export") }
            #expect(differences == [], "\(version)")
        }
    }

    static let readZoo = #"""
        import sqlite3, plistlib, sys, json, base64, os
        store, expected = sys.argv[1], json.load(open(sys.argv[2]))["zoo-v1-wal.sqlite"]["objects"]
        db = sqlite3.connect(store)
        name = os.path.splitext(os.path.basename(store))[0]
        support = os.path.join(os.path.dirname(store), "." + name + "_SUPPORT", "_EXTERNAL_DATA")
        rows = {pk: (photo, traits) for pk, photo, traits in db.execute("SELECT Z_PK, ZPHOTO, ZTRAITS FROM ZANIMAL")}
        def value(objects, ref):
            o = objects[ref.data] if isinstance(ref, plistlib.UID) else ref
            if isinstance(o, dict):
                kind = objects[o["$class"].data]["$classname"]
                if kind == "NSArray": return [value(objects, r) for r in o["NS.objects"]]
                if kind == "NSDictionary":
                    return {value(objects, k): value(objects, v) for k, v in zip(o["NS.keys"], o["NS.objects"])}
                raise ValueError(kind)
            return o
        external = 0
        for kind in ("Cat", "Dog", "Puppy"):
            for item in expected[kind]:
                photo, traits = rows[item["_id"]]
                if photo is None:
                    got = None
                elif photo[0] == 1:
                    got = photo[1:]
                else:
                    assert photo[0] == 2 and photo.endswith(b"\0"), photo
                    got = open(os.path.join(support, photo[1:-1].decode()), "rb").read()
                    external += 1
                assert got == (None if item["photo"] is None else base64.b64decode(item["photo"])), item["_id"]
                want = item["traits"]
                if isinstance(want, dict) and "$binary" in want:
                    assert traits == base64.b64decode(want["$binary"]), item["_id"]
                else:
                    archive = plistlib.loads(traits)
                    assert archive["$archiver"] == "NSKeyedArchiver", archive
                    assert value(archive["$objects"], archive["$top"]["root"]) == want, (item["_id"], want)
        print("ok", external, "external")
        """#

    /// Two versions of a shop: version 1 has `Item.code` (required) and `Item.note`; version 2
    /// drops both, adds `Item.rating` and an entity `Review`.
    static func shop(code: String) throws -> (old: ObjectModel, current: ObjectModel) {
        let old = try ObjectModel.load(
            json: Array(
                """
                {"name": "Shop1", "version": "1", "entities": [
                  {"name": "Item", "attributes": [{"name": "title", "type": "string", "optional": false},
                    \(code), {"name": "note", "type": "string"}],
                   "relationships": [{"name": "maker", "destination": "Maker", "inverse": "items", "optional": false}]},
                  {"name": "Maker", "attributes": [{"name": "name", "type": "string"}],
                   "relationships": [{"name": "items", "destination": "Item", "toMany": true, "inverse": "maker"}]}]}
                """.utf8))
        let current = try ObjectModel.load(
            json: Array(
                """
                {"name": "Shop2", "version": "2", "entities": [
                  {"name": "Item", "attributes": [{"name": "title", "type": "string", "optional": false},
                    {"name": "rating", "type": "integer16"}, {"name": "extra", "type": "json"}],
                   "relationships": [{"name": "maker", "destination": "Maker", "inverse": "items", "optional": false}]},
                  {"name": "Maker", "attributes": [{"name": "name", "type": "string"}],
                   "relationships": [{"name": "items", "destination": "Item", "toMany": true, "inverse": "maker"}]},
                  {"name": "Review", "attributes": [{"name": "text", "type": "string"}]}]}
                """.utf8))
        return (old, current)
    }

    /// A shop with two makers and three items, one review.
    static func shopData(_ model: ObjectModel, _ folder: TemporaryDirectory) throws -> PersistentContainer {
        let container = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: folder.file("shop.sqlite"))]
        )
        let context = container.viewContext
        let makers = try ["Acme", "Zenith"].map { try context.insert("Maker", values: ["name": .string($0)]) }
        for (index, title) in ["anvil", "rocket", "radio"].enumerated() {
            let item = try context.insert(
                "Item",
                values: [
                    "title": .string(title), "rating": .integer(Int64(index)),
                    "extra": .json(.object(["tags": .array([.string(title)])])),
                ])
            try item.setObject(makers[index == 2 ? 1 : 0], forKey: "maker")
        }
        _ = try context.insert("Review", values: ["text": .string("fine")])
        try context.save()
        return container
    }

    /// An older version gets what it has in common with the data; a required attribute it has and
    /// the data lacks refuses the export (unless it has a default value), naming it; a refused
    /// export writes nothing.
    @Test func anOlderVersionTakesWhatItSharesAndRefusesWhatItCannotHold() throws {
        let folder = TemporaryDirectory()
        let refusing = try Self.shop(code: #"{"name": "code", "type": "string", "optional": false}"#)
        let container = try Self.shopData(refusing.current, folder)
        let out = folder.file("Seed.sqlite")
        #expect {
            try CoreDataExporter.export(
                model: refusing.current, coordinator: container.coordinator, to: out,
                options: CoreDataExportOptions(version: refusing.old))
        } throws: { error in
            let message = (error as? StoreError)?.message ?? ""
            return message.contains("Item.code is required in version Shop1") && message.contains("3 objects of Item")
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains("Seed") }
        #expect(left == [])

        let defaulted = try Self.shop(
            code: #"{"name": "code", "type": "string", "optional": false, "default": "none"}"#)
        let report = try CoreDataExporter.export(
            model: defaulted.current, coordinator: container.coordinator, to: out,
            options: CoreDataExportOptions(version: defaulted.old))
        #expect(report.entitiesLeftOut == ["Review"])
        #expect(report.objects == ["Item": 3, "Maker": 2])
        let reread = try Self.imported(
            out, versions: [defaulted.old], current: defaulted.old, into: folder.file("r.sqlite"))
        let items = try reread.coordinator.fetch(FetchRequest(entityName: "Item")).sorted {
            $0.id.primaryKey! < $1.id.primaryKey!
        }
        #expect(items.map { $0[attribute: "title"] } == [.string("anvil"), .string("rocket"), .string("radio")])
        #expect(items.allSatisfy { $0[attribute: "code"] == .string("none") && $0[attribute: "note"] == .null })
        #expect(items.map { ($0.toOne["maker"] ?? nil)?.primaryKey } == [1, 1, 2])
        let db = try SQLiteConnection(path: out.path, mode: .readOnly)
        let columns = try db.query("SELECT name FROM pragma_table_info('ZITEM')") { $0.text(0) }
        #expect(Set(columns) == ["Z_PK", "Z_ENT", "Z_OPT", "ZTITLE", "ZCODE", "ZNOTE", "ZMAKER"])
    }

    /// `filters`: only the matching objects (of the entity and its subentities) are written, and
    /// relationships to those left out are cleared; a required one left dangling refuses the
    /// export, naming the object, and writes nothing.
    @Test func filtersLeaveObjectsOutAndRefuseADanglingRequiredRelationship() throws {
        let folder = TemporaryDirectory()
        let shop = try Self.shop(code: #"{"name": "code", "type": "string"}"#)
        let container = try Self.shopData(shop.current, folder)
        let out = folder.file("Seed.sqlite")
        let zenith = try FetchPredicate(format: "name == 'Zenith'")
        #expect {
            try CoreDataExporter.export(
                model: shop.current, coordinator: container.coordinator, to: out,
                options: CoreDataExportOptions(filters: ["Maker": zenith]))
        } throws: { error in
            (error as? StoreError)?.message
                == "cannot export Item 1: its required relationship maker leads to Maker 1, which the export leaves out"
        }
        #expect(!FileManager.default.fileExists(atPath: out.path))

        let report = try CoreDataExporter.export(
            model: shop.current, coordinator: container.coordinator, to: out,
            options: CoreDataExportOptions(filters: [
                "Maker": zenith, "Item": try FetchPredicate(format: "rating >= 2"),
            ]))
        #expect(report.objects == ["Item": 1, "Maker": 1, "Review": 1])
        let reread = try Self.imported(
            out, versions: [shop.current], current: shop.current, into: folder.file("r.sqlite"))
        let items = try reread.coordinator.fetch(FetchRequest(entityName: "Item"))
        #expect(items.map { $0[attribute: "title"] } == [.string("radio")])
        #expect(items.first?[attribute: "extra"] == .json(.object(["tags": .array([.string("radio")])])))
        let makers = try reread.coordinator.fetch(FetchRequest(entityName: "Maker"))
        #expect(try makers.map { try reread.coordinator.relatedIDs(of: $0.id, relationship: "items").count } == [1])
    }

    /// A filter on a parent entity applies to its subentities' objects too, and an optional
    /// relationship to an object left out is cleared (the Zoo's enclosures, keepers' favourites).
    @Test func aFilterOnAParentAppliesToItsSubentities() throws {
        let folder = TemporaryDirectory()
        _ = try CoreDataImportTests.fixtures(in: folder)
        let versions = try ObjectModel.loadCoreDataModelVersions(at: CoreDataImportTests.zoo)
        let current = try ObjectModel.load(contentsOf: CoreDataImportTests.zoo)
        let first = try Self.imported(
            folder.file("zoo-v2.sqlite"), versions: versions, current: current, into: folder.file("first.sqlite"))
        let out = folder.file("Seed.sqlite")
        let report = try CoreDataExporter.export(
            model: current, coordinator: first.coordinator, to: out,
            options: CoreDataExportOptions(filters: [
                "Animal": try FetchPredicate(format: "weight < 10"),
                "Enclosure": try FetchPredicate(format: "label != 'Enclosure 2'"),
            ]))
        // Animals 1...6 weigh 4.5...9.5: two cats, two dogs, two puppies.
        #expect(report.objects["Cat"] == 2 && report.objects["Dog"] == 2 && report.objects["Puppy"] == 2)
        let again = try Self.imported(out, versions: versions, current: current, into: folder.file("again.sqlite"))
        for row in try again.coordinator.fetch(FetchRequest(entityName: "Animal")) {
            #expect(row.id.primaryKey! <= 6)
            #expect((row.toOne["enclosure"] ?? nil)?.primaryKey != 2, "Animal \(row.id.primaryKey!)")
        }
        let favourites = try again.coordinator.fetch(FetchRequest(entityName: "Keeper")).map {
            ($0.toOne["favourite"] ?? nil)?.primaryKey
        }
        #expect(favourites.allSatisfy { $0 == nil || $0! <= 6 }, "\(favourites)")
        let enclosure = try #require(again.coordinator.objectID(of: "Enclosure", primaryKey: 3))
        let residents = try again.coordinator.relatedIDs(of: enclosure, relationship: "residents")
        let before = try first.coordinator.relatedIDs(
            of: try #require(first.coordinator.objectID(of: "Enclosure", primaryKey: 3)), relationship: "residents")
        #expect(residents.compactMap(\.primaryKey) == before.compactMap(\.primaryKey).filter { $0 <= 6 })
    }
}
