import Foundation
import Strata
import StrataHTTP

extension RESTService {
    /// The most transactions one page of `/_changes` holds, and how many unless `limit` says.
    static let changesPageLimit = 1000
    static let changesDefaultLimit = 100

    /// `GET /_changes?since=TOKEN&limit=N&entities=A,B`: the stores' persistent history after
    /// `since` (from the oldest kept when omitted), in commit order, as
    /// `{"changes": [...], "next": TOKEN}`. Each change names its entity, `_id`, `op`, `_version`
    /// after the change, `changed` (updates), `tombstone` (deletes), `author`, `at`, and `token`:
    /// the token to resume after it. `limit` bounds the transactions of a page; `next` is where
    /// the next page starts. A `since` older than the history kept is 410 (history expired); hidden
    /// entities never appear.
    func changes(_ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        let coordinator = root.coordinator
        guard !coordinator.historyStores.isEmpty else {
            throw Problem.notFound("this server records no history (strata serve --history)")
        }
        let query = try changesQuery(request)
        do {
            let since = try query.since ?? coordinator.oldestHistoryToken()
            let transactions = try coordinator.history(after: since, entities: query.entities, limit: query.limit)
            // Checked after the read: pruning forgets the oldest transactions first, so a `since`
            // still covered now was covered all through the read, which then missed nothing.
            let oldest = try coordinator.oldestHistoryToken()
            if !since.covers(oldest) {
                throw Problem(
                    410, "History Expired",
                    "the history after \(since) is no longer kept (it is kept after \(oldest)): read the objects again, "
                        + "then follow /_changes from the token of that read (or from \(oldest))",
                    extra: ["oldest": .string(oldest.description)])
            }
            var next = since
            var changes: [JSONValue] = []
            for transaction in transactions {
                next = next.merging(transaction.token)
                for change in transaction.changes where access[change.objectID.entityName] != .hidden {
                    changes.append(render(change, of: transaction, token: next))
                }
            }
            return json(200, .object(["changes": .array(changes), "next": .string(next.description)]))
        } catch let error as StoreError {
            throw Problem(error)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem.from(error)
        }
    }

    /// The `since`, `limit` and `entities` of a `/_changes` request; `entities` defaults to every
    /// entity that is not hidden (when some is).
    private func changesQuery(_ request: HTTPRequest) throws(Problem) -> (
        since: HistoryToken?, limit: Int, entities: Set<String>?
    ) {
        var since: HistoryToken?
        var limit = Self.changesDefaultLimit
        var entities: Set<String>?
        for (name, value) in request.query {
            switch name {
            case "since":
                guard let token = HistoryToken(value) else {
                    throw Problem.badRequest("since=\(value) is not a history token (give back a `next` or `token`)")
                }
                since = token
            case "limit":
                guard let number = Int(value), (1...Self.changesPageLimit).contains(number) else {
                    throw Problem.badRequest("limit takes a number from 1 to \(Self.changesPageLimit)")
                }
                limit = number
            case "entities":
                let names = value.split(separator: ",").map(String.init)
                for entity in names where model.entity(named: entity) == nil || access[entity] == .hidden {
                    throw Problem.badRequest("entities: no entity \(entity)")
                }
                entities = Set(names)
            default:
                throw Problem.badRequest("/_changes takes since, limit and entities, not \(name)")
            }
        }
        if entities == nil, access.values.contains(.hidden) {
            entities = Set(model.entityNames.filter { access[$0] != .hidden })
        }
        return (since, limit, entities)
    }

    /// One change of the feed.
    private func render(_ change: HistoryChange, of transaction: HistoryTransaction, token: HistoryToken) -> JSONValue {
        var members: [String: JSONValue] = [
            "token": .string(token.description), "entity": .string(change.objectID.entityName),
            ObjectCodec.idKey: change.objectID.primaryKey.map { .integer($0) } ?? .null,
            "op": .string(change.kind.rawValue), ObjectCodec.versionKey: .integer(change.version),
            "author": transaction.author.map { .string($0) } ?? .null,
            "at": .string(AttributeValue.formatDate(transaction.timestamp)),
        ]
        if let changed = change.updatedProperties { members["changed"] = .array(changed.map { .string($0) }) }
        if let tombstone = change.tombstone { members["tombstone"] = .object(tombstone.mapValues(\.json)) }
        return .object(members)
    }
}
