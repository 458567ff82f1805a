import CMicroHTTPD
import CTLSCredentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension HTTPServer {
    /// Starts libmicrohttpd with a pool of epoll polling threads, suspend/resume allowed, and the
    /// configured limits. Every callback is a capture-free closure that finds its
    /// ``HTTPServerContext`` through `cls`.
    static func startDaemon(
        configuration: HTTPServerConfiguration, address: UnsafeMutablePointer<sockaddr>, isIPv6: Bool,
        context: UnsafeMutableRawPointer
    ) -> OpaquePointer? {
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        let pollingThreads =
            configuration.pollingThreads > 0 ? configuration.pollingThreads : sysconf(Int32(_SC_NPROCESSORS_ONLN))
        if isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        if configuration.tls { flags |= MHD_USE_TLS.rawValue }
        var options = [
            // First, so that start-up errors reach it.
            cmhd_option_logger(
                { cls, format, arguments in
                    guard let cls, let format, let arguments else { return }
                    var buffer = [CChar](repeating: 0, count: 512)
                    _ = vsnprintf(&buffer, buffer.count, format, arguments)
                    let message = String(
                        decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    Unmanaged<HTTPServerContext>.fromOpaque(cls).takeUnretainedValue()
                        .log(message.trimmingTrailingNewlines())
                }, context),
            cmhd_option_value(.THREAD_POOL_SIZE, max(1, pollingThreads)),
            // Room for the longest request target and headers and 16 KiB more. libmicrohttpd 0.9.75
            // zeroes a connection's whole pool before every request, so twice that (as it was)
            // cost `GET /live` a sixth of its time in memset; a target and headers both just under
            // their limits are still answered (HostileInputTests).
            cmhd_option_value(
                .CONNECTION_MEMORY_LIMIT,
                configuration.connectionMemoryBytes > 0
                    ? configuration.connectionMemoryBytes
                    : max(
                        65536,
                        configuration.maxTargetBytes + configuration.maxHeaderBytes + 16384
                            + max(0, configuration.maxQueryParameters) * 64)),
            cmhd_option_value(.CONNECTION_LIMIT, max(1, configuration.maxConnections)),
            // Strata answers the connections past an address's share itself (429); libmicrohttpd's
            // own limit, twice as high, only refuses a flood that never sends a request.
            cmhd_option_value(
                .PER_IP_CONNECTION_LIMIT,
                configuration.perIPConnectionLimit > 0 ? max(2 * configuration.perIPConnectionLimit, 16) : 0),
            cmhd_option_value(.CONNECTION_TIMEOUT, max(0, configuration.connectionTimeoutSeconds)),
            cmhd_option_notify_completed(
                { cls, connection, state, _ in
                    guard let cls else { return }
                    Unmanaged<HTTPServerContext>.fromOpaque(cls).takeUnretainedValue().completed(
                        connection: connection, state: state)
                }, context),
            // Leave `%HH` in the path and query alone: `HTTPConnection` decodes them itself, so
            // that the decoded bytes are never re-read as C strings (`%00`) and the rules are ours.
            cmhd_option_unescape({ _, _, string in string.map { strlen($0) } ?? 0 }, nil),
            cmhd_option_pointer(.SOCK_ADDR, address),
        ]
        // Every connection is recorded: its address counts against the per-address limit.
        options.append(
            cmhd_option_notify_connection(
                { cls, connection, socketContext, code in
                    guard let cls, let connection, let socketContext else { return }
                    Unmanaged<HTTPServerContext>.fromOpaque(cls).takeUnretainedValue().connectionChanged(
                        connection, context: socketContext,
                        opened: code.rawValue == 0 /* MHD_CONNECTION_NOTIFY_STARTED */)
                }, context))
        // Called with the request target before libmicrohttpd splits its query: the request's
        // clock starts, and a query with too many parameters is cut before it is split.
        options.append(
            cmhd_option_uri_log(
                { cls, target, connection in
                    guard let cls, let connection else { return nil }
                    Unmanaged<HTTPServerContext>.fromOpaque(cls).takeUnretainedValue().received(
                        target: target, on: connection)
                    return nil
                }, context))
        // Each handshake asks for the credentials in force, so a reload needs no restart.
        if configuration.tls {
            options.append(cmhd_option_pointer(.HTTPS_CERT_CALLBACK, strata_tls_certificate_callback()))
        }
        options.append(cmhd_option_end())
        return cmhd_start_daemon(
            flags, configuration.port,
            { cls, connection, url, method, _, uploadData, uploadSize, state in
                guard let cls, let connection, let uploadSize, let state else { return .NO }
                return Unmanaged<HTTPServerContext>.fromOpaque(cls).takeUnretainedValue().access(
                    connection: connection, url: url, method: method, uploadData: uploadData,
                    uploadSize: uploadSize, state: state)
            }, context, &options)
    }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var result = self
        while result.last == "\n" || result.last == "\r" { result.removeLast() }
        return result
    }
}
