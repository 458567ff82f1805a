import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Stores that Apple's Core Data wrote (the shared material, see ``CoreDataMaterial``), imported,
/// exported back into Core Data's format with ``CoreDataExporter``, and compared: with the
/// original file (tables, columns and their types, `Z_PRIMARYKEY`, the metadata's hashes and
/// digest) and, imported again, object by object with the first import.
@Suite struct CoreDataExportTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var store: String
        var model: String
        /// The version that wrote the store (the export is for it).
        var version: String
        /// The version the objects are imported into, when not the one that wrote the store: the
        /// bundle's current version, the one the app ships; the export is then for the older
        /// version that wrote the store (``CoreDataExportOptions/version``).
        var into: String? = nil
        /// Why the objects cannot go through the bundle's current version (imported into it, then
        /// exported for the version that wrote the store), when they cannot: what the refusal says.
        /// The store is then imported into the version that wrote it, and exported for that.
        var refusedThroughCurrent: String? = nil
        /// Why the original's indexes are not those Core Data writes today, when they are not.
        var olderIndexes: String? = nil
        /// Why the original's `Z_PRIMARYKEY` names an entity otherwise than a store Core Data
        /// creates for the version does, when it does.
        var olderEntityNames: String? = nil
        /// Nil: the model loads; else why it does not (what the refusal says), and the store is
        /// neither imported nor exported.
        var modelRefused: String? = nil
        var testDescription: String { store }
    }

    static let cases = asWritten + olderVersions

    /// Stores imported into the version that wrote them, exported for it.
    static let asWritten: [Case] = [
        Case(
            store: "bnr-coredatastack-testmodel/TestModel.sqlite",
            model: "bnr-coredatastack-testmodel/Sample.xcdatamodeld", version: "TestModel"),
        Case(
            store: "cadets-ets/Sample.sqlite", model: "cadets-ets/Model.xcdatamodeld", version: "Model 20",
            olderIndexes: "written by Core Data framework 851, which indexed attributes as <TABLE>_<COLUMN>_INDEX "
                + "and made no index of most of the model's fetch indexes"),
        // Inheritance and a many-to-many join table.
        Case(
            store: "coredataplus-samplemodel-2018/SampleModelV2.sqlite",
            model: "coredataplus-samplemodel-2018/SampleModel.xcdatamodeld/SampleModel3.xcdatamodel",
            version: "SampleModel3"),
        Case(
            store: "coredataplus-samplemodel3/SampleModel3_V1.sqlite",
            model: "coredataplus-samplemodel3/SampleModel3.xcdatamodeld", version: "SampleModel3"),
        // Ordered to-many relationships kept by the inverse's column (Z_FOK_).
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V5.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld", version: "BookmarksModel 5"),
        // Uniqueness constraints and fetch indexes.
        Case(
            store: "ddg-bsk-syncmetadata-KNOWN-B/SyncMetadata_V3.sqlite",
            model: "ddg-bsk-syncmetadata-KNOWN-B/SyncMetadata.xcdatamodeld", version: "SyncMetadata 3"),
        Case(store: "hap-ios/HAP.sqlite", model: "hap-ios/HAP.xcdatamodeld", version: "HAP"),
        Case(
            store: "mwkcoredata/MWKCoreDataTests.sqlite", model: "mwkcoredata/MWKCoreDataTests.xcdatamodeld",
            version: "MWKCoreDataTests"),
        Case(
            store: "xcservercoredata/head/XCServerCoreData_2.0.1.sqlite",
            model: "xcservercoredata/XCServerCoreData.xcdatamodeld", version: "XCServerCoreData2.0.1"),
    ]

    /// The rest of the material, most of it written by an older version of its bundle than the
    /// current one: imported into the current version where a migration to it is possible, and
    /// exported for the version that wrote the store.
    static let olderVersions: [Case] = [
        Case(
            store: "cadets-ets/Sample-prod.sqlite", model: "cadets-ets/Model.xcdatamodeld", version: "Model 20",
            into: "Model 21",
            olderIndexes: "written by Core Data framework 851, which indexed attributes as <TABLE>_<COLUMN>_INDEX "
                + "and made no index of most of the model's fetch indexes"),
        Case(
            store: "coredataplus-samplemodel/SampleModel_V1.sqlite",
            model: "coredataplus-samplemodel/SampleModel.xcdatamodeld", version: "SampleModel"),
        // The bundle marks SampleModel current, and version 2's objects lack the `Person.id` it
        // requires. The store was migrated in place from SampleModel, whose `ExpensiveSportCar`
        // version 2 renames `LuxuryCar`: Core Data's migration kept the old name in Z_PRIMARYKEY,
        // where a store it creates for version 2 (as the export is) names the entity `LuxuryCar`.
        Case(
            store: "coredataplus-samplemodel/SampleModel_V2.sqlite",
            model: "coredataplus-samplemodel/SampleModel.xcdatamodeld", version: "SampleModel2",
            refusedThroughCurrent: "Person.id: is added as required with no default value",
            olderEntityNames: "migrated in place from SampleModel, which named LuxuryCar ExpensiveSportCar"),
        // Version 4 replaced the required `isFavorite` and the to-one `favoriteFolder` with the
        // to-many `favoriteFolders`: going back from version 6 is no inferred mapping (whether an
        // object is a favourite, and its one folder, are not values of version 6), so the export
        // refuses it, and the store is exported from an import into the version that wrote it.
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V1.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld", version: "BookmarksModel",
            refusedThroughCurrent: "BookmarkEntity.isFavorite is required in version BookmarksModel and the data has no"
        ),
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V2.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld", version: "BookmarksModel 2",
            refusedThroughCurrent:
                "BookmarkEntity.isFavorite is required in version BookmarksModel 2 and the data has no"),
        // Version 3 has no `isFavorite`, but its `favoriteFolder` is still to-one (see above).
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V3.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld", version: "BookmarksModel 3",
            refusedThroughCurrent:
                "BookmarkEntity.favoriteFolder is a to-one relationship in version BookmarksModel 3 and a to-many in the data"
        ),
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V4.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld", version: "BookmarksModel 4",
            into: "BookmarksModel 6"),
        // A later version changes an attribute from string to date, which Core Data's inferred
        // migration (and so the import) refuses.
        Case(
            store: "xcservercoredata/at-a515310-with-wal/XCServerCoreData_1.2.0.sqlite",
            model: "xcservercoredata/XCServerCoreData.xcdatamodeld", version: "XCServerCoreData1.2.0",
            refusedThroughCurrent: "type changes from string to date",
            olderIndexes: "written by Core Data framework 754, which named the index of an indexed attribute "
                + "<TABLE>_<COLUMN>_INDEX where Core Data names it Z_<Entity>_<attribute> today"),
        Case(
            store: "loopkit/Model.sqlite.v1.original", model: "loopkit/Model.xcdatamodeld", version: "Model",
            into: "Modelv4"),
        // Apple's Recipes sample: its only model is an Xcode 3 `elements` file, which Core Data
        // does not load either (Xcode compiles it; the runtime reads only compiled models).
        Case(
            store: "apple-iphonecoredatarecipes/Recipes.sqlite",
            model: "apple-iphonecoredatarecipes/Recipes.xcdatamodel", version: "Recipes", modelRefused: "Xcode 3"),
    ]

    /// The schema and metadata of a Core Data store, as the comparison sees them.
    struct Shape: Equatable {
        /// Table → column → declared type, for Core Data's tables (`Z...`, not `Z_MODELCACHE`).
        var tables: [String: [String: String]]
        /// `name table (columns) unique` of every index but SQLite's own (a descending column
        /// followed by `desc`).
        var indexes: Set<String> = []
        /// `Z_ENT|Z_NAME|Z_SUPER` rows.
        var entities: [String]
        var hashes: [String: PropertyListValue]
        var digest: PropertyListValue?
        var identifiers: PropertyListValue?

        init(_ url: URL) throws {
            let db = try SQLiteConnection(path: url.path, mode: .readOnly)
            tables = [:]
            let names = try db.query("SELECT name FROM sqlite_master WHERE type = 'table'") { $0.text(0) }
            for table in names where table.hasPrefix("Z") && table != "Z_MODELCACHE" {
                let columns = try db.query("SELECT name, type FROM pragma_table_info(?)", [.text(table)]) {
                    ($0.text(0), $0.text(1))
                }
                tables[table] = Dictionary(uniqueKeysWithValues: columns)
                let list = try db.query("SELECT name, \"unique\" FROM pragma_index_list(?)", [.text(table)]) {
                    ($0.text(0), $0.int64(1))
                }
                for (index, unique) in list where !index.hasPrefix("sqlite_") {
                    let columns = try db.query(
                        "SELECT name, \"desc\" FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno", [.text(index)]
                    ) { $0.text(0) + ($0.int64(1) == 1 ? " desc" : "") }
                    indexes.insert(
                        "\(index) \(table) (\(columns.joined(separator: ", ")))\(unique == 1 ? " unique" : "")")
                }
            }
            entities = try db.query("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT") {
                "\($0.int64(0))|\($0.text(1))|\($0.int64(2))"
            }
            let plist = try #require(try db.query("SELECT Z_PLIST FROM Z_METADATA") { $0.blob(0) }.first)
            let metadata = try #require(try BinaryPropertyList.parse(Array(plist)).dictionary)
            hashes = metadata["NSStoreModelVersionHashes"]?.dictionary ?? [:]
            digest = metadata["NSStoreModelVersionHashesDigest"]
            identifiers = metadata["NSStoreModelVersionIdentifiers"]
        }

        /// What differs from `other`, one line each.
        func differences(from other: Shape) -> [String] {
            var lines: [String] = []
            for table in Set(tables.keys).union(other.tables.keys).sorted() {
                guard let mine = tables[table], let theirs = other.tables[table] else {
                    lines.append("table \(table) only in the \(tables[table] == nil ? "original" : "export")")
                    continue
                }
                if mine != theirs {
                    lines.append(
                        "\(table): export \(mine.sorted { $0.key < $1.key }) original \(theirs.sorted { $0.key < $1.key })"
                    )
                }
            }
            for index in indexes.subtracting(other.indexes).sorted() {
                lines.append("index only in the export: \(index)")
            }
            for index in other.indexes.subtracting(indexes).sorted() {
                lines.append("index only in the original: \(index)")
            }
            if entities != other.entities {
                lines.append("Z_PRIMARYKEY: export \(entities) original \(other.entities)")
            }
            if hashes != other.hashes { lines.append("NSStoreModelVersionHashes differ") }
            // Stores of Core Data before framework version 1145 or so carry no digest.
            if other.digest != nil, digest != other.digest { lines.append("NSStoreModelVersionHashesDigest differs") }
            if identifiers != other.identifiers {
                lines.append(
                    "NSStoreModelVersionIdentifiers: export \(String(describing: identifiers)) original \(String(describing: other.identifiers))"
                )
            }
            return lines
        }
    }

    @Test(
        .enabled(if: CoreDataMaterial.requirement.runs, "\(CoreDataMaterial.requirement.skipComment)"),
        arguments: cases)
    func aRealStoreExportsAsCoreDataWroteIt(_ test: Case) throws {
        try CoreDataMaterial.requirement.check()
        let source = CoreDataMaterial.stores.appendingPathComponent(test.store)
        let modelURL = CoreDataMaterial.stores.appendingPathComponent(test.model)
        if let refusal = test.modelRefused {
            do {
                _ = try ObjectModel.load(contentsOf: modelURL)
                Issue.record("\(test.model) loads, but its refusal was expected (\(refusal))")
            } catch {
                #expect("\(error)".contains(refusal), "\(error)")
                print("export of \(test.store): not imported, its model is refused (\(error))")
            }
            return
        }
        let versions =
            modelURL.pathExtension == "xcdatamodeld"
            ? try ObjectModel.loadCoreDataModelVersions(at: modelURL) : [try ObjectModel.load(contentsOf: modelURL)]
        let written = try #require(versions.first { $0.name == test.version })
        let folder = TemporaryDirectory()
        let importOptions = CoreDataImportOptions(sourceVersion: test.version, durability: .normal)
        if let refusal = test.refusedThroughCurrent {
            let current = try ObjectModel.load(contentsOf: modelURL)
            #expect(current.name != test.version)
            do {
                let container = try Self.importStore(
                    source, current, versions, importOptions, folder.file("current.sqlite"))
                _ = try CoreDataExporter.export(
                    model: current, coordinator: container.coordinator, to: folder.file("refused.sqlite"),
                    options: CoreDataExportOptions(version: written))
                Issue.record("\(test.store) went through version \(current.name), but a refusal was expected")
            } catch {
                #expect("\(error)".contains(refusal), "\(error)")
                print("export of \(test.store): not through version \(current.name) (\(error))")
            }
        }
        let model = try #require(versions.first { $0.name == (test.into ?? test.version) })
        let imported = folder.file("imported.sqlite")
        let first = try Self.importStore(source, model, versions, importOptions, imported)
        let exported = folder.file("exported.sqlite")
        let report = try CoreDataExporter.export(
            model: model, coordinator: first.coordinator, to: exported,
            options: CoreDataExportOptions(version: test.into == nil ? nil : written))
        #expect(!FileManager.default.fileExists(atPath: exported.path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: exported.path + "-journal"))

        // A copy of the original with its write-ahead log, read as it is.
        let copy = folder.file("original.sqlite")
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try FileManager.default.copyItem(atPath: source.path + suffix, toPath: copy.path + suffix)
        }
        var differences = try Shape(exported).differences(from: Shape(copy))
        if let reason = test.olderIndexes {
            let indexes = differences.filter { $0.hasPrefix("index only in") }
            #expect(!indexes.isEmpty, "\(test.store): its indexes were expected to differ (\(reason))")
            differences.removeAll { $0.hasPrefix("index only in") }
            // Named otherwise, the original's indexes are all in the export, on the same columns.
            let exportedColumns = Set(try Shape(exported).indexes.map { $0.split(separator: " ").dropFirst() })
            for index in try Shape(copy).indexes {
                #expect(exportedColumns.contains(index.split(separator: " ").dropFirst()), "\(test.store): \(index)")
            }
            print("export of \(test.store): \(indexes.count) indexes differ: \(reason)")
        }
        if let reason = test.olderEntityNames {
            #expect(differences.count { $0.hasPrefix("Z_PRIMARYKEY") } == 1, "\(test.store): \(reason)")
            differences.removeAll { $0.hasPrefix("Z_PRIMARYKEY") }
            print("export of \(test.store): Z_PRIMARYKEY names differ: \(reason)")
        }
        #expect(differences == [], "\(test.store)")
        print(
            "export of \(test.store): \(report.objects.values.reduce(0, +)) objects, \(report.joinRows) join rows; differences from the original: \(differences.isEmpty ? "none" : differences.joined(separator: "; "))"
        )

        // Imported again, the objects are those of the first import.
        let again = folder.file("again.sqlite")
        let second = try Self.importStore(exported, model, versions, importOptions, again)
        try expectSameObjects(model, first.coordinator, second.coordinator, test.store)
    }

    @Test(.enabled(if: CoreDataMaterial.requirement.runs, "\(CoreDataMaterial.requirement.skipComment)"))
    func everyStoreOfTheMaterialHasACase() throws {
        try CoreDataMaterial.requirement.check()
        let stores = RealCoreDataStoreTests.storesOfTheMaterial
        #expect(!stores.isEmpty)
        #expect(Set(stores).subtracting(Self.cases.map(\.store)).sorted() == [], "stores without a case")
    }

    /// Imports the store at `source` into `model` (from the version `options` names) and opens it.
    static func importStore(
        _ source: URL, _ model: ObjectModel, _ versions: [ObjectModel], _ options: CoreDataImportOptions,
        _ target: URL
    ) throws -> PersistentContainer {
        let report = try CoreDataImporter.importStore(
            at: source, model: model, versions: versions, targets: ["Default": target], options: options)
        #expect(report.sourceVersion == options.sourceVersion && report.targetVersion == model.name)
        return try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: target)])
    }
}

