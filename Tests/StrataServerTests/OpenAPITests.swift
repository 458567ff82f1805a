import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// The OpenAPI document: the checked-in `openapi.yaml`, its structure, its YAML, and the served
/// copies.
struct OpenAPITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func example() throws -> JSONValue { OpenAPIGenerator.document(for: try ObjectModel.example) }

    /// Follows `path` (object keys) from `value`.
    static func at(_ value: JSONValue, _ path: String...) -> JSONValue? {
        var current: JSONValue? = value
        for key in path { current = current?.objectValue?[key] }
        return current
    }

    static func strings(_ value: JSONValue?) -> [String] { value?.arrayValue?.compactMap(\.stringValue) ?? [] }

    /// Every operation of the document: (path, method, operation).
    static func operations(_ document: JSONValue) -> [(path: String, method: String, operation: [String: JSONValue])] {
        var result: [(String, String, [String: JSONValue])] = []
        for (path, item) in at(document, "paths")?.objectValue ?? [:] {
            for (method, operation) in item.objectValue ?? [:] where method != "parameters" {
                result.append((path, method, operation.objectValue ?? [:]))
            }
        }
        return result.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
    }

    @Test func checkedInDocumentIsCurrent() throws {
        let file = Self.root.appendingPathComponent("openapi.yaml")
        let checkedIn = try String(contentsOf: file, encoding: .utf8)
        let generated = OpenAPIGenerator.yaml(for: try ObjectModel.example)
        #expect(
            checkedIn == generated,
            "openapi.yaml is out of date with the example model and the generator: run `swift run strata openapi > openapi.yaml`"
        )
    }

    @Test func outputIsDeterministicAndJSONMatchesYAMLSource() throws {
        let model = try ObjectModel.example
        #expect(OpenAPIGenerator.yaml(for: model) == OpenAPIGenerator.yaml(for: model))
        let json = OpenAPIGenerator.json(for: model)
        #expect(json == OpenAPIGenerator.json(for: model))
        #expect(try JSONValue.parse(json) == OpenAPIGenerator.document(for: model))
        // Paths keep the entities' declaration order, properties the attributes' order.
        let authors = try #require(json.range(of: #""/authors": {"#))
        let books = try #require(json.range(of: #""/books": {"#))
        #expect(authors.lowerBound < books.lowerBound)
        let book = json.range(of: #""Book": {"#)!
        let id = json.range(of: #""_id""#, range: book.upperBound..<json.endIndex)!
        let title = json.range(of: #""title""#, range: book.upperBound..<json.endIndex)!
        let year = json.range(of: #""year""#, range: book.upperBound..<json.endIndex)!
        #expect(id.lowerBound < title.lowerBound && title.lowerBound < year.lowerBound)
    }

    @Test func operationIDsAreUniqueAndReadable() throws {
        let document = try Self.example()
        let ids = Self.operations(document).compactMap { $0.operation["operationId"]?.stringValue }
        #expect(ids.count == Self.operations(document).count)
        #expect(Set(ids).count == ids.count)
        let expected: Set<String> = [
            "listBooks", "createBook", "getBook", "updateBook", "replaceBook", "deleteBook", "getBookAuthor",
            "listBookTags", "listBookSearches", "listAuthors", "createAuthor", "listAuthorBooks", "listTagBooks",
            "listSearchLogs", "createSearchLog", "getSearchLog", "batch", "getIndex", "getLive", "getReady",
            "getMetrics", "getOpenApiJson", "getOpenApiYaml",
        ]
        #expect(expected.isSubset(of: Set(ids)), "missing: \(expected.subtracting(ids).sorted())")
        for (path, method, operation) in Self.operations(document) {
            let id = operation["operationId"]?.stringValue ?? ""
            #expect(id.wholeMatch(of: /[a-z][A-Za-z0-9]*/) != nil, "\(method) \(path): \(id)")
        }
    }

    @Test func everyReferenceResolves() throws {
        let document = try Self.example()
        var references: [String] = []
        func walk(_ value: JSONValue) {
            switch value {
            case .object(let members):
                if let target = members["$ref"]?.stringValue { references.append(target) }
                members.values.forEach(walk)
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        walk(document)
        #expect(references.count > 100)
        for reference in Set(references) {
            #expect(reference.hasPrefix("#/components/"))
            let parts = reference.dropFirst(2).split(separator: "/").map(String.init)
            var current: JSONValue? = document
            for part in parts { current = current?.objectValue?[part] }
            #expect(current != nil, "\(reference) does not resolve")
        }
    }

    @Test func entitySchemas() throws {
        let document = try Self.example()
        let schemas = try #require(Self.at(document, "components", "schemas")?.objectValue)
        #expect(Self.at(document, "openapi") == .string("3.0.3"))

        let book = try #require(schemas["Book"])
        let properties = try #require(Self.at(book, "properties")?.objectValue)
        // Every property is always answered: all required.
        #expect(Set(Self.strings(Self.at(book, "required"))) == Set(properties.keys))
        #expect(properties.count == 2 + 14 + 2)
        #expect(Self.at(book, "properties", "_id", "format") == .string("int64"))
        #expect(Self.at(book, "properties", "year", "format") == .string("int32"))
        #expect(Self.at(book, "properties", "year", "nullable") == .bool(true))
        #expect(Self.at(book, "properties", "pages", "format") == .string("int32"))
        #expect(Self.at(book, "properties", "pages", "minimum") == .integer(-32768))
        #expect(Self.at(book, "properties", "pages", "maximum") == .integer(32767))
        #expect(Self.at(book, "properties", "wordCount", "format") == .string("int64"))
        #expect(Self.at(book, "properties", "rating", "format") == .string("double"))
        #expect(Self.at(book, "properties", "weight", "format") == .string("float"))
        #expect(Self.at(book, "properties", "price", "type") == .string("string"))
        #expect(Self.at(book, "properties", "price", "pattern") != nil)
        #expect(Self.at(book, "properties", "published", "format") == .string("date-time"))
        #expect(Self.at(book, "properties", "cover", "format") == .string("byte"))
        #expect(Self.at(book, "properties", "sku", "format") == .string("uuid"))
        #expect(Self.at(book, "properties", "homepage", "format") == .string("uri"))
        #expect(Self.at(book, "properties", "metadata", "type") == nil)
        // Required without a default: null only for rows stored before; with a default: never null.
        #expect(Self.at(book, "properties", "title", "nullable") == .bool(true))
        #expect(Self.at(book, "properties", "format", "nullable") == nil)
        #expect(Self.at(book, "properties", "available", "nullable") == nil)
        #expect(Self.at(book, "properties", "author", "type") == .string("integer"))
        #expect(Self.at(book, "properties", "author", "nullable") == .bool(true))
        #expect(Self.at(book, "properties", "tags", "type") == .string("array"))
        #expect(Self.at(book, "properties", "tags", "items", "type") == .string("integer"))

        let create = try #require(schemas["BookCreate"])
        #expect(Self.strings(Self.at(create, "required")) == ["title"])
        #expect(Self.at(create, "additionalProperties") == .bool(false))
        #expect(Self.at(create, "properties", "_id") == nil)
        #expect(Self.at(create, "properties", "title", "minLength") == .integer(1))
        #expect(Self.at(create, "properties", "title", "maxLength") == .integer(500))
        #expect(Self.at(create, "properties", "title", "nullable") == nil)
        #expect(Self.at(create, "properties", "year", "minimum") == .integer(0))
        #expect(Self.at(create, "properties", "year", "maximum") == .integer(3000))
        #expect(Self.at(create, "properties", "pages", "minimum") == .integer(1))
        #expect(Self.at(create, "properties", "pages", "maximum") == .integer(32767))
        #expect(Self.at(create, "properties", "format", "default") == .string("paperback"))
        #expect(Self.at(create, "properties", "available", "default") == .bool(true))
        #expect(Self.at(create, "properties", "rating", "maximum") == .integer(5))
        #expect(Self.at(create, "properties", "price", "anyOf") != nil)
        #expect(Self.strings(Self.at(schemas["AuthorCreate"]!, "required")) == ["name"])
        // The model's `[^@\s]+@[^@\s]+` with ICU's `\s` spelled out.
        let space = OpenAPIBuilder.icuWhiteSpace
        #expect(
            Self.at(schemas["AuthorCreate"]!, "properties", "email", "pattern")
                == .string("^(?:[^@\(space)]+@[^@\(space)]+)$"))

        let patch = try #require(schemas["BookPatch"])
        #expect(Self.at(patch, "required") == nil)
        #expect(Self.at(patch, "properties", "format", "default") == nil)

        let list = try #require(schemas["BookList"])
        #expect(Self.strings(Self.at(list, "required")) == ["items", "next", "total"])
        // Objects, or with `select` the groups.
        #expect(
            Self.at(list, "properties", "items", "items", "anyOf")
                == .array([
                    .object(["$ref": .string("#/components/schemas/Book")]),
                    .object(["$ref": .string("#/components/schemas/BookGroup")]),
                ]))
        #expect(Self.at(list, "properties", "next", "nullable") == .bool(true))
        #expect(Self.at(list, "properties", "total", "nullable") == .bool(true))

        let problem = try #require(schemas["Problem"])
        #expect(Self.strings(Self.at(problem, "required")) == ["type", "title", "status", "detail"])
        for member in ["errors", "operation", "index", "currentVersion"] {
            #expect(Self.at(problem, "properties", member) != nil)
        }
        #expect(Self.strings(Self.at(schemas["FieldError"]!, "required")) == ["field", "code", "message"])
    }

    @Test func operationsDocumentWhatTheServerAnswers() throws {
        let document = try Self.example()
        func statuses(_ path: String, _ method: String) -> Set<String> {
            Set(Self.at(document, "paths", path, method, "responses")?.objectValue?.keys.map { $0 } ?? [])
        }
        #expect(statuses("/books", "get") == ["200", "400", "503"])
        #expect(statuses("/books", "post") == ["201", "400", "409", "413", "415", "422", "503"])
        #expect(statuses("/books/{id}", "get") == ["200", "304", "400", "404", "503"])
        #expect(statuses("/books/{id}", "patch") == ["200", "400", "404", "409", "412", "413", "415", "422", "503"])
        #expect(statuses("/books/{id}", "put") == statuses("/books/{id}", "patch"))
        #expect(statuses("/books/{id}", "delete") == ["204", "400", "404", "409", "412", "422", "503"])
        #expect(statuses("/books/{id}/author", "get") == ["200", "204", "400", "404", "503"])
        #expect(statuses("/authors/{id}/books", "get") == ["200", "400", "404", "503"])
        #expect(statuses("/books/{id}/searches", "get") == ["200", "400", "404", "503"])
        #expect(statuses("/_batch", "post") == ["200", "400", "404", "405", "409", "412", "413", "415", "422", "503"])
        #expect(statuses("/live", "get") == ["200"])
        #expect(statuses("/ready", "get") == ["200", "503"])
        #expect(Self.at(document, "paths", "/metrics", "get", "responses", "200", "content", "text/plain") != nil)

        // Every error response is a problem.
        let responses = try #require(Self.at(document, "components", "responses")?.objectValue)
        for (name, response) in responses where name != "NotModified" {
            #expect(
                Self.at(response, "content", "application/problem+json", "schema", "$ref")
                    == .string("#/components/schemas/Problem"))
        }
        for (path, method, operation) in Self.operations(document) {
            for (status, response) in operation["responses"]?.objectValue ?? [:]
            where status.hasPrefix("4") || status.hasPrefix("5") {
                #expect(
                    response.objectValue?["$ref"]?.stringValue?.hasPrefix("#/components/responses/") == true,
                    "\(method) \(path) \(status)")
            }
        }

        // Headers.
        #expect(Self.at(document, "paths", "/books/{id}", "get", "responses", "200", "headers", "ETag") != nil)
        #expect(Self.at(document, "paths", "/books", "post", "responses", "201", "headers", "Location") != nil)
        #expect(Self.at(document, "components", "responses", "NotModified", "headers", "ETag") != nil)
        let ifMatch = Self.at(document, "components", "parameters", "IfMatch")
        #expect(Self.at(ifMatch ?? .null, "name") == .string("If-Match"))
        #expect(Self.at(document, "components", "parameters", "IfNoneMatch", "in") == .string("header"))

        // Create takes one object and answers with it; _bulk takes and answers an array. No oneOf of
        // the two: generated TypeScript clients declared the type twice and did not compile.
        #expect(
            Self.at(document, "paths", "/books", "post", "requestBody", "content", "application/json", "schema")
                == .object(["$ref": .string("#/components/schemas/BookCreate")]))
        #expect(
            Self.at(document, "paths", "/books", "post", "responses", "201", "content", "application/json", "schema")
                == .object(["$ref": .string("#/components/schemas/Book")]))
        let bulk = Self.at(
            document, "paths", "/books/_bulk", "post", "requestBody", "content", "application/json", "schema")
        #expect(Self.at(bulk ?? .null, "type") == .string("array"))
        #expect(Self.at(bulk ?? .null, "items", "$ref") == .string("#/components/schemas/BookCreate"))
        #expect(!document.jsonText.contains("oneOf"))
        // Links from a created object to its item operations, by JSON pointer into the paths.
        let links = Self.at(document, "paths", "/books", "post", "responses", "201", "links")
        #expect(Self.at(links ?? .null, "Update", "operationRef") == .string("#/paths/~1books~1{id}/patch"))
        #expect(Self.at(links ?? .null, "Update", "parameters", "If-Match") == .string("$response.header.ETag"))
        #expect(Self.at(links ?? .null, "Author", "operationRef") == .string("#/paths/~1books~1{id}~1author/get"))
        for link in links?.objectValue?.values.compactMap({ $0.objectValue?["operationRef"]?.stringValue }) ?? [] {
            let parts = link.dropFirst(2).split(separator: "/").map {
                $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            }
            var target: JSONValue? = document
            for part in parts { target = target?.objectValue?[part] }
            #expect(target != nil, "\(link)")
        }
        // PATCH takes JSON and JSON Merge Patch.
        let patchTypes = Self.at(document, "paths", "/books/{id}", "patch", "requestBody", "content")?.objectValue?.keys
            .sorted()
        #expect(patchTypes == ["application/json", "application/merge-patch+json"])
    }

    @Test func listParameters() throws {
        let document = try Self.example()
        var parameters: [String: JSONValue] = [:]
        for parameter in Self.at(document, "paths", "/books", "get", "parameters")?.arrayValue ?? [] {
            var resolved = parameter
            if let target = parameter.objectValue?["$ref"]?.stringValue {
                resolved =
                    Self.at(document, "components", "parameters", String(target.split(separator: "/").last!)) ?? .null
            }
            parameters[Self.at(resolved, "name")?.stringValue ?? ""] = resolved
        }
        let filters = [
            "title", "year", "pages", "wordCount", "format", "price", "rating", "weight", "available", "published",
            "cover", "sku", "homepage", "metadata", "author",
        ]
        for name in filters + ["order", "where", "limit", "after", "offset", "count"] {
            #expect(parameters[name] != nil, "no \(name) parameter")
        }
        #expect(parameters["tags"] == nil)
        #expect(Self.at(parameters["limit"]!, "schema", "minimum") == .integer(1))
        #expect(Self.at(parameters["limit"]!, "schema", "maximum") == .integer(1000))
        #expect(Self.at(parameters["limit"]!, "schema", "default") == .integer(50))
        #expect(Self.at(parameters["count"]!, "schema", "enum") == .array([.string("exact")]))
        // Filter patterns accept what the server accepts.
        let yearPattern = try #require(Self.at(parameters["year"]!, "schema", "pattern")?.stringValue)
        let year = try Regex(yearPattern)
        for accepted in ["gt.1968", "not.eq.3", "in.(1,2)", "is.null", "not.is.null", "lte.-4"] {
            #expect(accepted.firstMatch(of: year) != nil, "\(accepted)")
        }
        for refused in ["1968", "like.x", "is.maybe", "in.1,2", "gt1968"] {
            #expect(refused.firstMatch(of: year) == nil, "\(refused)")
        }
        let order = try Regex(try #require(Self.at(parameters["order"]!, "schema", "pattern")?.stringValue))
        #expect("year.desc,title".wholeMatch(of: order) != nil)
        #expect("author".wholeMatch(of: order) == nil)
        // As many keys as the server takes (`RequestLimits.orderKeys`), not one more.
        let keys = Array(repeating: "title", count: RequestLimits().orderKeys)
        #expect(keys.joined(separator: ",").wholeMatch(of: order) != nil)
        #expect((keys + ["year"]).joined(separator: ",").wholeMatch(of: order) == nil)
        let tags = try Regex(
            try #require(Self.at(document, "components", "parameters", "IfMatch", "schema", "pattern")?.stringValue))
        for accepted in [#""3""#, #"W/"3""#, "*", #""1", "2""#, #" "1",,"2" "#, "3", #"3, "4""#] {
            #expect(accepted.firstMatch(of: tags) != nil, "\(accepted)")
        }
        for refused in ["W/3", #""a""#, #""1", ,"2""#, "", "*,*"] {
            #expect(refused.firstMatch(of: tags) == nil, "\(refused)")
        }
    }

    @Test func documentationComesFromTheModel() throws {
        let model = try ObjectModel.load(
            json: Array(
                #"""
                {"name": "Shop", "version": "2",
                 "entities": [
                   {"name": "Problem", "description": "A reported problem.",
                    "attributes": [{"name": "text", "type": "string", "optional": false, "description": "What went wrong."}],
                    "relationships": [{"name": "product", "destination": "Product", "inverse": "problems",
                                       "description": "The product it is about."}]},
                   {"name": "Product", "resource": "catalogue",
                    "attributes": [{"name": "label", "type": "string"}, {"name": "where", "type": "string"}],
                    "relationships": [{"name": "problems", "destination": "Problem", "toMany": true, "inverse": "product",
                                       "minCount": 1, "optional": false}],
                    "fetchedProperties": [{"name": "similar", "entity": "Product", "predicate": "label == $FETCH_SOURCE.label",
                                           "description": "Products with the same label."}]}
                 ]}
                """#.utf8), file: "shop.json")
        let document = OpenAPIGenerator.document(for: model)
        let schemas = try #require(Self.at(document, "components", "schemas")?.objectValue)
        // The entity named like the shared Problem schema gets names of its own.
        #expect(Self.strings(Self.at(schemas["Problem"]!, "required")) == ["type", "title", "status", "detail"])
        let entity = try #require(schemas["ProblemEntity"])
        #expect(Self.at(entity, "description")?.stringValue?.hasPrefix("A reported problem.") == true)
        #expect(Self.at(entity, "properties", "text", "description") == .string("What went wrong."))
        #expect(
            Self.at(entity, "properties", "product", "description")?.stringValue?.hasPrefix("The product it is about.")
                == true)
        #expect(schemas["ProblemEntityCreate"] != nil && schemas["ProblemEntityList"] != nil)
        #expect(Self.strings(Self.at(schemas["ProductCreate"]!, "required")) == ["problems"])
        #expect(Self.at(schemas["ProductCreate"]!, "properties", "problems", "minItems") == .integer(1))
        #expect(Self.at(document, "info", "title") == .string("Shop API"))
        #expect(Self.at(document, "info", "version") == .string("2"))
        #expect(
            Self.at(document, "tags")?.arrayValue?.first.flatMap { Self.at($0, "description") }
                == .string("A reported problem."))
        // A custom resource path, its operation ids, and the fetched property's documentation.
        let similar = try #require(Self.at(document, "paths", "/catalogue/{id}/similar", "get"))
        #expect(Self.at(similar, "operationId") == .string("listProductSimilar"))
        #expect(Self.at(similar, "description")?.stringValue?.contains("Products with the same label.") == true)
        #expect(Self.at(document, "paths", "/catalogue", "get", "operationId") == .string("listCatalogue"))
        // An attribute named like a reserved query parameter gets no filter.
        let names = (Self.at(document, "paths", "/catalogue", "get", "parameters")?.arrayValue ?? []).compactMap {
            Self.at($0, "name")?.stringValue
        }
        #expect(names.filter { $0 == "where" }.count == 1)
        let ids = Self.operations(document).compactMap { $0.operation["operationId"]?.stringValue }
        #expect(Set(ids).count == ids.count)
    }

    @Test func yamlScalarsAreQuotedWhenTheyMustBe() {
        for plain in ["List Book objects", "/books", "application/json", "int64", "_batch", "a-b (c), d."] {
            #expect(OpenAPIYAML.scalar(plain) == plain)
        }
        let quoted: [(String, String)] = [
            ("", #""""#), ("true", #""true""#), ("No", #""No""#), ("null", #""null""#), ("y", #""y""#),
            ("3.0.3", #""3.0.3""#),
            ("200", #""200""#), ("a: b", #""a: b""#), ("x #y", #""x #y""#), ("-", #""-""#), ("*", #""*""#),
            ("$ref", #""$ref""#), ("say \"hi\"", #""say \"hi\"""#), ("back\\slash", #""back\\slash""#),
            ("two\nlines", #""two\nlines""#), ("tab\there", #""tab\there""#), ("trailing ", #""trailing ""#),
            ("line\u{2028}separator", #""line\u2028separator""#), ("bell\u{07}", #""bell\u0007""#),
            ("next\u{85}line", #""next\u0085line""#), ("é", #""é""#),
        ]
        for (text, expected) in quoted {
            #expect(OpenAPIYAML.scalar(text) == expected, "\(text.debugDescription)")
        }
        let node: OpenAPINode = [
            "a": [
                "b": [1, "two", ["c": true, "d": [:]], []], "e": .double(0.5), "f": .double(2), "g": .double(1e-7),
            ],
            "h": .null,
        ]
        #expect(
            OpenAPIYAML.text(node) == """
                a:
                  b:
                    - 1
                    - two
                    - c: true
                      d: {}
                    - []
                  e: 0.5
                  f: 2
                  g: 1.0e-07
                h: null

                """)
    }

    @Test func theServerServesTheDocument() throws {
        let fixture = try ServerFixture()
        let json = try fixture.client.send("GET", "/openapi.json")
        #expect(json.status == 200)
        #expect(json.header("content-type") == "application/json")
        #expect(json.text == OpenAPIGenerator.json(for: try ObjectModel.example))
        let yaml = try fixture.client.send("GET", "/openapi.yaml")
        #expect(yaml.status == 200)
        #expect(yaml.header("content-type") == "application/yaml")
        #expect(yaml.text == OpenAPIGenerator.yaml(for: try ObjectModel.example))
    }

    @Test func theCommandPrintsTheDocument() throws {
        let binary = try strataBinary()
        func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
            let process = Process()
            process.executableURL = binary
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        let model = try ObjectModel.example
        let yaml = try run(["openapi"])
        #expect(yaml.status == 0)
        #expect(yaml.output == OpenAPIGenerator.yaml(for: model))
        let json = try run(["openapi", "--format", "json"])
        #expect(json.status == 0)
        #expect(json.output == OpenAPIGenerator.json(for: model))
        let modelFile = Self.root.appendingPathComponent("Examples/Library.json").path
        #expect(
            try run(["openapi", "--model", modelFile, "--format=yaml"]).output == OpenAPIGenerator.yaml(for: model))
        #expect(try run(["openapi", "--format", "xml"]).status == 64)
        #expect(try run(["openapi", "--bogus"]).status == 64)
    }
}
