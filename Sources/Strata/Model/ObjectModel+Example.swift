extension ObjectModel {
    /// The example model (a library catalogue, DESIGN.md §7), embedded so the `strata` binary needs
    /// no resource bundle. `Examples/Library.json` holds the same text; a test keeps them equal.
    public static let exampleJSON = #"""
        {
          "name": "Library",
          "version": "1",
          "entities": [
            {
              "name": "Author",
              "attributes": [
                {"name": "name", "type": "string", "optional": false, "minLength": 1, "maxLength": 200},
                {"name": "born", "type": "date"},
                {"name": "email", "type": "string", "regex": "[^@\\s]+@[^@\\s]+"}
              ],
              "relationships": [
                {"name": "books", "destination": "Book", "toMany": true, "inverse": "author", "deleteRule": "cascade"}
              ]
            },
            {
              "name": "Book",
              "attributes": [
                {"name": "title", "type": "string", "optional": false, "minLength": 1, "maxLength": 500, "searchable": true},
                {"name": "year", "type": "integer32", "min": 0, "max": 3000},
                {"name": "pages", "type": "integer16", "min": 1},
                {"name": "wordCount", "type": "integer64"},
                {"name": "format", "type": "string", "optional": false, "default": "paperback"},
                {"name": "price", "type": "decimal", "min": 0},
                {"name": "rating", "type": "double", "min": 0, "max": 5},
                {"name": "weight", "type": "float"},
                {"name": "available", "type": "boolean", "optional": false, "default": true},
                {"name": "published", "type": "date"},
                {"name": "cover", "type": "binary", "maxLength": 1048576},
                {"name": "sku", "type": "uuid"},
                {"name": "homepage", "type": "uri"},
                {"name": "metadata", "type": "json"}
              ],
              "relationships": [
                {"name": "author", "destination": "Author", "inverse": "books"},
                {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "books"}
              ],
              "fetchedProperties": [
                {"name": "searches", "entity": "SearchLog", "predicate": "query CONTAINS[c] $FETCH_SOURCE.title"}
              ],
              "uniqueness": [["title", "author"]],
              "indexes": [{"name": "Book_year", "properties": ["year"]}]
            },
            {
              "name": "Tag",
              "attributes": [
                {"name": "name", "type": "string", "optional": false, "minLength": 1, "maxLength": 50}
              ],
              "relationships": [
                {"name": "books", "destination": "Book", "toMany": true, "inverse": "tags", "deleteRule": "deny"}
              ],
              "uniqueness": [["name"]]
            },
            {
              "name": "SearchLog",
              "attributes": [
                {"name": "query", "type": "string", "optional": false},
                {"name": "at", "type": "date"},
                {"name": "results", "type": "integer32", "min": 0}
              ]
            }
          ],
          "configurations": [
            {"name": "Catalog", "entities": ["Author", "Book", "Tag"]},
            {"name": "Activity", "entities": ["SearchLog"]}
          ]
        }

        """#

    /// The example model, loaded from ``exampleJSON``.
    public static var example: ObjectModel {
        get throws(ModelError) { try load(json: Array(exampleJSON.utf8), file: "example model") }
    }
}
