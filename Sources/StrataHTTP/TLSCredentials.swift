import CTLSCredentials

/// The certificate chain and private key an ``HTTPServer`` with ``HTTPServerConfiguration/tls``
/// presents, parsed by GnuTLS (libmicrohttpd's TLS library). Loading again replaces them for every
/// new connection, without a restart; connections already open keep theirs.
public enum TLSCredentials {
    /// Makes `certificate` (PEM, the server's certificate first, then any intermediates) and
    /// `key` (PEM) the ones presented.
    /// - Throws: ``HTTPServerError`` naming which of the two GnuTLS could not read; the ones in
    ///   force stay.
    public static func load(certificate: [UInt8], key: [UInt8]) throws(HTTPServerError) {
        var error = [CChar](repeating: 0, count: 256)
        let status = certificate.withUnsafeBufferPointer { chain in
            key.withUnsafeBufferPointer { secret in
                chain.withMemoryRebound(to: CChar.self) { chainText in
                    secret.withMemoryRebound(to: CChar.self) { secretText in
                        strata_tls_load(
                            chainText.baseAddress, chainText.count, secretText.baseAddress, secretText.count, &error,
                            error.count)
                    }
                }
            }
        }
        guard status == 0 else {
            throw HTTPServerError(
                "cannot use " + String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }
}

extension TLSCredentials {
    /// Sends `request` over TLS on the connected socket `fd` and returns what came back (up to
    /// `capacity` bytes), without checking the certificate: for a local health probe only.
    public static func exchange(socket fd: Int32, request: [UInt8], capacity: Int = 512) -> [UInt8]? {
        var buffer = [CChar](repeating: 0, count: capacity)
        let count = request.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                strata_tls_exchange(fd, $0.baseAddress, $0.count, &buffer, capacity)
            }
        }
        guard count >= 0 else { return nil }
        return buffer.prefix(count).map { UInt8(bitPattern: $0) }
    }
}
