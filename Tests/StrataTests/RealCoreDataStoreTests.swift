import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// SQLite stores that Apple's Core Data wrote, from the test fixtures of public apps and libraries
/// (the shared material, see ``CoreDataMaterial``; none of them is part of this repository): each
/// one's writing version is identified, and it is imported, object counts equal to Core Data's,
/// with the source files unchanged — or refused with the reason a lightweight migration cannot go
/// on. Every store of the material has a case, and each is named in the log as it is checked.
@Suite struct RealCoreDataStoreTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var store: String
        var model: String
        /// The version that wrote it.
        var version: String
        /// Nil: it imports; else what the refusal says.
        var refusal: String?
        /// Set when Core Data imports it and Strata does not yet.
        var knownIssue: KnownRefusal?
        var testDescription: String { store }
    }

    static var material: URL { CoreDataMaterial.stores }

    static let cases: [Case] = [
        Case(
            store: "bnr-coredatastack-testmodel/TestModel.sqlite",
            model: "bnr-coredatastack-testmodel/Sample.xcdatamodeld", version: "TestModel"),
        Case(store: "cadets-ets/Sample.sqlite", model: "cadets-ets/Model.xcdatamodeld", version: "Model 20"),
        Case(store: "cadets-ets/Sample-prod.sqlite", model: "cadets-ets/Model.xcdatamodeld", version: "Model 20"),
        Case(
            store: "coredataplus-samplemodel/SampleModel_V1.sqlite",
            model: "coredataplus-samplemodel/SampleModel.xcdatamodeld",
            version: "SampleModel"),
        // Written by version 2 after a migration that renamed an entity: Z_PRIMARYKEY keeps the old name.
        Case(
            store: "coredataplus-samplemodel/SampleModel_V2.sqlite",
            model: "coredataplus-samplemodel/SampleModel.xcdatamodeld/SampleModel2.xcdatamodel", version: "SampleModel2"
        ),
        // The bundle marks SampleModel current: the store of SampleModel2 is migrated to it in
        // one inferred step, as Core Data would try, which needs a value for `Person.id` that
        // version 1 requires and version 2's objects lack: refused, as Core Data refuses it.
        Case(
            store: "coredataplus-samplemodel/SampleModel_V2.sqlite",
            model: "coredataplus-samplemodel/SampleModel.xcdatamodeld",
            version: "SampleModel2", refusal: "Person.id: is added as required with no default value"),
        // Inheritance and a many-to-many join table.
        Case(
            store: "coredataplus-samplemodel-2018/SampleModelV2.sqlite",
            model: "coredataplus-samplemodel-2018/SampleModel.xcdatamodeld/SampleModel3.xcdatamodel",
            version: "SampleModel3"),
        Case(
            store: "coredataplus-samplemodel3/SampleModel3_V1.sqlite",
            model: "coredataplus-samplemodel3/SampleModel3.xcdatamodeld",
            version: "SampleModel3"),
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V1.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld",
            version: "BookmarksModel"),
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V2.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld",
            version: "BookmarksModel 2"),
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V3.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld",
            version: "BookmarksModel 3"),
        // WAL mode, every object still in the -wal file; written by older versions than the current one.
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V4.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld",
            version: "BookmarksModel 4"),
        Case(
            store: "ddg-bsk-bookmarks-KNOWN-A/Bookmarks_V5.sqlite",
            model: "ddg-bsk-bookmarks-KNOWN-A/BookmarksModel.xcdatamodeld",
            version: "BookmarksModel 5"),
        Case(
            store: "ddg-bsk-syncmetadata-KNOWN-B/SyncMetadata_V3.sqlite",
            model: "ddg-bsk-syncmetadata-KNOWN-B/SyncMetadata.xcdatamodeld", version: "SyncMetadata 3"),
        Case(store: "hap-ios/HAP.sqlite", model: "hap-ios/HAP.xcdatamodeld", version: "HAP"),
        // The repository has versions 1 and 4 only: version 4 renames an attribute version 1 lacks,
        // which Core Data's inferred mapping (and so Strata) takes as a new attribute.
        Case(store: "loopkit/Model.sqlite.v1.original", model: "loopkit/Model.xcdatamodeld", version: "Model"),
        Case(
            store: "mwkcoredata/MWKCoreDataTests.sqlite", model: "mwkcoredata/MWKCoreDataTests.xcdatamodeld",
            version: "MWKCoreDataTests"),
        Case(
            store: "xcservercoredata/head/XCServerCoreData_2.0.1.sqlite",
            model: "xcservercoredata/XCServerCoreData.xcdatamodeld",
            version: "XCServerCoreData2.0.1"),
        Case(
            store: "xcservercoredata/at-a515310-with-wal/XCServerCoreData_1.2.0.sqlite",
            model: "xcservercoredata/XCServerCoreData.xcdatamodeld", version: "XCServerCoreData1.2.0",
            refusal: "type changes from string to date"),
        // Apple's Recipes sample: its only model is an Xcode 3 `elements` file, which Core Data
        // does not load either (Xcode compiles it; the runtime reads only compiled models).
        Case(
            store: "apple-iphonecoredatarecipes/Recipes.sqlite",
            model: "apple-iphonecoredatarecipes/Recipes.xcdatamodel", version: "Recipes", refusal: "Xcode 3"),
    ]

    /// Every store file of the material (a `-wal` or `-shm` goes with its store), relative to
    /// `stores/`.
    static var storesOfTheMaterial: [String] {
        guard let walker = FileManager.default.enumerator(at: material, includingPropertiesForKeys: nil) else {
            return []
        }
        var found: [String] = []
        for case let url as URL in walker {
            if ["xcdatamodeld", "xcdatamodel"].contains(url.pathExtension) {
                walker.skipDescendants()
            } else if url.lastPathComponent.contains(".sqlite"), !url.lastPathComponent.hasSuffix("-wal"),
                !url.lastPathComponent.hasSuffix("-shm")
            {
                found.append(String(url.standardizedFileURL.path.dropFirst(material.path.count + 1)))
            }
        }
        return found.sorted()
    }

    @Test(.enabled(if: CoreDataMaterial.requirement.runs, "\(CoreDataMaterial.requirement.skipComment)"))
    func everyStoreOfTheMaterialHasACase() throws {
        try CoreDataMaterial.requirement.check()
        let stores = Self.storesOfTheMaterial
        #expect(!stores.isEmpty, "no store under \(Self.material.path)")
        #expect(Set(stores).subtracting(Self.cases.map(\.store)).sorted() == [], "stores without a case")
        #expect(Set(Self.cases.map(\.store)).subtracting(stores).sorted() == [], "cases without a store")
        print("real Core Data material: \(stores.count) stores at \(Self.material.path)")
    }

    @Test(
        .enabled(if: CoreDataMaterial.requirement.runs, "\(CoreDataMaterial.requirement.skipComment)"),
        arguments: cases)
    func realStoreIsIdentifiedAndImported(_ test: Case) throws {
        try CoreDataMaterial.requirement.check()
        if let known = test.knownIssue {
            print("real Core Data store \(test.store): a known issue (\(known.issue))")
            try known.expect { try Self.check(test) }
        } else {
            try Self.check(test)
        }
    }

    /// Identifies the store's version and imports it (or checks its refusal), leaving its files as
    /// they were.
    static func check(_ test: Case) throws {
        let source = material.appendingPathComponent(test.store)
        let modelURL = material.appendingPathComponent(test.model)
        let model: ObjectModel
        do {
            model = try ObjectModel.load(contentsOf: modelURL)
        } catch {
            let refusal = try #require(test.refusal, "\(test.model) is refused: \(error)")
            #expect("\(error)".contains(refusal), "\(error)")
            print("real Core Data store \(test.store): its model is refused as Core Data refuses it (\(error))")
            return
        }
        let versions =
            modelURL.pathExtension == "xcdatamodeld" ? try ObjectModel.loadCoreDataModelVersions(at: modelURL) : [model]
        let before = try CoreDataImportTests.digest(source)
        let file = try CoreDataStoreFile(url: source)
        #expect(try file.identifyVersion(among: versions).model.name == test.version)
        let counts = try file.rowCounts()
        let folder = TemporaryDirectory()
        let target = folder.file("imported.sqlite")
        do {
            let report = try CoreDataImporter.importStore(
                at: source, model: model, versions: versions, targets: ["Default": target],
                options: CoreDataImportOptions(chunkSize: 500, durability: .normal))
            #expect(test.refusal == nil, "imported, but a refusal was expected")
            #expect(report.sourceVersion == test.version)
            let container = try PersistentContainer(
                model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: target)])
            var compared = 0
            for entity in model.entityNames where model.entity(named: entity)?.isAbstract == false {
                let stored = entity
                guard let expected = counts[stored] ?? model.entity(named: entity)?.renamedFrom.flatMap({ counts[$0] })
                else { continue }
                let request = FetchRequest(entityName: entity, includesSubentities: false)
                #expect(try container.viewContext.count(request) == expected, "\(entity)")
                compared += 1
            }
            #expect(compared > 0)
            print(
                "real Core Data store \(test.store): written by \(test.version), imported, "
                    + "\(counts.values.reduce(0, +)) rows, the counts of \(compared) entities equal")
        } catch {
            let refusal = try #require(test.refusal, "\(test.store) is refused: \(error)")
            #expect("\(error)".contains(refusal), "\(error)")
            print("real Core Data store \(test.store): written by \(test.version), refused (\(error))")
        }
        #expect(try CoreDataImportTests.digest(source) == before, "the source's files changed")
    }
}

