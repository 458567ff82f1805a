import Foundation
import StrataTestSupport
import Testing

@testable import Strata

#if canImport(Glibc)
    import Glibc
#endif

/// Single-file stores of the example model for the split tests.
enum SplitFixture {
    /// Creates a Default (single-file) store of the example model at `url`, filled with SQL:
    /// `authors` authors, `books` books (each with an author, versions 1 to 3), `logs` search
    /// logs, 50 tags and a tag for every third book. Returns the number of authors, books and logs.
    @discardableResult
    static func build(_ url: URL, authors: Int, books: Int, logs: Int) throws -> Int {
        let model = try ObjectModel.example
        let store = try SQLiteStore(
            model: model, configuration: nil, url: url, options: StoreOptions(durability: .normal))
        // A few objects written through the store itself.
        let author = try newRow(store, "Author", ["name": .string("First")])
        let book = StoreRow(
            id: try store.newObjectIDs(entity: "Book", count: 1)[0],
            attributes: ["title": .string("First book"), "format": .string("paperback"), "available": .boolean(true)],
            toOne: ["author": author.id])
        try store.save(StoreChanges(inserts: [author, book]))
        store.close()
        let db = try SQLiteConnection(path: url.path)
        try db.execute("PRAGMA synchronous=OFF")
        try db.execute("BEGIN")
        func series(_ count: Int, from first: Int = 2) -> String {
            "WITH RECURSIVE n(i) AS (SELECT \(first) UNION ALL SELECT i + 1 FROM n WHERE i < \(count)) "
        }
        try db.execute(
            series(authors)
                + "INSERT INTO Author (_pk, _entity, _version, name, born, email) SELECT i, 'Author', 1 + i % 3, 'Author ' || i, i * 86400000000, CASE WHEN i % 2 = 0 THEN 'a' || i || '@example.com' END FROM n"
        )
        try db.execute(
            series(books)
                + "INSERT INTO Book (_pk, _entity, _version, title, year, pages, wordCount, format, price, rating, weight, available, published, cover, sku, homepage, metadata, author) "
                + "SELECT i, 'Book', 1 + i % 3, 'Book ' || i, 1900 + i % 120, 1 + i % 900, i * 1000, 'paperback', (i % 100) || '.50', (i % 50) / 10.0, 0.5, i % 2, i * 1000000, "
                + "CASE WHEN i % 10 = 0 THEN X'00FF10' END, printf('00000000-0000-4000-8000-%012d', i), 'https://example.com/' || i, '{\"n\":' || i || '}', 1 + i % \(authors) FROM n"
        )
        try db.execute(
            series(logs, from: 1)
                + "INSERT INTO SearchLog (_pk, _entity, _version, query, at, results) SELECT i, 'SearchLog', 1, 'query ' || i, i * 1000, i % 100 FROM n"
        )
        try db.execute(
            series(50, from: 1)
                + "INSERT INTO Tag (_pk, _entity, _version, name) SELECT i, 'Tag', 1, 'tag ' || i FROM n")
        try db.execute(
            series(books)
                + "INSERT INTO _join_Book_tags (source, target, position) SELECT i, 1 + i % 50, 0 FROM n WHERE i % 3 = 0"
        )
        try db.execute("COMMIT")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return authors + books + logs
    }

    /// Targets for both configurations in `folder`.
    static func targets(_ folder: URL, _ suffix: String = "") -> [String: URL] {
        [
            "Catalog": folder.appendingPathComponent("catalog\(suffix).sqlite"),
            "Activity": folder.appendingPathComponent("activity\(suffix).sqlite"),
        ]
    }

    /// The `strata` binary: `STRATA_BINARY`, else the one built next to the test bundle, else
    /// `.build/debug/strata` of the package.
    static func binary() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["STRATA_BINARY"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let sibling = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("strata")
            if FileManager.default.isExecutableFile(atPath: sibling.path) { return sibling }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let fallback = root.appendingPathComponent(".build/debug/strata")
        guard FileManager.default.isExecutableFile(atPath: fallback.path) else {
            throw StoreError(.io, "the strata binary is not built; run swift build")
        }
        return fallback
    }

    /// Starts `strata` with `arguments`, stdout and stderr into `log`.
    static func start(_ arguments: [String], log: URL) throws -> Process {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = try binary()
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }

