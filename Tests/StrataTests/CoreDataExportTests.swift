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
        /// Why the original's indexes are not those Core Data writes today, when they are not.
        var olderIndexes: String? = nil
        var testDescription: String { store }
    }

    static let cases: [Case] = [
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

    /// The schema and metadata of a Core Data store, as the comparison sees them.
    struct Shape: Equatable {
        /// Table → column → declared type, for Core Data's tables (`Z...`, not `Z_MODELCACHE`).
        var tables: [String: [String: String]]
        /// `name table (columns) unique` of every index but SQLite's own.
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
                    let columns = try db.query("SELECT name FROM pragma_index_info(?)", [.text(index)]) { $0.text(0) }
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
        let versions =
            modelURL.pathExtension == "xcdatamodeld"
            ? try ObjectModel.loadCoreDataModelVersions(at: modelURL) : [try ObjectModel.load(contentsOf: modelURL)]
        let model = try #require(versions.first { $0.name == test.version })
        let folder = TemporaryDirectory()
        let imported = folder.file("imported.sqlite")
        _ = try CoreDataImporter.importStore(
            at: source, model: model, versions: [model], targets: ["Default": imported],
            options: CoreDataImportOptions(durability: .normal))
        let first = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: imported)])
        let exported = folder.file("exported.sqlite")
        let report = try CoreDataExporter.export(model: model, coordinator: first.coordinator, to: exported)
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
            print("export of \(test.store): \(indexes.count) indexes differ: \(reason)")
        }
        #expect(differences == [], "\(test.store)")
        print(
            "export of \(test.store): \(report.objects.values.reduce(0, +)) objects, \(report.joinRows) join rows; differences from the original: \(differences.isEmpty ? "none" : differences.joined(separator: "; "))"
        )

        // Imported again, the objects are those of the first import.
        let again = folder.file("again.sqlite")
        _ = try CoreDataImporter.importStore(
            at: exported, model: model, versions: [model], targets: ["Default": again],
            options: CoreDataImportOptions(durability: .normal))
        let second = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: again)])
        try expectSameObjects(model, first.coordinator, second.coordinator, test.store)
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
