import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// Loads a model from JSON text, failing the test on error.
func model(_ json: String) throws -> ObjectModel { try ObjectModel.load(json: Array(json.utf8)) }

/// The issues a model's JSON produces (empty when it loads).
func issues(_ json: String) -> [ModelIssue] {
    do {
        _ = try ObjectModel.load(json: Array(json.utf8))
        return []
    } catch {
        return error.issues
    }
}

/// A model with two entities related by `author`/`books`, with room for changes.
func pairModel(
    bookExtra: String = "",
    authorRelationship: String = #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "author"}"#,
    configurations: String = "[]"
) -> String {
    """
    {"name": "M", "entities": [
      {"name": "Author", "attributes": [{"name": "name", "type": "string"}], "relationships": [\(authorRelationship)]},
      {"name": "Book", "attributes": [{"name": "title", "type": "string"}\(bookExtra)],
       "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]}
    ], "configurations": \(configurations)}
    """
}

@Suite struct ModelLoadingTests {
    @Test func exampleModelHasEveryPart() throws {
        let example = try ObjectModel.example
        #expect(example.name == "Library")
        #expect(example.version == "1")
        #expect(example.entityNames == ["Author", "Book", "Tag", "SearchLog"])
        #expect(example.configurations.map(\.name) == ["Catalog", "Activity"])
        #expect(example.entityNames(inConfiguration: "Catalog") == ["Author", "Book", "Tag"])
        #expect(example.entityNames(inConfiguration: nil)?.count == 4)
        #expect(example.entityNames(inConfiguration: "Default")?.count == 4)
        #expect(example.entityNames(inConfiguration: "Nope") == nil)
        let book = try #require(example.entity(named: "Book"))
        #expect(book.uniqueness == [["title", "author"]])
        #expect(book.indexes == [IndexDescription(name: "Book_year", properties: ["year"])])
        #expect(book.fetchedProperties.first?.predicate == "query CONTAINS[c] $FETCH_SOURCE.title")
        let title = try #require(example.attribute("title", of: "Book"))
        #expect(title.isOptional == false && title.maxLength == 500 && title.minLength == 1)
        #expect(example.attribute("format", of: "Book")?.defaultValue == .string("paperback"))
        #expect(example.attribute("year", of: "Book")?.maxValue == .integer(3000))
        #expect(example.attribute("email", of: "Author")?.regex == "[^@\\s]+@[^@\\s]+")
        let books = try #require(example.relationship("books", of: "Author"))
        #expect(books.isToMany && books.deleteRule == .cascade && books.inverse == "author")
        #expect(Set(example.entity(named: "Book")!.attributes.map(\.type)) == Set(AttributeType.allCases))
    }

    @Test func examplesFolderMatchesTheEmbeddedModel() throws {
        let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Examples/Library.json")
        let text = try String(contentsOf: examples, encoding: .utf8)
        #expect(text == ObjectModel.exampleJSON)
        #expect(try ObjectModel.load(contentsOf: examples) == ObjectModel.example)
    }

