import Dispatch
import Foundation
import Strata
import StrataHTTP
import Synchronization

/// Follows the stores' persistent history for the readers of `/_changes` that wait for it: the
/// long-polls (`wait=`) and the server-sent event streams.
///
/// One serial queue reads the history once per wake-up, from the feed's head (the last
/// transaction it has seen), and hands each new transaction to every stream that is caught up
/// with the head; a stream that is behind (it just subscribed, or its client reads slowly) reads
/// its own way up to the head first. Wake-ups come from this server's saves, from other
/// servers' saves into a shared PostgreSQL store (its `NOTIFY`), and from a tick every
/// `pollInterval` while anyone waits, so a missed notification delays a change, never loses it.
///
/// It also keeps the token every response carries (`Strata-History-Token`): a token no newer
/// than anything committed when a request starts, so a client that read a snapshot and then
/// follows the feed from that token misses nothing.
final class ChangeFeed: Sendable {
    /// Renders one change for a stream: its JSON bytes, or nil when the stream's client may not
    /// see it.
    typealias Renderer = @Sendable (HistoryChange, HistoryTransaction, HistoryToken) -> [UInt8]?

    /// One server-sent event stream and where it is in the history; touched only on the queue.
    final class Subscriber: @unchecked Sendable {
        // Safe to share: `cursor` and `lagging` are read and written only on the feed's serial
        // queue; the rest is immutable.
        let stream: HTTPStream
        /// The entities whose changes it wants (subentities included); nil: every one.
        let entities: Set<String>?
        /// The same, as the history fetch takes them (nil: every one).
        let requested: Set<String>?
        let render: Renderer
        /// Subscribers with the same group and cursor get the same bytes: rendered once.
        let group: String
        var cursor: HistoryToken

        init(
            stream: HTTPStream, cursor: HistoryToken, entities: Set<String>?, requested: Set<String>?, group: String,
            render: @escaping Renderer
        ) {
            self.stream = stream
            self.cursor = cursor
            self.entities = entities
            self.requested = requested
            self.group = group
            self.render = render
        }
    }

    /// A long-poll waiting for a change after `since`.
    struct Waiter: Sendable {
        let since: HistoryToken
        let entities: Set<String>?
        /// In `DispatchTime` uptime nanoseconds.
        let deadline: UInt64
        let fire: @Sendable () -> Void
    }

    private struct State {
        var head: HistoryToken
        var subscribers: [ObjectIdentifier: Subscriber] = [:]
        var waiters: [UUID: Waiter] = [:]
        var wakeQueued = false
        var stopped = false
        /// When the streams last got a heartbeat (never, at first: the first tick sends one).
        var lastHeartbeat: UInt64 = 0
    }

    let coordinator: StoreCoordinator
    let model: ObjectModel
    /// How often a stream gets a comment line when nothing else is sent, in seconds.
    let heartbeatInterval: Double
    /// How often the history is read while anyone waits, notified or not, in seconds.
    let pollInterval: Double
    /// The most transactions one read of the history takes.
    static let batchLimit = 500
    private let queue = DispatchQueue(label: "strata-change-feed")
    private let state: Mutex<State>
    /// The token responses carry, and its text.
    private let known: Mutex<(token: HistoryToken, text: String)>
    private let ticking = Atomic<Bool>(false)
    private let tick = DispatchSemaphore(value: 0)
    private let ticked = DispatchSemaphore(value: 0)

    /// A feed over `coordinator`'s stores that record history, starting at their current token.
    init(coordinator: StoreCoordinator, heartbeatInterval: Double = 15, pollInterval: Double = 1) throws(StoreError) {
        self.coordinator = coordinator
        model = coordinator.model
        self.heartbeatInterval = heartbeatInterval
        self.pollInterval = pollInterval
        let current = try coordinator.currentHistoryToken()
        state = Mutex(State(head: current))
        known = Mutex((current, current.description))
    }

    /// The token of the state every store had reached by now, or later: what a response carries.
    var knownToken: HistoryToken { known.withLock { $0.token } }
    /// ``knownToken`` as text.
    var knownTokenText: String { known.withLock { $0.text } }

    /// Notes a token this server's save produced (its transaction is committed).
    func noteCommitted(_ token: HistoryToken?) {
        if let token { advanceKnown(to: token) }
        wake()
    }

    private func advanceKnown(to token: HistoryToken) {
        known.withLock { current in
            guard !current.token.covers(token) else { return }
            let merged = current.token.merging(token)
            current = (merged, merged.description)
        }
    }

    /// Reads the history soon (another server wrote, or a tick).
    func wake() {
        let queued = state.withLock { state -> Bool in
            guard !state.stopped, !state.subscribers.isEmpty || !state.waiters.isEmpty, !state.wakeQueued else {
                return false
            }
            state.wakeQueued = true
            return true
        }
        if queued { queue.async { [self] in step() } }
    }

