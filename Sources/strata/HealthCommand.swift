import Foundation
import StrataCLI
import StrataHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// `strata health [--port N] [--path /live]`: exits 0 when the local server answers 200, else 1.
/// It is the container's HEALTHCHECK: the runtime image has no curl, and a plain socket keeps the
/// binary free of libcurl.
enum HealthCommand {
    struct Settings {
        var port: UInt16 = 8080
        var path = "/live"
        var tls = false
    }

    static let interface = CommandInterface<Settings>(
        name: "strata health", synopsis: "[--port N] [--path /live]",
        abstract: """
            Exits 0 when the server on this machine answers the path with 200, else 1: the container's
            health check. It reads the environment strata serve reads, so it finds the same port.
            """,
        options: [
            .value("--port", "N", environment: "STRATA_PORT", default: "8080", help: "the server's port") {
                $0.port = UInt16(try $1.integer(0...65535, "a number from 0 to 65535"))
            },
            .value("--path", "PATH", default: "/live", help: "the path to ask") { $0.path = $1.text },
            .value(
                "--tls-cert", "PATH", environment: "STRATA_TLS_CERT",
                help: "the server's certificate: given, the check speaks HTTPS; the file itself is not read"
            ) { $0.tls = !$1.text.isEmpty },
        ])

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: check)
    }

    static func check(_ settings: Settings) -> Int32 {
        let port = settings.port
        let path = settings.path
        guard let fd = Loopback.connect(port: port, seconds: 3) else {
            printError("strata health: nothing listens on 127.0.0.1:\(port)")
            return 1
        }
        defer { close(fd) }
        let request = Loopback.getRequest(path)
        var buffer = [UInt8](repeating: 0, count: 512)
        var count = 0
        // A server given a certificate (STRATA_TLS_CERT, as the container passes it) speaks HTTPS.
        if settings.tls {
            guard let answer = TLSCredentials.exchange(socket: fd, request: request) else {
                printError("strata health: no TLS answer on 127.0.0.1:\(port)")
                return 1
            }
            buffer = answer
            count = answer.count
        } else {
            guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return 1 }
            count = read(fd, &buffer, buffer.count)
        }
        guard count > 0 else { return 1 }
        let statusLine = String(decoding: buffer[0..<count], as: UTF8.self).split(separator: "\r\n").first ?? ""
        if statusLine.split(separator: " ").dropFirst().first == "200" { return 0 }
        printError("strata health: \(path) answered \(statusLine)")
        return 1
    }
}
