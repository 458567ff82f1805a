import Foundation
import StrataHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// `strata health [--port N] [--path /live]`: exits 0 when the local server answers 200, else 1.
/// It is the container's HEALTHCHECK: the runtime image has no curl, and a plain socket keeps the
/// binary free of libcurl.
enum HealthCommand {
    static func run(_ arguments: [String]) -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        var port = UInt16(environment["STRATA_PORT"] ?? "") ?? 8080
        var path = "/live"
        var index = 0
        while index < arguments.count {
            guard index + 1 < arguments.count else {
                printError("strata health: \(arguments[index]) needs a value")
                return 64
            }
            switch arguments[index] {
            case "--port":
                guard let value = UInt16(arguments[index + 1]) else {
                    printError("strata health: --port must be a number")
                    return 64
                }
                port = value
            case "--path": path = arguments[index + 1]
            default:
                printError("strata health: unknown option '\(arguments[index])' (use --port N and --path /live)")
                return 64
            }
            index += 2
        }
        guard let fd = Loopback.connect(port: port, seconds: 3) else {
            printError("strata health: nothing listens on 127.0.0.1:\(port)")
            return 1
        }
        defer { close(fd) }
        let request = Loopback.getRequest(path)
        var buffer = [UInt8](repeating: 0, count: 512)
        var count = 0
        // A server given a certificate (STRATA_TLS_CERT, as the container passes it) speaks HTTPS.
        if !(environment["STRATA_TLS_CERT"] ?? "").isEmpty {
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
