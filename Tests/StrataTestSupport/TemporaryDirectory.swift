import Foundation

/// A fresh folder under the system's temporary directory, removed when the value is released:
/// every test that touches files gets its own.
public final class TemporaryDirectory: Sendable {
    /// The folder.
    public let url: URL

    /// Creates the folder.
    public init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-tests-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the folder.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Runs `body` on `count` real threads at once (so blocking calls overlap, whatever the number of
/// cores) and waits for all of them.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
}

/// How much work the load tests do: 1 in a normal run; `STRATA_STRESS=N` multiplies the rounds
/// (the longer mode for measurements).
public let stressFactor = max(1, Int(ProcessInfo.processInfo.environment["STRATA_STRESS"] ?? "") ?? 1)
