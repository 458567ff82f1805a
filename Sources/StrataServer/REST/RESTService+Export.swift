import Foundation
import Strata
import StrataHTTP

/// Where and how `GET /_export` builds its files.
public struct SnapshotExportSettings: Sendable {
    /// The folder the files are built in (the server's data folder, on the disk its stores are
    /// on); nil: the system's temporary folder. Each file is removed from it as soon as it is
    /// complete and open for sending, and files a stopped server left there are removed when the
    /// next one starts.
    public var directory: URL?
    /// Receives the progress lines of long exports (the server's access log); nil: none.
    public var log: (@Sendable (String) -> Void)?
    /// How often a running export writes a progress line, in seconds (an export that takes less
    /// writes none).
    public var progressSeconds: Double
    /// How many exports run at once; the ones asked for beyond wait for their turn.
    public var concurrentExports: Int

    /// Creates settings.
    public init(
        directory: URL? = nil, log: (@Sendable (String) -> Void)? = nil, progressSeconds: Double = 5,
        concurrentExports: Int = 2
    ) {
        self.directory = directory
        self.log = log
        self.progressSeconds = progressSeconds
        self.concurrentExports = concurrentExports
    }
}

/// The threads that build `GET /_export` files: threads of their own at utility priority, at most
/// ``SnapshotExportSettings/concurrentExports`` at once, so that a long export holds neither a
/// polling thread nor a handler thread that other requests wait for.
final class SnapshotExports: Sendable {
    let settings: SnapshotExportSettings
    /// The exports running, and the ones waiting for a thread.
    private let state = Locked<(running: Int, waiting: [@Sendable () -> Void])>((0, []))

    /// The start of the name of every file an export builds.
    static let filePrefix = ".strata-export-"

    init(_ settings: SnapshotExportSettings) {
        self.settings = settings
        guard let directory = settings.directory,
            let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path)
        else { return }
        // A server that stopped while building an export left its file.
        for name in names where name.contains(Self.filePrefix) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    /// A new file name to build an export in.
    func newFile() -> URL {
        let folder = settings.directory ?? FileManager.default.temporaryDirectory
        return folder.appendingPathComponent("\(Self.filePrefix)\(UUID().uuidString).sqlite")
    }

    /// Runs `job` on an export thread, now or when one is free.
    func run(_ job: @escaping @Sendable () -> Void) {
        let start = state.withLock { state -> Bool in
            guard state.running < max(1, settings.concurrentExports) else {
                state.waiting.append(job)
                return false
            }
            state.running += 1
            return true
        }
        if start { launch(job) }
    }

    private func launch(_ job: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            var next: (@Sendable () -> Void)? = job
            while let current = next {
                current()
                next = state.withLock { state in
                    guard !state.waiting.isEmpty else {
                        state.running -= 1
                        return nil
                    }
                    return state.waiting.removeFirst()
                }
            }
        }
        thread.name = "strata-export"
        thread.qualityOfService = .utility
        thread.start()
    }
}

extension RESTService {
    /// The media type of an exported store.
    static let sqliteMediaType = "application/vnd.sqlite3"

    /// `GET /_export`: every object the caller may read (hidden entities left out) in one SQLite
    /// file in Core Data's own format for the model's current version (see ``CoreDataExporter``),
    /// read from one snapshot across every store; `Strata-History-Token` names exactly the
    /// history that snapshot holds, so `/_changes?since=` that token gives exactly the changes
    /// the file lacks. Built in a file of the export folder, which is removed from the folder as
    /// soon as it is complete and open, and sent from it with its `Content-Length`.
    func exportSnapshot(_ request: HTTPRequest) -> HTTPResponse {
        if let name = request.query.first?.name {
            return Problem.badRequest("/_export takes no query parameters, not \(name)").response
        }
        let started = DispatchTime.now().uptimeNanoseconds
        let file = exports.newFile()
        let hidden = Set(access.filter { $0.value == .hidden }.keys)
        let progress = ExportProgress(settings: exports.settings, started: started)
        let report: CoreDataExportReport
        do {
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            report = try CoreDataExporter.export(
                model: model, coordinator: root.coordinator, to: file,
                options: CoreDataExportOptions(
                    // One file: every Binary value stays in the store, none in external data files.
                    externalDataThreshold: .max,
                    progress: CoreDataExportProgress { written, total in progress.note(written, of: total) },
                    leavingOut: hidden))
        } catch let error as StoreError {
            return Problem(error).response
        } catch {
            return Problem(500, "Internal Server Error", "cannot build the export: \(error)").response
        }
        let body: HTTPFileBody
        do {
            body = try HTTPFileBody(removing: file.path)
        } catch {
            try? FileManager.default.removeItem(at: file)
            return Problem(500, "Internal Server Error", "cannot send the export: \(error.message)").response
        }
        progress.finish(report, bytes: body.size)
        var headers: [(name: String, value: String)] = [
            ("Content-Type", Self.sqliteMediaType),
            ("Content-Disposition", "attachment; filename=\"\(exportFileName)\""),
            ("Cache-Control", "no-store"),
        ]
        if changeFeed != nil, let token = report.historyToken {
            headers.append((Self.historyTokenHeader, token.description))
        }
        return HTTPResponse(status: 200, headers: headers, file: body)
    }

    /// The file name an export is offered under: the model's name (letters, digits, `-`, `_`, `.`).
    var exportFileName: String {
        let name = model.name.unicodeScalars.map {
            $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0))
                ? String($0) : "_"
        }.joined()
        return (name.isEmpty ? "export" : name) + ".sqlite"
    }
}

/// The progress lines of one export: one every ``SnapshotExportSettings/progressSeconds``, and a
/// last one when any was written.
final class ExportProgress: Sendable {
    private let settings: SnapshotExportSettings
    private let started: UInt64
    /// When the last line was written (uptime nanoseconds), and whether any was.
    private let last: Locked<(at: UInt64, any: Bool)>

    init(settings: SnapshotExportSettings, started: UInt64) {
        self.settings = settings
        self.started = started
        last = Locked((started, false))
    }

    private var seconds: String {
        String(format: "%.1f", Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
    }

    /// Notes `written` of `total` objects written; writes a line when it is time.
    func note(_ written: Int, of total: Int) {
        guard let log = settings.log else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let due = last.withLock { last -> Bool in
            guard Double(now - last.at) / 1e9 >= settings.progressSeconds else { return false }
            last = (now, true)
            return true
        }
        guard due else { return }
        let percent = total > 0 ? written * 100 / total : 100
        log("strata: GET /_export: \(written) of \(total) objects written (\(percent)%) in \(seconds) s")
    }

    /// Writes the last line, when the export wrote progress lines.
    func finish(_ report: CoreDataExportReport, bytes: Int64) {
        guard let log = settings.log, last.withLock({ $0.any }) else { return }
        let objects = report.objects.values.reduce(0, +)
        log(
            "strata: GET /_export: \(objects) objects, \(bytes) bytes in \(seconds) s"
                + (report.historyToken.map { ", history token \($0)" } ?? ""))
    }
}
