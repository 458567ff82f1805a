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

    /// Every entity's and join table's row count and checksum, computed from the Core Data store
    /// (its values decoded and encoded as Strata stores them) and from the staging store; they
    /// must agree. Records them in the staging store.
    /// - Throws: `.io` naming what differs.
    mutating func verify() throws(StoreError) -> [SplitCheck] {
        progress?(CoreDataImportProgress(phase: .verifying, table: nil, copiedRows: 0, totalRows: 0))
        let db = self.db!
        var values = CoreDataValues(storeURL: file.url)
        var expected: [String: Digest] = [:]
        var found: [String: Digest] = [:]
        do {
            for (root, table) in mapping.tables.sorted(by: { $0.key < $1.key }) {
                for entity in table.entityByNumber.values where model.entity(named: entity)?.isAbstract == false {
                    expected[entity] = Digest()
                    found[entity] = Digest()
                }
                if !file.columns(of: table.name).isEmpty {
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
                        var version: Int64 = 1
                        if case .integer(let opt) = row[2], opt > 0 { version = opt }
                        var line: [SQLiteValue] = [row[0], .integer(version)]
                        for name in plan.layout.names {
                            if let attribute = model.attribute(name, of: entity),
                                let index = table.attributes[entity]?[name]
                            {
                                line.append(
                                    SQLiteSchema.encode(values.decode(row[index + 3], attribute, entity: entity)))
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
                        expected[entity, default: Digest()].add(line)
                    }
                }
                guard let strata = schema.tables[root] else { continue }
                let columns = ["_pk", "_entity", "_version"] + strata.columns.map(\.name)
                let select = try db.statement(
                    "SELECT \(columns.map(SQLiteSchema.quote).joined(separator: ", ")) FROM \(SQLiteSchema.quote(strata.name)) ORDER BY \"_pk\""
                )
                defer { select.reset() }
                while try select.step() {
                    let entity = select.text(1)
                    guard let plan = schema.rowPlans[entity] else { continue }
                    var line: [SQLiteValue] = [select.value(0), select.value(2)]
                    for (column, _) in plan.attributes { line.append(select.value(column + 3)) }
                    for (column, _) in plan.foreignKeys { line.append(select.value(column + 3)) }
                    found[entity, default: Digest()].add(line)
                }
            }
            for join in mapping.joins {
                var source = Digest()
                for (s, t, position, targetPosition) in try pairs(join) {
                    source.add(
                        [.integer(s), .integer(t), .integer(position)]
                            + (join.join.isTargetOrdered ? [.integer(targetPosition)] : []))
                }
                expected[join.join.name] = source
                let positions = join.join.isTargetOrdered ? "\"position\", \"target_position\"" : "\"position\""
                var target = Digest()
                let select = try db.statement(
                    "SELECT \"source\", \"target\", \(positions) FROM \(SQLiteSchema.quote(join.join.name)) ORDER BY \"source\", \"target\""
                )
                defer { select.reset() }
                while try select.step() { target.add((0..<select.columnCount).map { select.value($0) }) }
                found[join.join.name] = target
            }
        } catch {
            throw StoreError(.io, "cannot verify the import: \(error)", storeURL: url)
        }
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
        return checks
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
