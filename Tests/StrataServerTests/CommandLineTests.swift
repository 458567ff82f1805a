import Foundation
import Testing

/// The `strata` command line as a user meets it: every subcommand's help, the environment twins
/// `strata serve --help` documents, and the benchmark's own executable.
@Suite struct CommandLineTests {
    /// Runs `strata` with `arguments` and extra environment variables; its status, stdout and stderr.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (
        status: Int32, output: String, error: String
    ) {
        let process = Process()
        process.executableURL = try strataBinary()
        process.arguments = arguments
        var inherited = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("STRATA_") }
        for (key, value) in environment { inherited[key] = value }
        process.environment = inherited
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// Every environment variable `strata serve` reads.
    static let serveTwins = [
        "STRATA_HOST", "STRATA_PORT", "STRATA_DATA_DIR", "STRATA_MODEL", "STRATA_STORE", "STRATA_MAX_BODY_BYTES",
        "STRATA_MAX_TARGET_BYTES", "STRATA_MAX_HEADER_BYTES", "STRATA_QUERY_BUDGET", "STRATA_RATE_LIMIT",
        "STRATA_IDEMPOTENCY_HOURS", "STRATA_MAX_CONNECTIONS_PER_IP", "STRATA_IDLE_TIMEOUT", "STRATA_ASSETS_DIR",
        "STRATA_LIMITS", "STRATA_REQUEST_TIMEOUT", "STRATA_MAX_CONNECTIONS", "STRATA_READ_CACHE",
        "STRATA_SQLITE_MMAP", "STRATA_LOG_FORMAT", "STRATA_DURABILITY", "STRATA_MIGRATE", "STRATA_HISTORY",
        "STRATA_HISTORY_RETENTION", "STRATA_HISTORY_MAX_CHANGES",
        "STRATA_TOKENS_FILE",
        "STRATA_ALLOW_ANONYMOUS", "STRATA_PRIVATE_OPENAPI", "STRATA_ENTITY_ACCESS", "STRATA_TLS_CERT",
        "STRATA_TLS_KEY", "STRATA_CORS_ORIGINS",
    ]

    @Test func everySubcommandPrintsItsHelp() throws {
        let usage = try Self.run(["help"])
        #expect(usage.status == 0)
        #expect(usage.output.split(separator: "\n").allSatisfy { $0.count <= 100 }, "\(usage.output)")
        for command in [
            "model", "serve", "health", "openapi", "diagram", "inspect", "migrate", "split", "import", "export",
            "generate",
        ] {
            #expect(usage.output.contains("\n  \(command) "), "\(command)")
            let help = try Self.run([command, "--help"])
            #expect(help.status == 0, "\(command): \(help.error)")
            #expect(help.output.hasPrefix("usage: strata \(command) "), "\(command): \(help.output)")
            #expect(help.output.contains("  --help "), "\(command)")
        }
    }

    @Test func serveHelpNamesEveryEnvironmentTwin() throws {
        let help = try Self.run(["serve", "--help"]).output
        for twin in Self.serveTwins {
            #expect(help.contains(twin), "\(twin)")
        }
        #expect(help.split(separator: "\n").allSatisfy { $0.count <= 100 })
    }

    @Test func aTwinsBadValueNamesTheVariable() throws {
        let port = try Self.run(["serve"], environment: ["STRATA_PORT": "eighty"])
        #expect(port.status == 64)
        #expect(port.error.contains("--port must be a number from 0 to 65535, not 'eighty' (from STRATA_PORT)"))
        let migrate = try Self.run(["serve", "--port", "0"], environment: ["STRATA_MIGRATE": "maybe"])
        #expect(migrate.status == 64)
        #expect(migrate.error.contains("--migrate is true or false, not 'maybe' (from STRATA_MIGRATE)"))
        let health = try Self.run(["health"], environment: ["STRATA_PORT": "-1"])
        #expect(health.status == 64)
        #expect(health.error.contains("(from STRATA_PORT)"))
    }

    @Test func theBenchmarkIsAnExecutableOfItsOwn() throws {
        let bench = try Self.run(["bench", "--quick"])
        #expect(bench.status == 64)
        #expect(bench.error.contains("strata-bench"))
        #expect(!(try Self.run(["help"]).output.contains("  bench ")))
    }
}
