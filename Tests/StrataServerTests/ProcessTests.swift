import Foundation
import StrataHTTP
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// The `strata` binary that `swift test` built next to the test bundle.
func strataBinary() throws -> URL {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    for candidate in [".build/debug/strata", ".build/release/strata"] {
        let url = root.appendingPathComponent(candidate)
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    throw TestClientError("the strata binary is not built; run swift build")
}

/// A `strata` process with its stderr collected.
final class StrataProcess: @unchecked Sendable {
    // Safe to share: `stderr` and `drained` are only touched under their locks.
    let process = Process()
    let stderr = Locked("")
    /// Set once the process exited and what it wrote was read to the last byte; held while stderr
    /// is read, so that its pieces are appended in order.
    private let drained = Locked(false)
    private let stderrPipe = Pipe()

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = try strataBinary()
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
        let output = stderr
        let drained = drained
        stderrPipe.fileHandleForReading.readabilityHandler = { handle in
            drained.withLock { done in
                guard !done else { return }
                let data = handle.availableData
                if data.isEmpty {
                    handle.readabilityHandler = nil  // its end: every writer closed it
                } else {
                    output.withLock { $0 += String(decoding: data, as: UTF8.self) }
                }
            }
        }
        try process.run()
    }

    /// Waits for `text` on stderr (all of it, once the process has exited).
    func waitFor(_ text: String, seconds: Double = 20) -> Bool {
        _ = eventually(within: seconds, interval: 0.02) { stderr.current.contains(text) || !process.isRunning }
        if !process.isRunning { drain() }
        return stderr.current.contains(text)
    }

    /// Reads what the exited process left in its stderr pipe. Not until the pipe's end: a process
    /// started meanwhile may have inherited its writing end and keep it open.
    private func drain() {
        let fd = stderrPipe.fileHandleForReading.fileDescriptor
        drained.withLock { done in
            guard !done else { return }
            done = true
            var buffer = [UInt8](repeating: 0, count: 65536)
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&ready, 1, 0) > 0, ready.revents & Int16(POLLIN) != 0 {
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { break }
                stderr.withLock { $0 += String(decoding: buffer[..<count], as: UTF8.self) }
            }
        }
        stderrPipe.fileHandleForReading.readabilityHandler = nil
    }

    /// The port from the "on http://host:port" start-up line.
    func port() -> UInt16? {
        guard waitFor(" on http") else { return nil }
        let text = stderr.current
        guard let range = text.range(of: #"on https?://[^:]+:(\d+)"#, options: .regularExpression) else { return nil }
        return UInt16(text[range].split(separator: ":").last!)
    }

    /// Waits for the process to exit, and reads the last of its stderr; its exit status, or nil
    /// when it is still running after `seconds`.
    func waitForExit(seconds: Double = 30) -> Int32? {
        guard eventually(within: seconds, interval: 0.02, { !process.isRunning }) else { return nil }
        drain()
        return process.terminationStatus
    }

    deinit { if process.isRunning { process.terminate() } }
}

