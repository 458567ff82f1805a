import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// SQLite stores that Apple's Core Data wrote, from the test fixtures of public apps and libraries
/// (collected with their sources and licences in the folder `STRATA_COREDATA_MATERIAL` names,
/// `/work/shared/coredata` by default; none of them is part of this repository): each one's
/// writing version is identified, and it is imported, object counts equal to Core Data's, with the
/// source files unchanged — or refused with the reason a lightweight migration cannot go on.
@Suite struct RealCoreDataStoreTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var store: String
        var model: String
        /// The version that wrote it.
        var version: String
        /// Nil: it imports; else what the refusal says.
        var refusal: String?
        var testDescription: String { store }
    }

    static let material = RealCoreDataModelTests.material.appendingPathComponent("stores")

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
        Case(
            store: "coredataplus-samplemodel/SampleModel_V2.sqlite",
            model: "coredataplus-samplemodel/SampleModel.xcdatamodeld",
            version: "SampleModel2", refusal: "newer than the model's"),
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
            version: "BookmarksModel", refusal: "changes from to-one to to-many"),
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
        // The repository has versions 1 and 4 only: version 4 renames an attribute version 1 lacks.
        Case(
            store: "loopkit/Model.sqlite.v1.original", model: "loopkit/Model.xcdatamodeld", version: "Model",
            refusal: "migrate through the versions in between"),
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
    ]

    static var available: Bool { FileManager.default.fileExists(atPath: material.path) }

    @Test(.enabled(if: available, "no Core Data stores at \(material.path)"), arguments: cases)
    func realStoreIsIdentifiedAndImported(_ test: Case) throws {
        let source = Self.material.appendingPathComponent(test.store)
        let modelURL = Self.material.appendingPathComponent(test.model)
        let model = try ObjectModel.load(contentsOf: modelURL)
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
        } catch {
            let refusal = try #require(test.refusal, "refused: \(error)")
            #expect("\(error)".contains(refusal), "\(error)")
        }
        #expect(try CoreDataImportTests.digest(source) == before, "the source's files changed")
    }
}
