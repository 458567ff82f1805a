import CLibPQ
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs single-statement reads for many callers at once on a few connections of its own, in
/// libpq's pipeline mode, from one thread of its own: no caller waits on a thread of its own, and
/// a burst of reads travels to PostgreSQL in one write and comes back in a few reads, so that a
/// server backend wakes once for many statements rather than once each. Measured on two cores:
/// PostgreSQL answers a pipelined primary-key read for about a third of the processor time an
/// unpipelined one costs it.
///
/// Each statement is sent prepared (once per connection, in the same pipeline as its first use)
/// unless the connection was opened with `prepares` off, and followed by its own sync, so that a
/// failing statement affects no other. A caller gets its rows, or an error: any failure at all
/// (the connection lost, the statement failed, the reader stopped); a caller then runs the read
/// the blocking way, which reports the failure as a read always does, or retries it on another
/// connection. Completions run on the reader's thread and must not block.
final class PGPipelineReader: @unchecked Sendable {
    // Safe to share: `queue`, `opened`, `connecting`, `downUntil`, `sleeping`, `stopped`,
    // `resetting` and `running` are guarded by `lock`; `lanes` belongs to the reader's thread; the pipe's
    // descriptors are immutable.
    typealias Completion = @Sendable (Result<PGRows, PGError>) -> Void

    struct Job {
        let sql: String
        let parameters: [PGValue]
        let completion: Completion
    }

