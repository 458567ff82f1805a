import Foundation
import Strata
import StrataTestSupport
import Testing

/// The change feed across two servers over one PostgreSQL database: history lives in the
/// database, so a subscriber on one server gets what was written through the other.
@Suite(
    .serialized,
    .enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
struct SharedFeedTests {
    @Test func aSubscriberOnOneServerGetsTheWritesMadeOnTheOtherInOrder() throws {
        let folder = TemporaryDirectory()
        let (a, b, one, two) = try SharedDatabaseTests.twoServers(in: folder)
        let start = try #require(try two.send("GET", "/authors").header("Strata-History-Token"))
        let port = try #require(b.port())

        // Four writers on A; each acknowledged insert is timed from its 201.
        let acknowledged = Locked<[Int64: Date]>([:])
        let writes = 4 * 40
        let arrivals = Locked<[Int64: Date]>([:])
        let events = Locked<[ServerEvent]>([])
        onThreads(5) { index in
            guard index < 4 else {
                // The subscriber (from the token before any write) reads until every write has
                // arrived, or its reads time out.
                guard
                    let stream = try? EventStreamClient(
                        port: port, target: "/_changes?entities=Author", lastEventID: start),
                    stream.status == 200
                else { return }
                defer { stream.close() }
                while arrivals.current.count < writes, let event = try? stream.next() {
                    let change = event.json.objectValue ?? [:]
                    events.withLock { $0.append(event) }
                    if change["op"] == .string("insert"), let id = change["_id"]?.doubleValue {
                        arrivals.withLock { $0[Int64(id)] = Date() }
                    }
                }
                return
            }
            for item in 0..<(writes / 4) {
                guard let response = try? one.send("POST", "/authors", json: #"{"name": "w\#(index)-\#(item)"}"#),
                    response.status == 201, let id = response.json.objectValue?["_id"]?.doubleValue
                else { continue }
                acknowledged.withLock { $0[Int64(id)] = Date() }
            }
        }
        #expect(acknowledged.current.count == writes)
        #expect(Set(arrivals.current.keys) == Set(acknowledged.current.keys), "every acknowledged insert arrived")
        // In commit order: the tokens of the events never go back, and no insert arrives twice.
        let tokens = events.current.compactMap { $0.id.flatMap(HistoryToken.init) }
        #expect(zip(tokens, tokens.dropFirst()).allSatisfy { $1.covers($0) && $1 != $0 })
        let inserts = events.current.filter { $0.json.objectValue?["op"] == .string("insert") }
        #expect(inserts.count == writes)
        let delays = acknowledged.current.compactMap { id, acked in
            arrivals.current[id].map { max(0, $0.timeIntervalSince(acked)) }
        }.sorted()
        if !delays.isEmpty {
            let p99 = delays[min(delays.count - 1, delays.count * 99 / 100)]
            print(
                "feed across servers: \(delays.count) inserts, commit on A to event on B p50 \(delays[delays.count / 2]) s, p99 \(p99) s"
            )
        }
        for process in [a, b] {
            kill(process.process.processIdentifier, SIGINT)
            #expect(process.waitForExit() == 0, "\(process.stderr.current.suffix(2000))")
        }
    }
}
