import Foundation
import Strata

/// Exporting a large catalogue into Core Data's own format (`CoreDataExporter`, what `GET /_export`
/// and `strata export` run): N books of the example model, each with an author and one or two tags,
/// in a SQLite store; the export reads them from one snapshot, page by page, and writes the file.
/// Measured: the time, against a budget of a minute for 1,000,000 books scaled to N, and the peak
/// resident memory the export adds, which must stay bounded (not grow with N).
struct ExportBench {
    let folder: URL
    let books: Int

    /// The time the export may take: a minute for 1,000,000 books, in proportion.
    var budgetSeconds: Double { 60 * Double(books) / 1_000_000 }
    /// The most resident memory the export may add, whatever the number of books.
    static let memoryBudget = 256 << 20

    /// Writes the books, their authors and tags in saves of 50,000.
    func seed(_ coordinator: StoreCoordinator) throws {
        let authors = max(1, books / 1000)
        let tagNames = ["fiction", "history", "science", "poetry", "travel", "children", "crime", "art"]
        let first =
            (0..<authors).map {
                StoreRow(id: .temporary(entity: "Author"), attributes: ["name": .string("Author \($0)")])
            } + tagNames.map { StoreRow(id: .temporary(entity: "Tag"), attributes: ["name": .string($0)]) }
        let seeded = try coordinator.save(SaveRequest(inserts: first))
        let ids = first.map { seeded.permanentIDs[$0.id]! }
        let authorIDs = Array(ids.prefix(authors))
        let tagIDs = Array(ids.suffix(tagNames.count))
        var next = 0
        while next < books {
            let chunk = next..<min(books, next + 50_000)
            let rows = chunk.map { index -> StoreRow in
                var row = StoreRow(
                    id: .temporary(entity: "Book"),
                    attributes: [
                        "title": .string("Book \(index)"), "year": .integer(Int64(1900 + index % 120)),
                        "pages": .integer(Int64(100 + index % 900)), "format": .string("paperback"),
                        "rating": .double(Double(index % 50) / 10), "available": .boolean(index % 3 != 0),
                        "price": .decimal(Decimal(index % 5000) / 100),
                        "published": .date(Date(timeIntervalSinceReferenceDate: Double(index) * 60)),
                    ])
                row.toOne["author"] = authorIDs[index % authors]
                row.toMany["tags"] =
                    index % 2 == 0 ? [tagIDs[index % 8]] : [tagIDs[index % 8], tagIDs[(index + 3) % 8]]
                return row
            }
            _ = try coordinator.save(SaveRequest(inserts: rows))
            next = chunk.upperBound
        }
    }

    func run(into table: inout BenchTable) throws {
        let model = try ObjectModel.example
        let coordinator = StoreCoordinator(model: model)
        defer { for store in coordinator.stores { coordinator.remove(store) } }
        try coordinator.addStore(
            type: .sqlite, configuration: "Catalog", url: folder.appendingPathComponent("export-catalog.sqlite"),
            options: StoreOptions(durability: .normal, recordsHistory: true))
        try coordinator.addStore(
            type: .sqlite, configuration: "Activity", url: folder.appendingPathComponent("export-activity.sqlite"),
            options: StoreOptions(durability: .normal, recordsHistory: true))
        try seed(coordinator)
        let target = folder.appendingPathComponent("Export.sqlite")
        let before = Memory.residentBytes()
        let heapBefore = Memory.value("RssAnon:")
        // The peak from here on (Linux: writing 5 to clear_refs resets VmHWM to the current RSS).
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        // The process's own memory (not the store files' pages it maps), sampled after every page.
        let heapPeak = Locked(heapBefore)
        let sample = CoreDataExportProgress { _, _ in
            let now = Memory.value("RssAnon:")
            heapPeak.withLock { $0 = max($0, now) }
        }
        let started = DispatchTime.now().uptimeNanoseconds
        let report = try CoreDataExporter.export(
            model: model, coordinator: coordinator, to: target, options: CoreDataExportOptions(progress: sample))
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let peak = max(0, Memory.peakResidentBytes() - before)
        let added = max(0, heapPeak.withLock { $0 } - heapBefore)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: target.path)[.size] as? NSNumber)?.intValue ?? 0
        let objects = report.objects.values.reduce(0, +)
        guard report.objects["Book"] == books else {
            throw StoreError(.io, "the export holds \(report.objects["Book"] ?? 0) books, not \(books)")
        }
        table.rows.append(
            BenchTable.Row(
                scenario: "export \(books) books to Core Data", connections: "-",
                throughput: Double(objects) / seconds, unit: "objects/s", p50: "", p99: "",
                baseline: "budget: 60 s per 1,000,000 books", baselineValue: Double(books) / budgetSeconds,
                target: (seconds / budgetSeconds, nil, 1.0)))
        table.rows.append(
            BenchTable.Row(
                scenario: "export peak heap added", connections: "-", throughput: Double(added) / 1_048_576,
                unit: "MB", p50: "", p99: "", baseline: "budget: \(Self.memoryBudget >> 20) MB, any size",
                baselineValue: Double(Self.memoryBudget >> 20),
                target: (Double(added) / Double(Self.memoryBudget), nil, 1.0)))
        table.notes.append(
            String(
                format: "export: %d objects (%d books) and %d join rows in %.1f s, a %d MB file; peak heap (RssAnon, "
                    + "sampled per page) %d MB above the %d MB before it; peak RSS with the store's mapped pages %d MB "
                    + "above the %d MB before it", objects, books, report.joinRows, seconds, bytes >> 20, added >> 20,
                heapBefore >> 20, peak >> 20, before >> 20))
    }
}
