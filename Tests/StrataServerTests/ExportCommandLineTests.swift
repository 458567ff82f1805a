import Foundation
import StrataServer
import StrataTestSupport
import Testing

@testable import Strata

/// `strata export` as a user runs it: the stores of a data folder (both configurations of the
/// example model, as `strata serve` names them) written as one Core Data store that `strata
/// import` reads back to the same objects; an existing target is refused without `--force`.
@Suite struct ExportCommandLineTests {
    @Test func aDataFolderExportsToAStoreThatImportsBackTheSame() throws {
        let folder = TemporaryDirectory()
        let model = try ObjectModel.example
        var options = ServerOptions()
        options.dataDirectory = folder.file("data").path
        let served = try PersistentContainer(model: model, stores: options.storeDescriptions(for: model))
        let context = served.viewContext
        let author = try context.insert(
            "Author",
            values: ["name": .string("Ursula"), "born": .date(Date(timeIntervalSinceReferenceDate: -2_000_000_000.25))])
        let tags = try ["fantasy", "classic"].map { try context.insert("Tag", values: ["name": .string($0)]) }
        for (index, title) in ["Earthsea", "The Dispossessed"].enumerated() {
            let book = try context.insert(
                "Book",
                values: [
                    "title": .string(title), "year": .integer(1968 + Int64(index) * 6), "pages": .integer(200),
                    "wordCount": .integer(5_000_000_000), "price": .decimal(Decimal(string: "12.45")!),
                    "rating": .double(4.5), "weight": .double(0.25), "available": .boolean(index == 0),
                    "published": .date(Date(timeIntervalSinceReferenceDate: 731_947_175.405035)),
                    "cover": .binary(Data([0, 1, 2, 255])), "sku": .uuid(UUID()),
                    "homepage": .uri("https://example.org/\(index)"),
                    "metadata": .json(.object(["series": .string("Hainish"), "order": .integer(Int64(index))])),
                ])
            try book.setObject(author, forKey: "author")
            try book.setObjects(index == 0 ? tags : [tags[1]], forKey: "tags")
        }
        _ = try context.insert("SearchLog", values: ["query": .string("earth"), "results": .integer(1)])
        try context.save()

        let modelFile = folder.file("library.json")
        try Data(ObjectModel.exampleJSON.utf8).write(to: modelFile)
        let out = folder.file("Seed.sqlite")
        let exported = try CommandLineTests.run([
            "export", "--model", modelFile.path, "--data-dir", folder.file("data").path, "--to", out.path,
        ])
        #expect(exported.status == 0, "\(exported.error)")
        #expect(exported.output.contains("exported 6 objects and 3 many-to-many links"), "\(exported.output)")
        #expect(!FileManager.default.fileExists(atPath: out.path + "-wal"))

        let again = folder.file("again.sqlite")
        let imported = try CommandLineTests.run([
            "import", "--model", modelFile.path, "--from", out.path, "--to", "Default=\(again.path)",
        ])
        #expect(imported.status == 0, "\(imported.error)")
        let reread = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: again)])
        try expectSameObjects(model, served.coordinator, reread.coordinator, "the example's data folder")

        // An existing target is refused, and left as it is; --force replaces it.
        let before = try Data(contentsOf: out)
        let refused = try CommandLineTests.run([
            "export", "--model", modelFile.path, "--data-dir", folder.file("data").path, "--to", out.path,
        ])
        #expect(refused.status == 1)
        #expect(refused.error.contains("already exists") && refused.error.contains("--force"), "\(refused.error)")
        #expect(try Data(contentsOf: out) == before)
        let forced = try CommandLineTests.run(
            ["export", "--model", modelFile.path, "--data-dir", folder.file("data").path, "--to", out.path, "--force"])
        #expect(forced.status == 0, "\(forced.error)")
        #expect(try Data(contentsOf: out) != before, "a new store UUID")
    }
}

/// `strata export --version` and `--where` as a user runs them, on the Zoo fixture model (two
/// versions, two configurations): the export for the older version is recognized as that version
/// by `strata import`, which brings back the objects the filter kept; a required relationship to
/// an object a filter leaves out refuses the export and writes nothing.
@Suite struct ExportVersionCommandLineTests {
    static let zoo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/CoreData/Zoo.xcdatamodeld")

