import Foundation

extension StoreType {
    /// The kind of PostgreSQL stores.
    static var postgresqlKind: any StoreKind { PostgreSQLStoreKind() }
}

/// PostgreSQL stores: opened from a connection URI, migrated in one transaction under an advisory
/// lock (``PostgreSQLMigrator``), inspected read-only; not split (configurations already live in
/// schemas of their own).
struct PostgreSQLStoreKind: StoreKind {
    var type: StoreType { .postgresql }

    func open(model: ObjectModel, configuration: String?, url: URL?, options: StoreOptions) throws(StoreError)
        -> any PersistentStore
    {
        guard let url else { throw StoreError(.invalidRequest, "a PostgreSQL store needs a connection URI") }
        return try PostgreSQLStore(model: model, configuration: configuration, url: url, options: options)
    }

    /// A `postgresql://` or `postgres://` connection URI.
    func recognizes(_ url: URL) -> Bool { Self.isConnectionURI(url) }

    /// The URL of a libpq connection URI: as written, or, for the form that lists several hosts in
    /// its authority (`postgresql://user@h1:5432,h2:5433/db?…`, which `URL` cannot hold), the same
    /// connection with the hosts and ports in the query (`postgresql://user@/db?host=h1,h2&port=5432,5433&…`),
    /// which libpq reads alike. Nil for text that is neither.
    static func connectionURL(_ text: String) -> URL? {
        let lowered = text.lowercased()
        guard let scheme = ["postgresql://", "postgres://"].first(where: { lowered.hasPrefix($0) }) else { return nil }
        if let url = URL(string: text), url.host?.contains(",") != true { return url }
        var rest = Substring(text.dropFirst(scheme.count))
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        var user = ""
        if let at = authority.lastIndex(of: "@") {
            user = String(authority[...at])
            authority = authority[authority.index(after: at)...]
        }
        var hosts: [String] = []
        var ports: [String] = []
        for entry in authority.split(separator: ",", omittingEmptySubsequences: false) {
            // `[::1]:5432`, `host:5432`, `host`.
            var host = Substring(entry)
            var port = Substring("")
            if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
                let after = host[host.index(after: close)...]
                port = after.hasPrefix(":") ? after.dropFirst() : ""
                host = host[host.index(after: host.startIndex)..<close]
            } else if let colon = host.lastIndex(of: ":") {
                port = host[host.index(after: colon)...]
                host = host[..<colon]
            }
            guard !host.isEmpty, port.allSatisfy(\.isNumber) else { return nil }
            hosts.append(String(host))
            ports.append(String(port))
        }
        let path = rest.prefix { $0 != "?" }
        let query = rest.dropFirst(path.count).dropFirst()
        var items = "host=" + hosts.joined(separator: ",")
        if ports.contains(where: { !$0.isEmpty }) { items += "&port=" + ports.joined(separator: ",") }
        if !query.isEmpty { items += "&" + query }
        return URL(string: scheme + user + (path.isEmpty ? "/" : String(path)) + "?" + items)
    }

    static func isConnectionURI(_ url: URL) -> Bool {
        ["postgresql", "postgres"].contains(url.scheme?.lowercased() ?? "")
    }

    func pendingMigration(model: ObjectModel, description: StoreDescription) throws(StoreError)
        -> (any PendingMigration)?
    {
        guard let url = description.url else { return nil }
        let configuration =
            description.configuration == ObjectModel.defaultConfiguration ? nil : description.configuration
        guard let hashes = MigrationPlanner.hashes(of: model, configuration: configuration),
            let values = try Self.metadataValues(url, configuration: configuration)
        else { return nil }
        let found = try SQLiteStore.metadata(from: values, url: url)
        // A configuration mismatch is reported when the store is opened.
        guard found.configuration == configuration, found.entityHashes != hashes else { return nil }
        let target = try SQLMigrationTarget(
            values: values, found: found, model: model, configuration: configuration, hashes: hashes,
            options: description.options, url: url)
        return PostgreSQLPendingMigration(target)
    }

    /// The metadata the store's namespace holds; nil when it has none yet.
    func storedState(of description: StoreDescription) throws(StoreError) -> StoredState? {
        guard let url = description.url else { return nil }
        let configuration =
            description.configuration == ObjectModel.defaultConfiguration ? nil : description.configuration
        guard let values = try Self.metadataValues(url, configuration: configuration) else { return nil }
        return StoredState(
            metadata: try SQLiteStore.metadata(from: values, url: url),
            migrationRecord: values[SQLiteStore.migrationRecordKey].flatMap(MigrationRecord.init(text:)))
    }

    static func metadataValues(_ url: URL, configuration: String?) throws(StoreError) -> [String: String]? {
        let (conninfo, namespace, _) = PostgreSQLStore.connection(from: url, configuration: configuration)
        do {
            let connection = try PGConnection(conninfo)
            return try PostgreSQLStore.metadataValues(connection, namespace: namespace)
        } catch {
            throw StoreError(
                .io, "cannot read the PostgreSQL store \(PGConnection.redacted(url.absoluteString)): \(error)",
                storeURL: url)
        }
    }

    func forgetMigrationRecord(of description: StoreDescription) throws(StoreError) {
        guard let url = description.url else { return }
        let configuration =
            description.configuration == ObjectModel.defaultConfiguration ? nil : description.configuration
        let (conninfo, namespace, _) = PostgreSQLStore.connection(from: url, configuration: configuration)
        do {
            let connection = try PGConnection(conninfo)
            guard try PostgreSQLStore.metadataValues(connection, namespace: namespace) != nil else { return }
            try connection.execute(
                "DELETE FROM \(PostgreSQLSchema.quote(namespace)).\(PostgreSQLSchema.quote(PostgreSQLSchema.metadataTable)) WHERE key = $1",
                [.text(SQLiteStore.migrationRecordKey)])
        } catch {
            throw StoreError(
                .io, "cannot update the PostgreSQL store \(PGConnection.redacted(url.absoluteString)): \(error)",
                storeURL: url)
        }
    }

    func inspect(_ url: URL, model: ObjectModel?, history: [ObjectModel]) throws(StoreError) -> StoreInspection {
        let configuration = url.query.flatMap { query in
            URLComponents(string: "x:?" + query)?.queryItems?.first { $0.name == "configuration" }?.value
        }
        let (conninfo, namespace, _) = PostgreSQLStore.connection(from: url, configuration: configuration)
        let connection: PGConnection
        let values: [String: String]?
        do {
            connection = try PGConnection(conninfo)
            values = try PostgreSQLStore.metadataValues(connection, namespace: namespace)
        } catch {
            throw StoreError(
                .io, "cannot read the PostgreSQL store \(PGConnection.redacted(url.absoluteString)): \(error)",
                storeURL: url)
        }
        guard let values else {
            throw StoreError(.incompatibleModel, "schema '\(namespace)' holds no Strata store", storeURL: url)
        }
        let metadata = try SQLiteStore.metadata(from: values, url: url)
        var recordedName: String?
        if let text = values["model"], case .object(let object)? = try? JSONValue.parse(text) {
            recordedName = object["name"]?.stringValue
        }
        var inspection = StoreInspection(
            url: URL(string: PGConnection.redacted(url.absoluteString)) ?? url, metadata: metadata,
            format: "postgresql \(connection.serverVersion)", recordedModelName: recordedName, rowCounts: [:],
            joinTableRows: [:], splitState: nil, splitSource: nil)
        let tables =
            (try? connection.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name NOT LIKE '\\_strata\\_%' ORDER BY 1",
                [.text(namespace)]
            ).rows.compactMap { $0[0] }) ?? []
        for table in tables {
            let quoted = PostgreSQLSchema.quote(namespace) + "." + PostgreSQLSchema.quote(table)
            if table.hasPrefix("_join_") {
                let rows = try? connection.execute("SELECT count(*) FROM \(quoted)").rows
                inspection.joinTableRows[table] = Int(rows?.first?[0] ?? "0") ?? 0
            } else if let rows = try? connection.execute(
                "SELECT \"_entity\", count(*) FROM \(quoted) GROUP BY \"_entity\""
            ).rows {
                for row in rows { inspection.rowCounts[row[0] ?? "", default: 0] += Int(row[1] ?? "0") ?? 0 }
            }
        }
        guard let model else { return inspection.completed(with: nil, plan: nil) }
        let hashes = MigrationPlanner.hashes(of: model, configuration: metadata.configuration)
        let plan =
            hashes == nil || hashes == metadata.entityHashes
            ? nil
            : SQLiteMigrator.plan(
                values: values, storedHashes: metadata.entityHashes, configuration: metadata.configuration,
                model: model, history: history, url: url
            ).checkingData { step in
                let old = PostgreSQLSchema(model: step.old, entities: step.oldEntities, namespace: namespace)
                return (try? PostgreSQLMigrator.steps(namespace, connection).refusals(of: step, oldSchema: old.base))
                    ?? []
            }
        return inspection.completed(with: model, plan: plan)
    }

    func split(
        model: ObjectModel, source: URL, targets: [String: URL], options: SplitOptions,
        progress: ((SplitProgress) -> Void)?
    ) throws(StoreError) -> SplitReport {
        throw StoreError(
            .invalidRequest,
            "a PostgreSQL store is not split by Strata: its configurations already live in schemas of their own",
            storeURL: source)
    }
}
