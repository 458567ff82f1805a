import Foundation
import Strata
import StrataCLI
import StrataServer

#if canImport(Glibc)
    import Glibc
#endif

/// `strata serve`: the REST server over the model's stores.
enum ServeCommand {
    static let interface = CommandInterface(
        name: "strata serve", synopsis: "[options]",
        abstract: """
            Serves every entity of the model as a REST resource. Each option but --token has an
            environment twin (STRATA_...), which the command line overrides.
            """,
        options: options,
        discussion: """
            The default stores are <data-dir>/<configuration>.sqlite, one per configuration of the model.
            Saves across stores are all or nothing, also across a crash: on start-up (while /ready
            answers 503) the server finishes any that a crash interrupted, and logs what it finished.
            A store written with an older model version is migrated on start-up, by the mapping models
            (.xcmappingmodel) beside or inside the model for the steps they describe.
            SIGTERM or SIGINT stops accepting, finishes requests in flight, closes the stores and exits 0.
            """)

    static func run(_ arguments: [String]) -> Int32 {
        interface.run(arguments, defaults: ServerOptions(), body: serve)
    }

    /// Loads the model, checks the options against it, and serves until SIGTERM or SIGINT.
    static func serve(_ options: ServerOptions) -> Int32 {
        var options = options
        let model: ObjectModel
        do {
            model = try loadModel(options.models)
            options.modelHistory = try loadModelHistory(models: options.models, history: [])
            options.mappingModels = try loadMappingModels([], models: options.models)
        } catch {
            printError("strata serve: \(error)")
            return 1
        }
        if let mistake = mismatch(options, model) { return interface.fail(mistake) }
        let server = StrataServerInstance(model: model, options: options)
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        do {
            try server.start()
        } catch {
            printError("strata serve: \(error.message)")
            return 1
        }
        // Who may use the server before where it listens: the listening line is the last word of
        // start-up, which scripts and tests wait for.
        if let reason = server.accessSummary { printError("strata serve: \(reason)") }
        printError(
            "strata serve: \(model.name) on \(server.isTLS ? "https" : "http")://\(options.host):\(server.port) (stores: \(options.storeDescriptions(for: model).map { "\($0.configuration ?? ObjectModel.defaultConfiguration)=\($0.url?.path ?? "memory")" }.joined(separator: ", ")))"
        )
        waitForSignals(server)
        return 0
    }

    /// What in the options names what the model does not have.
    static func mismatch(_ options: ServerOptions, _ model: ObjectModel) -> String? {
        for (configuration, _) in options.stores where configuration != ObjectModel.defaultConfiguration {
            guard model.configurations.contains(where: { $0.name == configuration }) else {
                return
                    "--store names configuration '\(configuration)', which the model does not have (it has: \(model.configurations.map(\.name).joined(separator: ", ")))"
            }
        }
        for entity in options.entityAccess.keys.sorted() where model.entity(named: entity) == nil {
            return
                "--entity-access names entity '\(entity)', which the model does not have (it has: \(model.entityNames.joined(separator: ", ")))"
        }
        return nil
    }

    /// Reloads tokens and TLS on SIGHUP; on SIGTERM or SIGINT finishes requests in flight, closes
    /// the stores and returns.
    static func waitForSignals(_ server: StrataServerInstance) {
        let stopped = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        signal(SIGHUP, SIG_IGN)
        let hangUp = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangUp.setEventHandler {
            do throws(ServeError) {
                let count = try server.reloadTokens()
                printError("strata serve: SIGHUP: \(count) token\(count == 1 ? "" : "s") in force")
            } catch {
                printError("strata serve: SIGHUP: \(error.message); the tokens in force stay")
            }
            guard server.isTLS else { return }
            do throws(ServeError) {
                try server.reloadTLS()
                printError("strata serve: SIGHUP: TLS certificate and key read again")
            } catch {
                printError("strata serve: SIGHUP: \(error.message); the certificate in force stays")
            }
        }
        hangUp.resume()
        sources.append(hangUp)
        for signalNumber in [SIGTERM, SIGINT] {
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stopped.signal() }
            source.resume()
            sources.append(source)
        }
        stopped.wait()
        printError("strata serve: stopping: finishing requests in flight and closing the stores")
        server.stop()
        for source in sources { source.cancel() }
    }
}
