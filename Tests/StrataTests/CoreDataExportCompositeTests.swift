import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Composite attributes exported in Core Data's layout: one column per leaf element (nested
/// composites flattened), named after the element alone and typed as the element, each value
/// encoded as Core Data encodes the element's type; read back by ``CoreDataImporter`` unchanged.
@Suite struct CoreDataExportCompositeTests {
    static let version = XcodeModelVersion(
        "Venues", identifier: "1",
        entities: [
            XcodeEntity(
                "Venue",
                attributes: [
                    XcodeAttribute("name", "String"),
                    // The same name as an element of the composite: one of them takes ZCITY1.
                    XcodeAttribute("city", "String", optional: true),
                    XcodeAttribute("address", "Composite", optional: true, composite: "Address"),
                ])
        ],
        composites: [
            XcodeComposite(
                "Address",
                elements: [
                    XcodeAttribute("street", "String"),
                    XcodeAttribute("city", "String", optional: true),
                    XcodeAttribute("opened", "Date", optional: true),
                    XcodeAttribute("code", "UUID", optional: true),
                    XcodeAttribute("floors", "Integer 16", optional: true),
                    XcodeAttribute("accessible", "Boolean", optional: true),
                    XcodeAttribute("plan", "Binary", optional: true),
                    XcodeAttribute("position", "Composite", optional: true, composite: "Position"),
                ]),
            XcodeComposite(
                "Position",
                elements: [
                    XcodeAttribute("latitude", "Double", optional: true),
                    XcodeAttribute("longitude", "Double", optional: true),
                ]),
        ])

    static let code = UUID(uuidString: "6F9619FF-8B86-4011-B42D-00C04FC964FF")!
    static let opened = Date(timeIntervalSinceReferenceDate: 700_000_000.25)

    /// Name → (venue's own city, address) of the objects saved.
    static let venues: [String: (JSONValue, JSONValue)] = [
        "full": (
            .string("Bergen"),
            .object([
                "street": .string("Storgata 1"), "city": .string("Oslo"), "opened": AttributeValue.date(opened).json,
                "code": AttributeValue.uuid(code).json, "floors": .integer(4), "accessible": .bool(true),
                "plan": AttributeValue.binary(Data([0, 1, 2, 255])).json,
                "position": .object(["latitude": .double(59.9), "longitude": .double(10.75)]),
            ])
        ),
        "no address": (.string("Tromsø"), .null),
        "street only": (.null, .object(["street": .string("Kirkegata 2")])),
        "half a position": (
            .null, .object(["street": .string("Elvegata 3"), "position": .object(["longitude": .double(-1.5)])])
        ),
    ]

    @Test func aCompositeIsExportedAsALeafColumnPerElementAndImportsBackTheSame() throws {
        let folder = TemporaryDirectory()
        let bundle = try XcodeModelWriter.writeBundle(
            named: "Venues", versions: [Self.version], current: Self.version.name, in: folder.url)
        let model = try ObjectModel.load(contentsOf: bundle)
        let versions = try ObjectModel.loadCoreDataModelVersions(at: bundle)
        let first = try PersistentContainer(
            model: model,
            stores: [StoreDescription(type: .sqlite, configuration: nil, url: folder.file("first.sqlite"))])
        let context = first.viewContext
        for (name, (city, address)) in Self.venues {
            let venue = try context.insert("Venue")
            try venue.setValue(.string(name), forKey: "name")
            try venue.setValue(city.isNull ? .null : .string(city.stringValue ?? ""), forKey: "city")
            try venue.setValue(address.isNull ? .null : .json(address), forKey: "address")
        }
        try context.save()

        let out = folder.file("Venues.sqlite")
        let report = try CoreDataExporter.export(model: model, coordinator: first.coordinator, to: out)
        #expect(report.objects["Venue"] == Self.venues.count)

        // The table has a column per leaf element with the element's type, and no column for the
        // composite itself.
        let db = try SQLiteConnection(path: out.path, mode: .readOnly)
        let columns = Dictionary(
            uniqueKeysWithValues: try db.query("SELECT name, type FROM pragma_table_info('ZVENUE')") {
                ($0.text(0), $0.text(1))
            })
        #expect(
            columns == [
                "Z_PK": "INTEGER", "Z_ENT": "INTEGER", "Z_OPT": "INTEGER", "ZNAME": "VARCHAR", "ZCITY": "VARCHAR",
                "ZCITY1": "VARCHAR", "ZSTREET": "VARCHAR", "ZOPENED": "TIMESTAMP", "ZCODE": "BLOB",
                "ZFLOORS": "INTEGER", "ZACCESSIBLE": "INTEGER", "ZPLAN": "BLOB", "ZLATITUDE": "FLOAT",
                "ZLONGITUDE": "FLOAT",
            ], "\(columns)")