    private let conninfo: String
    private let prepares: Bool
    private let width: Int
    private let lock = NSLock()
    private var queue: [Job] = []
    private var sleeping = false
    private var stopped = false
    private var running = false
    /// Set by ``reset()``: the connections are closed at the reader's next turn.
    private var resetting = false
    private var lanes: [Lane] = []
    /// Connections a connecting thread opened, for the reader's thread to take.
    private var opened: [Lane] = []
    /// Whether a thread is opening a connection: the reader's own never waits for one.
    private var connecting = false
    /// After a connection could not be opened, none is tried again until then.
    private var downUntil: UInt64 = 0
    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// A reader over at most `width` connections to `conninfo`.
    init(conninfo: String, width: Int, prepares: Bool) {
        self.conninfo = conninfo
        self.width = max(1, width)
        self.prepares = prepares
        var descriptors: [Int32] = [-1, -1]
        if pipe(&descriptors) == 0 {
            _ = fcntl(descriptors[0], F_SETFL, fcntl(descriptors[0], F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptors[1], F_SETFL, fcntl(descriptors[1], F_GETFL) | O_NONBLOCK)
        }
        wakeRead = descriptors[0]
        wakeWrite = descriptors[1]
    }

    deinit {
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
    }

    /// Runs `sql` with `parameters` and calls `completion` with its rows or a failure, on the
    /// reader's thread (started at the first read).
    func read(_ sql: String, _ parameters: [PGValue], completion: @escaping Completion) {
        lock.lock()
        guard !stopped, wakeRead >= 0 else {
            lock.unlock()
            completion(.failure(PGError(message: "the PostgreSQL reader is stopped")))
            return
        }
        queue.append(Job(sql: sql, parameters: parameters, completion: completion))
        let start = !running
        running = true
        let wake = sleeping
        sleeping = false
        lock.unlock()
        if start {
            // Named for the kernel (`top -H`, `perf`): a thread started from a polling thread
            // would otherwise carry its name.
            Thread.detachNewThread { [self] in
                Thread.current.name = "strata-pg-read"
                run()
            }
        } else if wake {
            wakeReader()
        }
    }

    /// Fails the reads in flight and ends the thread.
    func stop() {
        lock.lock()
        stopped = true
        let wake = sleeping
        sleeping = false
        lock.unlock()
        if wake { wakeReader() }
    }

    /// Closes every connection (the reads on them go the blocking way) and opens new ones as
    /// reads come: the pool found its server gone or demoted, and these lead to the same one.
    func reset() {
        lock.lock()
        resetting = true
        let wake = sleeping
        sleeping = false
        lock.unlock()
        if wake { wakeReader() }
    }

    /// Wakes the reader's thread from its wait.
    private func wakeReader() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    private func run() {
        while true {
            lock.lock()
            let jobs = queue
            queue.removeAll(keepingCapacity: true)
            lanes += opened
            opened.removeAll()
            let stopping = stopped
            let reset = resetting
            resetting = false
            if jobs.isEmpty && !stopping && !reset { sleeping = true }
            lock.unlock()
            if reset {
                for lane in lanes { fail(lane, "the PostgreSQL server under the pool went away or was demoted") }
                lanes.removeAll()
                // Its jobs were taken: they go on the next turn, which also marks the thread asleep.
                lock.lock()
                queue.insert(contentsOf: jobs, at: 0)
                lock.unlock()
                continue
            }
            if stopping {
                for job in jobs { job.completion(.failure(PGError(message: "the PostgreSQL reader is stopped"))) }
                for lane in lanes { fail(lane, "the PostgreSQL reader is stopped") }
                lanes.removeAll()
                return
            }
            if !jobs.isEmpty {
                send(jobs)
                continue
            }
            waitAndReceive()
        }
    }

    /// Sends each job on the least busy connection (opening one while fewer than `width` are
    /// open and all are busy), then flushes them.
    private func send(_ jobs: [Job]) {
        for job in jobs {
            guard let lane = lane() else {
                job.completion(.failure(PGError(message: "no PostgreSQL connection for the reader")))
                continue
            }
            if !lane.send(job, prepares: prepares) { fail(lane, "cannot send to PostgreSQL") }
        }
        for lane in lanes where lane.flush() < 0 { fail(lane, "cannot send to PostgreSQL") }
    }

    /// The least busy connection; while all are busy and fewer than `width` are open, another
    /// is opened on a thread of its own (a connection attempt may take as long as the network
    /// lets it), and nil while there is none at all: the read then goes the blocking way.
    private func lane() -> Lane? {
        let idle = lanes.min { $0.inFlight < $1.inFlight }
        if let idle, idle.inFlight == 0 || lanes.count >= width { return idle }
        lock.lock()
        let start = !connecting && DispatchTime.now().uptimeNanoseconds >= downUntil
        if start { connecting = true }
        lock.unlock()
        if start {
            Thread.detachNewThread { [self] in
                Thread.current.name = "strata-pg-open"
                let lane = Lane(conninfo)
                lock.lock()
                connecting = false
                if let lane {
                    opened.append(lane)
                } else {
                    downUntil = DispatchTime.now().uptimeNanoseconds + 500_000_000
                }
                let wake = sleeping
                sleeping = false
                lock.unlock()
                if wake { wakeReader() }
            }
        }
        return idle
    }

    /// Waits for the wake-up pipe or a connection's answers (or room to send), and hands out
    /// every answer complete.
    private func waitAndReceive() {
        var descriptors = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        for lane in lanes {
            let events = Int16(POLLIN) | (lane.wantsWrite ? Int16(POLLOUT) : 0)
            descriptors.append(pollfd(fd: lane.socket, events: events, revents: 0))
        }
        let ready = poll(&descriptors, nfds_t(descriptors.count), -1)
        lock.lock()
        sleeping = false
        lock.unlock()
        guard ready > 0 else { return }
        if descriptors[0].revents != 0 {
            var buffer = [UInt8](repeating: 0, count: 64)
            while Glibc.read(wakeRead, &buffer, buffer.count) > 0 {}
        }
        var failed: [Lane] = []
        for (index, lane) in lanes.enumerated() {
            let revents = descriptors[index + 1].revents
            guard revents != 0 else { continue }
            if revents & Int16(POLLOUT) != 0, lane.flush() < 0 {
                failed.append(lane)
                continue
            }
            if !lane.receive() { failed.append(lane) }
        }
        for lane in failed { fail(lane, "the PostgreSQL connection failed") }
    }

    /// Fails every read waiting on `lane` and closes it.
    private func fail(_ lane: Lane, _ message: String) {
        lanes.removeAll { $0 === lane }
        lane.failAll(PGError(message: message))
    }
}

/// One connection of a ``PGPipelineReader`` in pipeline mode, and what it waits for, in order.
private final class Lane: @unchecked Sendable {
    // Safe to send: made on a connecting thread and handed, under the reader's lock, to the
    // reader's thread, the only one to use it afterwards.
    enum Item {
        case prepare(String)
        case query(PGPipelineReader.Job)
        case sync
    }

