import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// A PostgreSQL store when its server goes away under it: a commit whose answer is lost is
/// resolved (found committed, or found not and refused), connections to a server that takes no
/// writes are replaced, and several hosts are named as libpq names them.
@Suite struct PostgreSQLRecoveryTests {
    @Test func connectionURIsListingSeveralHostsInTheirAuthority() throws {
        let url = try #require(
            PostgreSQLStore.connectionURL(
                "postgresql://app:secret@10.0.0.1:5432,db2.example.org:5433,[::1]/shop?target_session_attrs=read-write")
        )
        #expect(
            url.absoluteString
                == "postgresql://app:secret@/shop?host=10.0.0.1,db2.example.org,::1&port=5432,5433,&target_session_attrs=read-write"
        )
        #expect(
            PostgreSQLStore.connectionURL("postgres://h1,h2/db")?.absoluteString == "postgres:///db?host=h1,h2")
        // One host, or hosts already in the query: kept as written.
        let single = "postgresql://app@db.example.org:5432/shop?schema=s"
        #expect(PostgreSQLStore.connectionURL(single)?.absoluteString == single)
        let query = "postgresql://app@/shop?host=a,b&port=1,2"
        #expect(PostgreSQLStore.connectionURL(query)?.absoluteString == query)
        #expect(PostgreSQLStore.connectionURL("postgresql://a:5432,:5433/db") == nil)
        #expect(PostgreSQLStore.connectionURL("postgresql://a:x,b:5433/db") == nil)
        #expect(PostgreSQLStore.connectionURL("mysql://a,b/db") == nil)
    }

    /// The pid of the one backend waiting on `event` (`SyncRep`, `PgSleep`).
    static func backend(waitingOn event: String, in cluster: PrivatePostgreSQLCluster) throws -> String {
        var pid = ""
        try waitUntil(seconds: 30) {
            pid = try cluster.psql(
                "SELECT pid FROM pg_stat_activity WHERE wait_event = '\(event)' AND backend_type = 'client backend'"
            ).trimmingCharacters(in: .whitespacesAndNewlines)
            return !pid.isEmpty
        }
        return pid
    }

    /// Saves `changes` on a thread of its own; the result once it returns.
    static func saveInBackground(_ store: PostgreSQLStore, _ changes: StoreChanges) -> Locked<
        Result<Void, StoreError>?
    > {
        let outcome = Locked<Result<Void, StoreError>?>(nil)
        Thread {
            do throws(StoreError) {
                _ = try store.save(changes)
                outcome.withLock { $0 = .success(()) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
        }.start()
        return outcome
    }

    static func tags(_ store: PostgreSQLStore) throws -> [String] {
        try store.fetch(FetchRequest(entityName: "Tag")).compactMap { row -> String? in
            if case .string(let name) = row[attribute: "name"] { return name }
            return nil
        }.sorted()
    }

    /// The server commits, then its connection is cut while the commit waits for a synchronous
    /// standby (which never comes): the client saw no answer, yet the save happened, and is
    /// reported as done, once.
    @Test(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
    func aCommitWhoseAnswerWasLostIsFoundCommitted() throws {
        let cluster = try PrivatePostgreSQLCluster()
        let store = try PostgreSQLStore(
            model: conformanceModel, configuration: "Main",
            url: cluster.storeURL(extra: "options=-c%20synchronous_commit%3Don"))
        defer { store.close() }
        // Its key taken first: taking one writes too, and would wait for the standby as well.
        let row = try newRow(store, "Tag", ["name": .string("kept")])
        try cluster.set("synchronous_standby_names", "nobody")
        let outcome = Self.saveInBackground(store, StoreChanges(inserts: [row]))
        let pid = try Self.backend(waitingOn: "SyncRep", in: cluster)
        try cluster.psql("SELECT pg_terminate_backend(\(pid))")
        try cluster.set("synchronous_standby_names", nil)
        try waitUntil(seconds: 60) { outcome.withLock { $0 } != nil }
        if case .failure(let error)? = outcome.withLock({ $0 }) { Issue.record("the save failed: \(error)") }
        #expect(try Self.tags(store) == ["kept"])
        // The store goes on on new connections.
        _ = try store.save(StoreChanges(inserts: [try newRow(store, "Tag", ["name": .string("next")])]))
        #expect(try Self.tags(store) == ["kept", "next"])
    }

    /// The connection is cut while the commit runs a deferred trigger: the transaction did not
    /// commit, the save is refused as unavailable (a 503 over HTTP), and nothing of it is stored.
    @Test(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
    func aCommitCutShortIsFoundNotCommitted() throws {
        let cluster = try PrivatePostgreSQLCluster()
        let store = try PostgreSQLStore(model: conformanceModel, configuration: "Main", url: cluster.storeURL())
        defer { store.close() }
        try cluster.psql(
            "CREATE FUNCTION strata.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NULL; END $$"
        )
        try cluster.psql(
            #"CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON strata."Tag" DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION strata.slow()"#
        )
        let outcome = Self.saveInBackground(
            store, StoreChanges(inserts: [try newRow(store, "Tag", ["name": .string("lost")])]))
        let pid = try Self.backend(waitingOn: "PgSleep", in: cluster)
        try cluster.psql("SELECT pg_terminate_backend(\(pid))")
        try waitUntil(seconds: 60) { outcome.withLock { $0 } != nil }
        guard case .failure(let error)? = outcome.withLock({ $0 }) else {
            Issue.record("a save whose commit did not happen was reported done")
            return
        }
        #expect(error.code == .unavailable, "\(error)")
        try cluster.psql(#"DROP TRIGGER slow ON strata."Tag""#)
        #expect(try Self.tags(store) == [])
        _ = try store.save(StoreChanges(inserts: [try newRow(store, "Tag", ["name": .string("again")])]))
        #expect(try Self.tags(store) == ["again"])
    }

    /// Every session of the server turns read-only (a primary demoted under the pool): saves are
    /// refused as unavailable, not failed, the store says it cannot take writes, and once the
    /// server takes writes again so does the store, without being reopened.
    @Test(.enabled(if: PostgreSQLTestServer.requirement.runs, "\(PostgreSQLTestServer.requirement.skipComment)"))
    func connectionsToAServerThatTakesNoWritesAreReplaced() throws {
        let cluster = try PrivatePostgreSQLCluster()
        let store = try PostgreSQLStore(model: conformanceModel, configuration: "Main", url: cluster.storeURL())
        defer { store.close() }
        _ = try store.save(StoreChanges(inserts: [try newRow(store, "Tag", ["name": .string("before")])]))
        try store.checkWritable()
        try cluster.set("default_transaction_read_only", "on")
        var refusal: StoreError?
        let during = try newRow(store, "Tag", ["name": .string("during")])
        try waitUntil(seconds: 30) {
            do throws(StoreError) {
                _ = try store.save(StoreChanges(inserts: [during]))
                return false
            } catch {
                refusal = error
                return true
            }
        }
        #expect(refusal?.code == .unavailable, "\(String(describing: refusal))")
        #expect(try Self.tags(store).contains("before"))
        try waitUntil(seconds: 10) {
            do throws(StoreError) {
                try store.checkWritable()
                return false
            } catch {
                return error.code == .unavailable
            }
        }
        try cluster.set("default_transaction_read_only", nil)
        let after = try newRow(store, "Tag", ["name": .string("after")])
        try waitUntil(seconds: 30) { (try? store.save(StoreChanges(inserts: [after]))) != nil }
        try waitUntil(seconds: 10) { (try? store.checkWritable()) != nil }
        #expect(try Self.tags(store).contains("after"))
    }
}
