import Foundation

/// Resident memory of a process (this one unless told), from /proc.
enum Memory {
    /// A /proc file of `process`, read to its end: `String(contentsOfFile:)` stops at the first
    /// page of a file whose size says 0, as /proc's do.
    private static func procFile(_ name: String, process: String) -> String? {
        guard let file = FileHandle(forReadingAtPath: "/proc/\(process)/\(name)"), let bytes = try? file.readToEnd()
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Every `kB` line of `process`'s `status` (`VmRSS:`, `RssAnon:`…), in bytes, read at once.
    static func status(process: String = "self") -> [String: Int] {
        var values: [String: Int] = [:]
        for line in (procFile("status", process: process) ?? "").split(separator: "\n") where line.hasSuffix(" kB") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count == 3, let kibibytes = Int(fields[1]) { values[String(fields[0])] = kibibytes * 1024 }
        }
        return values
    }

    static func value(_ key: String, process: String = "self") -> Int { status(process: process)[key] ?? 0 }

    /// The resident bytes of the files under `folder` that `process` maps, from its `smaps`.
    static func mappedResident(process: String, under folder: String) -> Int {
        guard let smaps = procFile("smaps", process: process) else { return 0 }
        let prefix = URL(fileURLWithPath: folder).standardizedFileURL.path + "/"
        var inside = false
        var total = 0
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                // A mapping's header: address range, permissions, offset, device, inode, path.
                inside = fields.count >= 6 && fields[5...].joined(separator: " ").hasPrefix(prefix)
            } else if inside, fields.first == "Rss:", fields.count >= 2 {
                total += (Int(fields[1]) ?? 0) * 1024
            }
        }
        return total
    }

    static func residentBytes() -> Int { value("VmRSS:") }
    static func peakResidentBytes() -> Int { value("VmHWM:") }
}