    let connection: PGConnection
    var handle: OpaquePointer { connection.handle }
    var socket: Int32 { PQsocket(handle) }
    private var pending: [Item] = []
    private var head = 0
    /// The answer of the statement at `head`, once it came.
    private var answer: Result<PGRows, PGError>?
    private var prepared: [String: String] = [:]
    /// Statements prepared so far, which numbers their names.
    private var preparations = 0
    private let namePrefix = "strata_p" + String(UInt32.random(in: 0...UInt32.max), radix: 36) + "_"
    private(set) var inFlight = 0
    private(set) var wantsWrite = false

    init?(_ conninfo: String) {
        guard let connection = try? PGConnection(conninfo), PQsetnonblocking(connection.handle, 1) == 0,
            PQenterPipelineMode(connection.handle) == 1
        else { return nil }
        self.connection = connection
    }

    /// Queues `job` (its statement prepared first when it is new here) and a sync.
    func send(_ job: PGPipelineReader.Job, prepares: Bool) -> Bool {
        // Reads by key bind text (keys) only; anything else goes the blocking way.
        var copies: [UnsafeMutablePointer<CChar>?] = []
        for parameter in job.parameters {
            guard case .text(let text) = parameter else {
                copies.forEach { free($0) }
                return false
            }
            copies.append(strdup(text))
        }
        defer { copies.forEach { free($0) } }
        let values = copies.map { $0.map { UnsafePointer($0) } }
        let count = Int32(values.count)
        let sent: Bool
        if prepares {
            var name = prepared[job.sql]
            if name == nil {
                let fresh = namePrefix + String(preparations)
                preparations += 1
                guard PQsendPrepare(handle, fresh, job.sql, count, nil) == 1 else { return false }
                pending.append(.prepare(job.sql))
                prepared[job.sql] = fresh
                name = fresh
            }
            sent = PQsendQueryPrepared(handle, name, count, values, nil, nil, 0) == 1
        } else {
            sent = PQsendQueryParams(handle, job.sql, count, nil, values, nil, nil, 0) == 1
        }
        guard sent else { return false }
        pending.append(.query(job))
        inFlight += 1
        guard PQpipelineSync(handle) == 1 else { return false }
        pending.append(.sync)
        return true
    }

    /// Sends what libpq buffered: 0 when all went, 1 when the socket is full, -1 on failure.
    func flush() -> Int32 {
        let result = PQflush(handle)
        wantsWrite = result == 1
        return result
    }

    /// Reads what arrived and completes every statement answered; false when the connection failed.
    func receive() -> Bool {
        guard PQconsumeInput(handle) == 1 else { return false }
        while head < pending.count, PQisBusy(handle) == 0 {
            let result = PQgetResult(handle)
            switch pending[head] {
            case .sync:
                guard let result else { return true }
                defer { PQclear(result) }
                guard PQresultStatus(result) == PGRES_PIPELINE_SYNC else { return false }
                advance()
            case .prepare(let sql):
                guard let result else {
                    advance()
                    continue
                }
                if PQresultStatus(result) != PGRES_COMMAND_OK { prepared[sql] = nil }
                PQclear(result)
            case .query(let job):
                guard let result else {
                    advance()
                    inFlight -= 1
                    let answered = answer ?? .failure(PGError(message: "PostgreSQL sent no result"))
                    answer = nil
                    // A statement gone or whose result changed shape is prepared afresh next time.
                    if case .failure(let error) = answered, PGConnection.isStalePreparation(error) {
                        prepared[job.sql] = nil
                    }
                    job.completion(answered)
                    continue
                }
                defer { PQclear(result) }
                if answer == nil {
                    do throws(PGError) {
                        answer = .success(try PGConnection.read(result, connection: handle))
                    } catch {
                        answer = .failure(error)
                    }
                }
            }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    private func advance() {
        head += 1
        if head == pending.count {
            pending.removeAll(keepingCapacity: true)
            head = 0
        }
    }

    /// Fails every statement not answered yet.
    func failAll(_ error: PGError) {
        for case .query(let job) in pending[head...] { job.completion(.failure(error)) }
        pending.removeAll()
        head = 0
        inFlight = 0
    }
}
