import Foundation
import Strata
import StrataHTTP

/// The `/_changes` query: where to start, how much, of what, and how to wait.
struct ChangesQuery: Sendable {
    /// The token to read after; nil: from the oldest history kept.
    var since: HistoryToken?
    var limit = RESTService.changesDefaultLimit
    /// The entities asked for (or, when some entity is hidden, every visible one); nil: all.
    var entities: Set<String>?
    /// Whether each change carries the object's current state.
    var includeObject = false
    /// How long to wait for a change when there is none yet, in seconds (0: answer at once).
    var wait = 0.0
    /// Whether the client asked for server-sent events.
    var streams = false
}

extension RESTService {
    /// Ends the change feed's streams and long-polls (the server is stopping).
    public func shutdown() {
        changeFeed?.stop()
    }

    /// Adds the history token of the state `response` shows (`token`, taken before the request
    /// was answered: nothing committed since is in the token, so following the feed from it
    /// misses nothing), unless the response names its own (a write names the one it produced).
    static func mark(_ response: inout HTTPResponse, _ token: String?) {
        guard let token, response.status < 500, response.stream == nil,
            !response.headers.contains(where: { $0.name == historyTokenHeader })
        else { return }
        response.headers.append((historyTokenHeader, token))
    }

    /// The header naming the token of the transaction that saved `child` (with the feed's known
    /// token for the stores it did not write); none without history.
    func savedTokenHeader(_ child: ObjectContext, since start: HistoryToken? = nil) -> [(name: String, value: String)] {
        guard let changeFeed else { return [] }
        let base = start ?? changeFeed.knownToken
        guard let saved = child.savedHistoryToken else { return [(Self.historyTokenHeader, base.description)] }
        return [(Self.historyTokenHeader, base.merging(saved).description)]
    }

    /// The most transactions one page of `/_changes` holds, and how many unless `limit` says.
    static let changesPageLimit = 1000
    static let changesDefaultLimit = 100
    /// The longest `wait` a long-poll may ask for, in seconds.
    static let changesLongestWait = 60.0
    /// The header naming the history token of the state a response shows or produced.
    static let historyTokenHeader = "Strata-History-Token"

    /// `GET /_changes?since=TOKEN&limit=N&entities=A,B&include=object`: the stores' persistent
    /// history after `since` (from the oldest kept when omitted), in commit order, as
    /// `{"changes": [...], "next": TOKEN}`. Each change names its entity, `_id`, `op`, `_version`
    /// after the change, `changed` (updates), `tombstone` (deletes), `author`, `at`, `token` (the
    /// token to resume after it) and, with `include=object`, `object`: the object as it is now
    /// (null once deleted). `limit` bounds the transactions of a page; `next` is where the next
    /// page starts. A `since` older than the history kept is 410 (history expired); hidden
    /// entities never appear. With `Accept: text/event-stream` the changes stream as server-sent
    /// events (``streamChanges(_:)``); `wait=SECONDS` long-polls (see
    /// ``handle(_:context:lead:completion:)``).
    func changes(_ request: HTTPRequest) throws(Problem) -> HTTPResponse {
        let query = try changesQuery(request)
        if query.streams, request.method == "GET" { return try streamChanges(query) }
        return try changesPage(query).response
    }

