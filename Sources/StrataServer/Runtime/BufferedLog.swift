import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Log lines written to a file descriptor (stderr by default) by a thread of their own, so that a
/// request never waits for the write: a line is copied into a buffer under a lock, and the writer
/// takes the whole buffer every 50 ms (sooner when 64 KiB are waiting) and writes it with as few
/// calls as it takes. When the buffer holds `limit` bytes (the descriptor cannot keep up), further
/// lines are counted rather than kept, and the next write says how many were dropped; none is
/// dropped silently. ``flush()`` writes what waits before it returns; ``close()`` also ends the
/// thread. A process killed outright loses at most the lines of its last 50 ms.
public final class BufferedLog: @unchecked Sendable {
    // @unchecked Sendable: every stored property but the immutable ones is read and written only
    // with `condition` locked.
    private let descriptor: Int32
    private let limit: Int
    private let condition = NSCondition()
    private var pending: [UInt8] = []
    private var dropped = 0
    private var closed = false
    private var writerDone = false
    /// Held while bytes taken from `pending` are being written, so that ``flush()`` returns only
    /// after every line appended before it is out.
    private let writing = NSLock()

    /// Starts the writer for `descriptor` (which the caller keeps open until ``close()``), keeping
    /// at most `limit` bytes waiting.
    public init(descriptor: Int32 = 2, limit: Int = 8 << 20) {
        self.descriptor = descriptor
        self.limit = limit
        pending.reserveCapacity(64 << 10)
        let thread = Thread { [self] in run() }
        thread.name = "strata-log"
        thread.start()
    }

    /// Appends `line` and a newline.
    public func write(_ line: String) {
        var line = line
        line.withUTF8 { append($0) }
    }

    /// Appends the UTF-8 bytes of a line and a newline.
    public func write(_ line: [UInt8]) {
        line.withUnsafeBufferPointer { append($0) }
    }

    private func append(_ line: UnsafeBufferPointer<UInt8>) {
        condition.lock()
        if pending.count + line.count + 1 > limit {
            dropped += 1
        } else {
            pending.append(contentsOf: line)
            pending.append(UInt8(ascii: "\n"))
        }
        let wake = pending.count >= 64 << 10
        condition.unlock()
        if wake { condition.signal() }
    }

    /// Writes every line appended so far before it returns.
    public func flush() {
        writing.lock()
        defer { writing.unlock() }
        condition.lock()
        let (bytes, lost) = take()
        condition.unlock()
        put(bytes, lost)
    }

    /// Writes what is left and ends the writer thread.
    public func close() {
        condition.lock()
        closed = true
        condition.signal()
        while !writerDone { condition.wait() }
        condition.unlock()
        flush()
    }

    /// The waiting bytes and the count of dropped lines, leaving none (`condition` locked).
    private func take() -> ([UInt8], Int) {
        let bytes = pending
        pending.removeAll(keepingCapacity: true)
        let lost = dropped
        dropped = 0
        return (bytes, lost)
    }

    /// Writes `bytes`, then a line saying `lost` lines were dropped, when any were.
    private func put(_ bytes: [UInt8], _ lost: Int) {
        var bytes = bytes
        if lost > 0 {
            bytes += Array(
                "strata: the log could not keep up: \(lost) line\(lost == 1 ? "" : "s") dropped\n".utf8)
        }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }  // the descriptor is gone; nothing else can be done
            offset += written
        }
    }

    private func run() {
        while true {
            condition.lock()
            if pending.isEmpty && dropped == 0 && !closed {
                _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
            }
            condition.unlock()
            // Taken and written under `writing`, in order with ``flush()``.
            writing.lock()
            condition.lock()
            let (bytes, lost) = take()
            let done = closed
            condition.unlock()
            put(bytes, lost)
            writing.unlock()
            if done { break }
        }
        condition.lock()
        writerDone = true
        condition.broadcast()
        condition.unlock()
    }
}