    /// Runs `strata` to the end: its exit status and output.
    static func run(_ arguments: [String], in folder: URL) throws -> (status: Int32, output: String) {
        let log = folder.appendingPathComponent("run-\(UUID().uuidString).log")
        let process = try start(arguments, log: log)
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    /// Row count, key sum and version sum of a table, read directly.
    static func fingerprint(_ url: URL, _ table: String) throws -> [Int64] {
        let db = try SQLiteConnection(path: url.path, readOnly: true)
        let version = table.hasPrefix("_join_") ? "position" : "_version"
        let key = table.hasPrefix("_join_") ? "source * 100 + target" : "_pk"
        return try db.query("SELECT count(*), total(\(key)), total(\(version)) FROM \(SQLiteSchema.quote(table))") {
            [$0.int64(0), Int64($0.double(1)), Int64($0.double(2))]
        }.first ?? []
    }
}

@Suite(.serialized) struct SplitTests {
    @Test func splitsOneHundredThousandObjectsIntoTwoConfigurations() throws {
        let folder = TemporaryDirectory()
        let source = folder.file("library.sqlite")
        let objects = try SplitFixture.build(source, authors: 10_000, books: 60_000, logs: 30_000)
        #expect(objects == 100_000)
        let sourceBytes = try Data(contentsOf: source)
        let targets = SplitFixture.targets(folder.url)
        let coordinator = StoreCoordinator(model: try ObjectModel.example)
        var updates = 0
        let report = try coordinator.splitStore(
            at: source, into: targets, options: SplitOptions(durability: .normal), progress: { _ in updates += 1 })
        print("split of \(objects) objects (+ 50 tags, 20000 book-tag pairs) in \(report.seconds) s")
        #expect(report.outcome == .split)
        #expect(report.rowsCopied == 100_000 + 50 + 20_000)
        #expect(updates > 10)
        #expect(try Data(contentsOf: source) == sourceBytes)
        #expect(!FileManager.default.fileExists(atPath: source.path + "-wal"))
        let checks = Dictionary(uniqueKeysWithValues: report.targets.flatMap(\.checks).map { ($0.name, $0.rows) })
        #expect(
            checks == ["Author": 10_000, "Book": 60_000, "Tag": 50, "_join_Book_tags": 20_000, "SearchLog": 30_000])
        // The stores are attached, keep keys, versions and relationships, and have new UUIDs.
        #expect(coordinator.stores.map(\.configuration) == ["Catalog", "Activity"])
        let sourceIdentifier = report.sourceIdentifier
        #expect(!coordinator.stores.contains { $0.identifier == sourceIdentifier })
        let catalog = try #require(coordinator.stores.first)
        let book = try #require(
            try catalog.row(for: ObjectID(store: catalog.identifier, entity: "Book", primaryKey: 300)))
        #expect(book[attribute: "title"] == .string("Book 300"))
        #expect(book.version == 1 + 300 % 3)
        #expect(book.toOne["author"]??.primaryKey == Int64(1 + 300 % 10_000))
        let tags = try catalog.relatedIDs(of: book.id, relationship: "tags")
        #expect(tags.map(\.primaryKey) == [1 + 300 % 50])
        let context = ObjectContext(coordinator: coordinator)
        #expect(try context.count(FetchRequest(entityName: "SearchLog")) == 30_000)
        #expect(try context.count(FetchRequest(entityName: "Book")) == 60_000)
        for table in ["Author", "Book", "Tag", "_join_Book_tags"] {
            #expect(try SplitFixture.fingerprint(source, table) == SplitFixture.fingerprint(targets["Catalog"]!, table))
        }
        #expect(
            try SplitFixture.fingerprint(source, "SearchLog")
                == SplitFixture.fingerprint(targets["Activity"]!, "SearchLog"))
        #expect(try schemaNames(targets["Activity"]!) == ["_strata_metadata", "SearchLog"])
        // New objects get keys after the copied ones.
        #expect(try catalog.newObjectIDs(entity: "Book", count: 1)[0].primaryKey! > 60_000)
    }

    @Test func skippedConfigurationsAreCreatedEmpty() throws {
        let folder = TemporaryDirectory()
        let source = folder.file("library.sqlite")
        try SplitFixture.build(source, authors: 100, books: 500, logs: 300)
        let sourceBytes = try Data(contentsOf: source)
        let targets = SplitFixture.targets(folder.url)
        let report = try StoreSplitter.split(
            model: try ObjectModel.example, source: source, targets: targets, options: SplitOptions(skip: ["Activity"]))
        #expect(report.rowsCopied == 100 + 500 + 50 + 166)
        let activity = try #require(report.targets.first { $0.configuration == "Activity" })
        #expect(activity.skipped)
        #expect(activity.checks.isEmpty)
        let store = try SQLiteStore(
            model: try ObjectModel.example, configuration: "Activity", url: targets["Activity"]!)
        #expect(try store.count(FetchRequest(entityName: "SearchLog")) == 0)
        try store.save(StoreChanges(inserts: [try newRow(store, "SearchLog", ["query": .string("new")])]))
        #expect(try store.newObjectIDs(entity: "SearchLog", count: 1)[0].primaryKey == 2)
        #expect(try Data(contentsOf: source) == sourceBytes)
    }

    @Test func theSourceIsReadWithItsWriteAheadLogAndLeftAsItIs() throws {
        let folder = TemporaryDirectory()
        let source = folder.file("library.sqlite")
        try SplitFixture.build(source, authors: 20, books: 40, logs: 10)
        // An app still holds the store open: its last save is only in the write-ahead log.
        let running = try SQLiteStore(model: try ObjectModel.example, configuration: nil, url: source)
        try running.save(StoreChanges(inserts: [try newRow(running, "SearchLog", ["query": .string("late")])]))
        let wal = URL(fileURLWithPath: source.path + "-wal")
        #expect(try Data(contentsOf: wal).count > 0)
        let bytes = try Data(contentsOf: source)
        let walBytes = try Data(contentsOf: wal)
        let report = try StoreSplitter.split(
            model: try ObjectModel.example, source: source, targets: SplitFixture.targets(folder.url))
        let logs = report.targets.flatMap(\.checks).first { $0.name == "SearchLog" }
        #expect(logs?.rows == 11)
        #expect(try Data(contentsOf: source) == bytes)
        #expect(try Data(contentsOf: wal) == walBytes)
        running.close()
    }

    @Test func splittingAgainOrIntoATakenPathDoesNoHarm() throws {
        let folder = TemporaryDirectory()
        let source = folder.file("library.sqlite")
        try SplitFixture.build(source, authors: 50, books: 200, logs: 100)
        let sourceBytes = try Data(contentsOf: source)
        let model = try ObjectModel.example
        let targets = SplitFixture.targets(folder.url)
        let first = try StoreSplitter.split(model: model, source: source, targets: targets)
        #expect(first.outcome == .split)
        let catalogBytes = try Data(contentsOf: targets["Catalog"]!)
        // Again: already split, nothing written.
        let again = try StoreSplitter.split(model: model, source: source, targets: targets)
        #expect(again.outcome == .alreadySplit)
        #expect(again.rowsCopied == 0)
        #expect(again.targets.map(\.storeIdentifier) == first.targets.map(\.storeIdentifier))
        #expect(again.targets.map(\.checks) == first.targets.map(\.checks))
        #expect(try Data(contentsOf: targets["Catalog"]!) == catalogBytes)
        // Splitting a store that holds one configuration already.
        do {
            _ = try StoreSplitter.split(
                model: model, source: targets["Catalog"]!, targets: SplitFixture.targets(folder.url, "-2"))
            Issue.record("split a configuration store")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("already split"))
        }
        // Into a file that holds another store, or into the source itself.
        let other = folder.file("other.sqlite")
        try SQLiteStore(model: model, configuration: "Catalog", url: other).close()
        let otherBytes = try Data(contentsOf: other)
        for (configuration, url) in [("Catalog", other), ("Catalog", source), ("Activity", targets["Catalog"]!)] {
            var taken = SplitFixture.targets(folder.url, "-3")
            taken[configuration] = url
            do {
                _ = try StoreSplitter.split(model: model, source: source, targets: taken)
                Issue.record("split into \(url.lastPathComponent) for \(configuration)")
            } catch {
                #expect(error.code == .duplicateStore, "\(error)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: folder.file("catalog-3.sqlite").path))
        #expect(try Data(contentsOf: other) == otherBytes)
        // Through a coordinator: a target already attached is refused before anything is written.
        let coordinator = StoreCoordinator(model: model)
        try coordinator.addStore(type: .sqlite, configuration: "Catalog", url: other)
        var attached = SplitFixture.targets(folder.url, "-4")
        attached["Catalog"] = other
        do {
            try coordinator.splitStore(at: source, into: attached)
            Issue.record("split into an attached store")
        } catch {
            #expect(error.code == .duplicateStore)
            #expect(error.message.contains("already attached"))
        }
        #expect(!FileManager.default.fileExists(atPath: folder.file("activity-4.sqlite").path))
        // A complete split attaches as it is.
        let fresh = StoreCoordinator(model: model)
        let report = try fresh.splitStore(at: source, into: targets)
        #expect(report.outcome == .alreadySplit)
        #expect(fresh.stores.map(\.identifier) == first.targets.map(\.storeIdentifier))
        #expect(try Data(contentsOf: source) == sourceBytes)
        // Missing configurations and models that differ are refused.
        #expect(throws: StoreError.self) {
            try StoreSplitter.split(model: model, source: source, targets: ["Catalog": folder.file("c5.sqlite")])
        }
    }

    @Test func killedSplitsResumeWithoutDuplicatingOrLosingRows() throws {
        let folder = TemporaryDirectory()
        let source = folder.file("library.sqlite")
        try SplitFixture.build(source, authors: 10_000, books: 60_000, logs: 30_000)
        let sourceBytes = try Data(contentsOf: source)
        func arguments(_ targets: [String: URL]) -> [String] {
            [
                "split", "--from", source.path, "--to", "Catalog=\(targets["Catalog"]!.path)", "--to",
                "Activity=\(targets["Activity"]!.path)", "--chunk-size", "2000", "--durability", "normal",
            ]
        }
        // A reference run, uninterrupted, gives the time a whole run takes.
        let reference = SplitFixture.targets(folder.url, "-reference")
        let begin = Date()
        let whole = try SplitFixture.run(arguments(reference), in: folder.url)
        let full = Date().timeIntervalSince(begin)
        #expect(whole.status == 0, "\(whole.output)")
        #expect(whole.output.contains("split: ") && whole.output.contains("% ("))
        #expect(whole.output.contains("verified"))
        print("strata split (a process, debug build) of 100000 objects: \(full) s")
        // Kill runs at random moments, resuming each time, until 20+ kills have landed.
        var generator = SystemRandomNumberGenerator()
        let targets = SplitFixture.targets(folder.url)
        var kills = 0
        var rounds = 1
        var attempts = 0
        var delays: [Double] = []
        var phases: [String: Int] = [:]
        while kills < 24 && attempts < 80 {
            attempts += 1
            // Every other kill comes early, while rows are being copied; the rest anywhere,
            // verification and the final commit included.
            let delay = Double.random(in: 0.0...(full * (attempts % 2 == 0 ? 0.35 : 0.8)), using: &generator)
            let log = folder.file("kill-\(attempts).log")
            let process = try SplitFixture.start(arguments(targets), log: log)
            // The kill's moment, drawn at random (not a wait for anything).
            usleep(UInt32(delay * 1_000_000))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                kills += 1
                delays.append((delay * 1000).rounded() / 1000)
                let lines = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
                let phase = lines.last { $0.hasPrefix("split: ") }.map { line in
                    ["verifying", "copying"].first { line.contains(" \($0) ") } ?? "other"
                }
                phases[phase ?? "starting", default: 0] += 1
                // A half-copied store cannot be opened as a store.
                if kills == 1, let values = try? storeMetadata(targets["Catalog"]!), values["splitState"] == "copying" {
                    #expect(throws: StoreError.self) {
                        try SQLiteStore(
                            model: try ObjectModel.example, configuration: "Catalog", url: targets["Catalog"]!)
                    }
                }
            } else {
                process.waitUntilExit()
                let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                #expect(process.terminationStatus == 0, "\(output)")
                // Finished before the kill: check it, then start a new round from scratch.
                for table in ["Author", "Book", "Tag", "_join_Book_tags"] {
                    #expect(
                        try SplitFixture.fingerprint(targets["Catalog"]!, table)
                            == SplitFixture.fingerprint(reference["Catalog"]!, table))
                }
                for url in targets.values {
                    for suffix in ["", "-wal", "-shm"] {
                        try? FileManager.default.removeItem(atPath: url.path + suffix)
                    }
                }
                rounds += 1
            }
            #expect(try Data(contentsOf: source) == sourceBytes)
        }
        #expect(kills >= 20)
        print(
            "killed \(kills) times in \(rounds) round(s) after (s): \(delays.map { String($0) }.joined(separator: ", "))"
        )
        let resumeBegin = Date()
        let last = try SplitFixture.run(arguments(targets), in: folder.url)
        print("last progress line before each kill: \(phases.sorted { $0.key < $1.key })")
        print("the resuming run took \(Date().timeIntervalSince(resumeBegin)) s")
        #expect(last.status == 0, "\(last.output)")
        #expect(last.output.contains("verified") || last.output.contains("already split"))
        // The same rows as the uninterrupted run, and as the source.
        for table in ["Author", "Book", "Tag", "_join_Book_tags"] {
            #expect(
                try SplitFixture.fingerprint(targets["Catalog"]!, table)
                    == SplitFixture.fingerprint(reference["Catalog"]!, table))
            #expect(try SplitFixture.fingerprint(targets["Catalog"]!, table) == SplitFixture.fingerprint(source, table))
        }
        #expect(
            try SplitFixture.fingerprint(targets["Activity"]!, "SearchLog")
                == SplitFixture.fingerprint(source, "SearchLog"))
        let again = try SplitFixture.run(arguments(targets), in: folder.url)
        #expect(again.status == 0)
        #expect(again.output.contains("already split"), "\(again.output)")
        let verified = try StoreSplitter.split(model: try ObjectModel.example, source: source, targets: targets)
        let reported = try StoreSplitter.split(model: try ObjectModel.example, source: source, targets: reference)
        #expect(verified.targets.map(\.checks) == reported.targets.map(\.checks))
        #expect(try Data(contentsOf: source) == sourceBytes)
    }

    @Test func splitOnTheCommandLine() throws {
        let folder = TemporaryDirectory()
        let source = folder.file("library.sqlite")
        try SplitFixture.build(source, authors: 30, books: 90, logs: 40)
        let bytes = try Data(contentsOf: source)
        let targets = SplitFixture.targets(folder.url)
        let arguments = [
            "split", "--from", source.path, "--to", "Catalog=\(targets["Catalog"]!.path)", "--to",
            "Activity=\(targets["Activity"]!.path)", "--skip", "Activity", "--progress", "lines",
        ]
        let first = try SplitFixture.run(arguments, in: folder.url)
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("split: 100% (200/200 rows)"), "\(first.output)")
        #expect(first.output.contains("Activity  \(targets["Activity"]!.path)"))
        #expect(first.output.contains("(skipped: created empty)"))
        #expect(first.output.contains("Book  90 rows  checksum "))
        let again = try SplitFixture.run(arguments, in: folder.url)
        #expect(again.status == 0)
        #expect(again.output.contains("already split"), "\(again.output)")
        let resplit = try SplitFixture.run(
            [
                "split", "--from", targets["Catalog"]!.path, "--to", "Catalog=\(folder.file("x.sqlite").path)", "--to",
                "Activity=\(folder.file("y.sqlite").path)",
            ], in: folder.url)
        #expect(resplit.status == 1)
        #expect(resplit.output.contains("already split: it holds only configuration 'Catalog'"), "\(resplit.output)")
        let missing = try SplitFixture.run(
            ["split", "--from", source.path, "--to", "Catalog=\(folder.file("x.sqlite").path)"], in: folder.url)
        #expect(missing.status == 1)
        #expect(missing.output.contains("missing: Activity"), "\(missing.output)")
        #expect(!FileManager.default.fileExists(atPath: folder.file("x.sqlite").path))
        #expect(try Data(contentsOf: source) == bytes)
    }

    @Test func inspectAndMigrateOnTheCommandLine() throws {
        let folder = TemporaryDirectory()
        let url = folder.file("main.sqlite")
        try Shop.seed(url)
        let v2 = Shop.customer.replacingOccurrences(
            of: #"{"name": "notes", "type": "string"}"#,
            with: #"{"name": "notes", "type": "string"}, {"name": "email", "type": "string"}"#)
        let modelFile = folder.file("shop-2.json")
        let json = """
            {"name": "Shop", "version": "2", "entities": [\(v2), \(Shop.order), \(Shop.legacy), \(Shop.event)],
             "configurations": [{"name": "Main", "entities": ["Customer", "Order", "Legacy"]}, {"name": "Log", "entities": ["Event"]}]}
            """
        try Data(json.utf8).write(to: modelFile)
        let bytes = try Data(contentsOf: url)
        let inspect = try SplitFixture.run(["inspect", url.path, "--model", modelFile.path], in: folder.url)
        #expect(inspect.status == 3, "\(inspect.output)")
        #expect(inspect.output.contains("configuration  Main"))
        #expect(inspect.output.contains("Customer") && inspect.output.contains("3 objects"))
        #expect(inspect.output.contains("addAttribute Customer.email"))
        let dry = try SplitFixture.run(
            ["migrate", "--model", modelFile.path, "--store", "Main=\(url.path)", "--dry-run"], in: folder.url)
        #expect(dry.status == 0, "\(dry.output)")
        #expect(try Data(contentsOf: url) == bytes)
        let migrate = try SplitFixture.run(
            ["migrate", "--model", modelFile.path, "--store", "Main=\(url.path)"], in: folder.url)
        #expect(migrate.status == 0, "\(migrate.output)")
        #expect(migrate.output.contains("migrated 1 store"))
        let after = try SplitFixture.run(["inspect", url.path, "--model", modelFile.path], in: folder.url)
        #expect(after.status == 0, "\(after.output)")
        #expect(after.output.contains("compatible with model Shop version 2: yes"))
    }
}
