import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An open file sent as a response body (``HTTPResponse/file``), with its length as the
/// `Content-Length`: libmicrohttpd sends it from the descriptor (with `sendfile` where it can)
/// and closes the descriptor when the response is done, sent or not.
///
/// A file removed from its folder once opened (``init(removing:)``) leaves nothing behind however
/// the response ends: the system frees it when the descriptor is closed.
public final class HTTPFileBody: Sendable {
    /// The bytes sent.
    public let size: Int64
    private let descriptor: Int32
    /// Whether libmicrohttpd has taken the descriptor (it closes it then).
    private let taken = Atomic<Bool>(false)

    /// Opens the file at `path` for sending and removes it from its folder at once.
    /// - Throws: ``HTTPServerError`` when it cannot be opened.
    public init(removing path: String) throws(HTTPServerError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw HTTPServerError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw HTTPServerError("cannot read the size of \(path): \(reason)")
        }
        unlink(path)
        self.descriptor = descriptor
        size = Int64(status.st_size)
    }

    deinit {
        if !taken.load(ordering: .acquiring) { close(descriptor) }
    }

    /// The descriptor, handed over once: nil when it was taken already.
    func take() -> Int32? {
        taken.exchange(true, ordering: .acquiringAndReleasing) ? nil : descriptor
    }
}