        // Values as Core Data encodes them, NULL where the composite or the element is nil.
        let row = try #require(
            try db.query(
                "SELECT ZSTREET, ZOPENED, ZCODE, ZFLOORS, ZACCESSIBLE, ZPLAN, ZLATITUDE, ZLONGITUDE FROM ZVENUE WHERE ZNAME = 'full'"
            ) {
                ($0.text(0), $0.double(1), $0.blob(2), $0.int64(3), $0.int64(4), $0.blob(5), $0.double(6), $0.double(7))
            }
            .first)
        #expect(row.0 == "Storgata 1")
        #expect(row.1 == 700_000_000.25)
        #expect(row.2 == withUnsafeBytes(of: Self.code.uuid) { Data($0) })
        #expect(row.3 == 4 && row.4 == 1 && row.5 == Data([0, 1, 2, 255]))
        #expect(row.6 == 59.9 && row.7 == 10.75)
        let nulls = try db.query(
            "SELECT ZNAME, (ZSTREET IS NULL) + (ZOPENED IS NULL) + (ZCODE IS NULL) + (ZFLOORS IS NULL) + (ZACCESSIBLE IS NULL) + (ZPLAN IS NULL) + (ZLATITUDE IS NULL) + (ZLONGITUDE IS NULL) FROM ZVENUE"
        ) { ($0.text(0), $0.int64(1)) }
        #expect(
            Dictionary(uniqueKeysWithValues: nulls)
                == ["full": 0, "no address": 8, "street only": 7, "half a position": 6], "\(nulls)")

        // Z_METADATA holds the version hashes with the composite's hash (its leaves' by name).
        let file = try CoreDataStoreFile(url: out)
        #expect(try file.identifyVersion(among: versions).model.name == Self.version.name)
        let plist = try #require(try db.query("SELECT Z_PLIST FROM Z_METADATA") { $0.blob(0) }.first)
        let metadata = try #require(try BinaryPropertyList.parse(Array(plist)).dictionary)
        #expect(
            metadata["NSStoreModelVersionHashes"]?.dictionary?["Venue"]
                == .data(Data(model.coreDataVersionHashes["Venue"]!)))

        // Imported back: the same objects, nil composites and nil elements included.
        _ = try CoreDataImporter.importStore(
            at: out, model: model, versions: versions, targets: ["Default": folder.file("again.sqlite")],
            options: CoreDataImportOptions(durability: .normal))
        let again = try PersistentContainer(
            model: model,
            stores: [StoreDescription(type: .sqlite, configuration: nil, url: folder.file("again.sqlite"))])
        func venues(_ container: PersistentContainer) throws -> [String: [AttributeValue]] {
            var found: [String: [AttributeValue]] = [:]
            for venue in try container.viewContext.fetch(FetchRequest(entityName: "Venue")) {
                found[try venue.value(forKey: "name").json.stringValue ?? ""] = [
                    try venue.value(forKey: "city"), try venue.value(forKey: "address"),
                ]
            }
            return found
        }
        let saved = try venues(first)
        #expect(saved.count == Self.venues.count)
        #expect(try venues(again) == saved)
        #expect(saved["no address"]?[1] == .null)
        #expect(
            saved["street only"]?[1]
                == .json(
                    .object([
                        "street": .string("Kirkegata 2"), "city": .null, "opened": .null, "code": .null,
                        "floors": .null, "accessible": .null, "plan": .null, "position": .null,
                    ])))
        #expect(saved["full"]?[0] == .string("Bergen"))
    }
}
