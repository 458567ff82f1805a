import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Composite attributes in the model: read from Xcode's `<composite>` elements and from the JSON
/// model format alike, checked element by element, hashed as Core Data hashes them, and imported
/// from a Core Data store that keeps them in one column per element.
@Suite struct CompositeAttributeTests {
    static let version = XcodeModelVersion(
        "Places", identifier: "1",
        entities: [
            XcodeEntity(
                "Place",
                attributes: [
                    XcodeAttribute("name", "String"),
                    XcodeAttribute("address", "Composite", optional: true, composite: "Address"),
                ])
        ],
        composites: [
            XcodeComposite(
                "Address",
                elements: [
                    XcodeAttribute("street", "String"),
                    XcodeAttribute("city", "String", optional: true, default: "Oslo"),
                    XcodeAttribute("position", "Composite", optional: true, composite: "Position"),
                ]),
            XcodeComposite(
                "Position", elements: [XcodeAttribute("latitude", "Double", optional: true)]),
        ])

    static func load(_ version: XcodeModelVersion = version) throws -> (ObjectModel, URL, TemporaryDirectory) {
        let folder = TemporaryDirectory()
        let bundle = try XcodeModelWriter.writeBundle(
            named: "Places", versions: [version], current: version.name, in: folder.url)
        return (try ObjectModel.load(contentsOf: bundle), bundle, folder)
    }

