import CMicroHTTPD

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 socket address parsed from a configured host and port, for
/// `MHD_OPTION_SOCK_ADDR`.
struct SocketAddress {
    private enum Storage {
        case v4(sockaddr_in)
        case v6(sockaddr_in6)
    }

    private let storage: Storage

    /// Parses `host` as a numeric IPv4 or IPv6 address (`"localhost"` means `127.0.0.1`).
    /// - Throws: ``HTTPServerError`` when `host` is neither.
    init(host: String, port: UInt16) throws(HTTPServerError) {
        let numeric = host == "localhost" ? "127.0.0.1" : host
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, numeric, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            storage = .v4(v4)
            return
        }
        var v6 = sockaddr_in6()
        let bare = numeric.hasPrefix("[") && numeric.hasSuffix("]") ? String(numeric.dropFirst().dropLast()) : numeric
        if inet_pton(AF_INET6, bare, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            storage = .v6(v6)
            return
        }
        throw HTTPServerError(
            "invalid host '\(host)': expected an IPv4 address (127.0.0.1, 0.0.0.0) or an IPv6 address (::1, ::)")
    }

    /// Whether this is an IPv6 address (the daemon then needs `MHD_USE_IPv6`).
    var isIPv6: Bool {
        if case .v6 = storage { return true }
        return false
    }

    /// Calls `body` with a pointer to the `sockaddr`, valid only during the call.
    func withSockaddrPointer<Result>(_ body: (UnsafeMutablePointer<sockaddr>) -> Result) -> Result {
        switch storage {
        case .v4(var address):
            return withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        case .v6(var address):
            return withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body) }
        }
    }

    /// The numeric form of a peer address (`"127.0.0.1"`, `"::1"`), or `""` for another family.
    static func numericHost(of address: UnsafePointer<sockaddr>?) -> String {
        guard let address else { return "" }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let capacity = socklen_t(buffer.count - 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { peer in
                var raw = peer.pointee.sin_addr
                _ = inet_ntop(AF_INET, &raw, &buffer, capacity)
            }
        case AF_INET6:
            address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { peer in
                var raw = peer.pointee.sin6_addr
                _ = inet_ntop(AF_INET6, &raw, &buffer, capacity)
            }
        default:
            return ""
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