    @Test func resourcePathsArePluralKebabCase() throws {
        #expect(ObjectModel.derivedResourcePath("Book") == "books")
        #expect(ObjectModel.derivedResourcePath("SearchLog") == "search-logs")
        #expect(ObjectModel.derivedResourcePath("Category") == "categories")
        #expect(ObjectModel.derivedResourcePath("Box") == "boxes")
        #expect(ObjectModel.derivedResourcePath("Day") == "days")
        #expect(ObjectModel.derivedResourcePath("HTTPLog") == "http-logs")
        // Names that are plural already keep their plural; singular ones ending in s take "es".
        #expect(ObjectModel.derivedResourcePath("SubscriptionAlerts") == "subscription-alerts")
        #expect(ObjectModel.derivedResourcePath("Settings") == "settings")
        #expect(ObjectModel.derivedResourcePath("Messages") == "messages")
        #expect(ObjectModel.derivedResourcePath("RecentDays") == "recent-days")
        #expect(ObjectModel.derivedResourcePath("Photos") == "photos")
        #expect(ObjectModel.derivedResourcePath("Status") == "statuses")
        #expect(ObjectModel.derivedResourcePath("Class") == "classes")
        #expect(ObjectModel.derivedResourcePath("Canvas") == "canvases")
        #expect(ObjectModel.derivedResourcePath("Bus") == "buses")
        let custom = try model(
            pairModel().replacingOccurrences(of: #""name": "Book","#, with: #""name": "Book", "resource": "volumes","#))
        #expect(custom.resourcePath(of: "Book") == "volumes")
        #expect(custom.resourcePath(of: "Author") == "authors")
    }

    @Test func inheritanceGathersParentProperties() throws {
        let m = try model(
            """
            {"entities": [
              {"name": "Item", "abstract": true, "attributes": [{"name": "title", "type": "string"}]},
              {"name": "Note", "parent": "Item", "attributes": [{"name": "body", "type": "string"}]},
              {"name": "Memo", "parent": "Note", "attributes": [{"name": "to", "type": "string"}]}
            ]}
            """)
        #expect(m.attributes(of: "Memo").map(\.name) == ["title", "body", "to"])
        #expect(m.rootEntity(of: "Memo") == "Item")
        #expect(m.entityAndSubentities(of: "Item") == ["Item", "Note", "Memo"])
        #expect(m.entity(named: "Item")?.isAbstract == true)
        #expect(m.entity("Memo", isKindOf: "Item"))
        #expect(!m.entity("Item", isKindOf: "Memo"))
    }

    @Test func severalModelFilesMergeIntoOne() throws {
        let folder = TemporaryDirectory()
        let catalog = folder.file("catalog.json")
        let activity = folder.file("activity.json")
        try Data(pairModel(configurations: #"[{"name": "Catalog", "entities": ["Author", "Book"]}]"#).utf8).write(
            to: catalog)
        try Data(
            #"""
            {"name": "Logs", "entities": [{"name": "SearchLog", "attributes": [{"name": "query", "type": "string"}]}],
             "configurations": [{"name": "Activity", "entities": ["SearchLog"]}, {"name": "Catalog", "entities": []}]}
            """#.utf8
        ).write(to: activity)
        let merged = try ObjectModel.load(contentsOf: [catalog, activity])
        #expect(merged.entityNames == ["Author", "Book", "SearchLog"])
        #expect(merged.configurations.map(\.name) == ["Catalog", "Activity"])
        #expect(merged.entityNames(inConfiguration: "Catalog") == ["Author", "Book"])
        // The same entity in two files is an error.
        #expect(throws: ModelError.self) { try ObjectModel.load(contentsOf: [catalog, catalog]) }
        do {
            _ = try ObjectModel.load(contentsOf: [catalog, catalog])
        } catch {
            #expect(error.issues.contains { $0.code == .duplicateName && $0.entity == "Author" })
        }
    }

    @Test func unreadableAndMalformedFilesSayWhich() throws {
        let folder = TemporaryDirectory()
        do {
            _ = try ObjectModel.load(contentsOf: folder.file("missing.json"))
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.kind == .unreadable)
            #expect(error.file?.hasSuffix("missing.json") == true)
        }
        try Data("{\"entities\": [".utf8).write(to: folder.file("bad.json"))
        do {
            _ = try ObjectModel.load(contentsOf: folder.file("bad.json"))
            Issue.record("loaded malformed JSON")
        } catch {
            #expect(error.kind == .malformed)
            #expect(error.description.contains("bad.json"))
        }
    }
}

@Suite struct ModelValidationTests {
    /// Expects exactly one issue with `code` at `entity`.`property`, and returns its message.
    @discardableResult
    func expectIssue(
        _ json: String, _ code: ModelIssue.Code, entity: String?, property: String?,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> String {
        let found = issues(json)
        let match = found.first { $0.code == code && $0.entity == entity && $0.property == property }
        #expect(
            match != nil, "expected \(code) at \(entity ?? "-").\(property ?? "-"), got \(found)",
            sourceLocation: sourceLocation)
        return match?.message ?? ""
    }

    @Test func unknownType() {
        let message = expectIssue(
            pairModel(bookExtra: #", {"name": "pages", "type": "int"}"#), .unknownType, entity: "Book",
            property: "pages")
        #expect(message.contains("'int'"))
    }

    @Test func missingInverse() throws {
        // Core Data allows a relationship without an inverse with a warning: so does the model.
        let oneSided = try ObjectModel.load(
            json: Array(
                pairModel(authorRelationship: #"{"name": "books", "destination": "Book", "toMany": true}"#)
                    .replacingOccurrences(of: #", "inverse": "books"}"#, with: "}").utf8))
        #expect(
            oneSided.warnings.contains { $0.code == .missingInverse && $0.entity == "Author" && $0.property == "books" }
        )
        // An inverse that names nothing is still an error.
        expectIssue(
            pairModel(
                authorRelationship: #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "writer"}"#),
            .missingInverse, entity: "Author", property: "books")
    }

    @Test func anInverseThatDoesNotPointBackIsAWarningAndEachSideKeepsItsOwn() throws {
        let json = pairModel(
            bookExtra: "",
            authorRelationship:
                #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "author"}, {"name": "favourite", "destination": "Book", "inverse": "author"}"#
        )
        let model = try ObjectModel.load(json: Array(json.utf8))
        #expect(
            model.warnings.contains {
                $0.code == .mismatchedInverse && $0.entity == "Author" && $0.property == "favourite"
            })
        #expect(model.inverse(of: "favourite", of: "Author") == nil)
        #expect(model.inverse(of: "books", of: "Author")?.name == "author")
        let coordinator = StoreCoordinator(model: model)
        let folder = TemporaryDirectory()
        try coordinator.addStore(type: .sqlite, url: folder.file("pair.sqlite"))
        let context = ObjectContext(coordinator: coordinator)
        let author = try context.insert("Author", values: ["name": .string("A")])
        let book = try context.insert("Book", values: ["title": .string("B")])
        try author.setObject(book, forKey: "favourite")
        #expect(try book.object(forKey: "author") == nil)
        try book.setObject(author, forKey: "author")
        try context.save()
        let fresh = ObjectContext(coordinator: coordinator)
        let stored = try fresh.object(with: author.objectID)
        #expect(try stored.object(forKey: "favourite")?.objectID == book.objectID)
        #expect(try stored.objectIDs(forKey: "books") == [book.objectID])
        // Deleting the book lets go of it on both.
        try fresh.delete(try fresh.object(with: book.objectID))
        try fresh.save()
        let after = ObjectContext(coordinator: coordinator)
        #expect(try after.object(with: author.objectID).object(forKey: "favourite") == nil)
    }

    @Test func relationshipAcrossConfigurationsSaysUseAFetchedProperty() {
        let json = pairModel(
            configurations: #"[{"name": "A", "entities": ["Author"]}, {"name": "B", "entities": ["Book"]}]"#)
        let message = expectIssue(json, .crossConfigurationRelationship, entity: "Book", property: "author")
        #expect(message.contains("fetched property"))
    }

    @Test func duplicateNames() {
        expectIssue(
            pairModel(bookExtra: #", {"name": "title", "type": "integer32"}"#), .duplicateName, entity: "Book",
            property: "title")
        let twice = #"{"entities": [{"name": "A"}, {"name": "A"}]}"#
        expectIssue(twice, .duplicateName, entity: "A", property: nil)
        let configurations = pairModel(
            configurations: #"[{"name": "C", "entities": ["Author", "Book"]}, {"name": "C", "entities": []}]"#)
        expectIssue(configurations, .duplicateName, entity: nil, property: "C")
        let inherited = #"""
            {"entities": [{"name": "P", "attributes": [{"name": "x", "type": "string"}]},
                          {"name": "Q", "parent": "P", "attributes": [{"name": "x", "type": "string"}]}]}
            """#
        #expect(expectIssue(inherited, .duplicateName, entity: "Q", property: "x").contains("'P'"))
    }

    /// A subentity's objects live in its root's table: a configuration that holds one without
    /// the other is refused with what to add where.
    @Test func aSubentityAndItsParentInDifferentConfigurationsSayWhatToAdd() {
        let json = #"""
            {"entities": [{"name": "Item", "attributes": [{"name": "title", "type": "string"}]},
                          {"name": "Special", "parent": "Item", "attributes": [{"name": "level", "type": "integer32"}]}],
             "configurations": [{"name": "A", "entities": ["Item"]}, {"name": "B", "entities": ["Special"]}]}
            """#
        let message = expectIssue(json, .inheritanceConfiguration, entity: "Special", property: nil)
        #expect(message.contains("add 'Item' to 'B'") && message.contains("add 'Special' to 'A'"), "\(message)")
        let fixed = json.replacingOccurrences(of: #"["Special"]"#, with: #"["Item", "Special"]"#)
            .replacingOccurrences(of: #"{"name": "A", "entities": ["Item"]}, "#, with: "")
        #expect(issues(fixed).isEmpty, "\(issues(fixed))")
    }

    @Test func configurationNamingAnUnknownEntity() {
        let json = pairModel(configurations: #"[{"name": "Catalog", "entities": ["Author", "Book", "Shelf"]}]"#)
        expectIssue(json, .unknownConfigurationEntity, entity: "Shelf", property: "Catalog")
    }

    @Test func minGreaterThanMax() {
        expectIssue(
            pairModel(bookExtra: #", {"name": "year", "type": "integer32", "min": 10, "max": 5}"#), .minGreaterThanMax,
            entity: "Book", property: "year")
        expectIssue(
            pairModel(bookExtra: #", {"name": "code", "type": "string", "minLength": 10, "maxLength": 5}"#),
            .minGreaterThanMax, entity: "Book", property: "code")
        expectIssue(
            pairModel(
                authorRelationship:
                    #"{"name": "books", "destination": "Book", "toMany": true, "inverse": "author", "minCount": 3, "maxCount": 1}"#
            ),
            .minGreaterThanMax, entity: "Author", property: "books")
        expectIssue(
            pairModel(
                bookExtra:
                    #", {"name": "at", "type": "date", "min": "2020-01-01T00:00:00Z", "max": "2019-01-01T00:00:00Z"}"#),
            .minGreaterThanMax, entity: "Book", property: "at")
        // Bounds that one Double cannot tell apart are ordered exactly.
        expectIssue(
            pairModel(
                bookExtra:
                    #", {"name": "price", "type": "decimal", "min": "0.30000000000000000001", "max": "0.3"}"#),
            .minGreaterThanMax, entity: "Book", property: "price")
        let serial = #", {"name": "serial", "type": "integer64", "min": 9007199254740993, "#
        expectIssue(
            pairModel(bookExtra: serial + #""max": 9007199254740992}"#), .minGreaterThanMax, entity: "Book",
            property: "serial")
        let close = pairModel(
            bookExtra: #", {"name": "price", "type": "decimal", "min": "0.3", "max": "0.30000000000000000001"}"#)
        #expect(!issues(close).contains { $0.code == .minGreaterThanMax }, "\(issues(close))")
    }

    @Test func invalidRegex() {
        expectIssue(
            pairModel(bookExtra: #", {"name": "isbn", "type": "string", "regex": "([0-9"}"#), .invalidRegex,
            entity: "Book", property: "isbn")
    }

    @Test func resourcePathCollisions() {
        let system = pairModel().replacingOccurrences(
            of: #""name": "Book","#, with: #""name": "Book", "resource": "metrics","#)
        #expect(expectIssue(system, .resourceCollision, entity: "Book", property: nil).contains("/metrics"))
        let batch = pairModel().replacingOccurrences(
            of: #""name": "Book","#, with: #""name": "Book", "resource": "_batch","#)
        expectIssue(batch, .resourceCollision, entity: "Book", property: nil)
        let twice = pairModel().replacingOccurrences(
            of: #""name": "Book","#, with: #""name": "Book", "resource": "authors","#)
        #expect(expectIssue(twice, .resourceCollision, entity: "Book", property: nil).contains("Author"))
        // A derived path that is the server's own moves aside, with a warning (Core Data models
        // are not refused for an entity name).
        let metric = try! ObjectModel.load(
            json: Array(
                #"{"name": "M", "entities": [{"name": "Metric", "attributes": [{"name": "n", "type": "integer32"}]}, {"name": "Doc"}]}"#
                    .utf8))
        #expect(metric.resourcePath(of: "Metric") == "metric")
        #expect(metric.resourcePath(of: "Doc") == "doc")
        #expect(metric.warnings.filter { $0.code == .resourceCollision }.count == 2)
        let slash = pairModel().replacingOccurrences(
            of: #""name": "Book","#, with: #""name": "Book", "resource": "a/b","#)
        expectIssue(slash, .invalidName, entity: "Book", property: nil)
    }

    @Test func otherRules() {
        // Real Core Data models name attributes `id` and `version`: they load as they are; a leading
        // `_` (which the server's own `_id`/`_version` use) is not a property name.
        #expect(
            issues(
                pairModel(bookExtra: #", {"name": "id", "type": "string"}, {"name": "version", "type": "integer32"}"#)
            ).isEmpty)
        expectIssue(
            pairModel(bookExtra: #", {"name": "_id", "type": "string"}"#), .invalidName, entity: "Book", property: "_id"
        )
        expectIssue(
            pairModel(bookExtra: #", {"name": "bad name", "type": "string"}"#), .invalidName, entity: "Book",
            property: "bad name")
        expectIssue(
            pairModel(bookExtra: #", {"name": "n", "type": "integer16", "default": 70000}"#), .invalidDefault,
            entity: "Book", property: "n")
        expectIssue(
            pairModel(bookExtra: #", {"name": "n", "type": "string", "optinal": true}"#), .unknownKey, entity: "Book",
            property: "n")
        expectIssue(#"{"entities": [{"name": "A", "parent": "Z"}]}"#, .unknownEntity, entity: "A", property: nil)
        expectIssue(
            #"{"entities": [{"name": "A", "parent": "B"}, {"name": "B", "parent": "A"}]}"#, .inheritanceCycle,
            entity: "A", property: nil)
        expectIssue(
            #"{"entities": [{"name": "A", "uniqueness": [["nope"]]}]}"#, .unknownProperty, entity: "A", property: "nope"
        )
        expectIssue(
            #"{"entities": [{"name": "A", "relationships": [{"name": "b", "destination": "B", "inverse": "a"}]}]}"#,
            .unknownEntity,
            entity: "A", property: "b")
        expectIssue(
            pairModel(configurations: #"[{"name": "Default", "entities": ["Author", "Book"]}]"#), .reservedName,
            entity: nil,
            property: "Default")
    }

    @Test func everyProblemIsReportedAtOnce() {
        let json = pairModel(
            bookExtra:
                #", {"name": "year", "type": "integer32", "min": 10, "max": 5}, {"name": "isbn", "type": "string", "regex": "("}"#,
            configurations: #"[{"name": "C", "entities": ["Author", "Book", "Ghost"]}]"#)
        let found = Set(issues(json).map(\.code))
        #expect(found == [.minGreaterThanMax, .invalidRegex, .unknownConfigurationEntity])
    }
}

@Suite struct VersionHashTests {
    @Test func hashIsStableAndIgnoresCosmeticChanges() throws {
        let a = try model(pairModel(bookExtra: #", {"name": "year", "type": "integer32"}"#))
        let b = try model(
            """
            {"name": "Renamed", "entities": [
              {"name": "Book", "description": "Books.", "attributes": [{"name": "year", "type": "integer32", "min": 0, "default": 1}, {"name": "title", "type": "string", "description": "T"}],
               "relationships": [{"name": "author", "destination": "Author", "inverse": "books"}]},
              {"name": "Author", "attributes": [{"name": "name", "type": "string", "maxLength": 9}], "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "author"}]}
            ]}
            """)
        #expect(a.versionHash == b.versionHash)
        #expect(a.entityVersionHashes == b.entityVersionHashes)
        #expect(a.versionHash.count == 64)
        // Known value: any change to the hashing is a change to every store's metadata.
        let again = try model(pairModel(bookExtra: #", {"name": "year", "type": "integer32"}"#))
        #expect(again.versionHash == a.versionHash)
    }

    @Test func storedPropertyChangesChangeTheHash() throws {
        let base = try model(pairModel(bookExtra: #", {"name": "year", "type": "integer32"}"#))
        let variants = [
            pairModel(bookExtra: #", {"name": "year", "type": "integer64"}"#),
            pairModel(bookExtra: #", {"name": "year", "type": "integer32", "optional": false}"#),
            pairModel(bookExtra: #", {"name": "published", "type": "integer32"}"#),
            pairModel(bookExtra: ""),
            pairModel(bookExtra: #", {"name": "year", "type": "integer32"}, {"name": "isbn", "type": "string"}"#),
        ]
        for variant in variants {
            let changed = try model(variant)
            #expect(changed.versionHash != base.versionHash)
            #expect(changed.versionHash(of: "Book") != base.versionHash(of: "Book"))
            #expect(changed.versionHash(of: "Author") == base.versionHash(of: "Author"))
        }
        let relationshipChange = try model(
            pairModel(
                bookExtra: #", {"name": "year", "type": "integer32"}"#,
                authorRelationship:
                    #"{"name": "books", "destination": "Book", "toMany": true, "ordered": true, "inverse": "author"}"#))
        #expect(relationshipChange.versionHash(of: "Author") != base.versionHash(of: "Author"))
    }

    @Test func sha256MatchesKnownVectors() {
        #expect(SHA256.hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hex(String(repeating: "a", count: 1000))
                == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }
}
