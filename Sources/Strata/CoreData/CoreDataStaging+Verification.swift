import Foundation

/// The staging store checked against the Core Data store it was written from.
extension CoreDataStagingWriter {
    /// Accumulates one entity's (or join table's) rows into a row count and a checksum.
    struct Digest {
        var rows = 0
        var hasher = SHA256()

        mutating func add(_ values: [SQLiteValue]) {
            rows += 1
            var line: [UInt8] = []
            for value in values {
                switch value {
                case .null: line += [0x6e]
                case .integer(let i): line += Array("i\(i)".utf8)
                case .real(let d): line += Array("r\(d.bitPattern)".utf8)
                case .text(let s): line += Array("t\(s.utf8.count):".utf8) + Array(s.utf8)
                case .blob(let b): line += Array("b\(b.count):".utf8) + Array(b)
                }
                line.append(0x1f)
            }
            line.append(0x1e)
            hasher.update(line)
        }

        mutating func check(_ name: String) -> SplitCheck {
            SplitCheck(name: name, rows: rows, checksum: SQLiteSplitter.hex(hasher.finalize()))
        }
    }

    /// Both sides of a verification, by entity or join table name.
    struct Digests {
        /// From the Core Data store, its values as Strata stores them.
        var expected: [String: Digest] = [:]
        /// From the staging store.
        var found: [String: Digest] = [:]

        /// Every name's check as the staging store has it, in name order.
        /// - Throws: `.io` naming every entity or join table whose rows differ.
        mutating func checks(storeURL url: URL) throws(StoreError) -> [SplitCheck] {
            var checks: [SplitCheck] = []
            var differences: [String] = []
            for name in expected.keys.sorted() {
                let source = expected[name]!.check(name)
                var target = found[name] ?? Digest()
                let written = target.check(name)
                if source != written {
                    differences.append(
                        "\(name): the Core Data store holds \(source.rows) rows (checksum \(source.checksum)), the import \(written.rows) (checksum \(written.checksum))"
                    )
                }
                checks.append(written)
            }
            guard differences.isEmpty else {
                throw StoreError(
                    .io,
                    "the import does not match the Core Data store (remove \(url.path) and import again): "
                        + differences.joined(separator: "; "), storeURL: url)
            }
            return checks
        }
    }

    /// Every entity's and join table's row count and checksum, computed from the Core Data store
    /// (its values decoded and encoded as Strata stores them) and from the staging store; they
    /// must agree. Records them in the staging store.
    /// - Throws: `.io` naming what differs.
    mutating func verify() throws(StoreError) -> [SplitCheck] {
        progress?(CoreDataImportProgress(phase: .verifying, table: nil, copiedRows: 0, totalRows: 0))
        let db = self.db!
        // Its own decoder: the import's warnings are counted once, while copying.
        var values = CoreDataValues(storeURL: file.url)
        var digests = Digests()
        do {
            for (root, table) in mapping.tables.sorted(by: { $0.key < $1.key }) {
                // Every concrete entity has a check, rows or none.
                for entity in table.entityByNumber.values where model.entity(named: entity)?.isAbstract == false {
                    digests.expected[entity] = Digest()
                    digests.found[entity] = Digest()
                }
                try digestCoreDataRows(of: table, into: &digests.expected, values: &values)
                if let staged = schema.tables[root] { try digestStagedRows(of: staged, in: db, into: &digests.found) }
            }
            for join in mapping.joins {
                digests.expected[join.join.name] = try coreDataDigest(of: join)
                digests.found[join.join.name] = try stagedDigest(of: join.join, in: db)
            }
        } catch {
            throw StoreError(.io, "cannot verify the import: \(error)", storeURL: url)
        }
        let checks = try digests.checks(storeURL: url)
        try record(checks, in: db)
        return checks
    }

    /// Adds each row of a Core Data table to its entity's digest, as the staging store holds it.
    private func digestCoreDataRows(
        of table: CoreDataMapping.Table, into digests: inout [String: Digest], values: inout CoreDataValues
    ) throws(SQLiteError) {
        guard !file.columns(of: table.name).isEmpty else { return }
        let columns = ["Z_PK", "Z_ENT", "Z_OPT"] + table.columns
        let select = try file.db.statement(
            "SELECT \(columns.map(SQLiteSchema.quote).joined(separator: ", ")) FROM \(SQLiteSchema.quote(table.name)) ORDER BY Z_PK"
        )
        defer { select.reset() }
        while try select.step() {
            let row = (0..<Int32(columns.count)).map { select.value($0) }
            guard case .integer(let number) = row[1], let entity = table.entityByNumber[Int(number)],
                let plan = schema.rowPlans[entity]
            else { continue }
            digests[entity, default: Digest()].add(
                stagedLine(of: row, entity: entity, plan: plan, table: table, values: &values))
        }
    }

