import Foundation
import Strata
import StrataTestSupport
import Testing

/// Core Data's composite attributes (a `<composite>` of the model, used by an attribute of type
/// Composite) served as nested JSON objects over HTTP in every store type: each element of its
/// type, checked on write, described in the OpenAPI document and filtered by key path.
@Suite(.serialized) struct CompositeAttributeTests {
    /// A Place with an address, a composite of a required street and optional city, floor and date.
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
                    XcodeAttribute("city", "String", optional: true),
                    XcodeAttribute("floor", "Integer 16", optional: true),
                    XcodeAttribute("since", "Date", optional: true),
                ])
        ])

    /// A server over the store `store` names (`memory`, an SQLite file, a PostgreSQL URL).
    static func serve(_ store: (TemporaryDirectory) throws -> String) throws -> (
        StrataProcess, TestClient, TemporaryDirectory
    ) {
        let folder = TemporaryDirectory()
        let bundle = try XcodeModelWriter.writeBundle(
            named: "Places", versions: [version], current: "Places", in: folder.url)
        let process = try StrataProcess([
            "serve", "--port", "0", "--model", bundle.path, "--data-dir", folder.file("data").path,
            "--store", "Default=\(try store(folder))",
        ])
        let client = TestClient(port: try #require(process.port(), "\(process.stderr.current)"))
        return (process, client, folder)
    }

    static func address(_ response: ClientResponse) -> JSONValue? { response.json.objectValue?["address"] }

    static func names(_ client: TestClient, where predicate: String) throws -> [String] {
        let query = predicate.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? predicate
        let response = try client.send("GET", "/places?where=\(query)&order=name")
        #expect(response.status == 200, "\(predicate): \(response.text)")
        return (response.json.objectValue?["items"]?.arrayValue ?? []).compactMap {
            $0.objectValue?["name"]?.stringValue
        }
    }

    /// Writes, reads, refuses and filters composites through `client`.
    static func check(_ client: TestClient) throws {
        let created = try client.send(
            "POST", "/places",
            json:
                #"{"name": "a", "address": {"street": "Storgata 1", "city": "Oslo", "since": "2024-05-01T12:00:00+02:00"}}"#
        )
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.json.objectValue?["_id"]?.doubleValue.map { Int64($0) })
        // Every element is answered, a missing optional one as null, a date in UTC.
        let expected: JSONValue = .object([
            "street": .string("Storgata 1"), "city": .string("Oslo"), "floor": .null,
            "since": .string("2024-05-01T10:00:00Z"),
        ])
        #expect(address(created) == expected, "\(created.text)")
        #expect(address(try client.send("GET", "/places/\(id)")) == expected)
        let patched = try client.send(
            "PATCH", "/places/\(id)", json: #"{"address": {"street": "Kirkegata 2", "city": "Oslo", "floor": 3}}"#)
        #expect(patched.status == 200, "\(patched.text)")
        #expect(address(patched)?.objectValue?["floor"] == .integer(3))
        #expect(address(patched)?.objectValue?["since"] == .null)
        for (name, city, floor) in [("b", "Bergen", 1), ("c", "Oslo", 7)] {
            let other = try client.send(
                "POST", "/places",
                json: #"{"name": "\#(name)", "address": {"street": "x", "city": "\#(city)", "floor": \#(floor)}}"#)
            #expect(other.status == 201, "\(other.text)")
        }
        #expect(try client.send("POST", "/places", json: #"{"name": "d"}"#).status == 201)
        let unset = try client.send("GET", "/places?name=eq.d")
        #expect(unset.json.objectValue?["items"]?.arrayValue?.first?.objectValue?["address"] == .null)

        // Refusals name the attribute and the element.
        let refusals: [(body: String, text: String)] = [
            (#"{"street": "x", "planet": "Mars"}"#, "address has no element 'planet'"),
            (#"{"street": 5}"#, "address.street must be string"),
            (#"{"street": "x", "floor": 70000}"#, "address.floor must be integer16"),
            (#"{"city": "Oslo"}"#, "address.street is required"),
            (#""Oslo""#, "address must be an object with the elements street, city, floor, since"),
        ]
        for refusal in refusals {
            let response = try client.send("POST", "/places", json: #"{"name": "x", "address": \#(refusal.body)}"#)
            #expect(response.status == 422, "\(refusal.body): \(response.text)")
            #expect(response.text.contains(refusal.text), "\(refusal.body): \(response.text)")
        }

        // Predicates on an element's key path.
        #expect(try names(client, where: #"address.city == "Oslo""#) == ["a", "c"])
        #expect(try names(client, where: "address.floor > 2") == ["a", "c"])
        #expect(try names(client, where: #"address.city == "Oslo" AND address.floor < 5"#) == ["a"])
        #expect(try names(client, where: "address.floor == nil") == ["d"])
        let unknown = try client.send("GET", "/places?where=address.planet%20%3D%3D%201")
        #expect(unknown.status == 400 && unknown.text.contains("no element 'planet'"), "\(unknown.text)")
    }

    @Test func sqlite() throws {
        let (process, client, _) = try Self.serve { "sqlite:" + $0.file("places.sqlite").path }
        try Self.check(client)
        _ = process
    }

    @Test func inMemory() throws {
        let (process, client, _) = try Self.serve { _ in "memory" }
        try Self.check(client)
        _ = process
    }

    @Test(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
    func postgreSQL() throws {
        let (process, client, _) = try Self.serve { _ in try PostgreSQLTestServer.storeURL().absoluteString }
        try Self.check(client)
        _ = process
    }

    @Test func theOpenAPIDocumentDescribesEachElement() throws {
        let (process, client, _) = try Self.serve { _ in "memory" }
        let schemas = try client.send("GET", "/openapi.json").json.objectValue?["components"]?.objectValue?["schemas"]
        func address(_ schema: String) -> [String: JSONValue]? {
            schemas?.objectValue?[schema]?.objectValue?["properties"]?.objectValue?["address"]?.objectValue
        }
        let read = try #require(address("Place"))
        #expect(read["type"] == .string("object") && read["additionalProperties"] == .bool(false))
        let properties = read["properties"]?.objectValue
        #expect(properties?["street"]?.objectValue?["type"] == .string("string"))
        #expect(properties?["floor"]?.objectValue?["type"] == .string("integer"))
        #expect(properties?["since"]?.objectValue?["format"] == .string("date-time"))
        #expect(read["required"] == .array([.string("street")]))
        let whereParameter = try client.send("GET", "/openapi.json").json.objectValue?["paths"]?.objectValue?[
            "/places"]?
            .objectValue?["get"]?.objectValue?["parameters"]?.arrayValue?.first {
                $0.objectValue?["name"] == .string("where")
            }
        #expect(
            whereParameter?.objectValue?["description"]?.stringValue?.contains("by key path, e.g. `address.street`")
                == true)
        let create = try #require(address("PlaceCreate"))
        #expect(create["required"] == .array([.string("street")]))
        #expect(create["properties"]?.objectValue?["city"]?.objectValue?["nullable"] == .bool(true))
        _ = process
    }

    @Test func strataModelLoadsCompositesWithoutAWarning() throws {
        let folder = TemporaryDirectory()
        let bundle = try XcodeModelWriter.writeBundle(
            named: "Places", versions: [Self.version], current: "Places", in: folder.url)
        let (status, output, error) = try CommandLineTests.run(["model", "--model", bundle.path, "--strict"])
        #expect(status == 0, "\(output)\(error)")
        #expect(!(output + error).contains("composite"), "\(output)\(error)")
        #expect(output.contains("Place"), "\(output)")
    }
}
