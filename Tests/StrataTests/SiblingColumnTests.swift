import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Entities of one hierarchy that declare one attribute name with different types (as Amperfy's
/// model does), and a to-one relationship marked ordered: Core Data loads both, and so does Strata.
@Suite struct SiblingColumnTests {
    static let json = #"""
        {"name": "Siblings", "entities": [
          {"name": "Item", "abstract": true, "attributes": [{"name": "title", "type": "string"}]},
          {"name": "Playable", "parent": "Item", "abstract": true,
           "attributes": [{"name": "duration", "type": "integer16"}]},
          {"name": "Song", "parent": "Playable", "attributes": [{"name": "track", "type": "integer16"}],
           "relationships": [{"name": "genre", "destination": "Genre", "inverse": "songs", "ordered": true}]},
          {"name": "Album", "parent": "Item", "attributes": [{"name": "duration", "type": "integer64"}]},
          {"name": "Artist", "parent": "Item", "attributes": [{"name": "duration", "type": "integer64"}]},
          {"name": "Clip", "parent": "Item", "attributes": [{"name": "duration", "type": "string"}]},
          {"name": "Genre", "attributes": [{"name": "name", "type": "string"}],
           "relationships": [{"name": "songs", "destination": "Song", "toMany": true, "inverse": "genre"}]}
        ]}
        """#

    static let xml = """
        <entity name="Item" isAbstract="YES">
            <attribute name="title" optional="YES" attributeType="String"/>
        </entity>
        <entity name="Playable" parentEntity="Item" isAbstract="YES">
            <attribute name="duration" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>
        </entity>
        <entity name="Song" parentEntity="Playable">
            <attribute name="track" optional="YES" attributeType="Integer 16" usesScalarValueType="YES"/>
            <relationship name="genre" optional="YES" maxCount="1" deletionRule="Nullify" ordered="YES" destinationEntity="Genre" inverseName="songs" inverseEntity="Genre"/>
        </entity>
        <entity name="Album" parentEntity="Item">
            <attribute name="duration" optional="YES" attributeType="Integer 64" usesScalarValueType="YES"/>
        </entity>
        <entity name="Artist" parentEntity="Item">
            <attribute name="duration" optional="YES" attributeType="Integer 64" usesScalarValueType="YES"/>
        </entity>
        <entity name="Clip" parentEntity="Item">
            <attribute name="duration" optional="YES" attributeType="String"/>
        </entity>
        <entity name="Genre">
            <attribute name="name" optional="YES" attributeType="String"/>
            <relationship name="songs" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Song" inverseName="genre" inverseEntity="Song"/>
        </entity>
        """

    static func model(_ source: String) throws -> ObjectModel {
        source == "json"
            ? try ObjectModel.load(json: Array(json.utf8)) : try CoreDataModelTests.load(xml)
    }

    @Test(arguments: ["json", "xml"])
    func eachTypeTakesAColumnOfItsOwnAndTheOrderedToOneLoadsWithAWarning(source: String) throws {
        let model = try Self.model(source)
        // Entities by name: Album's type keeps the name, each other type takes the next suffix,
        // and entities declaring the same type share its column.
        #expect(model.columnName(of: "duration", in: "Album") == "duration")
        #expect(model.columnName(of: "duration", in: "Artist") == "duration")
        #expect(model.columnName(of: "duration", in: "Clip") == "duration1")
        #expect(model.columnName(of: "duration", in: "Song") == "duration2")
        #expect(model.columnName(of: "title", in: "Song") == "title")
        let warnings = model.warnings.filter { $0.entity == "Song" && $0.property == "genre" }
        #expect(warnings.map(\.message) == ["a to-one relationship cannot be ordered: 'ordered' is ignored"])
        #expect(model.storage(of: "songs", in: "Genre") == .inverseForeignKey(inverse: "genre"))
    }

    @Test func entitiesAreTakenInCoreDatasNumberingOrderDepthFirst() throws {
        // Root, beta, Zed (beta's subentity), Gamma: Zed's type keeps the name although Gamma
        // sorts before it by name.
        let json = #"""
            {"name": "Order", "entities": [
              {"name": "Root", "attributes": [{"name": "title", "type": "string"}]},
              {"name": "Gamma", "parent": "Root", "attributes": [{"name": "x", "type": "integer32"}]},
              {"name": "beta", "parent": "Root", "attributes": [{"name": "y", "type": "string"}]},
              {"name": "Zed", "parent": "beta", "attributes": [{"name": "x", "type": "string"}]}
            ]}
            """#
        let model = try ObjectModel.load(json: Array(json.utf8))
        #expect(model.columnName(of: "x", in: "Zed") == "x")
        #expect(model.columnName(of: "x", in: "Gamma") == "x1")
    }

    @Test(arguments: StoreUnderTest.allCases)
    func anAttributeNamedAsASiblingsToOneTakesAColumnOfItsOwn(kind: StoreUnderTest) throws {
        let json = #"""
            {"name": "Owners", "entities": [
              {"name": "Person", "attributes": [{"name": "name", "type": "string"}],
               "relationships": [{"name": "cars", "destination": "Car", "toMany": true, "inverse": "owner"}]},
              {"name": "Thing", "abstract": true, "attributes": [{"name": "label", "type": "string"}]},
              {"name": "Book", "parent": "Thing", "attributes": [{"name": "owner", "type": "string"}]},
              {"name": "Car", "parent": "Thing",
               "relationships": [{"name": "owner", "destination": "Person", "inverse": "cars"}]}
            ]}
            """#
        let model = try ObjectModel.load(json: Array(json.utf8))
        #expect(model.columnName(of: "owner", in: "Book") == "owner1")
        #expect(model.columnName(of: "owner", in: "Car") == "owner")
        let folder = TemporaryDirectory()
        let store = try kind.open(folder, model: model)
        let person = try newRow(store, "Person", ["name": .string("Ada")])
        let book = try newRow(store, "Book", ["owner": .string("the library")])
        var car = try newRow(store, "Car", ["label": .string("Roadster")])
        car.toOne["owner"] = .some(person.id)
        try store.save(StoreChanges(inserts: [person, book, car]))
        #expect(try store.row(for: book.id)?.attributes["owner"] == .string("the library"))
        #expect(try store.row(for: car.id)?.toOne["owner"] == .some(person.id))
        let request = FetchRequest(entityName: "Book", predicate: try FetchPredicate(format: "owner == 'the library'"))
        #expect(try store.fetch(request).map(\.id) == [book.id])
    }

    @Test func aSubentityRedeclaringItsParentsAttributeIsStillRefused() {
        let json = #"""
            {"name": "Override", "entities": [
              {"name": "Item", "attributes": [{"name": "duration", "type": "integer16"}]},
              {"name": "Song", "parent": "Item", "attributes": [{"name": "duration", "type": "integer64"}]}
            ]}
            """#
        #expect {
            try ObjectModel.load(json: Array(json.utf8))
        } throws: { error in
            (error as? ModelError)?.issues.contains { $0.entity == "Song" && $0.property == "duration" } == true
        }
    }

    @Test(arguments: StoreUnderTest.allCases, ["json", "xml"])
    func siblingsValuesOfEachTypeAreSavedFetchedAndUpdated(kind: StoreUnderTest, source: String) throws {
        let model = try Self.model(source)
        let folder = TemporaryDirectory()
        let store = try kind.open(folder, model: model)
        let genre = try newRow(store, "Genre", ["name": .string("Jazz")])
        var song = try newRow(store, "Song", ["title": .string("So What"), "duration": .integer(Int64(Int16.max))])
        song.toOne["genre"] = .some(genre.id)
        let album = try newRow(store, "Album", ["title": .string("Kind of Blue"), "duration": .integer(Int64.max)])
        let artist = try newRow(store, "Artist", ["title": .string("Miles"), "duration": .integer(Int64.min)])
        let clip = try newRow(store, "Clip", ["title": .string("Live"), "duration": .string("3:45")])
        try store.save(StoreChanges(inserts: [genre, song, album, artist, clip]))
        for row in [song, album, artist, clip] {
            let read = try #require(try store.row(for: row.id))
            #expect(read.attributes["duration"] == row.attributes["duration"], "\(row.id.entityName)")
            #expect(read.attributes["title"] == row.attributes["title"], "\(row.id.entityName)")
        }
        #expect(try store.row(for: song.id)?.toOne["genre"] == .some(genre.id))

        let second = try newRow(store, "Album", ["title": .string("Zoot"), "duration": .integer(7)])
        try store.save(StoreChanges(inserts: [second]))
        func titles(_ entity: String, _ format: String, sort: String = "title") throws -> [String] {
            let request = FetchRequest(
                entityName: entity, predicate: try FetchPredicate(format: format), sortDescriptors: [SortKey(sort)])
            return try store.fetch(request).compactMap {
                if case .string(let title) = $0.attributes["title"] { title } else { nil }
            }
        }
        #expect(try titles("Album", "duration > 7") == ["Kind of Blue"])
        #expect(try titles("Album", "duration > 0", sort: "duration") == ["Zoot", "Kind of Blue"])
        #expect(try titles("Artist", "duration < 0") == ["Miles"])
        #expect(try titles("Clip", "duration == '3:45'") == ["Live"])
        #expect(try titles("Playable", "duration == 32767") == ["So What"])
        #expect(try titles("Item", "title != nil") == ["Kind of Blue", "Live", "Miles", "So What", "Zoot"])

        try store.save(
            StoreChanges(updates: [
                StoreUpdate(id: album.id, expectedVersion: 1, attributes: ["duration": .integer(42)]),
                StoreUpdate(id: clip.id, expectedVersion: 1, attributes: ["duration": .string("4:20")]),
            ]))
        #expect(try store.row(for: album.id)?.attributes["duration"] == .integer(42))
        #expect(try store.row(for: clip.id)?.attributes["duration"] == .string("4:20"))
        #expect(try store.row(for: song.id)?.attributes["duration"] == .integer(Int64(Int16.max)))
        #expect(try store.row(for: artist.id)?.attributes["duration"] == .integer(Int64.min))

        if kind == .sqlite {
            let db = try SQLiteConnection(path: folder.file("store.sqlite").path, readOnly: true)
            let columns = try db.query("SELECT name FROM pragma_table_info('Item')") { $0.text(0) }
            #expect(Set(columns).isSuperset(of: ["duration", "duration1", "duration2", "title", "track", "genre"]))
            let reopened = try kind.open(folder, model: model)
            #expect(try reopened.row(for: clip.id)?.attributes["duration"] == .string("4:20"))
        }
    }
}