    @Test func anXcodeCompositeIsReadWithItsElementsAndSurvivesTheJSONFormat() throws {
        let (model, _, _) = try Self.load()
        let address = try #require(model.attribute("address", of: "Place"))
        #expect(address.type == .json && address.isComposite)
        #expect(address.elements?.map(\.name) == ["street", "city", "position"])
        #expect(address.element(at: ["position", "latitude"])?.type == .double)
        #expect(address.compositeLeaves.map { $0.path } == [["street"], ["city"], ["position", "latitude"]])
        #expect(model.warnings.allSatisfy { !$0.message.contains("composite") }, "\(model.warnings)")
        // Core Data builds the composite's default from its elements' defaults.
        #expect(
            address.defaultValue
                == .json(.object(["street": .null, "city": .string("Oslo"), "position": .object(["latitude": .null])])))
        let reloaded = try ObjectModel.load(json: Array(model.canonicalJSON.utf8))
        #expect(reloaded == model)
        #expect(model.canonicalJSON.contains(#""type":"composite""#))
    }

    @Test func anIndexOrConstraintOverAnElementIsLeftOutWithAWarning() throws {
        let body = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Place" representedClassName="Place" syncable="YES">
                    <attribute name="name" attributeType="String"/>
                    <attribute name="address" optional="YES" attributeType="Composite" composite="Address"/>
                    <uniquenessConstraints>
                        <uniquenessConstraint><constraint value="address.street"/></uniquenessConstraint>
                        <uniquenessConstraint><constraint value="name"/></uniquenessConstraint>
                    </uniquenessConstraints>
                    <fetchIndex name="byCity">
                        <fetchIndexElement property="address.city" type="Binary" order="ascending"/>
                        <fetchIndexElement property="name" type="Binary" order="ascending"/>
                    </fetchIndex>
                </entity>
                <composite name="Address">
                    <attribute name="street" optional="YES" attributeType="String"/>
                    <attribute name="city" optional="YES" attributeType="String"/>
                </composite>
            </model>
            """
        let folder = TemporaryDirectory()
        let url = folder.file("Places.xcdatamodel")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Data(body.utf8).write(to: url.appendingPathComponent("contents"))
        let model = try ObjectModel.load(contentsOf: url)
        let place = try #require(model.entity(named: "Place"))
        #expect(place.uniqueness == [["name"]])
        #expect(place.indexes.map(\.properties) == [["name"]])
        #expect(model.warnings.map { $0.property ?? "" }.sorted() == ["address.city", "address.street"])
    }

    @Test func aValueIsCheckedElementByElement() throws {
        let (model, _, _) = try Self.load()
        let address = try #require(model.attribute("address", of: "Place"))
        let checked = try address.checkedComposite(
            .object(["street": .string("Storgata 1"), "position": .object(["latitude": .integer(60)])]))
        #expect(
            checked
                == .object([
                    "street": .string("Storgata 1"), "city": .null, "position": .object(["latitude": .double(60)]),
                ]))
        let refusals: [(JSONValue, String, String)] = [
            (.object(["street": .string("x"), "zip": .string("0150")]), "address.zip", "has no element 'zip'"),
            (.object(["street": .bool(true)]), "address.street", "must be string"),
            (.object(["city": .string("Oslo")]), "address.street", "is required"),
            (
                .object(["street": .string("x"), "position": .object(["latitude": .string("north")])]),
                "address.position.latitude", "must be double"
            ),
            (.array([]), "address", "must be an object"),
        ]
        for (value, path, text) in refusals {
            #expect(throws: CompositeValueError.self, "\(value.jsonText)") { try address.checkedComposite(value) }
            do throws(CompositeValueError) {
                _ = try address.checkedComposite(value)
            } catch {
                #expect(error.path == path && error.message.contains(text), "\(error)")
            }
        }
    }

    @Test func theJSONFormatDeclaresCompositesWithTheRulesOfTheirElements() throws {
        func load(_ attribute: String) throws -> ObjectModel {
            let text = #"{"name": "M", "entities": [{"name": "Place", "attributes": [\#(attribute)]}]}"#
            return try ObjectModel.load(json: Array(text.utf8))
        }
        let model = try load(
            #"""
            {"name": "address", "type": "composite", "optional": false, "elements": [
              {"name": "street", "type": "string", "optional": false, "maxLength": 5},
              {"name": "floor", "type": "integer16", "min": 0, "default": 1}]}
            """#)
        let address = try #require(model.attribute("address", of: "Place"))
        #expect(!address.isOptional && address.elements?.map(\.type) == [.string, .integer16])
        #expect(address.defaultValue == .json(.object(["street": .null, "floor": .integer(1)])))
        for (value, text) in [
            (JSONValue.object(["street": .string("Storgata")]), "address.street must be at most 5 long"),
            (.object(["street": .string("Gate"), "floor": .integer(-1)]), "address.floor must be at least 0"),
        ] {
            do throws(CompositeValueError) {
                _ = try address.checkedComposite(value)
                Issue.record("\(value.jsonText) was accepted")
            } catch {
                #expect(error.message == text)
            }
        }
        #expect(throws: ModelError.self) {
            try load(#"{"name": "a", "type": "composite", "default": {}, "elements": []}"#)
        }
        #expect(throws: ModelError.self) { try load(#"{"name": "a", "type": "composite"}"#) }
        #expect(throws: ModelError.self) {
            try load(#"{"name": "a", "type": "string", "elements": [{"name": "b", "type": "string"}]}"#)
        }
        #expect(throws: ModelError.self) {
            try load(#"{"name": "a", "type": "composite", "elements": [{"name": "b", "type": "color"}]}"#)
        }
    }

    @Test func aSaveWithAnElementOfTheWrongTypeIsRefused() throws {
        let (model, _, _) = try Self.load()
        let container = try PersistentContainer(model: model, stores: [StoreDescription(type: .inMemory)])
        let context = container.viewContext
        let place = try context.insert("Place")
        try place.setValue(.string("a"), forKey: "name")
        try place.setValue(.json(.object(["city": .string("Oslo")])), forKey: "address")
        #expect(throws: ContextError.self) { try context.save() }
        try place.setValue(.json(.object(["street": .string("Storgata 1")])), forKey: "address")
        try context.save()
        // Kept with every element, as the server answers it.
        #expect(
            try place.value(forKey: "address")
                == .json(
                    .object(["street": .string("Storgata 1"), "city": .null, "position": .null]))
        )
    }

    @Test func theVersionHashIsTheLeafElementsHashesByName() throws {
        let (model, _, _) = try Self.load()
        let address = try #require(model.attribute("address", of: "Place"))
        var hasher = SHA256()
        for name in ["city", "latitude", "street"] {
            let leaf = try #require(address.compositeLeaves.first { $0.element.name == name }?.element)
            hasher.update(ObjectModel.coreDataHash(leaf))
        }
        #expect(ObjectModel.coreDataHash(address) == hasher.finalize())
        // A change to an element changes the entity's hash.
        var changed = Self.version
        changed.composites[1].elements[0].type = "Float"
        let (other, _, _) = try Self.load(changed)
        #expect(other.coreDataVersionHashes["Place"] != model.coreDataVersionHashes["Place"])
    }

    /// Writes a Core Data store of `model` holding Place rows with their address in the columns
    /// Core Data gives a composite's leaf elements: `Z` and the element's name.
    static func writeCoreDataStore(_ model: ObjectModel, at url: URL) throws {
        let db = try SQLiteConnection(path: url.path)
        try db.execute(
            "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)")
        try db.execute("CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)")
        try db.execute(
            "CREATE TABLE ZPLACE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR, "
                + "ZSTREET VARCHAR, ZCITY VARCHAR, ZLATITUDE FLOAT)")
        try db.execute("INSERT INTO Z_PRIMARYKEY VALUES (1, 'Place', 0, 2)")
        try db.execute("INSERT INTO ZPLACE VALUES (1, 1, 1, 'a', 'Storgata 1', 'Oslo', 59.9)")
        try db.execute("INSERT INTO ZPLACE VALUES (2, 1, 1, 'b', NULL, NULL, NULL)")
        let hashes = model.coreDataVersionHashes.mapValues { Data($0) }
        let metadata: [String: Any] = [
            "NSStoreModelVersionHashes": hashes, "NSStoreModelVersionIdentifiers": ["1"],
            "NSPersistenceFrameworkVersion": 1338, "NSStoreType": "SQLite", "NSStoreModelVersionHashesVersion": 3,
        ]
        let plist = try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)
        _ = try db.query(
            "INSERT INTO Z_METADATA VALUES (1, 'C0FFEE00-0000-4000-8000-000000000001', ?)", [.blob(plist)]
        ) { _ in () }
    }

    @Test func aCoreDataStoreKeepsEachElementInAColumnOfItsOwn() throws {
        let (model, bundle, folder) = try Self.load()
        let source = folder.file("places-coredata.sqlite")
        try Self.writeCoreDataStore(model, at: source)
        let target = folder.file("places.sqlite")
        let report = try CoreDataImporter.importStore(
            at: source, model: model, versions: try ObjectModel.loadCoreDataModelVersions(at: bundle),
            targets: ["Default": target])
        #expect(report.versionReason.contains("hash") || report.versionReason.contains("only version"))
        let container = try PersistentContainer(
            model: model, stores: [StoreDescription(type: .sqlite, configuration: nil, url: target)])
        let context = container.viewContext
        var addresses: [String: AttributeValue] = [:]
        for place in try context.fetch(FetchRequest(entityName: "Place")) {
            addresses[try place.value(forKey: "name").json.stringValue ?? ""] = try place.value(forKey: "address")
        }
        #expect(
            addresses["a"]
                == .json(
                    .object([
                        "street": .string("Storgata 1"), "city": .string("Oslo"),
                        "position": .object(["latitude": .double(59.9)]),
                    ])))
        #expect(addresses["b"] == .null)
        // The element's key path reads it in a predicate, in SQL.
        let oslo = try context.fetch(
            FetchRequest(entityName: "Place", predicate: try FetchPredicate(format: #"address.city == "Oslo""#)))
        #expect(try oslo.map { try $0.value(forKey: "name") } == [.string("a")])
        let north = try context.fetch(
            FetchRequest(entityName: "Place", predicate: try FetchPredicate(format: "address.position.latitude > 50")))
        #expect(north.count == 1)
    }
}
