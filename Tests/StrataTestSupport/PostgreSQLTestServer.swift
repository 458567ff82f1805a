import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A throwaway PostgreSQL cluster for the test run: created with `initdb` in a fresh folder,
/// started with `pg_ctl` on a private socket directory (no TCP), stopped when the test process
/// exits. As root, the server binaries run as the `postgres` user (`initdb` and `pg_ctl` refuse
/// root). Each test gets a schema of its own in the one database (``storeURL(_:)``).
public enum PostgreSQLTestServer {
    /// The cluster's folder, socket directory and binaries, or why there is none.
    private static let cluster: Result<Cluster, ClusterError> = {
        do throws(ClusterError) {
            return .success(try Cluster.start())
        } catch {
            return .failure(error)
        }
    }()

    /// Whether a cluster runs (the server binaries exist and it started).
    public static var isAvailable: Bool {
        if case .success = cluster { return true }
        return false
    }

    /// Why PostgreSQL tests are skipped, when they are.
    public static var unavailableReason: String? {
        if case .failure(let error) = cluster { return error.message }
        return nil
    }

    /// A connection URI for a new, empty schema (`schema=` is Strata's own parameter).
    /// - Parameter name: the schema's name; a fresh unique one when nil.
    public static func storeURL(_ name: String? = nil) throws -> URL {
        let cluster = try cluster.get()
        let schema = name ?? "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        return URL(string: "postgresql:///postgres?host=\(cluster.socketDirectory)&user=postgres&schema=\(schema)")!
    }

    /// The libpq connection URI of the cluster's `postgres` database.
    public static func databaseURI() throws -> String {
        let cluster = try cluster.get()
        return "postgresql:///postgres?host=\(cluster.socketDirectory)&user=postgres"
    }

    /// Runs `psql` with `sql` against the cluster and returns its output (unaligned, tuples only).
    @discardableResult
    public static func psql(_ sql: String) throws -> String {
        let cluster = try cluster.get()
        return try cluster.run(
            "psql",
            ["-X", "-q", "-A", "-t", "-h", cluster.socketDirectory, "-U", "postgres", "-d", "postgres", "-c", sql]
        )
    }

    struct ClusterError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    struct Cluster: Sendable {
        let binaries: String
        let dataDirectory: String
        let socketDirectory: String
        let asPostgresUser: Bool

        static func start() throws(ClusterError) -> Cluster {
            let root = "/usr/lib/postgresql"
            let override = ProcessInfo.processInfo.environment["STRATA_PG_BIN"]
            let versions =
                ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap { Int($0) }.sorted()
            guard
                let binaries = override
                    ?? versions.last.map({ "\(root)/\($0)/bin" }),
                FileManager.default.isExecutableFile(atPath: binaries + "/initdb")
            else {
                throw ClusterError(
                    message: "no PostgreSQL server binaries (initdb) under \(root): install Debian's postgresql package"
                )
            }
            let base = "/tmp/strata-pg-\(getpid())-\(UUID().uuidString.prefix(8))"
            let cluster = Cluster(
                binaries: binaries, dataDirectory: base + "/data", socketDirectory: base + "/socket",
                asPostgresUser: getuid() == 0)
            do {
                try cluster.run("mkdir", ["-p", cluster.dataDirectory, cluster.socketDirectory], tool: false)
                try cluster.run(
                    "initdb",
                    [
                        "-D", cluster.dataDirectory, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C",
                        "--no-sync",
                    ])
                let settings =
                    "-k \(cluster.socketDirectory) -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
                    + "-c full_page_writes=off -c max_connections=300 -c shared_buffers=64MB"
                try cluster.run(
                    "pg_ctl",
                    [
                        "-D", cluster.dataDirectory, "-o", settings, "-l", base + "/server.log", "-w", "-t", "60",
                        "start",
                    ])
            } catch {
                throw ClusterError(message: "cannot start a PostgreSQL cluster: \(error)")
            }
            started.withLock { $0 = cluster }
            atexit {
                guard let cluster = PostgreSQLTestServer.started.withLock({ $0 }) else { return }
                _ = try? cluster.run("pg_ctl", ["-D", cluster.dataDirectory, "-m", "immediate", "-w", "stop"])
                let base = (cluster.dataDirectory as NSString).deletingLastPathComponent
                try? FileManager.default.removeItem(atPath: base)
            }
            return cluster
        }

        /// Runs a server binary (or, with `tool: false`, a system command), as `postgres` when root.
        @discardableResult
        func run(_ command: String, _ arguments: [String], tool: Bool = true) throws -> String {
            let path = tool ? "\(binaries)/\(command)" : "/usr/bin/env"
            let executable: String
            var argv: [String]
            if asPostgresUser {
                executable = "/usr/sbin/runuser"
                argv = ["runuser", "-u", "postgres", "--", path] + (tool ? [] : [command]) + arguments
            } else {
                executable = path
                argv = [path] + (tool ? [] : [command]) + arguments
            }
            // Output to a file, not a pipe: the server `pg_ctl` starts would hold a pipe open. Spawned
            // and waited for directly, so it works from any thread of the test run.
            let outputPath = "/tmp/strata-pg-output-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: outputPath) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
            var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
            defer { for argument in cArguments { free(argument) } }
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, executable, &actions, nil, &cArguments, environ)
            guard spawned == 0 else { throw ClusterError(message: "cannot run \(command): error \(spawned)") }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            guard exitStatus == 0 else {
                throw ClusterError(message: "\(command) failed (\(exitStatus)): \(text.suffix(2000))")
            }
            return text
        }
    }

    private static let started = StartedCluster()
}

/// The started cluster, for the exit hook (a C function pointer captures nothing).
final class StartedCluster: @unchecked Sendable {
    // Safe to share: guarded by `lock`.
    private let lock = NSLock()
    private var value: PostgreSQLTestServer.Cluster?

    func withLock<T>(_ body: (inout PostgreSQLTestServer.Cluster?) -> T) -> T {
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
