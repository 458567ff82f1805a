import Foundation
import StrataPGCluster

#if canImport(Glibc)
    import Glibc
#endif

/// The test run's throwaway PostgreSQL cluster (``ScratchCluster``, fsync off), started on first
/// use and stopped when the test process exits. Each test gets a schema of its own in the one
/// database (``storeURL(_:)``).
public enum PostgreSQLTestServer {
    /// The cluster, or why there is none.
    private static let cluster: Result<ScratchCluster, ScratchCluster.Failure> = {
        do throws(ScratchCluster.Failure) {
            let cluster = try ScratchCluster.start()
            started.withLock { $0 = cluster }
            atexit { PostgreSQLTestServer.started.withLock({ $0 })?.stop() }
            return .success(cluster)
        } catch {
            return .failure(error)
        }
    }()

    /// A running cluster, or what is missing (see ``Requirement``: under `CI=true` a cluster that
    /// cannot start fails the tests that need it).
    public static let requirement = Requirement(
        "a PostgreSQL cluster",
        missing: {
            guard case .failure(let error) = cluster else { return nil }
            return "\(error.message) (or name a folder of PostgreSQL server binaries in STRATA_PG_BIN)"
        }())

    /// A connection URI for a new, empty schema (`schema=` is Strata's own parameter).
    /// - Parameter name: the schema's name; a fresh unique one when nil.
    public static func storeURL(_ name: String? = nil) throws -> URL {
        let cluster = try running()
        let schema = name ?? "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        return URL(string: "\(cluster.databaseURI)&schema=\(schema)")!
    }

    /// The libpq connection URI of the cluster's `postgres` database.
    public static func databaseURI() throws -> String {
        try running().databaseURI
    }

    /// Runs `psql` with `sql` against the cluster and returns its output (unaligned, tuples only).
    @discardableResult
    public static func psql(_ sql: String) throws -> String {
        try running().psql(sql)
    }

    /// The cluster, or the requirement's error saying why there is none.
    private static func running() throws -> ScratchCluster {
        try requirement.check()
        return try cluster.get()
    }

    private static let started = StartedCluster()
}

/// The started cluster, for the exit hook (a C function pointer captures nothing).
final class StartedCluster: @unchecked Sendable {
    // Safe to share: guarded by `lock`.
    private let lock = NSLock()
    private var value: ScratchCluster?

    func withLock<T>(_ body: (inout ScratchCluster?) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

extension TemporaryDirectory {
    /// A PostgreSQL store URL belonging to this folder: the same `name` gives the same schema
    /// (so a test can reopen a store), another folder another schema.
    public func postgreSQLURL(name: String = "store") throws -> URL {
        try PostgreSQLTestServer.storeURL(postgreSQLSchema(name: name))
    }

    /// The schema of ``postgreSQLURL(name:)``.
    public func postgreSQLSchema(name: String = "store") -> String {
        let folder = url.lastPathComponent.replacingOccurrences(of: "strata-tests-", with: "")
        let token = folder.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        let suffix = name.lowercased().filter { $0.isLetter || $0.isNumber }
        return "t_\(token)_\(suffix)"
    }
}

/// A PostgreSQL cluster of one test's own, for what would disturb the shared one (server settings
/// changed with `ALTER SYSTEM`, backends terminated); stopped when the value goes.
public final class PrivatePostgreSQLCluster: Sendable {
    private let cluster: ScratchCluster

    /// Starts a cluster (see ``PostgreSQLTestServer/requirement`` for when one can).
    public init() throws {
        try PostgreSQLTestServer.requirement.check()
        cluster = try ScratchCluster.start()
    }

    deinit { cluster.stop() }

    /// A connection URI for schema `schema` of the cluster's `postgres` database, with `extra`
    /// query parameters (`application_name=…`) added.
    public func storeURL(schema: String = "strata", extra: String = "") -> URL {
        URL(string: "\(cluster.databaseURI)&schema=\(schema)\(extra.isEmpty ? "" : "&" + extra)")!
    }

    /// Runs `psql` with `sql`; returns its output (unaligned, tuples only).
    @discardableResult
    public func psql(_ sql: String) throws -> String { try cluster.psql(sql) }

    /// Changes a server setting for every session (`ALTER SYSTEM` and a reload); nil resets it.
    public func set(_ name: String, _ value: String?) throws {
        try psql(value.map { "ALTER SYSTEM SET \(name) = '\($0)'" } ?? "ALTER SYSTEM RESET \(name)")
        try psql("SELECT pg_reload_conf()")
    }
}
