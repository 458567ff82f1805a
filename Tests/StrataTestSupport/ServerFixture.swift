import Foundation
import Strata
import StrataServer

/// The real server, in process, on a free loopback port, serving the example model (or another)
/// from SQLite files in a temporary folder.
public final class ServerFixture: Sendable {
    /// The folder holding the store files.
    public let folder = TemporaryDirectory()
    /// The running server.
    public let server: StrataServerInstance
    /// A client for it (one connection per request).
    public let client: TestClient
    /// Every line the server logged.
    public let logLines = Locked<[String]>([])

    /// Starts a server for `model` (the example model when nil); `modify` adjusts its options
    /// first.
    public init(model: ObjectModel? = nil, options modify: (inout ServerOptions) -> Void = { _ in }) throws {
        var options = ServerOptions()
        options.port = 0
        options.dataDirectory = folder.url.path
        options.durability = .normal
        modify(&options)
        let lines = logLines
        server = StrataServerInstance(
            model: try model ?? ObjectModel.example, options: options,
            log: { line in lines.withLock { $0.append(line) } })
        try server.start()
        client = TestClient(port: server.port)
    }

    deinit { server.stop() }

    /// The `Catalog` store file.
    public var catalogURL: URL { folder.file("catalog.sqlite") }
    /// The `Activity` store file.
    public var activityURL: URL { folder.file("activity.sqlite") }
}
