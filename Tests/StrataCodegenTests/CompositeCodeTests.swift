import Foundation
import Strata
import StrataCodegen
import StrataTestSupport
import Testing

/// Composite attributes (Core Data's `NSCompositeAttributeDescription`) become a struct of their
/// own, nested in the entity's, with a property per element and a nested struct per nested
/// composite.
@Suite struct CompositeCodeTests {
    static let model = #"""
        {
          "name": "Places",
          "entities": [
            {"name": "Place", "attributes": [
              {"name": "name", "type": "string", "optional": false},
              {"name": "address", "type": "composite", "elements": [
                {"name": "street", "type": "string"},
                {"name": "city", "type": "string", "optional": false, "default": "Paris"},
                {"name": "since", "type": "date"},
                {"name": "rent", "type": "decimal"},
                {"name": "class", "type": "integer16"},
                {"name": "json", "type": "boolean"},
                {"name": "position", "type": "composite", "optional": false, "elements": [
                  {"name": "latitude", "type": "double", "optional": false},
                  {"name": "longitude", "type": "double", "optional": false}
                ]}
              ]},
              {"name": "origin", "type": "composite", "optional": false, "elements": [
                {"name": "code", "type": "string"}
              ]}
            ]}
          ]
        }
        """#

    static let use = #"""
        import Foundation
        import Strata

        func use(_ context: ObjectContext) -> Double? {
            let place = Place(context: context)
            place.name = "Home"
            place.address = Place.Address(
                street: "Rue de Rivoli", city: "Paris", since: Date(), rent: Decimal(1200), class: 3, json_: true,
                position: .init(latitude: 48.86, longitude: 2.35))
            place.address?.city = "Lyon"  // a value: reading, changing and writing it back
            var origin: Place.Origin = place.origin
            origin.code = "FR"
            place.origin = origin
            let json: JSONValue = origin.json
            _ = Place.Origin(json: json)
            return place.address?.position.latitude
        }
        """#

    @Test func compositeAttributesBecomeStructsThatCompile() throws {
        let folder = TemporaryDirectory()
        try Data(Self.model.utf8).write(to: folder.file("Places.json"))
        let file = try SwiftGenerator.generate(
            modelAt: folder.file("Places.json").path, into: folder.file("out").path, options: .init())
        let source = try String(contentsOf: file, encoding: .utf8)
        #expect(source.contains("public var address: Address? {"))
        #expect(source.contains("public struct Address: Swift.Sendable, Swift.Hashable {"))
        #expect(source.contains("public struct Position: Swift.Sendable, Swift.Hashable {"))
        #expect(source.contains("public var origin: Origin {"))
        try Data(Self.use.utf8).write(to: folder.file("Use.swift"))
        let outcome = try TypeChecker.forThisBuild().check([file, folder.file("Use.swift")])
        #expect(outcome.succeeded, "\(outcome.output)")
    }

    /// The element helpers the generated structs call read and write what the context keeps.
    @Test func elementsRoundTripThroughTheirJSONForm() throws {
        let date = Date(timeIntervalSince1970: 1_000_000)
        let object = JSONValue.object([
            "since": JSONValue(compositeElement: date), "rent": JSONValue(compositeElement: Decimal(string: "12.5")),
            "street": JSONValue(compositeElement: String?.none),
        ])
        #expect(object.compositeElement("since", .date, as: Date.self) == date)
        #expect(object.compositeElement("rent", .decimal, as: Decimal.self) == Decimal(string: "12.5"))
        #expect(object.compositeElement("street", .string, as: String.self) == nil)
        #expect(object.compositeMember("street") == nil)
        #expect(object.objectValue?["rent"] == .string("12.5"))
    }
}