    /// Runs `scripts/coredata-fixtures.py` into `folder`.
    static func fixtures(in folder: TemporaryDirectory) throws {
        let script = zoo.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/coredata-fixtures.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, folder.url.path]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "scripts/coredata-fixtures.py failed")
    }

    @Test func anOlderVersionWithAFilterImportsBackAsThatVersion() throws {
        let folder = TemporaryDirectory()
        try Self.fixtures(in: folder)
        let data = folder.file("data")
        let imported = try CommandLineTests.run([
            "import", "--model", Self.zoo.path, "--from", folder.file("zoo-v1-wal.sqlite").path, "--data-dir",
            data.path,
        ])
        try #require(imported.status == 0, "\(imported.error)")
        // One photo over 100 KiB: Core Data keeps it in a file of its own.
        let model = try ObjectModel.load(contentsOf: Self.zoo)
        let large = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        do {
            var options = ServerOptions()
            options.dataDirectory = data.path
            let served = try PersistentContainer(model: model, stores: options.storeDescriptions(for: model))
            let cat = try served.viewContext.object(
                with: try #require(served.coordinator.objectID(of: "Cat", primaryKey: 3)))
            try cat.setValue(.binary(large), forKey: "photo")
            try served.viewContext.save()
        }

        let out = folder.file("Seed.sqlite")
        let exported = try CommandLineTests.run([
            "export", "--model", Self.zoo.path, "--data-dir", data.path, "--to", out.path, "--version", "Zoo",
            "--where", "Animal=weight < 10", "--where", "Visit=note ENDSWITH '1'",
        ])
        #expect(exported.status == 0, "\(exported.error)")
        #expect(exported.output.contains("model Zoo version"), "\(exported.output)")
        #expect(exported.output.contains("  Cat  2\n  Dog  2\n"), "\(exported.output)")
        #expect(exported.output.contains("  Visit  3\n"), "\(exported.output)")
        #expect(
            exported.output.contains("  1 values in \(folder.url.path)/.Seed_SUPPORT/_EXTERNAL_DATA"),
            "\(exported.output)")

        let again = try CommandLineTests.run([
            "import", "--model", Self.zoo.path, "--from", out.path, "--to",
            "Default=\(folder.file("again.sqlite").path)",
        ])
        #expect(again.status == 0, "\(again.error)")
        #expect(again.output.contains("written by model version Zoo:"), "\(again.output)")
        #expect(again.output.contains("migrated to Zoo 2"), "\(again.output)")
        let reread = try PersistentContainer(
            model: model,
            stores: [StoreDescription(type: .sqlite, configuration: nil, url: folder.file("again.sqlite"))])
        let keepers = try reread.coordinator.fetch(FetchRequest(entityName: "Keeper")).map {
            $0[attribute: "fullName"]
        }
        #expect(Set(keepers) == Set((1...4).map { AttributeValue.string("Keeper \($0)") }))
        #expect(try reread.coordinator.count(FetchRequest(entityName: "Animal")) == 6)
        let cat = try reread.coordinator.fetch(
            FetchRequest(entityName: "Cat", predicate: try FetchPredicate(format: "name == 'Cat 3'")))
        #expect(cat.first?[attribute: "photo"] == .binary(large))

        let unknown = try CommandLineTests.run([
            "export", "--model", Self.zoo.path, "--data-dir", data.path, "--to", folder.file("x.sqlite").path,
            "--version", "Zoo 9",
        ])
        #expect(unknown.status == 1)
        #expect(unknown.error.contains("no version 'Zoo 9'"), "\(unknown.error)")
    }

    @Test func aRequiredRelationshipLeftDanglingRefusesTheExport() throws {
        let folder = TemporaryDirectory()
        let modelFile = folder.file("shop.json")
        try Data(
            """
            {"name": "Shop", "entities": [
              {"name": "Item", "attributes": [{"name": "title", "type": "string"}],
               "relationships": [{"name": "maker", "destination": "Maker", "inverse": "items", "optional": false}]},
              {"name": "Maker", "attributes": [{"name": "name", "type": "string"}],
               "relationships": [{"name": "items", "destination": "Item", "toMany": true, "inverse": "maker"}]}]}
            """.utf8
        ).write(to: modelFile)
        let model = try ObjectModel.load(contentsOf: modelFile)
        let store = folder.file("shop.sqlite")
        let container = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: store)])
        let maker = try container.viewContext.insert("Maker", values: ["name": .string("Acme")])
        let item = try container.viewContext.insert("Item", values: ["title": .string("anvil")])
        try item.setObject(maker, forKey: "maker")
        try container.viewContext.save()

        let out = folder.file("Seed.sqlite")
        let refused = try CommandLineTests.run([
            "export", "--model", modelFile.path, "--store", "Default=\(store.path)", "--to", out.path, "--where",
            "Maker=name != 'Acme'",
        ])
        #expect(refused.status == 1)
        #expect(
            refused.error.contains(
                "cannot export Item 1: its required relationship maker leads to Maker 1, which the export leaves out"),
            "\(refused.error)")
        #expect(!FileManager.default.fileExists(atPath: out.path))

        let bad = try CommandLineTests.run([
            "export", "--model", modelFile.path, "--store", "Default=\(store.path)", "--to", out.path, "--where",
            "Shelf=size > 1",
        ])
        #expect(bad.status == 1)
        #expect(bad.error.contains("--where: the model has no entity 'Shelf'"), "\(bad.error)")
    }
}
