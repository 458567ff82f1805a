// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Strata",
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "StrataServer", targets: ["StrataServer"]),
        .executable(name: "strata", targets: ["strata"]),
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
        .target(name: "Strata", dependencies: ["CSQLite"]),
        .target(name: "StrataServer", dependencies: ["Strata", "CMicroHTTPD"]),
        .executableTarget(name: "strata", dependencies: ["Strata", "StrataServer", "CSQLite"]),
        .testTarget(name: "StrataTests", dependencies: ["Strata"]),
        .testTarget(name: "StrataServerTests", dependencies: ["StrataServer", "Strata"]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