/// The export read by independent code: Python's `sqlite3`, `plistlib` and `hashlib` check the
/// metadata (its digest and checksum recomputed from the hashes), the entity numbering rule and
/// the value encodings of the example model's every attribute type.
@Suite struct CoreDataExportPythonTests {
    static let check = #"""
        import sqlite3, plistlib, hashlib, base64, sys, json
        db = sqlite3.connect(sys.argv[1])
        expected = json.loads(sys.argv[2])
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        uuid, blob = db.execute("SELECT Z_UUID, Z_PLIST FROM Z_METADATA").fetchone()
        meta = plistlib.loads(blob)
        assert meta["NSStoreType"] == "SQLite", meta
        assert meta["NSStoreModelVersionHashesVersion"] == 3
        hashes = meta["NSStoreModelVersionHashes"]
        names = sorted(hashes)
        digest = hashlib.sha512(b"".join(n.encode() + hashes[n] for n in names)).digest()
        assert base64.b64decode(meta["NSStoreModelVersionHashesDigest"]) == digest, "digest"
        checksum = hashlib.sha256(b"".join(hashes[n] for n in names)).digest()
        assert base64.b64decode(meta["NSStoreModelVersionChecksumKey"]) == checksum, "checksum"
        rows = db.execute("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT").fetchall()
        assert [r[1] for r in rows] == sorted(hashes, key=str.lower), rows
        book = db.execute(
            "SELECT ZPUBLISHED, ZSKU, ZAVAILABLE, ZPRICE, ZCOVER, ZHOMEPAGE, ZAUTHOR FROM ZBOOK").fetchone()
        assert abs(book[0] - expected["published"]) < 1e-6, book
        assert book[1] == bytes.fromhex(expected["sku"]), book
        assert book[2] == 1 and book[3] == 12.45 and book[4] == b"\x00\x01\xff", book
        assert book[5] == "https://example.org/x", book
        author = db.execute("SELECT Z_PK, Z_ENT FROM ZAUTHOR").fetchone()
        assert book[6] == author[0] and author[1] == [r[0] for r in rows if r[1] == "Author"][0], (book, author)
        pairs = db.execute("SELECT * FROM Z_2TAGS").fetchall()
        assert len(pairs) == 2, pairs
        print("ok")
        """#

    @Test func pythonReadsTheExportOfTheExample() throws {
        let folder = TemporaryDirectory()
        let model = try ObjectModel.example
        let container = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: folder.file("s.sqlite"))])
        let context = container.viewContext
        let sku = UUID()
        let published = 731_947_175.405035
        let author = try context.insert("Author", values: ["name": .string("Le Guin")])
        let book = try context.insert(
            "Book",
            values: [
                "title": .string("Earthsea"), "published": .date(Date(timeIntervalSinceReferenceDate: published)),
                "sku": .uuid(sku), "available": .boolean(true), "price": .decimal(Decimal(string: "12.45")!),
                "cover": .binary(Data([0, 1, 255])), "homepage": .uri("https://example.org/x"),
            ])
        try book.setObject(author, forKey: "author")
        try book.setObjects(
            try ["a", "b"].map { try context.insert("Tag", values: ["name": .string($0)]) }, forKey: "tags")
        try context.save()
        let out = folder.file("Seed.sqlite")
        _ = try CoreDataExporter.export(model: model, coordinator: container.coordinator, to: out)

        let hex = withUnsafeBytes(of: sku.uuid) { $0.map { String(format: "%02x", $0) }.joined() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c", Self.check, out.path, "{\"published\": \(published), \"sku\": \"\(hex)\"}",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("ok"), "\(text)")
    }
}

/// An export that cannot finish leaves no file behind, and an existing target is kept unless
/// replacing it was asked for.
@Suite struct CoreDataExportFailureTests {
    @Test func aFailedExportLeavesNothingAndAnExistingTargetIsRefused() throws {
        let folder = TemporaryDirectory()
        let model = try ObjectModel.example
        let container = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: folder.file("s.sqlite"))])
        _ = try container.viewContext.insert("Tag", values: ["name": .string("x")])
        try container.viewContext.save()
        let out = folder.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(
            at: out.appendingPathComponent("inside"), withIntermediateDirectories: true)

        // Refused without overwrite; with it, the rename onto a folder fails.
        #expect(throws: StoreError.self) {
            try CoreDataExporter.export(model: model, coordinator: container.coordinator, to: out)
        }
        #expect(throws: StoreError.self) {
            try CoreDataExporter.export(
                model: model, coordinator: container.coordinator, to: out,
                options: CoreDataExportOptions(overwrite: true))
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains("export") }
        #expect(left == [], "files of the failed export are left: \(left)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("inside").path))
    }
}