/// A relationship that Core Data's inferred migration turns from to-one into to-many keeps its
/// links: DuckDuckGo's Bookmarks version 4 made `favoriteFolder` the to-many `favoriteFolders`
/// (the inverse of the ordered `favorites`), and a store version 3 wrote imports with every
/// folder's favorites in their order.
@Suite struct ToOneBecomingToManyTests {
    @Test(.enabled(if: CoreDataMaterial.requirement.runs, "\(CoreDataMaterial.requirement.skipComment)"))
    func bookmarksVersion3FavoritesKeepTheirFoldersAndOrder() throws {
        try CoreDataMaterial.requirement.check()
        let folder = TemporaryDirectory()
        let material = CoreDataMaterial.stores.appendingPathComponent("ddg-bsk-bookmarks-KNOWN-A")
        // The source read from a copy (its objects are in the -wal file, which reading would touch).
        for suffix in ["", "-wal", "-shm"] {
            try FileManager.default.copyItem(
                at: material.appendingPathComponent("Bookmarks_V3.sqlite" + suffix),
                to: folder.file("source.sqlite" + suffix))
        }
        let source = try SQLiteConnection(path: folder.file("source.sqlite").path)
        let expected = try source.query(
            "SELECT f.ZTITLE, b.ZTITLE FROM ZBOOKMARKENTITY b JOIN ZBOOKMARKENTITY f ON f.Z_PK = b.ZFAVORITEFOLDER ORDER BY f.ZTITLE, b.Z_FOK_FAVORITEFOLDER"
        ) { "\($0.text(0)) → \($0.text(1))" }
        #expect(expected.count == 5)
        let modelURL = material.appendingPathComponent("BookmarksModel.xcdatamodeld")
        let model = try ObjectModel.load(contentsOf: modelURL)
        let target = folder.file("imported.sqlite")
        _ = try CoreDataImporter.importStore(
            at: folder.file("source.sqlite"), model: model,
            versions: try ObjectModel.loadCoreDataModelVersions(at: modelURL), targets: ["Default": target],
            options: CoreDataImportOptions(chunkSize: 500, durability: .normal))
        let imported = try SQLiteConnection(path: target.path, readOnly: true)
        let links = try imported.query(
            #"SELECT f."title", b."title" FROM "_join_BookmarkEntity_favorites" j JOIN "BookmarkEntity" f ON f."_pk" = j."source" JOIN "BookmarkEntity" b ON b."_pk" = j."target" ORDER BY f."title", j."position""#
        ) { "\($0.text(0)) → \($0.text(1))" }
        #expect(links == expected)
    }
}

