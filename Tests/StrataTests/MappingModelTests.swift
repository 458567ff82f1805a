import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Core Data mapping models from a public project (objc.io's Core Data book, the Moody migrations:
/// four `.xcmappingmodel`s beside their `.xcdatamodeld`, and stores Core Data wrote with each
/// version): read as they are, run on stores written
/// by their source version with the same objects as Core Data's stores of the destination
/// version, and refused, with nothing written, when they need what Strata cannot run.
///
/// The material is pending addition to the shared set (``PendingCoreDataMaterial/moody``): without
/// it these tests skip, in CI as well, and ``MappingFixtureTests`` carries the same coverage on
/// the project's own fixtures.
@Suite struct MappingModelTests {
    static var material: URL { PendingCoreDataMaterial.moody }
    static var bundle: URL { material.appendingPathComponent("Moody.xcdatamodeld") }

    static let moody = PendingCoreDataMaterial.moodyRequirement

    static func requireMaterial() throws { try moody.check() }

    static func version(_ name: String) throws -> ObjectModel {
        try ObjectModel.load(contentsOf: bundle.appendingPathComponent("\(name).xcdatamodel"))
    }

    /// Imports the Core Data store `Moody <n>.moody` as the version that wrote it.
    static func imported(_ store: String, version: String, into folder: TemporaryDirectory, as name: String? = nil)
        throws -> URL
    {
        let target = folder.file("\(name ?? version).sqlite")
        _ = try CoreDataImporter.importStore(
            at: material.appendingPathComponent("stores/\(store)"), model: try self.version(version),
            targets: ["Default": target], options: CoreDataImportOptions(durability: .normal))
        return target
    }

    /// Opens `url` with `version`, migrating it through the bundle's versions and `mappings`.
    static func migrate(_ url: URL, to version: String, mappings: [MappingModel]) throws {
        let coordinator = StoreCoordinator(model: try self.version(version))
        let store = try coordinator.addStore(
            type: .sqlite, configuration: nil, url: url,
            options: StoreOptions(
                durability: .normal, migrate: true, modelHistory: try ObjectModel.loadCoreDataModelVersions(at: bundle),
                mappingModels: mappings))
        coordinator.remove(store)
    }

    static func rows(_ url: URL, _ sql: String) throws -> [String] {
        let db = try SQLiteConnection(path: url.path, readOnly: true)
        return try db.query(sql) { row in
            (0..<row.columnCount).map { row.isNull($0) ? "nil" : row.text($0) }.joined(separator: "|")
        }
    }

    @Test(.enabled(if: moody.runs, "\(moody.skipComment)"))
    func readsTheMappingModelsAsXcodeWroteThem() throws {
        try Self.requireMaterial()
        let found = MappingModel.discover(near: Self.bundle)
        #expect(found.map(\.lastPathComponent) == (2...5).map { "Moody \($0)-Moody \($0 + 1).xcmappingmodel" })
        let addContinents = try MappingModel.load(contentsOf: found[0])
        #expect(addContinents.sourceModelName == "Moody 2")
        #expect(addContinents.destinationModelName == "Moody 3")
        #expect(addContinents.entityMappings.map(\.name) == ["MoodToMood", "CountryToCountry", "ContinentToContinent"])
        let mood = try #require(addContinents.entityMapping(named: "MoodToMood"))
        #expect(
            mood.relationshipMappings.first { $0.name == "continent" }?.expression?.description
                == #"FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "ContinentToContinent", $source.country.continent)"#
        )
        let dropContinents = try MappingModel.load(contentsOf: found[2])
        let country = try #require(dropContinents.entityMapping(named: "CountryToCountry"))
        #expect(
            country.attributeMappings.first { $0.name == "isoContinent" }?.expression
                == .keyPath(variable: "source", path: ["continent", "numericISO3166Code"]))
        // The fixture writer archives the same expression as Xcode did, object for object.
        let xml = try String(contentsOf: found[2].appendingPathComponent("xcmapping.xml"), encoding: .utf8)
        let archived = try #require(
            xml.firstMatch(of: try Regex(#"<attribute name="valueexpressiondata" type="binary">([^<]*)</attribute>"#))?
                .output[1].substring)
        let xcode = try #require(Data(base64Encoded: String(archived), options: .ignoreUnknownCharacters))
        let written = ArchivedExpression.keyPath("source", "continent.numericISO3166Code").archive
        #expect(try BinaryPropertyList.parse(Array(written)) == BinaryPropertyList.parse(Array(xcode)))
        let policy = try MappingModel.load(contentsOf: found[3])
        #expect(
            policy.entityMapping(named: "CountryToCountry")?.policyClassName == "Migrations.Country5ToCountry6Policy")
    }

    @Test(.enabled(if: moody.runs, "\(moody.skipComment)"))
    func aVersion2StoreMigratesToTheObjectsCoreDataWroteWithVersions3And5() throws {
        try Self.requireMaterial()
        let folder = TemporaryDirectory()
        let mappings = try MappingModel.discover(near: Self.bundle).map { try MappingModel.load(contentsOf: $0) }

        // Version 3 adds Mood.continent ↔ Continent.moods, set through the relationship mappings.
        let toThree = try Self.imported("Moody 2.moody", version: "Moody 2", into: folder)
        try Self.migrate(toThree, to: "Moody 3", mappings: mappings)
        let three = try Self.imported("Moody 3.moody", version: "Moody 3", into: folder)
        let continents =
            #"SELECT m."remoteID", c."numericISO3166Code" FROM "Mood" m LEFT JOIN "GeographicRegion" c ON c."_pk" = m."continent" ORDER BY 1"#
        #expect(try Self.rows(toThree, continents).count == 4)
        #expect(try Self.rows(toThree, continents) == Self.rows(three, continents))
        #expect(!(try Self.rows(toThree, continents)).contains { $0.hasSuffix("|nil") })

        // Versions 4 and 5: the abstract parent goes, then Continent becomes Country.isoContinent.
        let toFive = try Self.imported("Moody 2.moody", version: "Moody 2", into: folder, as: "to five")
        try Self.migrate(toFive, to: "Moody 5", mappings: mappings)
        let five = try Self.imported("Moody 5.moody", version: "Moody 5", into: folder)
        let countries =
            #"SELECT "numericISO3166Code", "isoContinent", "numberOfMoods" FROM "Country" ORDER BY 1"#
        let moods =
            #"SELECT m."remoteID", m."rating", c."numericISO3166Code" FROM "Mood" m LEFT JOIN "Country" c ON c."_pk" = m."country" ORDER BY 1"#
        #expect(try Self.rows(toFive, countries) == ["231|10004|1", "704|10005|1", "710|10004|2"])
        #expect(try Self.rows(toFive, countries) == Self.rows(five, countries))
        #expect(try Self.rows(toFive, moods) == Self.rows(five, moods))
    }

    @Test(.enabled(if: moody.runs, "\(moody.skipComment)"))
    func anUnsupportedExpressionIsRefusedByNameAndNothingIsWritten() throws {
        try Self.requireMaterial()
        let folder = TemporaryDirectory()
        let store = try Self.imported("Moody 4.moody", version: "Moody 4", into: folder)
        // A copy of the 4 → 5 mapping whose archived expression calls another method (a selector of
        // the same length, so the archive's offsets stay right).
        let original = Self.material.appendingPathComponent("Moody 4-Moody 5.xcmappingmodel")
        let edited = folder.file("Edited.xcmappingmodel")
        try FileManager.default.createDirectory(at: edited, withIntermediateDirectories: true)
        var xml = try String(contentsOf: original.appendingPathComponent("xcmapping.xml"), encoding: .utf8)
        let pattern = try Regex(#"<attribute name="valueexpressiondata" type="binary">([^<]*)</attribute>"#)
        let match = try #require(xml.firstMatch(of: pattern))
        let encoded = String(try #require(match.output[1].substring))
        var archive = try #require(Data(base64Encoded: encoded, options: .ignoreUnknownCharacters))
        let from = Data("valueForKeyPath:".utf8)
        let range = try #require(archive.range(of: from))
        archive.replaceSubrange(range, with: Data("lowercaseString:".utf8))
        xml.replaceSubrange(match.output[1].range!, with: archive.base64EncodedString())
        try xml.write(to: edited.appendingPathComponent("xcmapping.xml"), atomically: true, encoding: .utf8)

        let mapping = try MappingModel.load(contentsOf: edited)
        let before = try Data(contentsOf: store)
        #expect {
            try Self.migrate(store, to: "Moody 5", mappings: [mapping])
        } throws: { error in
            let message = (error as? StoreError)?.message ?? ""
            return message.contains("entity mapping CountryToCountry")
                && message.contains(#"FUNCTION($source, "lowercaseString:", continent.numericISO3166Code)"#)
                && message.contains("isoContinent")
        }
        #expect(try Data(contentsOf: store) == before)
        // Still a version 4 store: it opens with version 4 and no migration.
        let coordinator = StoreCoordinator(model: try Self.version("Moody 4"))
        coordinator.remove(try coordinator.addStore(type: .sqlite, configuration: nil, url: store))
    }

    @Test(.enabled(if: moody.runs, "\(moody.skipComment)"))
    func aCustomMigrationPolicyIsRefusedByClassAndMapping() throws {
        try Self.requireMaterial()
        let folder = TemporaryDirectory()
        let store = try Self.imported("Moody 5.moody", version: "Moody 5", into: folder)
        let mappings = try MappingModel.discover(near: Self.bundle).map { try MappingModel.load(contentsOf: $0) }
        let before = try Data(contentsOf: store)
        #expect {
            try Self.migrate(store, to: "Moody 6", mappings: mappings)
        } throws: { error in
            let message = (error as? StoreError)?.message ?? ""
            return message.contains("'Migrations.Country5ToCountry6Policy'")
                && message.contains("entity mapping CountryToCountry")
        }
        #expect(try Data(contentsOf: store) == before)
    }
}