@Suite(.serialized) struct ProcessTests {
    @Test func sigtermKeepsAcknowledgedWritesAndExitsZero() throws {
        let folder = TemporaryDirectory()
        let server = try StrataProcess(["serve", "--port", "0", "--data-dir", folder.url.path])
        let port = try #require(server.port(), "\(server.stderr.current)")
        let client = TestClient(port: port)
        var ids: [Int64] = []
        for index in 0..<20 {
            let response = try client.send("POST", "/search-logs", json: #"{"query": "q\#(index)"}"#)
            #expect(response.status == 201)
            if let id = response.json.objectValue?["_id"]?.doubleValue { ids.append(Int64(id)) }
        }
        let author = try client.send("POST", "/authors", json: #"{"name": "Kept"}"#)
        #expect(author.status == 201)
        server.process.terminate()  // SIGTERM
        #expect(server.waitForExit() == 0, "\(server.stderr.current)")
        #expect(server.stderr.current.contains("stopping"))
        #expect(server.stderr.current.contains("\"POST /authors\" 201"))

        let again = try StrataProcess(["serve", "--port", "0"], environment: ["STRATA_DATA_DIR": folder.url.path])
        let secondPort = try #require(again.port(), "\(again.stderr.current)")
        let second = TestClient(port: secondPort)
        let logs = try second.send("GET", "/search-logs?limit=100&count=exact")
        #expect(logs.json.objectValue?["total"] == .integer(20))
        #expect(try second.send("GET", "/authors?name=eq.Kept").json.objectValue?["items"]?.arrayValue?.count == 1)
        kill(again.process.processIdentifier, SIGINT)
        #expect(again.waitForExit() == 0)
    }

    @Test func badOptionsAndModelsExitWithOneClearMessage() throws {
        let folder = TemporaryDirectory()
        let cases: [([String], String)] = [
            (["serve", "--port", "eighty"], "--port must be a number"),
            (["serve", "--colour", "red"], "unknown option '--colour'"),
            (["serve", "--model", folder.file("missing.json").path], "could not be read"),
            (["serve", "--store", "Nope=sqlite:x.sqlite", "--data-dir", folder.url.path], "configuration 'Nope'"),
            (
                ["serve", "--store", "Catalog=postgres:x", "--data-dir", folder.url.path],
                "--store takes CONFIG=sqlite:PATH"
            ),
            (["serve", "--log-format", "xml"], "--log-format is text or json"),
            (["serve", "--read-cache", "-1"], "--read-cache must be a number of objects"),
            (["serve", "--sqlite-mmap", "lots"], "--sqlite-mmap must be a number of MiB"),
            (["frobnicate"], "unknown command 'frobnicate'"),
        ]
        for (arguments, message) in cases {
            let process = try StrataProcess(arguments)
            let status = process.waitForExit()
            #expect(status != nil && status != 0, "\(arguments)")
            let output = process.stderr.current
            #expect(output.contains(message), "\(arguments): \(output)")
            #expect(!output.contains("Fatal error") && !output.contains("Stack dump"), "\(arguments): \(output)")
        }
        // A store file that is not a database.
        try Data(String(repeating: "not sqlite ", count: 20).utf8).write(to: folder.file("catalog.sqlite"))
        let broken = try StrataProcess(["serve", "--port", "0", "--data-dir", folder.url.path])
        #expect(broken.waitForExit() == 1)
        #expect(broken.stderr.current.contains("catalog.sqlite"))
        // A model with an error names it.
        try Data(#"{"entities": [{"name": "A", "attributes": [{"name": "x", "type": "int"}]}]}"#.utf8).write(
            to: folder.file("bad.json"))
        let model = try StrataProcess(["serve", "--model", folder.file("bad.json").path])
        #expect(model.waitForExit() == 1)
        #expect(model.stderr.current.contains("A.x: unknown type 'int'"))
    }

    @Test func storesAndModelsFromOptions() throws {
        let folder = TemporaryDirectory()
        let server = try StrataProcess(
            [
                "serve", "--port", "0", "--store", "Default=sqlite:\(folder.file("one.sqlite").path)", "--log-format",
                "json",
            ])
        let port = try #require(server.port(), "\(server.stderr.current)")
        let client = TestClient(port: port)
        #expect(try client.send("POST", "/search-logs", json: #"{"query": "x"}"#).status == 201)
        #expect(try client.send("POST", "/tags", json: #"{"name": "y"}"#).status == 201)
        let index = try client.send("GET", "/")
        #expect(index.json.objectValue?["stores"]?.arrayValue?.count == 1)
        server.process.terminate()
        #expect(server.waitForExit() == 0)
        #expect(server.stderr.current.contains(#""method":"POST""#))
        #expect(FileManager.default.fileExists(atPath: folder.file("one.sqlite").path))

        let memory = try StrataProcess([
            "serve", "--port", "0", "--store", "Catalog=memory:", "--store", "Activity=memory:",
        ])
        let memoryPort = try #require(memory.port(), "\(memory.stderr.current)")
        #expect(try TestClient(port: memoryPort).send("POST", "/authors", json: #"{"name": "M"}"#).status == 201)
        memory.process.terminate()
        #expect(memory.waitForExit() == 0)
    }
}

@Suite struct ReadinessTests {
    @Test func onlyLiveAnswersBeforeTheStoresAreLoaded() {
        let metrics = Metrics()
        #expect(
            StrataServerInstance.notReady(HTTPRequest(method: "GET", path: "/live"), metrics: metrics).status == 200)
        let ready = StrataServerInstance.notReady(HTTPRequest(method: "GET", path: "/ready"), metrics: metrics)
        #expect(ready.status == 503)
        #expect(ready.headers.contains { $0.name == "Content-Type" && $0.value == "application/problem+json" })
        #expect(
            StrataServerInstance.notReady(HTTPRequest(method: "GET", path: "/books"), metrics: metrics).status == 503)
    }
}
