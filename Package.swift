// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Strata",
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "StrataHTTP", targets: ["StrataHTTP"]),
        .library(name: "StrataServer", targets: ["StrataServer"]),
        .library(name: "StrataSync", targets: ["StrataSync"]),
        .executable(name: "strata", targets: ["strata"]),
        .executable(name: "strata-bench", targets: ["strata-bench"]),
        .library(name: "StrataCodegen", targets: ["StrataCodegen"]),
        .executable(name: "strata-codegen", targets: ["strata-codegen"]),
        .plugin(name: "StrataModelPlugin", targets: ["StrataModelPlugin"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // Persistence: models, stores, coordinator, contexts. No HTTP.
        // `_FoundationICU` is the toolchain's ICU, which Foundation already links; `MATCHES`
        // calls its regular expressions directly for their step limit.
        .target(
            name: "Strata", dependencies: ["CSQLite", "CLibPQ"], linkerSettings: [.linkedLibrary("_FoundationICU")]),
        // The libmicrohttpd wrapper: requests in, responses out. Imports no Strata module.
        .target(name: "StrataHTTP", dependencies: ["CMicroHTTPD", "CTLSCredentials"]),
        // The TLS certificate libmicrohttpd presents, through GnuTLS (libmicrohttpd-dev brings
        // libgnutls28-dev), swappable while serving.
        .target(name: "CTLSCredentials", linkerSettings: [.linkedLibrary("gnutls")]),
        // The vendored Swagger UI build that `/docs` serves, embedded in the binary by the assembler
        // (`.incbin`, which finds the files through the header search path).
        .target(name: "CSwaggerUI", exclude: ["swagger-ui"], cSettings: [.headerSearchPath("swagger-ui")]),
        // REST, OpenAPI and the server runtime over the two.
        .target(name: "StrataServer", dependencies: ["Strata", "StrataHTTP", "CSwaggerUI"]),
        // Fuzz targets: libFuzzer's when built with -sanitize=fuzzer -DFUZZING (scripts/fuzz), a
        // replay of saved inputs otherwise.
        .target(name: "CFuzzDriver"),
        .executableTarget(
            name: "strata-fuzz", dependencies: ["Strata", "StrataHTTP", "StrataServer", "CFuzzDriver"],
            path: "Sources/StrataFuzz"),
        // libmicrohttpd alone answering a constant body: the ceiling `strata-bench` compares with.
        .executableTarget(
            name: "strata-ceiling", path: "Sources/StrataCeiling", linkerSettings: [.linkedLibrary("microhttpd")]),
        // A local replica of a server's objects that pulls its change feed and pushes local saves.
        .target(name: "StrataSync", dependencies: ["Strata"]),
        // A throwaway PostgreSQL cluster for the test suites and `strata-bench`.
        .target(name: "StrataPGCluster"),
        // What the two command-line executables share: the option table that parses each
        // subcommand's environment twins and arguments and renders its --help, and loopback sockets.
        .target(name: "StrataCLI"),
        // The command line that ships: serve, health, model, openapi, diagram, inspect, migrate,
        // split, import. It links no benchmark code and no cluster starter.
        .executableTarget(
            name: "strata",
            dependencies: ["Strata", "StrataHTTP", "StrataServer", "StrataCLI", "StrataSync", "StrataCodegen"]),
        // Typed Swift from a model: the generator `strata generate swift` and the build-tool plugin run.
        .target(name: "StrataCodegen", dependencies: ["Strata", "StrataCLI"]),
        // The generator alone, for the build-tool plugin: `strata-codegen --model PATH --output DIR`.
        .executableTarget(name: "strata-codegen", dependencies: ["StrataCodegen"]),
        // The build-tool plugin: runs strata-codegen for every model (`.xcdatamodel`,
        // `.xcdatamodeld`, `.strata.json`) in the sources of a target that applies it.
        .plugin(name: "StrataModelPlugin", capability: .buildTool(), dependencies: ["strata-codegen"]),
        // The benchmark: wrk scripts, /proc readers, raw SQLite and libpq baselines, scratch clusters.
        // It runs strata (the scale scenarios' servers) and strata-ceiling from beside itself: as
        // dependencies they are built with it, their code not linked into it.
        .executableTarget(
            name: "strata-bench",
            dependencies: [
                "Strata", "StrataServer", "StrataCLI", "StrataPGCluster", "CSQLite", "CLibPQ", "strata",
                "strata-ceiling",
            ],
            path: "Sources/StrataBench"),
        // What the test suites share: temporary folders, the live-server fixture, test clients.
        .target(
            name: "StrataTestSupport", dependencies: ["Strata", "StrataServer", "StrataPGCluster"],
            path: "Tests/StrataTestSupport"),
        .testTarget(name: "StrataTests", dependencies: ["Strata", "StrataTestSupport"]),
        .testTarget(name: "StrataCLITests", dependencies: ["StrataCLI"]),
        .testTarget(name: "StrataCodegenTests", dependencies: ["StrataCodegen", "Strata", "StrataTestSupport"]),
        // The typed API over the example model: Generated/ holds what the generator makes of
        // Examples/Library.xcdatamodel (a test keeps it equal to the generator's output).
        .testTarget(name: "StrataTypedTests", dependencies: ["Strata", "StrataCodegen", "StrataTestSupport"]),
        .testTarget(
            name: "StrataSyncTests", dependencies: ["StrataSync", "StrataServer", "Strata", "StrataTestSupport"]),
        .testTarget(
            name: "StrataServerTests", dependencies: ["StrataServer", "StrataHTTP", "Strata", "StrataTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// Plugin targets take no Swift settings.
for target in package.targets where target.type != .system && target.type != .plugin {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
