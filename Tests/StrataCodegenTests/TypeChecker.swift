import Foundation
import StrataTestSupport

/// `swiftc -emit-sil -swift-version 6 -warnings-as-errors` over generated files, against the
/// Strata module of the build that runs the tests: the module folder beside the test executable
/// (`.build/<triple>/debug/Modules`), else the repository's `.build/debug/Modules`.
///
/// `-typecheck` and then the mandatory SIL passes, without writing code: Swift 6 reports a value
/// sent to another task while still in use (region-based isolation) only in those passes, which
/// `-typecheck` alone stops before.
struct TypeChecker: Sendable {
    /// What a run printed and whether it passed.
    struct Outcome: Sendable {
        var succeeded: Bool
        var output: String
    }

    /// The folder holding `Strata.swiftmodule`.
    let modules: URL
    /// The arguments every run passes besides the files.
    let arguments: [String]

    /// The type checker of this build.
    /// - Throws: naming every place looked in, when no built Strata module is found.
    static func forThisBuild() throws -> TypeChecker {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let candidates = [
            executable.deletingLastPathComponent().appendingPathComponent("Modules"),
            CoreDataMaterial.repositoryRoot.appendingPathComponent(".build/debug/Modules"),
        ]
        guard
            let modules = candidates.first(where: {
                FileManager.default.fileExists(atPath: $0.appendingPathComponent("Strata.swiftmodule").path)
            })
        else {
            throw TypeCheckerError(
                description: "no built Strata module (Strata.swiftmodule) in "
                    + candidates.map(\.path).joined(separator: " or ")
                    + "; build first with swift build --build-tests")
        }
        let sources = CoreDataMaterial.repositoryRoot.appendingPathComponent("Sources")
        var arguments = [
            "-emit-sil", "-wmo", "-o", "/dev/null", "-module-name", "Generated", "-swift-version", "6",
            "-warnings-as-errors", "-I", modules.path,
        ]
        // The C modules Strata imports: the package's module maps and the headers they include.
        for module in ["CSQLite", "CLibPQ"] {
            arguments += ["-Xcc", "-fmodule-map-file=\(sources.path)/\(module)/module.modulemap"]
        }
        let includes = try run("pkg-config", ["--cflags-only-I", "libpq", "sqlite3"])
        guard includes.succeeded else {
            throw TypeCheckerError(description: "pkg-config --cflags-only-I libpq sqlite3 failed: \(includes.output)")
        }
        for flag in includes.output.split(whereSeparator: \.isWhitespace) { arguments += ["-Xcc", String(flag)] }
        return TypeChecker(modules: modules, arguments: arguments)
    }

    /// Type-checks `files` together as one module.
    func check(_ files: [URL]) throws -> Outcome {
        try Self.run("swiftc", arguments + files.map(\.path))
    }

    /// Runs `tool` (found on the PATH) and collects what it prints on both streams.
    static func run(_ tool: String, _ arguments: [String]) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(succeeded: process.terminationStatus == 0, output: String(decoding: data, as: UTF8.self))
    }
}

/// The type checker could not be set up.
struct TypeCheckerError: Error, CustomStringConvertible {
    var description: String
}
