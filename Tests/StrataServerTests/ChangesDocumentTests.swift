import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// `GET /_changes` and the `Strata-History-Token` header in the OpenAPI document of a server that
/// records history, and what the document says of `entities=` against what the server does.
@Suite struct ChangesDocumentTests {
    static func document(_ access: OpenAPIAccess = .anonymous, model: ObjectModel? = nil) throws -> JSONValue {
        OpenAPIGenerator.document(for: try model ?? ObjectModel.example, access: access)
    }

    @Test func theFeedIsDocumented() throws {
        let document = try Self.document()
        let at = OpenAPITests.at
        let operation = try #require(at(document, "paths", "/_changes", "get"))
        #expect(at(operation, "operationId") == .string("getChanges"))
        let parameters = operation.objectValue?["parameters"]?.arrayValue ?? []
        #expect(
            parameters.compactMap { $0.objectValue?["name"]?.stringValue } == [
                "since", "limit", "entities", "include", "wait", "Last-Event-ID",
            ])
        #expect(parameters.allSatisfy { $0.objectValue?["required"] == .bool(false) })
        let wait = try #require(parameters.first { $0.objectValue?["name"] == .string("wait") })
        #expect(at(wait, "schema", "minimum") == .integer(0) && at(wait, "schema", "maximum") == .integer(60))
        let limit = try #require(parameters.first { $0.objectValue?["name"] == .string("limit") })
        #expect(at(limit, "schema", "maximum") == .integer(1000) && at(limit, "schema", "default") == .integer(100))
        let include = try #require(parameters.first { $0.objectValue?["name"] == .string("include") })
        #expect(at(include, "schema", "enum") == .array([.string("object")]))

        let responses = try #require(at(operation, "responses")?.objectValue)
        #expect(Set(responses.keys) == ["200", "400", "404", "410", "503"])
        #expect(
            at(document, "paths", "/_changes", "get", "responses", "200", "content")?.objectValue?.keys.sorted() == [
                "application/json", "text/event-stream",
            ])
        #expect(
            at(document, "components", "responses", "HistoryExpired", "content", "application/problem+json") != nil)
        #expect(at(document, "components", "schemas", "Problem", "properties", "oldest") != nil)

        let change = try #require(at(document, "components", "schemas", "Change"))
        #expect(
            OpenAPITests.strings(at(change, "required")) == [
                "token", "entity", "_id", "op", "_version", "author", "at",
            ])
        #expect(OpenAPITests.strings(at(change, "properties", "op", "enum")) == ["insert", "update", "delete"])
        #expect(
            OpenAPITests.strings(at(change, "properties", "entity", "enum")) == ["Author", "Book", "Tag", "SearchLog"])
        #expect(at(change, "properties", "object", "nullable") == .bool(true))
        #expect(at(change, "properties", "author", "nullable") == .bool(true))
        #expect(
            OpenAPITests.strings(at(document, "components", "schemas", "ChangePage", "required")) == [
                "changes", "next",
            ])
    }

    @Test func successfulAnswersCarryTheHistoryToken() throws {
        let document = try Self.document()
        let header = JSONValue.object(["$ref": .string("#/components/headers/StrataHistoryToken")])
        var carrying: [String] = []
        for (path, method, operation) in OpenAPITests.operations(document) {
            for (status, response) in operation["responses"]?.objectValue ?? [:] {
                let carries = response.objectValue?["headers"]?.objectValue?["Strata-History-Token"] == header
                if carries { carrying.append("\(method) \(path) \(status)") }
                let data =
                    !["/", "/live", "/ready", "/metrics", "/openapi.json", "/openapi.yaml"].contains(path)
                    && !path.hasPrefix("/_model/")
                #expect(carries == (data && status.hasPrefix("2")), "\(method) \(path) \(status)")
            }
        }
        #expect(carrying.contains("get /books 200") && carrying.contains("post /_batch 200"))
        #expect(carrying.contains("delete /books/{id} 204") && carrying.contains("get /_changes 200"))
        #expect(OpenAPITests.at(document, "components", "headers", "StrataHistoryToken", "schema") != nil)

        // Without history: no feed, no header, no feed schemas.
        var access = OpenAPIAccess.anonymous
        access.history = false
        let plain = try Self.document(access)
        #expect(OpenAPITests.at(plain, "paths", "/_changes") == nil)
        #expect(OpenAPITests.at(plain, "components", "schemas", "Change") == nil)
        #expect(!plain.jsonText.contains("Strata-History-Token"))
    }

    @Test func bearerTokensAndHiddenEntitiesReachTheFeed() throws {
        let access = OpenAPIAccess(bearer: true, privateDocument: false, entities: ["SearchLog": .hidden])
        let document = try Self.document(access)
        let operation = try #require(OpenAPITests.at(document, "paths", "/_changes", "get"))
        let statuses = Set(operation.objectValue?["responses"]?.objectValue?.keys.map { $0 } ?? [])
        #expect(statuses.isSuperset(of: ["401", "403"]))
        #expect(
            operation.objectValue?["description"]?.stringValue?.hasSuffix("Needs a token with scope `read`.") == true)
        #expect(
            OpenAPITests.strings(
                OpenAPITests.at(document, "components", "schemas", "Change", "properties", "entity", "enum"))
                == ["Author", "Book", "Tag"])
        let entities = operation.objectValue?["parameters"]?.arrayValue?.first {
            $0.objectValue?["name"] == .string("entities")
        }
        #expect(OpenAPITests.at(entities ?? .null, "schema", "pattern")?.stringValue?.contains("SearchLog") == false)
    }

    @Test func anEntityNamedChangeKeepsTheFeedsNames() throws {
        let model = try ObjectModel.load(
            json: Array(
                #"{"name": "M", "entities": [{"name": "Change", "attributes": [{"name": "what", "type": "string"}]}]}"#
                    .utf8))
        let document = try Self.document(model: model)
        let schemas = OpenAPITests.at(document, "components", "schemas")?.objectValue ?? [:]
        #expect(schemas["Change"]?.objectValue?["required"] != nil && schemas["ChangeEntity"] != nil)
        let ids = OpenAPITests.operations(document).compactMap { $0.operation["operationId"]?.stringValue }
        #expect(Set(ids).count == ids.count && ids.contains("getChanges"))
    }

    @Test func theEntitiesPatternIsWhatTheServerTakes() throws {
        let fixture = try ServerFixture { $0.entityAccess = ["SearchLog": .hidden] }
        let document = try #require(
            JSONValue.parse(Array(try fixture.client.send("GET", "/openapi.json").body)).objectValue.map {
                JSONValue.object($0)
            })
        let parameter = OpenAPITests.at(document, "paths", "/_changes", "get", "parameters")?.arrayValue?.first {
            $0.objectValue?["name"] == .string("entities")
        }
        let pattern = try #require(OpenAPITests.at(parameter ?? .null, "schema", "pattern")?.stringValue)
        let expression = try NSRegularExpression(pattern: pattern)
        let samples = [
            "", ",", "Author", "Author,Book", ",Author,,Book,", "Tag,Tag", "Author Book", "Nope", "author",
            "SearchLog", "Author,SearchLog", "Author;Book", "Author,Nope", "Author,", "AuthorBook",
        ]
        for sample in samples {
            let matches =
                expression.firstMatch(in: sample, range: NSRange(sample.startIndex..., in: sample)) != nil
            let encoded = sample.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? sample
            let status = try fixture.client.send("GET", "/_changes?entities=\(encoded)").status
            #expect(status == (matches ? 200 : 400), "entities=\(sample): \(status), pattern says \(matches)")
        }
    }
}
