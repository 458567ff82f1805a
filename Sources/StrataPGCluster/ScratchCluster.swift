import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A throwaway PostgreSQL cluster: created with `initdb` in a fresh folder under `/tmp`, started
/// with `pg_ctl` on a private socket directory (no TCP), removed by ``stop()``. As root, the server
/// binaries run as the `postgres` user (`initdb` and `pg_ctl` refuse root). The test suites and
/// `strata-bench` use it; nothing Strata ships depends on it.
public struct ScratchCluster: Sendable {
    /// Why a cluster could not be started.
    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The folder of the server binaries (`initdb`, `pg_ctl`, `psql`).
    public let binaries: String
    public let dataDirectory: String
    public let socketDirectory: String
    let asPostgresUser: Bool

    /// The libpq connection URI of the cluster's `postgres` database.
    public var databaseURI: String { "postgresql:///postgres?host=\(socketDirectory)&user=postgres" }

    /// The newest server binaries Debian installed (or `STRATA_PG_BIN`), or why there are none.
    public static func serverBinaries() throws(Failure) -> String {
        let root = "/usr/lib/postgresql"
        let override = ProcessInfo.processInfo.environment["STRATA_PG_BIN"]
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap { Int($0) }
            .sorted()
        guard let binaries = override ?? versions.last.map({ "\(root)/\($0)/bin" }),
            FileManager.default.isExecutableFile(atPath: binaries + "/initdb")
        else {
            throw Failure(
                message: "no PostgreSQL server binaries (initdb) under \(root): install Debian's postgresql package")
        }
        return binaries
    }

    /// Creates and starts a cluster.
    /// - Parameter durable: PostgreSQL's defaults (`fsync`, `synchronous_commit`), as a benchmark
    ///   needs; when false, both are off, which is all a test needs and much faster.
    public static func start(durable: Bool = false) throws(Failure) -> ScratchCluster {
        let binaries = try serverBinaries()
        let base = "/tmp/strata-pg-\(getpid())-\(UUID().uuidString.prefix(8))"
        let cluster = ScratchCluster(
            binaries: binaries, dataDirectory: base + "/data", socketDirectory: base + "/socket",
            asPostgresUser: getuid() == 0)
        do {
            try cluster.run("mkdir", ["-p", cluster.dataDirectory, cluster.socketDirectory], tool: false)
            try cluster.run(
                "initdb",
                ["-D", cluster.dataDirectory, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"])
            var settings = "-k \(cluster.socketDirectory) -c listen_addresses='' -c max_connections=300"
            settings += " -c shared_buffers=64MB"
            if !durable { settings += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off" }
            try cluster.run(
                "pg_ctl",
                ["-D", cluster.dataDirectory, "-o", settings, "-l", base + "/server.log", "-w", "-t", "60", "start"])
        } catch {
            cluster.stop()
            throw Failure(message: "cannot start a PostgreSQL cluster: \(error)")
        }
        return cluster
    }

    /// Stops the server at once and removes its folder.
    public func stop() {
        _ = try? run("pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: (dataDirectory as NSString).deletingLastPathComponent)
    }

    /// Runs `psql` with `sql` against the `postgres` database; returns its output (unaligned,
    /// tuples only).
    @discardableResult
    public func psql(_ sql: String) throws(Failure) -> String {
        try run(
            "psql", ["-X", "-q", "-A", "-t", "-h", socketDirectory, "-U", "postgres", "-d", "postgres", "-c", sql])
    }

    /// Runs a server binary (or, with `tool: false`, a system command), as `postgres` when root.
    @discardableResult
    func run(_ command: String, _ arguments: [String], tool: Bool = true) throws(Failure) -> String {
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
        // and waited for directly (Foundation's Process hung waiting on `pg_ctl`), so it works from
        // any thread.
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
        guard spawned == 0 else { throw Failure(message: "cannot run \(command): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        guard exitStatus == 0 else {
            throw Failure(message: "\(command) failed (\(exitStatus)): \(text.suffix(2000))")
        }
        return text
    }
}