extension ToOneBecomingToManyTests {
    static func model(version: String, toMany: Bool) throws -> ObjectModel {
        let folder =
            toMany
            ? #"{"name": "folders", "destination": "Item", "toMany": true, "inverse": "items", "renamedFrom": "folder"}"#
            : #"{"name": "folder", "destination": "Item", "inverse": "items"}"#
        let json = """
            {"name": "Links", "version": "\(version)", "entities": [
              {"name": "Item", "attributes": [{"name": "title", "type": "string"}],
               "relationships": [{"name": "items", "destination": "Item", "toMany": true, "ordered": true, "inverse": "\(toMany ? "folders" : "folder")"},
                                 \(folder)]}]}
            """
        return try ObjectModel.load(json: Array(json.utf8))
    }

    /// The same in a Strata store of either SQL kind: a folder's ordered items, and each item's
    /// folder, are the links after the migration.
    @Test(arguments: [StoreUnderTest.sqlite] + (StoreUnderTest.allCases.contains(.postgresql) ? [.postgresql] : []))
    func aToOneWhoseInverseIsOrderedBecomesToMany(kind: StoreUnderTest) throws {
        let folder = TemporaryDirectory()
        let v1 = try Self.model(version: "1", toMany: false)
        let store = try kind.open(folder, model: v1)
        let ids = try store.newObjectIDs(entity: "Item", count: 4)
        let parent = StoreRow(
            id: ids[0], attributes: ["title": .string("folder")], toMany: ["items": [ids[3], ids[1]]])
        let children = [ids[1], ids[3], ids[2]].map {
            StoreRow(id: $0, attributes: ["title": .string("item")], toOne: ["folder": $0 == ids[2] ? nil : ids[0]])
        }
        _ = try store.save(StoreChanges(inserts: [parent] + children))
        store.close()
        let v2 = try Self.model(version: "2", toMany: true)
        let migrated: any PersistentStore =
            kind == .postgresql
            ? try PostgreSQLStore(
                model: v2, configuration: nil, url: folder.postgreSQLURL(name: "store"),
                options: StoreOptions(migrate: true))
            : try SQLiteStore(
                model: v2, configuration: nil, url: folder.file("store.sqlite"), options: StoreOptions(migrate: true))
        defer { migrated.close() }
        #expect(try migrated.relatedIDs(of: ids[0], relationship: "items") == [ids[3], ids[1]])
        #expect(try migrated.relatedIDs(of: ids[1], relationship: "folders") == [ids[0]])
        #expect(try migrated.relatedIDs(of: ids[3], relationship: "folders") == [ids[0]])
        #expect(try migrated.relatedIDs(of: ids[2], relationship: "folders") == [])
    }
}
