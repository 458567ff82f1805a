import Foundation
import Strata
import StrataServer
import StrataSync
import StrataTestSupport
import Testing

/// A live server and replicas of it in temporary folders.
final class SyncFixture: Sendable {
    let server: ServerFixture
    let folder = TemporaryDirectory()

    init(options modify: (inout ServerOptions) -> Void = { _ in }) throws {
        server = try ServerFixture(options: modify)
    }

    var client: TestClient { server.client }
    var url: URL { URL(string: "http://127.0.0.1:\(server.server.port)")! }

    /// A replica of the example model in its own folder `name`.
    func replica(
        _ name: String = "replica", policies: [String: ConflictPolicy] = [:],
        modify: (inout ReplicaConfiguration) -> Void = { _ in }
    ) throws -> Replica {
        var configuration = ReplicaConfiguration(
            server: url, model: try ObjectModel.example, directory: folder.url.appendingPathComponent(name))
        configuration.policies = policies
        configuration.retryDelays = 0.01...0.2
        modify(&configuration)
        return try Replica(configuration)
    }

    /// Sends a JSON request to the server, expecting `status`.
    @discardableResult
    func send(_ method: String, _ path: String, _ json: String = "", expect status: Int) throws -> JSONValue {
        let response = json.isEmpty ? try client.send(method, path) : try client.send(method, path, json: json)
        guard response.status == status else {
            throw TestClientError("\(method) \(path): \(response.status) \(response.text), expected \(status)")
        }
        return response.json
    }

    /// The `_id` of a created object.
    func create(_ path: String, _ json: String) throws -> Int64 {
        guard case .integer(let id)? = try send("POST", path, json, expect: 201).objectValue?["_id"] else {
            throw TestClientError("POST \(path) gave no _id")
        }
        return id
    }

    /// The server's objects of `entity` as comparable JSON (without versions), every page.
    func serverObjects(_ entity: String) throws -> [Int64: JSONValue] {
        var path: String? = "/" + (try ObjectModel.example).resourcePath(of: entity) + "?limit=1000"
        var objects: [Int64: JSONValue] = [:]
        while let current = path {
            let page = try send("GET", current, expect: 200).objectValue
            for item in page?["items"]?.arrayValue ?? [] {
                guard var members = item.objectValue, case .integer(let id)? = members["_id"] else { continue }
                members["_version"] = nil
                for (name, value) in members {
                    if let array = value.arrayValue { members[name] = .array(Self.sorted(array)) }
                }
                objects[id] = .object(members)
            }
            path = page?["next"]?.stringValue
        }
        return objects
    }

    static func sorted(_ array: [JSONValue]) -> [JSONValue] {
        array.sorted { $0.jsonText < $1.jsonText }
    }

    /// A replica's local objects of `entity` in the server's JSON form (without versions).
    static func localObjects(_ replica: Replica, _ entity: String) throws -> [Int64: JSONValue] {
        let model = try ObjectModel.example
        let store = replica.coordinator.stores[0]
        var objects: [Int64: JSONValue] = [:]
        for row in try store.fetch(FetchRequest(entityName: entity)) {
            guard let id = row.id.primaryKey else { continue }
            var members: [String: JSONValue] = ["_id": .integer(id)]
            for attribute in model.attributes(of: entity) {
                members[attribute.name] = row[attribute: attribute.name].json
            }
            for relationship in model.relationships(of: entity) {
                if relationship.isToMany {
                    let related = try store.relatedIDs(of: row.id, relationship: relationship.name)
                    members[relationship.name] = .array(
                        sorted(related.compactMap { $0.primaryKey.map { .integer($0) } }))
                } else {
                    members[relationship.name] =
                        (row.toOne[relationship.name] ?? nil)?.primaryKey.map { .integer($0) } ?? .null
                }
            }
            objects[id] = .object(members)
        }
        return objects
    }

    /// Whether `replica` holds exactly the server's objects.
    func converged(_ replica: Replica, entities: [String] = ["Author", "Book", "Tag", "SearchLog"]) throws -> Bool {
        for entity in entities where try serverObjects(entity) != Self.localObjects(replica, entity) { return false }
        return true
    }

    /// Expects `replica` to hold exactly the server's objects, naming the differences.
    func expectConverged(_ replica: Replica, entities: [String] = ["Author", "Book", "Tag", "SearchLog"]) throws {
        for entity in entities {
            let server = try serverObjects(entity)
            let local = try Self.localObjects(replica, entity)
            #expect(
                server == local,
                "\(entity): server \(server.values.map(\.jsonText).sorted()) local \(local.values.map(\.jsonText).sorted())"
            )
        }
    }
}