    // MARK: - Subscribing

    /// Follows the history after `cursor` into `stream` as server-sent events until it closes.
    /// - Parameters:
    ///   - entities: the entities whose changes the stream gets, each with its subentities (nil:
    ///     every one).
    ///   - variant: what else changes how `render` renders (e.g. whether objects are included):
    ///     streams of the same variant and entities share rendered events.
    func subscribe(
        _ stream: HTTPStream, after cursor: HistoryToken, entities: Set<String>?, variant: String,
        render: @escaping Renderer
    ) {
        let expanded = entities.map { names in Set(names.flatMap { model.entityAndSubentities(of: $0) }) }
        let group = variant + "|" + (entities.map { $0.sorted().joined(separator: ",") } ?? "*")
        let subscriber = Subscriber(
            stream: stream, cursor: cursor, entities: expanded, requested: entities, group: group, render: render)
        let added = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.subscribers[ObjectIdentifier(stream)] = subscriber
            return true
        }
        guard added else {
            stream.close()
            return
        }
        startTicking()
        stream.onClose { [self] in
            _ = state.withLock { $0.subscribers.removeValue(forKey: ObjectIdentifier(stream)) }
        }
        queue.async { [self] in catchUp(subscriber, to: state.withLock { $0.head }) }
    }

    /// Calls `fire` once a change after `since` (of `entities`, subentities included) commits, or
    /// `seconds` from now, or when the server stops, whichever comes first.
    func wait(since: HistoryToken, entities: Set<String>?, seconds: Double, fire: @escaping @Sendable () -> Void) {
        let expanded = entities.map { names in Set(names.flatMap { model.entityAndSubentities(of: $0) }) }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        let waiter = Waiter(since: since, entities: expanded, deadline: deadline, fire: fire)
        let key = UUID()
        let added = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.waiters[key] = waiter
            return true
        }
        guard added else { return fire() }
        startTicking()
        // A change committed between the caller's read and now may already be past the head.
        queue.async { [self] in
            let found = (try? coordinator.history(after: since, entities: entities, limit: 1))?.isEmpty == false
            if found, let waiter = state.withLock({ $0.waiters.removeValue(forKey: key) }) { waiter.fire() }
        }
    }

    /// Ends every stream and answers every long-poll; later subscriptions end at once.
    func stop() {
        let (subscribers, waiters) = state.withLock { state in
            state.stopped = true
            defer {
                state.subscribers = [:]
                state.waiters = [:]
            }
            return (Array(state.subscribers.values), Array(state.waiters.values))
        }
        for subscriber in subscribers { subscriber.stream.close() }
        for waiter in waiters { waiter.fire() }
        if ticking.exchange(false, ordering: .acquiringAndReleasing) {
            tick.signal()
            ticked.wait()
        }
    }

    // MARK: - The queue's work

    /// Reads what committed after the head and hands it on.
    private func step() {
        let before = state.withLock { state -> HistoryToken in
            state.wakeQueued = false
            return state.head
        }
        let batch = (try? coordinator.history(after: before, limit: Self.batchLimit)) ?? []
        var head = before
        for transaction in batch { head = head.merging(transaction.token) }
        let (subscribers, fired) = state.withLock { state -> ([Subscriber], [Waiter]) in
            state.head = head
            var fired: [Waiter] = []
            for (key, waiter) in state.waiters where Self.matches(batch, waiter) {
                fired.append(waiter)
                state.waiters[key] = nil
            }
            return (Array(state.subscribers.values), fired)
        }
        advanceKnown(to: head)
        for waiter in fired { waiter.fire() }
        // The streams at the head so far get the same events: rendered once per group.
        var shared: [String: [UInt8]] = [:]
        for subscriber in subscribers where !subscriber.stream.isClosed {
            if subscriber.cursor == before, !batch.isEmpty {
                let events = shared[subscriber.group] ?? events(of: batch, for: subscriber).bytes
                shared[subscriber.group] = events
                send(events, to: subscriber, through: head)
            } else if subscriber.cursor.covers(before) {
                let (events, cursor) = events(of: batch, for: subscriber)
                send(events, to: subscriber, through: cursor.merging(head))
            } else {
                catchUp(subscriber, to: head)
            }
        }
        if batch.count == Self.batchLimit { wake() }
    }

    /// Whether `batch` holds a change `waiter` waits for.
    private static func matches(_ batch: [HistoryTransaction], _ waiter: Waiter) -> Bool {
        batch.contains { transaction in
            waiter.since.precedes(transaction)
                && (waiter.entities == nil
                    || transaction.changes.contains { waiter.entities!.contains($0.objectID.entityName) })
        }
    }

    /// The events of the changes of `batch` after `subscriber`'s cursor, and the cursor after them.
    private func events(of batch: [HistoryTransaction], for subscriber: Subscriber) -> (
        bytes: [UInt8], cursor: HistoryToken
    ) {
        var events: [UInt8] = []
        var cursor = subscriber.cursor
        for transaction in batch where cursor.precedes(transaction) {
            cursor = cursor.merging(transaction.token)
            append(transaction, to: &events, for: subscriber, token: cursor)
        }
        return (events, cursor)
    }

    /// Sends `events` to `subscriber`, whose cursor then is `cursor`; a stream whose client has
    /// not read half of what it holds gets nothing now and catches up later.
    private func send(_ events: [UInt8], to subscriber: Subscriber, through cursor: HistoryToken) {
        guard subscriber.stream.bufferedBytes < subscriber.stream.maxBufferedBytes / 2 else { return }
        if events.isEmpty || subscriber.stream.send(events) { subscriber.cursor = cursor }
    }

    /// Brings `subscriber` up to `head` (or further) by reading the history after its cursor,
    /// a page at a time while its client keeps up.
    private func catchUp(_ subscriber: Subscriber, to head: HistoryToken) {
        while !subscriber.stream.isClosed, !subscriber.cursor.covers(head),
            subscriber.stream.bufferedBytes < subscriber.stream.maxBufferedBytes / 2
        {
            guard
                let page = try? coordinator.history(
                    after: subscriber.cursor, entities: subscriber.requested, limit: Self.batchLimit)
            else { return }
            // A client so far behind that what follows its cursor was pruned meanwhile would miss
            // it: its stream ends, and reconnecting from its last event is 410.
            if let oldest = try? coordinator.oldestHistoryToken(), !subscriber.cursor.covers(oldest) {
                return subscriber.stream.close()
            }
            var events: [UInt8] = []
            var cursor = subscriber.cursor
            for transaction in page {
                cursor = cursor.merging(transaction.token)
                append(transaction, to: &events, for: subscriber, token: cursor)
            }
            // A short page read everything committed so far: the cursor covers the head too.
            if page.count < Self.batchLimit { cursor = cursor.merging(head) }
            if !events.isEmpty, !subscriber.stream.send(events) { return }
            subscriber.cursor = cursor
            if page.count < Self.batchLimit { return }
        }
    }

    /// Appends the events of `transaction`'s changes that `subscriber` may see. Only the last
    /// carries the `id` (the token after the transaction): a client cut off in the middle of a
    /// transaction resumes from the one before it and gets the whole transaction again, rather
    /// than losing the rest of it.
    private func append(
        _ transaction: HistoryTransaction, to events: inout [UInt8], for subscriber: Subscriber, token: HistoryToken
    ) {
        var rendered: [[UInt8]] = []
        for change in transaction.changes
        where subscriber.entities == nil || subscriber.entities!.contains(change.objectID.entityName) {
            if let data = subscriber.render(change, transaction, token) { rendered.append(data) }
        }
        for (index, data) in rendered.enumerated() {
            if index == rendered.count - 1 {
                events.append(contentsOf: Self.idField)
                events.append(contentsOf: Array(token.description.utf8))
                events.append(10)
            }
            events.append(contentsOf: Self.eventField)
            events.append(contentsOf: data)
            events.append(contentsOf: Self.eventEnd)
        }
    }

    private static let idField = Array("id: ".utf8)
    private static let eventField = Array("event: change\ndata: ".utf8)
    private static let eventEnd = Array("\n\n".utf8)
    private static let heartbeat = Array(": heartbeat\n\n".utf8)

    // MARK: - The tick

    /// Starts the thread that polls the history, sends heartbeats and ends expired long-polls.
    private func startTicking() {
        guard !ticking.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            while ticking.load(ordering: .acquiring) {
                _ = tick.wait(timeout: .now() + pollInterval)
                guard ticking.load(ordering: .acquiring) else { break }
                onTick()
            }
            ticked.signal()
        }
        thread.name = "strata-change-feed"
        thread.start()
    }

    private func onTick() {
        let now = DispatchTime.now().uptimeNanoseconds
        let (expired, beating) = state.withLock { state -> ([Waiter], [Subscriber]) in
            var expired: [Waiter] = []
            for (key, waiter) in state.waiters where waiter.deadline <= now {
                expired.append(waiter)
                state.waiters[key] = nil
            }
            guard Double(now - state.lastHeartbeat) >= heartbeatInterval * 1e9 else { return (expired, []) }
            state.lastHeartbeat = now
            return (expired, Array(state.subscribers.values))
        }
        for waiter in expired { waiter.fire() }
        for subscriber in beating { subscriber.stream.send(Self.heartbeat) }
        wake()
    }
}