/// The 5 → 6 mapping's custom policy, written as an ``EntityMigrationPolicy``: each country's
/// `isoContinent` code becomes its `continent`, one Continent object per code.
struct ContinentsFromCodes: EntityMigrationPolicy {
    func createDestinationInstances(for source: MigrationObject, mapping: EntityMapping, manager: MigrationManager)
        throws
    {
        try manager.createDefaultDestinationInstance(for: source, mapping: mapping)
        let code = manager.value("isoContinent", of: source)
        guard !code.isNull,
            let country = manager.destinationObjects(forEntityMappingNamed: mapping.name, sources: [source]).first
        else { return }
        let continent =
            try manager.destinationObjects(of: "Continent").first {
                manager.destinationValue("numericISO3166Code", of: $0) == code
            }
            ?? {
                let made = try manager.insertDestinationObject(of: "Continent")
                try manager.setValue(code, "numericISO3166Code", of: made)
                return made
            }()
        try manager.relate(country, "continent", to: [continent])
    }
}

extension MappingModelTests {
    @Test(.enabled(if: moody.runs, "\(moody.skipComment)"))
    func aRegisteredPolicyRunsTheCustomMapping() throws {
        try Self.requireMaterial()
        let folder = TemporaryDirectory()
        let store = try Self.imported("Moody 5.moody", version: "Moody 5", into: folder)
        let mappings = try MappingModel.discover(near: Self.bundle).map { try MappingModel.load(contentsOf: $0) }
        let coordinator = StoreCoordinator(model: try Self.version("Moody 6"))
        coordinator.remove(
            try coordinator.addStore(
                type: .sqlite, configuration: nil, url: store,
                options: StoreOptions(
                    durability: .normal, migrate: true,
                    modelHistory: try ObjectModel.loadCoreDataModelVersions(at: Self.bundle), mappingModels: mappings,
                    migrationPolicies: ["Migrations.Country5ToCountry6Policy": ContinentsFromCodes()])))
        let links =
            #"SELECT c."numericISO3166Code", k."numericISO3166Code" FROM "Country" c LEFT JOIN "Continent" k ON k."_pk" = c."continent" ORDER BY 1"#
        #expect(try Self.rows(store, links) == ["231|10004", "704|10005", "710|10004"])
        #expect(
            try Self.rows(store, #"SELECT "numericISO3166Code" FROM "Continent" ORDER BY 1"#) == ["10004", "10005"])
        #expect(try Self.rows(store, #"SELECT count(*) FROM "Mood" WHERE "country" IS NOT NULL"#) == ["4"])
    }
}

extension MappingModelTests {
    @Test(.enabled(if: moody.runs, "\(moody.skipComment)"))
    func anImportRunsTheMappingModelsOfItsSteps() throws {
        try Self.requireMaterial()
        let folder = TemporaryDirectory()
        let mappings = try MappingModel.discover(near: Self.bundle).map { try MappingModel.load(contentsOf: $0) }
        let target = folder.file("imported.sqlite")
        let report = try CoreDataImporter.importStore(
            at: Self.material.appendingPathComponent("stores/Moody 2.moody"), model: try Self.version("Moody 5"),
            versions: try ObjectModel.loadCoreDataModelVersions(at: Self.bundle), targets: ["Default": target],
            options: CoreDataImportOptions(durability: .normal, mappingModels: mappings))
        #expect(report.sourceVersion == "Moody 2")
        let five = try Self.imported("Moody 5.moody", version: "Moody 5", into: folder)
        let countries = #"SELECT "numericISO3166Code", "isoContinent", "numberOfMoods" FROM "Country" ORDER BY 1"#
        #expect(try Self.rows(target, countries) == Self.rows(five, countries))
        #expect(try Self.rows(target, countries).count == 3)
    }
}