    /// One page of the feed, and whether it holds no change.
    func changesPage(_ query: ChangesQuery) throws(Problem) -> (response: HTTPResponse, isEmpty: Bool) {
        let coordinator = root.coordinator
        do {
            let since = try checkedStart(query.since)
            let transactions = try coordinator.history(after: since, entities: query.entities, limit: query.limit)
            // Checked again after the read: pruning forgets the oldest transactions first, so a
            // `since` still covered now was covered all through the read, which then missed nothing.
            _ = try checkedStart(since)
            var next = since
            var changes: [UInt8] = [UInt8(ascii: "[")]
            var count = 0
            for transaction in transactions {
                next = next.merging(transaction.token)
                for change in transaction.changes {
                    guard let bytes = renderChange(change, of: transaction, token: next, object: query.includeObject)
                    else { continue }
                    if count > 0 { changes.append(UInt8(ascii: ",")) }
                    changes.append(contentsOf: bytes)
                    count += 1
                }
            }
            changes.append(UInt8(ascii: "]"))
            var body = Array(#"{"changes":"#.utf8) + changes + Array(#","next":"#.utf8)
            body += JSONValue.string(next.description).jsonBytes + [UInt8(ascii: "}")]
            let response = HTTPResponse(
                status: 200,
                headers: [("Content-Type", "application/json"), (Self.historyTokenHeader, next.description)],
                body: body)
            return (response, count == 0)
        } catch let error as StoreError {
            throw Problem(error)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem.from(error)
        }
    }

    /// `since`, or the oldest token kept when it is nil; 410 when `since` asks for history no
    /// longer kept.
    private func checkedStart(_ since: HistoryToken?) throws -> HistoryToken {
        let oldest = try root.coordinator.oldestHistoryToken()
        guard let since else { return oldest }
        guard since.covers(oldest) else {
            throw Problem(
                410, "History Expired",
                "the history after \(since) is no longer kept (it is kept after \(oldest)): read the objects again, "
                    + "then follow /_changes from the \(Self.historyTokenHeader) of that read (or from \(oldest))",
                extra: ["oldest": .string(oldest.description)])
        }
        return since
    }

    /// The feed as server-sent events: each change is an event whose `id` is its token and whose
    /// `data` is the change as the JSON feed gives it; a comment line every so often keeps the
    /// connection open; a reconnection with `Last-Event-ID` resumes after that token. The stream
    /// holds no thread: the server's change feed writes to it as changes commit.
    private func streamChanges(_ query: ChangesQuery) throws(Problem) -> HTTPResponse {
        guard let feed = changeFeed else { throw Problem.notFound("this server records no history") }
        let start: HistoryToken
        do {
            start = try checkedStart(query.since)
        } catch let problem as Problem {
            throw problem
        } catch let error as StoreError {
            throw Problem(error)
        } catch {
            throw Problem.from(error)
        }
        let stream = HTTPStream()
        stream.send(Array("retry: 1000\n: following the history after \(start)\n\n".utf8))
        let include = query.includeObject
        feed.subscribe(stream, after: start, entities: query.entities, variant: include ? "object" : "") {
            [self] change, transaction, token in
            renderChange(change, of: transaction, token: token, object: include)
        }
        return HTTPResponse(
            status: 200,
            headers: [
                ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"),
                (Self.historyTokenHeader, start.description),
            ], stream: stream)
    }

    /// A `/_changes` request with `wait`, answered without holding a thread while it waits: the
    /// page at once when it holds a change, else when a change commits or the wait is over.
    func awaitChanges(
        _ request: HTTPRequest, lead: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        completion: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        lead { [self] in
            do throws(Problem) {
                let query = try changesQuery(request)
                let first = try changesPage(query)
                guard first.isEmpty, query.wait > 0, let feed = changeFeed,
                    let since = first.response.headers.first(where: { $0.name == Self.historyTokenHeader })
                        .flatMap({ HistoryToken($0.value) })
                else { return completion(first.response) }
                feed.wait(since: since, entities: query.entities, seconds: query.wait) { [self] in
                    lead { [self] in
                        do throws(Problem) {
                            completion(try changesPage(query).response)
                        } catch {
                            completion(error.response)
                        }
                    }
                }
            } catch {
                completion(error.response)
            }
        }
    }

    /// Whether `request` is a long-poll of the feed (handled by ``awaitChanges(_:lead:completion:)``).
    func isLongPoll(_ request: HTTPRequest) -> Bool {
        request.method == "GET" && request.query.contains { $0.name == "wait" && $0.value != "0" }
            && !(request.header("accept")?.contains("text/event-stream") ?? false)
    }

    /// The query of a `/_changes` request; `entities` defaults to every entity that is not hidden
    /// (when some is). `Last-Event-ID` stands for `since` when `since` is not given.
    func changesQuery(_ request: HTTPRequest) throws(Problem) -> ChangesQuery {
        guard !root.coordinator.historyStores.isEmpty else {
            throw Problem.notFound("this server records no history (strata serve --history)")
        }
        var query = ChangesQuery()
        query.streams = request.header("accept")?.contains("text/event-stream") ?? false
        for (name, value) in request.query {
            switch name {
            case "since": query.since = try Self.token(value, "since")
            case "limit":
                guard let number = Int(value), (1...Self.changesPageLimit).contains(number) else {
                    throw Problem.badRequest("limit takes a number from 1 to \(Self.changesPageLimit)")
                }
                query.limit = number
            case "entities":
                let names = value.split(separator: ",").map(String.init)
                for entity in names where model.entity(named: entity) == nil || access[entity] == .hidden {
                    throw Problem.badRequest("entities: no entity \(entity)")
                }
                query.entities = Set(names)
            case "include":
                guard value == "object" else { throw Problem.badRequest("include takes object, not \(value)") }
                query.includeObject = true
            case "wait":
                guard let seconds = Double(value), seconds.isFinite, (0...Self.changesLongestWait).contains(seconds)
                else {
                    throw Problem.badRequest("wait takes seconds from 0 to \(Int(Self.changesLongestWait))")
                }
                query.wait = seconds
            default:
                throw Problem.badRequest("/_changes takes since, limit, entities, include and wait, not \(name)")
            }
        }
        if query.since == nil, let last = request.header("last-event-id"), !last.isEmpty {
            query.since = try Self.token(last, "Last-Event-ID")
        }
        if query.entities == nil, access.values.contains(.hidden) {
            query.entities = Set(model.entityNames.filter { access[$0] != .hidden })
        }
        return query
    }

    private static func token(_ text: String, _ name: String) throws(Problem) -> HistoryToken {
        guard let token = HistoryToken(text) else {
            throw Problem.badRequest("\(name)=\(text) is not a history token (give back a `next` or `token`)")
        }
        return token
    }

    /// One change of the feed as JSON, with the object's current state when `object` is set; nil
    /// for a change of a hidden entity.
    func renderChange(_ change: HistoryChange, of transaction: HistoryTransaction, token: HistoryToken, object: Bool)
        -> [UInt8]?
    {
        guard access[change.objectID.entityName] != .hidden else { return nil }
        var members: [String: JSONValue] = [
            "token": .string(token.description), "entity": .string(change.objectID.entityName),
            ObjectCodec.idKey: change.objectID.primaryKey.map { .integer($0) } ?? .null,
            "op": .string(change.kind.rawValue), ObjectCodec.versionKey: .integer(change.version),
            "author": transaction.author.map { .string($0) } ?? .null,
            "at": .string(AttributeValue.formatDate(transaction.timestamp)),
        ]
        if let changed = change.updatedProperties { members["changed"] = .array(changed.map { .string($0) }) }
        if let tombstone = change.tombstone { members["tombstone"] = .object(tombstone.mapValues(\.json)) }
        var bytes = JSONValue.object(members).jsonBytes
        guard object else { return bytes }
        // `{..."object":<the object now, or null>}`, the object's bytes as a read renders them.
        bytes.removeLast()
        bytes.append(contentsOf: Array(#","object":"#.utf8))
        if let row = try? reads.rowWithToMany(for: change.objectID), let rendered = try? render(row) {
            bytes.append(contentsOf: rendered)
        } else {
            bytes.append(contentsOf: Array("null".utf8))
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}
