import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// The model the context tests use: validation rules, every delete rule, ordered and
/// many-to-many relationships, and a fetched property across two configurations.
let contextModel: ObjectModel = try! ObjectModel.load(
    json: Array(
        #"""
        {"name": "Contexts", "version": "1", "entities": [
          {"name": "Author", "attributes": [
             {"name": "name", "type": "string", "optional": false, "maxLength": 20},
             {"name": "email", "type": "string", "regex": "[^@ ]+@[^@ ]+"},
             {"name": "rank", "type": "integer32", "min": 1, "max": 10}],
           "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "author", "deleteRule": "cascade"}]},
          {"name": "Book", "attributes": [{"name": "title", "type": "string", "optional": false}, {"name": "year", "type": "integer32"}],
           "relationships": [{"name": "author", "destination": "Author", "inverse": "books"},
                             {"name": "tags", "destination": "Tag", "toMany": true, "inverse": "books"}],
           "fetchedProperties": [{"name": "visits", "entity": "Visit", "predicate": "path CONTAINS[c] $FETCH_SOURCE.title"}]},
          {"name": "Tag", "attributes": [{"name": "name", "type": "string", "optional": false}],
           "relationships": [{"name": "books", "destination": "Book", "toMany": true, "inverse": "tags", "maxCount": 3}],
           "uniqueness": [["name"]]},
          {"name": "Shelf", "attributes": [{"name": "label", "type": "string"}],
           "relationships": [{"name": "items", "destination": "Item", "toMany": true, "ordered": true, "inverse": "shelf"}]},
          {"name": "Item", "attributes": [{"name": "title", "type": "string"}],
           "relationships": [{"name": "shelf", "destination": "Shelf", "inverse": "items"}]},
          {"name": "Owner", "attributes": [{"name": "name", "type": "string"}],
           "relationships": [{"name": "pets", "destination": "Pet", "toMany": true, "inverse": "owner", "deleteRule": "deny"}]},
          {"name": "Pet", "attributes": [{"name": "name", "type": "string"}],
           "relationships": [{"name": "owner", "destination": "Owner", "inverse": "pets", "deleteRule": "noAction"}]},
          {"name": "Visit", "attributes": [{"name": "path", "type": "string"}, {"name": "count", "type": "integer64"}]}
        ], "configurations": [
          {"name": "Main", "entities": ["Author", "Book", "Tag", "Shelf", "Item", "Owner", "Pet"]},
          {"name": "Logs", "entities": ["Visit"]}
        ]}
        """#.utf8))

/// The two ways to build a stack; the context suite runs through each.
enum StackKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case explicit
    case container
    /// The explicit stack over in-memory stores.
    case memory
    /// The explicit stack with `Main` in PostgreSQL and `Logs` in SQLite.
    case postgresql

    var testDescription: String { rawValue }

    /// Every stack; the PostgreSQL one whenever its tests run (see ``Requirement``: under CI a
    /// cluster that cannot start fails it).
    static var allCases: [StackKind] {
        PostgreSQLTestServer.requirement.runs
            ? [.explicit, .container, .memory, .postgresql] : [.explicit, .container, .memory]
    }

    /// A root context over SQLite stores for `Main` and `Logs` in `folder`.
    func make(
        _ folder: TemporaryDirectory, mergePolicy: MergePolicy = .error, durability: StoreOptions.Durability = .full
    ) throws -> ObjectContext {
        let options = StoreOptions(durability: durability)
        switch self {
        case .explicit:
            let coordinator = StoreCoordinator(model: contextModel)
            try coordinator.addStore(
                type: .sqlite, configuration: "Main", url: folder.file("main.sqlite"), options: options)
            try coordinator.addStore(
                type: .sqlite, configuration: "Logs", url: folder.file("logs.sqlite"), options: options)
            return ObjectContext(coordinator: coordinator, mergePolicy: mergePolicy)
        case .postgresql:
            let coordinator = StoreCoordinator(model: contextModel)
            try coordinator.addStore(
                type: .postgresql, configuration: "Main", url: try folder.postgreSQLURL(name: "main"), options: options)
            try coordinator.addStore(
                type: .sqlite, configuration: "Logs", url: folder.file("logs.sqlite"), options: options)
            return ObjectContext(coordinator: coordinator, mergePolicy: mergePolicy)
        case .memory:
            let coordinator = StoreCoordinator(model: contextModel)
            try coordinator.addStore(type: .inMemory, configuration: "Main")
            try coordinator.addStore(type: .inMemory, configuration: "Logs")
            return ObjectContext(coordinator: coordinator, mergePolicy: mergePolicy)
        case .container:
            var stores = PersistentContainer.sqliteStores(for: contextModel, in: folder.url)
            for index in stores.indices { stores[index].options = options }
            return try PersistentContainer(model: contextModel, stores: stores, mergePolicy: mergePolicy).viewContext
        }
    }
}
