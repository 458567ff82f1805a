import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// `strata migrate` with Core Data mapping models (objc.io's Moody migrations, material pending
/// addition to the shared set, see ``PendingCoreDataMaterial/moody``; without it these tests skip,
/// in CI as well, and ``MappingFixtureCommandLineTests`` covers the same on the project's own
/// fixtures): found on their own beside the model bundle, given with `--mapping`, and a mapping
/// naming a custom policy class refused with nothing changed.
@Suite struct MappingCommandLineTests {
    static let moody = PendingCoreDataMaterial.moodyRequirement
    static var material: URL { PendingCoreDataMaterial.moody }
    static var bundle: URL { material.appendingPathComponent("Moody.xcdatamodeld") }

    /// A Strata store of the Core Data store `Moody 2.moody`, as version 2 has it.
    static func importedVersion2(into folder: TemporaryDirectory) throws -> URL {
        let target = folder.file("moody.sqlite")
        let result = try CommandLineTests.run([
            "import", "--model", bundle.appendingPathComponent("Moody 2.xcdatamodel").path, "--from",
            material.appendingPathComponent("stores/Moody 2.moody").path, "--to", "Default=\(target.path)",
            "--progress", "none",
        ])
        #expect(result.status == 0, "\(result.error)")
        return target
    }

    @Test(.enabled(if: moody.runs, "\(moody.skipComment)"))
    func migrateFindsTheMappingModelsBesideTheBundle() throws {
        try Self.moody.check()
        let folder = TemporaryDirectory()
        let store = try Self.importedVersion2(into: folder)
        let toFive = [
            "migrate", "--model", Self.bundle.appendingPathComponent("Moody 5.xcdatamodel").path, "--history",
            Self.bundle.path, "--store", "Default=\(store.path)",
        ]
        let dryRun = try CommandLineTests.run(toFive + ["--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.error)")
        for step in ["2 → 3 (mapping model Moody 2-Moody 3)", "4 → 5 (mapping model Moody 4-Moody 5)"] {
            #expect(dryRun.output.contains("step \(step):"), "\(dryRun.output)")
        }

        // To version 6 the 5 → 6 mapping needs the app's policy class: refused, nothing changed.
        let before = try Data(contentsOf: store)
        let refused = try CommandLineTests.run([
            "migrate", "--model", Self.bundle.path, "--store", "Default=\(store.path)",
        ])
        #expect(refused.status == 1)
        let said = refused.output + refused.error
        #expect(
            said.contains("'Migrations.Country5ToCountry6Policy'") && said.contains("entity mapping CountryToCountry"))
        #expect(try Data(contentsOf: store) == before)

        let migrated = try CommandLineTests.run(toFive)
        #expect(migrated.status == 0, "\(migrated.error)")
        let db = try SQLiteConnection(path: store.path, readOnly: true)
        let continents = try db.query(#"SELECT "numericISO3166Code", "isoContinent" FROM "Country" ORDER BY 1"#) {
            "\($0.text(0))→\($0.text(1))"
        }
        #expect(continents == ["231→10004", "704→10005", "710→10004"])
    }

    @Test(.enabled(if: moody.runs, "\(moody.skipComment)"))
    func migrateTakesAMappingModelGivenWithTheOption() throws {
        try Self.moody.check()
        let folder = TemporaryDirectory()
        let store = try Self.importedVersion2(into: folder)
        // The bundle alone, in a folder without mapping models: version 3 is inferred.
        let alone = folder.file("models/Moody.xcdatamodeld")
        try FileManager.default.createDirectory(
            at: alone.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.bundle, to: alone)
        let toThree = [
            "migrate", "--model", alone.appendingPathComponent("Moody 3.xcdatamodel").path, "--history", alone.path,
            "--store", "Default=\(store.path)", "--dry-run",
        ]
        let inferred = try CommandLineTests.run(toThree)
        #expect(!inferred.output.contains("mapping model"), "\(inferred.output)")
        let mapping = Self.material.appendingPathComponent("Moody 2-Moody 3.xcmappingmodel").path
        let given = try CommandLineTests.run(toThree + ["--mapping", mapping])
        #expect(given.status == 0, "\(given.error)")
        #expect(given.output.contains("step 2 → 3 (mapping model Moody 2-Moody 3):"), "\(given.output)")
        #expect(given.output.contains("entity mapping MoodToMood"))
    }
}
