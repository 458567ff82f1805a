import Foundation
import Strata
import StrataServer
import StrataTestSupport
import Testing

@testable import StrataSync

/// Objects that point at a new local object through relationships without an inverse point at
/// its server key once the server acknowledged it, locally and on the server.
@Suite struct ReplicaRekeyTests {
    /// Readers keep a favourite volume and an ordered shelf of volumes, neither with an inverse.
    static let modelJSON = #"""
        {"name": "Shelves", "version": "1", "entities": [
          {"name": "Reader", "attributes": [{"name": "name", "type": "string"}],
           "relationships": [{"name": "favourite", "destination": "Volume"},
                             {"name": "shelf", "destination": "Volume", "toMany": true, "ordered": true}]},
          {"name": "Volume", "attributes": [{"name": "title", "type": "string"}]}
        ]}
        """#

    /// A server of the model and replicas of it in a temporary folder.
    struct Setup {
        let model: ObjectModel
        let server: ServerFixture
        let folder = TemporaryDirectory()

        init() throws {
            model = try ObjectModel.load(json: Array(ReplicaRekeyTests.modelJSON.utf8))
            server = try ServerFixture(model: model)
        }

        func replica() throws -> Replica {
            var configuration = ReplicaConfiguration(
                server: URL(string: "http://127.0.0.1:\(server.server.port)")!, model: model,
                directory: folder.url.appendingPathComponent("replica"))
            configuration.retryDelays = 0.01...0.2
            return try Replica(configuration)
        }

        /// The `_id` of an object created on the server.
        func create(_ entity: String, _ json: String) throws -> Int64 {
            let response = try server.client.send("POST", "/" + model.resourcePath(of: entity), json: json)
            guard response.status == 201, case .integer(let id)? = response.json.objectValue?["_id"] else {
                throw TestClientError("POST \(entity): \(response.status) \(response.text)")
            }
            return id
        }

        /// The server's objects of `entity` by key.
        func serverObjects(_ entity: String) throws -> [Int64: [String: JSONValue]] {
            let response = try server.client.send("GET", "/" + model.resourcePath(of: entity) + "?limit=1000")
            var objects: [Int64: [String: JSONValue]] = [:]
            for item in response.json.objectValue?["items"]?.arrayValue ?? [] {
                guard let members = item.objectValue, case .integer(let id)? = members["_id"] else { continue }
                objects[id] = members
            }
            return objects
        }

        /// The server key of the one volume titled `title`.
        func serverVolume(_ title: String) throws -> Int64 {
            let keys = try serverObjects("Volume").filter { $0.value["title"] == .string(title) }.map(\.key)
            guard keys.count == 1 else { throw TestClientError("\(keys.count) volumes titled \(title) on the server") }
            return keys[0]
        }
    }

    /// Where `reader` points locally: its favourite's key and its shelf's keys in order.
    static func local(_ replica: Replica, reader: Int64) throws -> (favourite: Int64?, shelf: [Int64]) {
        let store = replica.coordinator.stores[0]
        let id = ObjectID(store: store.identifier, entity: "Reader", primaryKey: reader)
        let row = try #require(try store.row(for: id))
        let shelf = try store.relatedIDs(of: id, relationship: "shelf").compactMap(\.primaryKey)
        return ((row.toOne["favourite"] ?? nil)?.primaryKey, shelf)
    }

    /// The local readers' keys by name.
    static func localReaders(_ replica: Replica) throws -> [String: Int64] {
        var readers: [String: Int64] = [:]
        for row in try replica.coordinator.stores[0].fetch(FetchRequest(entityName: "Reader")) {
            if let name = row[attribute: "name"].text, let key = row.id.primaryKey { readers[name] = key }
        }
        return readers
    }

    /// Sends the oldest local transaction waiting and records the server's answer, without
    /// moving the new objects to their server keys yet.
    static func pushAndAcknowledgeFirst(_ replica: Replica) throws {
        let transaction = try #require(try replica.outbox(limit: 1).first)
        let plan = try replica.makePlan(
            transaction, attempt: 0, overrides: [:], replicaID: try replica.state().replicaID)
        let answer = try replica.http.send(
            "POST", "/_batch", json: plan.batchBody, headers: ["Idempotency-Key": plan.key])
        #expect(answer.status == 200, "\(answer.json.jsonText)")
        try replica.acknowledge(transaction, plan, results: answer.json.objectValue?["results"]?.arrayValue ?? [])
    }

    @Test func referencesWithoutAnInverseFollowANewObjectToItsServerKey() throws {
        let setup = try Setup()
        let old = try setup.create("Volume", #"{"title": "Old"}"#)
        let ann = try setup.create("Reader", #"{"name": "Ann", "shelf": [\#(old)]}"#)
        let replica = try setup.replica()
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        let identifier = replica.coordinator.stores[0].identifier
        let oldVolume = try context.object(with: ObjectID(store: identifier, entity: "Volume", primaryKey: old))
        // One save: a new reader, inserted first, pointing at a new volume.
        let bea = try context.insert("Reader", values: ["name": .string("Bea")])
        let volume = try context.insert("Volume", values: ["title": .string("New")])
        try bea.setObject(volume, forKey: "favourite")
        try bea.setObjects([oldVolume, volume], forKey: "shelf")
        try context.save()
        // The next: Ann (on the server already) pointing at the new volume.
        let annObject = try context.object(with: ObjectID(store: identifier, entity: "Reader", primaryKey: ann))
        try annObject.setObject(volume, forKey: "favourite")
        try annObject.setObjects([volume, oldVolume], forKey: "shelf")
        try context.save()
        #expect(try replica.pendingTransactionCount() == 2)

        // The first save pushed and its objects moved to their server keys; Ann's change waits.
        try Self.pushAndAcknowledgeFirst(replica)
        try replica.finishRekeying()
        let new = try setup.serverVolume("New")
        let annLocal = try Self.local(replica, reader: ann)
        #expect(annLocal.favourite == new)
        #expect(annLocal.shelf == [new, old])
        let beaKey = try #require(try Self.localReaders(replica)["Bea"])
        #expect(beaKey < SyncSchema.localKeyBase)
        let beaLocal = try Self.local(replica, reader: beaKey)
        #expect(beaLocal.favourite == new)
        #expect(beaLocal.shelf == [old, new])
        var server = try setup.serverObjects("Reader")
        #expect(server[beaKey]?["favourite"] == .integer(new))
        #expect(server[beaKey]?["shelf"] == .array([.integer(old), .integer(new)]))

        try replica.push()
        #expect(try replica.pendingTransactionCount() == 0)
        server = try setup.serverObjects("Reader")
        #expect(server[ann]?["favourite"] == .integer(new))
        #expect(server[ann]?["shelf"] == .array([.integer(new), .integer(old)]))
        let annAfter = try Self.local(replica, reader: ann)
        #expect(annAfter.favourite == new)
        #expect(annAfter.shelf == [new, old])
    }

    @Test func aRekeyingResumedAfterACrashStillRepointsReferencesWithoutAnInverse() throws {
        let setup = try Setup()
        let old = try setup.create("Volume", #"{"title": "Old"}"#)
        let ann = try setup.create("Reader", #"{"name": "Ann", "shelf": [\#(old)]}"#)
        let cy = try setup.create("Reader", #"{"name": "Cy"}"#)
        let replica = try setup.replica()
        try replica.synchronize()
        let context = ObjectContext(coordinator: replica.coordinator)
        let identifier = replica.coordinator.stores[0].identifier
        let volume = try context.insert("Volume", values: ["title": .string("New")])
        try context.save()
        let annObject = try context.object(with: ObjectID(store: identifier, entity: "Reader", primaryKey: ann))
        try annObject.setObject(volume, forKey: "favourite")
        try annObject.setObjects(
            [try context.object(with: ObjectID(store: identifier, entity: "Volume", primaryKey: old)), volume],
            forKey: "shelf")
        try context.save()
        let local = try #require(volume.objectID.primaryKey)
        #expect(local >= SyncSchema.localKeyBase)

        // The volume's insert pushed and acknowledged, the first step of the rekeying done (the
        // volume removed, what pointed at it captured), and the replica killed before the second.
        try Self.pushAndAcknowledgeFirst(replica)
        try replica.captureRekeyed()
        let oldID = ObjectID(store: identifier, entity: "Volume", primaryKey: local)
        #expect(try replica.coordinator.stores[0].row(for: oldID) == nil)
        #expect(try replica.state().rekeying != nil)
        // A save between the steps points Cy at the old key.
        var values = ObjectValues()
        values.toOne["favourite"] = .some(oldID)
        values.toMany["shelf"] = [oldID]
        var write = LocalWrite()
        write.put(ObjectID(store: identifier, entity: "Reader", primaryKey: cy), values, exists: true)
        try replica.commit(write, "late save")
        replica.close()

        let reopened = try setup.replica()
        try reopened.finishRekeying()
        #expect(try reopened.state().rekeying == nil)
        let new = try setup.serverVolume("New")
        let annLocal = try Self.local(reopened, reader: ann)
        #expect(annLocal.favourite == new)
        #expect(annLocal.shelf == [old, new])
        let cyLocal = try Self.local(reopened, reader: cy)
        #expect(cyLocal.favourite == new)
        #expect(cyLocal.shelf == [new])

        // Ann's change goes out with the volume's server key.
        try reopened.push()
        #expect(try reopened.pendingTransactionCount() == 0)
        let server = try setup.serverObjects("Reader")
        #expect(server[ann]?["favourite"] == .integer(new))
        #expect(server[ann]?["shelf"] == .array([.integer(old), .integer(new)]))
    }
}
