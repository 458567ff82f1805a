import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// A model that exercises every store feature: every attribute type, to-one, one-to-many,
/// many-to-many, an ordered one-to-many, inheritance, uniqueness, and two configurations.
let conformanceModelJSON = #"""
    {"name": "Conformance", "version": "1", "entities": [
      {"name": "Author", "attributes": [{"name": "name", "type": "string"}, {"name": "born", "type": "date"}],
       "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "author", "deleteRule": "cascade"}]},
      {"name": "Book", "attributes": [
         {"name": "title", "type": "string"}, {"name": "year", "type": "integer32"}, {"name": "pages", "type": "integer16"},
         {"name": "wordCount", "type": "integer64"}, {"name": "price", "type": "decimal"}, {"name": "rating", "type": "double"},
         {"name": "weight", "type": "float"}, {"name": "available", "type": "boolean"}, {"name": "published", "type": "date"},
         {"name": "cover", "type": "binary"}, {"name": "sku", "type": "uuid"}, {"name": "homepage", "type": "uri"},
         {"name": "metadata", "type": "json"}],
       "relationships": [{"name": "author", "destination": "Author", "inverse": "books"},
                         {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "books"}],
       "uniqueness": [["title", "author"]], "indexes": [{"name": "Book_year", "properties": ["year"]}]},
      {"name": "Tag", "attributes": [{"name": "name", "type": "string"}],
       "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "tags"}], "uniqueness": [["name"]]},
      {"name": "Shelf", "attributes": [{"name": "label", "type": "string"}],
       "relationships": [{"name": "items", "destination": "Item", "toMany": true, "ordered": true, "inverse": "shelf"}]},
      {"name": "Item", "abstract": true, "attributes": [{"name": "title", "type": "string"}],
       "relationships": [{"name": "shelf", "destination": "Shelf", "inverse": "items"}]},
      {"name": "Note", "parent": "Item", "attributes": [{"name": "body", "type": "string"}]},
      {"name": "Photo", "parent": "Item", "attributes": [{"name": "link", "type": "uri"}]},
      {"name": "Visit", "attributes": [{"name": "path", "type": "string"}, {"name": "at", "type": "date"}]}
    ], "configurations": [
      {"name": "Main", "entities": ["Author", "Book", "Tag", "Shelf", "Item", "Note", "Photo"]},
      {"name": "Logs", "entities": ["Visit"]}
    ]}
    """#

let conformanceModel: ObjectModel = try! ObjectModel.load(json: Array(conformanceModelJSON.utf8))

/// The kinds of store the conformance suite runs against.
enum StoreUnderTest: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case memory
    /// A schema of its own in the test run's PostgreSQL cluster (see ``PostgreSQLTestServer``).
    case postgresql

    var testDescription: String { rawValue }

    /// Every kind; PostgreSQL whenever its tests run (see ``Requirement``: under CI a cluster
    /// that cannot start fails it).
    static var allCases: [StoreUnderTest] {
        PostgreSQLTestServer.requirement.runs ? [.sqlite, .memory, .postgresql] : [.sqlite, .memory]
    }

    /// Opens a store of this kind in `folder`.
    func open(
        _ folder: TemporaryDirectory, configuration: String? = nil, model: ObjectModel = conformanceModel,
        name: String = "store"
    ) throws
        -> any PersistentStore
    {
        switch self {
        case .sqlite: try SQLiteStore(model: model, configuration: configuration, url: folder.file("\(name).sqlite"))
        case .memory: try InMemoryStore(model: model, configuration: configuration)
        case .postgresql:
            try PostgreSQLStore(
                model: model, configuration: configuration, url: folder.postgreSQLURL(name: name))
        }
    }
}

/// A new row for `entity` in `store`, with attributes.
func newRow(_ store: any PersistentStore, _ entity: String, _ attributes: [String: AttributeValue] = [:]) throws
    -> StoreRow
{
    StoreRow(id: try store.newObjectIDs(entity: entity, count: 1)[0], attributes: attributes)
}

/// A dump of every table and row of an SQLite file, read directly, for before/after comparisons.
func dumpSQLite(_ url: URL) throws -> [String] {
    let db = try SQLiteConnection(path: url.path, readOnly: true)
    let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") { $0.text(0) }
    var lines: [String] = []
    for table in tables {
        let rows = try db.query("SELECT * FROM \(SQLiteSchema.quote(table)) ORDER BY 1") { statement in
            (0..<sqlite3ColumnCount(statement)).map { column -> String in
                statement.isNull(column) ? "NULL" : "\(statement.text(column))"
            }.joined(separator: "|")
        }
        lines += rows.map { "\(table): \($0)" }
    }
    return lines
}
