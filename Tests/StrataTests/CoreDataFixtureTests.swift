import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// The Core Data models under `Tests/Fixtures/CoreData`, one per thing real models do that a
/// strict reader refuses: each loads, warns where Core Data would, and works end to end.
@Suite struct CoreDataFixtureTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/CoreData")

    static func model(_ name: String) throws -> ObjectModel {
        try ObjectModel.load(contentsOf: fixtures.appendingPathComponent(name))
    }

    /// Where a fixture's objects are kept: an SQLite file (reopened to prove what it holds) or
    /// memory.
    enum Storage: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqlite, memory
        var testDescription: String { rawValue }

        func coordinator(_ model: ObjectModel, _ folder: TemporaryDirectory) throws -> StoreCoordinator {
            let coordinator = StoreCoordinator(model: model)
            switch self {
            case .sqlite: try coordinator.addStore(type: .sqlite, url: folder.file("store.sqlite"))
            case .memory: try coordinator.addStore(type: .inMemory)
            }
            return coordinator
        }

        /// A fresh context over the same data: a new coordinator on the file, or the same memory
        /// store.
        func reopened(_ coordinator: StoreCoordinator, _ folder: TemporaryDirectory) throws -> ObjectContext {
            switch self {
            case .sqlite: ObjectContext(coordinator: try self.coordinator(coordinator.model, folder))
            case .memory: ObjectContext(coordinator: coordinator)
            }
        }
    }

    static func warnings(_ model: ObjectModel) -> [String] {
        model.warnings.map { [$0.entity, $0.property].compactMap { $0 }.joined(separator: ".") }
    }

    @Test(arguments: Storage.allCases)
    func attributesNamedIdAndVersionAreKeptApartFromTheObjectsOwn(storage: Storage) throws {
        let model = try Self.model("Naming.xcdatamodel")
        #expect(model.resourcePath(of: "Message") == "messages")
        // `/metrics` and `/docs` are the server's: those entities move aside, with a warning.
        #expect(model.resourcePath(of: "Metric") == "metric")
        #expect(model.resourcePath(of: "Doc") == "doc")
        #expect(Self.warnings(model) == ["Metric", "Doc"])
        let folder = TemporaryDirectory()
        let coordinator = try storage.coordinator(model, folder)
        let context = ObjectContext(coordinator: coordinator)
        let message = try context.insert(
            "Message", values: ["id": .string("msg-7"), "version": .integer(3), "body": .string("hi")])
        try context.save()
        try message.setValue(.integer(4), forKey: "version")
        try context.save()
        let fresh = try storage.reopened(coordinator, folder)
        let stored = try fresh.object(with: message.objectID)
        #expect(stored.string("id") == "msg-7")
        #expect(stored.integer("version") == 4)
        // The object's own version counts saves; the attribute is the model's.
        #expect(stored.version == 2)
        let byAttribute = try fresh.fetch(
            FetchRequest(entityName: "Message", predicate: .equal("id", .string("msg-7"))))
        #expect(byAttribute.map(\.objectID) == [message.objectID])
    }

    @Test func defaultsAreReadAsCoreDataReadsThem() throws {
        let model = try Self.model("Leniency.xcdatamodel")
        #expect(Self.warnings(model) == ["Setting.bogus", "Marker", "Team.members"])
        let defaults = Dictionary(
            uniqueKeysWithValues: model.attributes(of: "Setting").map { ($0.name, $0.defaultValue) })
        #expect(defaults["flagAsInt"] == .integer(0))
        #expect(defaults["yesAsInt"] == .integer(1))
        #expect(defaults["enabled"] == .boolean(true))
        #expect(defaults["spaced"] == .integer(42))
        #expect(defaults["ratio"] == .double(1))
        #expect(defaults["since"] == .date(Date(timeIntervalSinceReferenceDate: 0)))
        #expect(defaults["weight"] == .double(1.5))
        #expect(defaults["amount"] == .decimal(0))
        #expect(defaults["bogus"] == .some(nil))
        // Every required attribute has a default, so an empty object saves.
        let folder = TemporaryDirectory()
        let coordinator = try Storage.sqlite.coordinator(model, folder)
        let context = ObjectContext(coordinator: coordinator)
        let setting = try context.insert("Setting")
        try setting.setValue(.binary(Data([1, 2, 3])), forKey: "picture")
        try context.save()
        let fresh = try Storage.sqlite.reopened(coordinator, folder)
        let stored = try fresh.object(with: setting.objectID)
        #expect(stored.integer("yesAsInt") == 1 && stored.bool("enabled") == true && stored.integer("spaced") == 42)
        #expect(stored["picture"] == .binary(Data([1, 2, 3])))
        #expect(stored["bogus"] == .null)
    }

    @Test func anOptionalToManyWithAMinimumMayBeEmpty() throws {
        let model = try Self.model("Leniency.xcdatamodel")
        let folder = TemporaryDirectory()
        let context = ObjectContext(coordinator: try Storage.sqlite.coordinator(model, folder))
        let team = try context.insert("Team", values: ["name": .string("empty")])
        _ = try context.insert("Marker")
        try context.save()
        let players = try (0..<4).map { try context.insert("Player", values: ["name": .string("p\($0)")]) }
        try team.setObjects([players[0]], forKey: "members")
        do {
            try context.save()
            Issue.record("one member saved")
        } catch {
            #expect(error.failures.map(\.rule) == [.minCount])
        }
        try team.setObjects(Array(players[0..<2]), forKey: "members")
        try context.save()
        try team.setObjects(players, forKey: "members")
        #expect(throws: ContextError.self) { try context.save() }
    }

    @Test(arguments: Storage.allCases)
    func relationshipsWithoutAnInverseAreStoredAndLetGoOfDeletedObjects(storage: Storage) throws {
        let model = try Self.model("Relationships.xcdatamodel")
        #expect(Self.warnings(model) == ["Folder.pinned", "Folder.recent", "Folder.queue"])
        let folder = TemporaryDirectory()
        let coordinator = try storage.coordinator(model, folder)
        let context = ObjectContext(coordinator: coordinator)
        let inbox = try context.insert("Folder", values: ["name": .string("Inbox")])
        let archive = try context.insert("Folder", values: ["name": .string("Archive")])
        let notes = try (0..<5).map { try context.insert("Note", values: ["text": .string("n\($0)")]) }
        try inbox.setObject(notes[0], forKey: "pinned")
        try archive.setObject(notes[0], forKey: "pinned")
        try inbox.setObjects([notes[0], notes[1], notes[2]], forKey: "recent")
        try archive.setObjects([notes[1]], forKey: "recent")
        try inbox.setObjects([notes[3], notes[1], notes[4]], forKey: "queue")
        try context.save()

        var fresh = try storage.reopened(coordinator, folder)
        var stored = try fresh.object(with: inbox.objectID)
        #expect(try stored.object(forKey: "pinned")?.objectID == notes[0].objectID)
        #expect(Set(try stored.objectIDs(forKey: "recent")) == Set([0, 1, 2].map { notes[$0].objectID }))
        #expect(try stored.objectIDs(forKey: "queue") == [3, 1, 4].map { notes[$0].objectID })
        #expect(try fresh.object(with: archive.objectID).object(forKey: "pinned")?.objectID == notes[0].objectID)

        // Deleting a destination clears every reference to it, as a nullify inverse would.
        try fresh.delete(try fresh.object(with: notes[0].objectID))
        try fresh.delete(try fresh.object(with: notes[1].objectID))
        try fresh.save()
        fresh = try storage.reopened(coordinator, folder)
        stored = try fresh.object(with: inbox.objectID)
        #expect(try stored.object(forKey: "pinned") == nil)
        #expect(try stored.objectIDs(forKey: "recent") == [notes[2].objectID])
        #expect(try stored.objectIDs(forKey: "queue") == [3, 4].map { notes[$0].objectID })
        #expect(try fresh.object(with: archive.objectID).object(forKey: "pinned") == nil)
        #expect(try fresh.object(with: archive.objectID).objectIDs(forKey: "recent") == [])

        // Deleting the folder cascades through `queue` only.
        try fresh.delete(stored)
        try fresh.save()
        fresh = try storage.reopened(coordinator, folder)
        let left = try fresh.fetch(FetchRequest(entityName: "Note", sortDescriptors: [SortKey("text")]))
        #expect(left.map { $0.string("text") } == ["n2"])
    }

    @Test(arguments: Storage.allCases)
    func aManyToManyOrderedOnBothSidesKeepsEachOrder(storage: Storage) throws {
        let model = try Self.model("Relationships.xcdatamodel")
        let folder = TemporaryDirectory()
        let coordinator = try storage.coordinator(model, folder)
        let context = ObjectContext(coordinator: coordinator)
        let notes = try (0..<3).map { try context.insert("Note", values: ["text": .string("n\($0)")]) }
        let labels = try (0..<3).map { try context.insert("Label", values: ["name": .string("l\($0)")]) }
        try notes[0].setObjects([labels[2], labels[0], labels[1]], forKey: "labels")
        try notes[1].setObjects([labels[0], labels[2]], forKey: "labels")
        // Label 0 lists its notes in its own order, which setting a note's labels kept.
        try labels[0].setObjects([notes[1], notes[0]], forKey: "notes")
        try context.save()
        func check(_ context: ObjectContext, _ note0: [Int], _ label0: [Int], _ label2: [Int]) throws {
            #expect(
                try context.object(with: notes[0].objectID).objectIDs(forKey: "labels")
                    == note0.map { labels[$0].objectID })
            #expect(
                try context.object(with: labels[0].objectID).objectIDs(forKey: "notes")
                    == label0.map { notes[$0].objectID })
            #expect(
                try context.object(with: labels[2].objectID).objectIDs(forKey: "notes")
                    == label2.map { notes[$0].objectID })
        }
        try check(context, [2, 0, 1], [1, 0], [0, 1])
        var fresh = try storage.reopened(coordinator, folder)
        try check(fresh, [2, 0, 1], [1, 0], [0, 1])
        // Reordering one side leaves the other side's order alone.
        try fresh.object(with: notes[0].objectID).setObjects([labels[0], labels[1], labels[2]], forKey: "labels")
        try fresh.object(with: labels[2].objectID).add(try fresh.object(with: notes[2].objectID), toKey: "notes")
        try fresh.save()
        fresh = try storage.reopened(coordinator, folder)
        try check(fresh, [0, 1, 2], [1, 0], [0, 1, 2])
    }

    @Test(arguments: Storage.allCases)
    func derivedAttributesAreComputedOnEverySave(storage: Storage) throws {
        let model = try Self.model("Derived.xcdatamodel")
        #expect(model.warnings.isEmpty)
        #expect(model.isDerived("workCount", of: "Writer") && !model.isDerived("name", of: "Writer"))
        let folder = TemporaryDirectory()
        let coordinator = try storage.coordinator(model, folder)
        let context = ObjectContext(coordinator: coordinator)
        let before = Date()
        let writer = try context.insert("Writer", values: ["name": .string("Élodie Müller")])
        let first = try context.insert("Work", values: ["title": .string("The First"), "pages": .integer(120)])
        try first.setObject(writer, forKey: "writer")
        try context.save()
        #expect(writer.string("searchName") == "elodie muller")
        #expect(writer.string("shout") == "ÉLODIE MÜLLER")
        #expect(writer.integer("workCount") == 1 && writer.integer("totalPages") == 120)
        #expect(try #require(writer.date("touched")) >= before.addingTimeInterval(-1))
        #expect(first.string("writerName") == "Élodie Müller" && first.string("lowerTitle") == "the first")

        // A change on one side recomputes what reads it on the other.
        let child = context.newChildContext()
        let second = try child.insert("Work", values: ["title": .string("Second"), "pages": .integer(30)])
        try second.setObject(try child.object(with: writer.objectID), forKey: "writer")
        try child.save()
        try context.save()
        #expect(writer.integer("workCount") == 2 && writer.integer("totalPages") == 150)
        try writer.setValue(.string("Jo"), forKey: "name")
        try context.save()
        var fresh = try storage.reopened(coordinator, folder)
        #expect(try fresh.object(with: first.objectID).string("writerName") == "Jo")
        #expect(try fresh.object(with: second.objectID).string("writerName") == "Jo")
        #expect(try fresh.object(with: writer.objectID).string("shout") == "JO")
        try fresh.delete(try fresh.object(with: first.objectID))
        try fresh.save()
        fresh = try storage.reopened(coordinator, folder)
        let stored = try fresh.object(with: writer.objectID)
        #expect(stored.integer("workCount") == 1 && stored.integer("totalPages") == 30)
        // What is set by hand is overwritten by the next save.
        try stored.setValue(.integer(99), forKey: "workCount")
        try fresh.save()
        #expect(stored.integer("workCount") == 1)
    }

    @Test func aDerivationStrataDoesNotComputeLoadsAsAPlainAttributeWithAWarning() throws {
        let body = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Item" representedClassName="Item" syncable="YES">
                    <attribute name="name" optional="YES" attributeType="String"/>
                    <attribute name="odd" optional="YES" attributeType="String" derived="YES" derivationExpression="FUNCTION(name, 'x')"/>
                    <attribute name="lost" optional="YES" attributeType="String" derived="YES" derivationExpression="owner.name"/>
                </entity>
            </model>
            """
        let folder = TemporaryDirectory()
        let url = folder.file("Odd.xcdatamodel")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Data(body.utf8).write(to: url.appendingPathComponent("contents"))
        let model = try ObjectModel.load(contentsOf: url)
        #expect(Self.warnings(model) == ["Item.odd", "Item.lost"])
        #expect(model.warnings.first?.message.contains("not one Strata computes") == true)
        #expect(model.warnings.last?.message.contains("'owner' is not a to-one relationship") == true)
        #expect(!model.isDerived("odd", of: "Item") && model.isDerived("lost", of: "Item"))
    }

    @Test(arguments: Storage.allCases)
    func fetchRequestTemplatesFetchWithTheirVariables(storage: Storage) throws {
        let model = try Self.model("Templates.xcdatamodel")
        #expect(Self.warnings(model) == ["Record.scratch", "Record.preview", "Record.byExpression"])
        #expect(model.attribute("location", of: "Record")?.elements?.map(\.name) == ["city", "country"])
        #expect(
            model.fetchRequestTemplates.map(\.name) == [
                "recordsOfYear", "recordsByArtistSince", "longTracks", "everyRecord",
            ])
        let folder = TemporaryDirectory()
        let coordinator = try storage.coordinator(model, folder)
        let context = ObjectContext(coordinator: coordinator)
        for (artist, title, year) in [("Nina", "Pastel", 1964), ("nina", "Wild", 1966), ("Miles", "Blue", 1959)] {
            try context.insert(
                "Record",
                values: ["artist": .string(artist), "title": .string(title), "year": .integer(Int64(year))])
        }
        try context.save()
        func titles(_ request: FetchRequest) throws -> [String] {
            var request = request
            request.sortDescriptors = [SortKey("title")]
            let reader = ObjectContext(coordinator: coordinator)
            return try withExtendedLifetime(reader) { try reader.fetch(request).compactMap { $0.string("title") } }
        }
        #expect(
            try titles(
                model.fetchRequest(
                    fromTemplate: "recordsOfYear", substitutionVariables: ["year": .value(.integer(1959))]))
                == ["Blue"])
        #expect(
            try titles(
                model.fetchRequest(
                    fromTemplate: "recordsByArtistSince",
                    substitutionVariables: ["artist": .value(.string("NINA")), "since": .value(.integer(1965))])) == [
                    "Wild"
                ])
        #expect(try titles(model.fetchRequest(fromTemplate: "everyRecord")) == ["Blue", "Pastel", "Wild"])
        func failure(_ name: String) -> String? {
            do {
                _ = try model.fetchRequest(fromTemplate: name)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(failure("recordsOfYear")?.contains("year") == true)
        #expect(failure("noSuchTemplate")?.contains("no fetch request template 'noSuchTemplate'") == true)
        // Two records of one artist and title break the uniqueness constraint.
        try context.insert("Record", values: ["artist": .string("Miles"), "title": .string("Blue")])
        #expect(throws: ContextError.self) { try context.save() }
        context.rollback()
    }

    @Test func fetchIndexesKeepTheirDirectionInTheSQLiteSchema() throws {
        let model = try Self.model("Templates.xcdatamodel")
        let index = try #require(model.entity(named: "Record")?.indexes.first { $0.name == "byYearDescending" })
        #expect(index.properties == ["year", "title"] && index.descending == ["year"])
        let folder = TemporaryDirectory()
        _ = try Storage.sqlite.coordinator(model, folder)
        let db = try SQLiteConnection(path: folder.file("store.sqlite").path, readOnly: true)
        let sql = try db.query("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '%DESC%'") {
            $0.text(0)
        }
        #expect(sql.count == 1 && sql.first?.contains("\"year\" DESC") == true)
    }

    @Test func renamingIdentifiersAndHashModifiersAreRead() throws {
        let model = try Self.model("Templates.xcdatamodel")
        let record = try #require(model.entity(named: "Record"))
        #expect(record.renamedFrom == "Album" && record.versionHashModifier == "v2")
        #expect(model.attribute("title", of: "Record")?.renamedFrom == "name")
        #expect(model.attribute("rating", of: "Record")?.versionHashModifier == "scale5")
        // A modifier changes the entity's hash, as it does in Core Data.
        var unmodified = record
        unmodified.versionHashModifier = nil
        let entities = model.entities.map { $0.name == "Record" ? unmodified : $0 }
        let without = try ObjectModel(name: "T", entities: entities)
        #expect(without.versionHash(of: "Record") != model.versionHash(of: "Record"))
        #expect(without.versionHash(of: "Track") == model.versionHash(of: "Track"))
    }
}
