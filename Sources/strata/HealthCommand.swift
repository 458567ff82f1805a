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
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return 1 }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            printError("strata health: nothing listens on 127.0.0.1:\(port)")
            return 1
        }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
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
