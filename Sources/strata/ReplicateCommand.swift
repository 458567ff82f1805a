import Foundation
import Strata
import StrataCLI
import StrataServer
import StrataSync

/// `strata replicate`: a local replica of a server, kept up to date, optionally served.
enum ReplicateCommand {
    struct Settings {
        var from: String?
        var dataDirectory: String?
        var models: [String] = []
        var entities: [String] = []
        var filters: [String: String] = [:]
        var token: String?
        var writable = false
        var policies: [String: ConflictPolicy] = [:]
        var defaultPolicy = ConflictPolicy.serverWins
        var bearer: String?
        var port: Int?
        var host = "127.0.0.1"
        var wait = 25.0
        var once = false
        var seed = SeedSource.export
    }

    static let interface = CommandInterface<Settings>(
        name: "strata replicate",
        synopsis: "--from URL --data-dir DIR [--entities A,B] [--writable] [--port N] [options]",
        abstract: """
            Keeps a local copy of a Strata server's objects in DIR/default.sqlite: reads the server's
            export (GET /_export, or with --seed lists each entity's list) once, then follows its
            change feed (GET /_changes, long-polled) and applies each page in one local transaction
            that also records the feed's token, so a restart resumes where it stopped. With
            --writable, local saves (through --port, or any process writing the store) are sent back
            as _batch requests with If-Match and an Idempotency-Key, conflicts settled by each
            entity's --policy. When the server no longer keeps the history after the replica's token
            (410), the replica copies the server again, keeping its unsent changes.
            """,
        options: [
            .value("--from", "URL", environment: "STRATA_REPLICATE_FROM", help: "the server to replicate") {
                $0.from = $1.text
            },
            .value("--data-dir", "DIR", help: "the replica's folder (created when missing)") {
                $0.dataDirectory = $1.text
            },
            .model(help: "the server's model: JSON, .xcdatamodel or .xcdatamodeld") { $0.models.append($1) },
            .value(
                "--entities", "A,B", items: .commaSeparated,
                help: "replicate only these entities (each with its subentities); default: every one the server serves"
            ) { $0.entities += $1.text.split(separator: ",").map(String.init) },
            .value(
                "--where", "ENTITY=PREDICATE", repeatable: true,
                help: "keep only the objects of ENTITY that match PREDICATE (Core Data's predicate format)"
            ) { settings, value in
                guard let equals = value.text.firstIndex(of: "="), equals != value.text.startIndex else {
                    throw value.invalid("takes ENTITY=PREDICATE")
                }
                settings.filters[String(value.text[..<equals])] = String(value.text[value.text.index(after: equals)...])
            },
            .value(
                "--token", "TOKEN",
                help: "a new replica follows the feed from this history token instead of reading the export first"
            ) { $0.token = $1.text },
            .flag("--writable", help: "send local saves back to the server (and serve the replica read-write)") {
                $0.writable = $1
            },
            .value(
                "--policy", "ENTITY=POLICY", repeatable: true,
                help: "how ENTITY's conflicts settle: server-wins, local-wins or merge-by-property (ENTITY * for every "
                    + "entity; default server-wins)"
            ) { settings, value in
                let parts = value.text.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let policy = ConflictPolicy(rawValue: parts[1]) else {
                    throw value.invalid("takes ENTITY=server-wins, ENTITY=local-wins or ENTITY=merge-by-property")
                }
                if parts[0] == "*" { settings.defaultPolicy = policy } else { settings.policies[parts[0]] = policy }
            },
            .value(
                "--bearer", "TOKEN", environment: "STRATA_REPLICATE_BEARER",
                help: "the access token sent to the server (Authorization: Bearer)"
            ) { $0.bearer = $1.text },
            .value("--port", "N", help: "also serve the replica on this port (0: any free port)") {
                $0.port = try $1.integer(0...65535, "a port from 0 to 65535")
            },
            .value("--host", "ADDRESS", default: "127.0.0.1", help: "the address --port listens on") {
                $0.host = $1.text
            },
            .value("--wait", "SECONDS", default: "25", help: "how long one read of the change feed waits for a change")
            {
                $0.wait = try $1.number(0...60, above: true, "seconds above 0, at most 60")
            },
            .flag("--once", help: "catch up with the server (and push local saves) once, then exit") { $0.once = $1 },
            .value(
                "--seed", "FROM", default: "export",
                help: "the first copy: export (GET /_export) or lists (each entity's list, paged)"
            ) { settings, value in
                guard let source = SeedSource(rawValue: value.text) else {
                    throw value.invalid("takes export or lists")
                }
                settings.seed = source
            },
        ],
        discussion: """
            The replica's store is served with the model strata replicate writes beside it:
            strata serve --model DIR/replica-model.json --data-dir DIR (the bookkeeping entities it adds
            are hidden). Local objects keep the server's ids; an object created locally has an id from
            2^40 up until the server acknowledges it, then takes the server's id everywhere.
            SIGTERM or SIGINT stops after the current step; the next run resumes from the stored token.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: Settings(), body: replicate)
    }

    static func replicate(_ settings: Settings) -> Int32 {
        guard let from = settings.from, let server = URL(string: from), server.scheme != nil else {
            return interface.fail("--from URL is required (http://host:port)")
        }
        guard let directory = settings.dataDirectory else { return interface.fail("--data-dir DIR is required") }
        let replica: Replica
        // The server over the replica's store, once it runs: its root context forgets what the
        // replica writes, so that its next write starts from the stored state.
        let served = Locked<StrataServerInstance?>(nil)
        do {
            var configuration = try configuration(settings, server: server, directory: directory)
            configuration.onChange = { change in served.withLock { $0 }?.restService?.root.mergeExternalChanges(change)
            }
            replica = try Replica(configuration)
            if let token = settings.token, replica.serverToken == nil { try replica.follow(from: token) }
        } catch {
            printError("strata replicate: \(error)")
            return 1
        }
        defer { replica.close() }
        if settings.once { return catchUp(replica) }
        var instance: StrataServerInstance?
        if let port = settings.port {
            do {
                instance = try serve(replica, settings, port: port, directory: directory)
                served.withLock { $0 = instance }
            } catch {
                printError("strata replicate: cannot serve the replica: \(error)")
                return 1
            }
        }
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { replica.stop() }
            source.resume()
            sources.append(source)
        }
        printError("strata replicate: following \(from) into \(directory)")
        let failing = Locked(false)
        let reported = Locked((conflicts: 0, rejected: 0))
        replica.run { result in
            report(replica, since: reported)
            switch result {
            case .success:
                if failing.withLock({ $0 }) { printError("strata replicate: the server answers again") }
                failing.withLock { $0 = false }
            case .failure(let error):
                if !failing.withLock({ $0 }) { printError("strata replicate: \(error); retrying") }
                failing.withLock { $0 = true }
            }
        }
        instance?.stop()
        _ = sources
        let statistics = replica.statistics
        printError(
            "strata replicate: stopped at \(replica.serverToken ?? "-"): \(statistics.pulledChanges) changes applied, "
                + "\(statistics.pushedTransactions) local transactions pushed, \(statistics.conflictCount) conflicts, "
                + "\(statistics.seeds) seeds")
        return 0
    }

    /// Prints the conflicts settled and the pushes refused since the last report.
    static func report(_ replica: Replica, since reported: Locked<(conflicts: Int, rejected: Int)>) {
        let conflicts = replica.conflicts
        let rejected = replica.rejectedPushes
        let (fromConflict, fromRejected) = reported.withLock { seen in
            defer { seen = (conflicts.count, rejected.count) }
            return (seen.conflicts, seen.rejected)
        }
        for conflict in conflicts.dropFirst(fromConflict) {
            let server = conflict.serverDeleted ? "deleted on the server" : "changed on the server"
            printError(
                "strata replicate: conflict: local \(conflict.localChange.rawValue) of \(conflict.entity) "
                    + "\(conflict.id), \(server), settled \(conflict.policy.rawValue)"
                    + (conflict.localLost ? " (the local change lost)" : ""))
        }
        for push in rejected.dropFirst(fromRejected) {
            printError(
                "strata replicate: the server refused local transaction \(push.transaction) (\(push.status) "
                    + "\(push.detail)); its objects took the server's state")
        }
    }

    /// The replica's configuration from the command line.
    static func configuration(_ settings: Settings, server: URL, directory: String) throws -> ReplicaConfiguration {
        let model = try loadModel(settings.models)
        var entities: [String: String?]?
        if !settings.entities.isEmpty || !settings.filters.isEmpty {
            var chosen: [String: String?] = [:]
            for entity in settings.entities { chosen[entity] = .some(nil) }
            for (entity, predicate) in settings.filters { chosen[entity] = .some(predicate) }
            entities = chosen
        }
        var configuration = ReplicaConfiguration(
            server: server, model: model, directory: URL(fileURLWithPath: directory), entities: entities)
        configuration.policies = settings.policies
        configuration.defaultPolicy = settings.defaultPolicy
        configuration.pushes = settings.writable
        configuration.pullWait = settings.wait
        configuration.seedSource = settings.seed
        if let bearer = settings.bearer { configuration.headers["Authorization"] = "Bearer \(bearer)" }
        return configuration
    }

    /// Synchronizes until a pass applies nothing.
    static func catchUp(_ replica: Replica) -> Int32 {
        do {
            while try replica.synchronize() > 0 {}
            report(replica, since: Locked((0, 0)))
            let statistics = replica.statistics
            printError(
                "strata replicate: caught up at \(replica.serverToken ?? "-"): \(statistics.pulledChanges) changes "
                    + "applied, \(statistics.pushedTransactions) local transactions pushed, "
                    + "\(statistics.conflictCount) conflicts")
            return 0
        } catch {
            printError("strata replicate: \(error)")
            return 1
        }
    }

    /// Serves the replica's store on `port`: without a read cache (the replica writes the store
    /// beside the server), every entity read-only unless the replica pushes local writes.
    static func serve(_ replica: Replica, _ settings: Settings, port: Int, directory: String) throws
        -> StrataServerInstance
    {
        var options = ServerOptions()
        options.host = settings.host
        options.port = UInt16(port)
        options.dataDirectory = directory
        options.readCacheObjects = 0
        options.idempotencyHours = 0
        // The replica prunes its history itself, never past a local write it has not pushed.
        options.historyRetention = nil
        options.historyMaxChanges = nil
        if !settings.writable {
            for entity in replica.configuration.model.entityNames { options.entityAccess[entity] = .readOnly }
        }
        let server = StrataServerInstance(model: replica.localModel, options: options)
        try server.start()
        printError("strata replicate: serving the replica on http://\(settings.host):\(server.port)")
        return server
    }
}
