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