    /// A Core Data row (`Z_PK`, `Z_ENT`, `Z_OPT`, then the table's columns) as the staging store
    /// holds it: key, version (at least 1), the plan's attribute values decoded and encoded, then
    /// its foreign keys.
    private func stagedLine(
        of row: [SQLiteValue], entity: String, plan: SQLiteSchema.RowPlan, table: CoreDataMapping.Table,
        values: inout CoreDataValues
    ) -> [SQLiteValue] {
        var version: Int64 = 1
        if case .integer(let opt) = row[2], opt > 0 { version = opt }
        var line: [SQLiteValue] = [row[0], .integer(version)]
        for name in plan.layout.names {
            if let attribute = model.attribute(name, of: entity),
                let value = table.value(of: name, attribute, entity: entity, row: row, values: &values)
            {
                line.append(SQLiteSchema.encode(value))
            } else {
                line.append(.null)
            }
        }
        for (_, info) in plan.foreignKeys {
            if let index = table.toOne[entity]?[info.name], case .integer(let key) = row[index + 3] {
                line.append(.integer(key))
            } else {
                line.append(.null)
            }
        }
        return line
    }

    /// Adds each row of a staging table to its entity's digest.
    private func digestStagedRows(
        of table: SQLiteSchema.Table, in db: SQLiteConnection, into digests: inout [String: Digest]
    ) throws(SQLiteError) {
        let columns = ["_pk", "_entity", "_version"] + table.columns.map(\.name)
        let select = try db.statement(
            "SELECT \(columns.map(SQLiteSchema.quote).joined(separator: ", ")) FROM \(SQLiteSchema.quote(table.name)) ORDER BY \"_pk\""
        )
        defer { select.reset() }
        while try select.step() {
            let entity = select.text(1)
            guard let plan = schema.rowPlans[entity] else { continue }
            var line: [SQLiteValue] = [select.value(0), select.value(2)]
            for (column, _) in plan.attributes { line.append(select.value(column + 3)) }
            for (column, _) in plan.foreignKeys { line.append(select.value(column + 3)) }
            digests[entity, default: Digest()].add(line)
        }
    }

    /// The digest of a many-to-many relationship's pairs in the Core Data store.
    private func coreDataDigest(of join: CoreDataMapping.Join) throws(StoreError) -> Digest {
        var digest = Digest()
        for (s, t, position, targetPosition) in try pairs(join) {
            digest.add(
                [.integer(s), .integer(t), .integer(position)]
                    + (join.join.isTargetOrdered ? [.integer(targetPosition)] : []))
        }
        return digest
    }

    /// The digest of a join table in the staging store.
    private func stagedDigest(of join: JoinTableDescription, in db: SQLiteConnection) throws(SQLiteError) -> Digest {
        let positions = join.isTargetOrdered ? "\"position\", \"target_position\"" : "\"position\""
        var digest = Digest()
        let select = try db.statement(
            "SELECT \"source\", \"target\", \(positions) FROM \(SQLiteSchema.quote(join.name)) ORDER BY \"source\", \"target\""
        )
        defer { select.reset() }
        while try select.step() { digest.add((0..<select.columnCount).map { select.value($0) }) }
        return digest
    }

    /// Records the checks in the staging store's metadata, for `recordedChecks`.
    private func record(_ checks: [SplitCheck], in db: SQLiteConnection) throws(StoreError) {
        let record = JSONValue.object(
            Dictionary(
                uniqueKeysWithValues: checks.map {
                    ($0.name, JSONValue.object(["rows": .integer(Int64($0.rows)), "checksum": .string($0.checksum)]))
                }))
        do {
            try db.run(
                "INSERT OR REPLACE INTO \(SQLiteStore.metadataTable) (key, value) VALUES (?, ?)",
                [.text(Self.verificationKey), .text(record.jsonText)])
        } catch {
            throw StoreError(.io, "cannot record the verification: \(error.message)", storeURL: url)
        }
    }

    /// The verification an earlier run recorded.
    func recordedChecks() -> [SplitCheck] {
        guard let db, let text = SQLiteStore.metadataValues(in: db)?[Self.verificationKey],
            case .object(let record)? = try? JSONValue.parse(text)
        else { return [] }
        return record.keys.sorted().compactMap { name in
            guard let entry = record[name]?.objectValue, case .integer(let rows)? = entry["rows"],
                let checksum = entry["checksum"]?.stringValue
            else { return nil }
            return SplitCheck(name: name, rows: Int(rows), checksum: checksum)
        }
    }
}
