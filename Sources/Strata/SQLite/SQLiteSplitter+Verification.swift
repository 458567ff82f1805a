import Foundation

/// Row counts and checksums that verify a split.
extension SQLiteSplitter {
    /// Row counts and checksums per group of a query's rows; `groupColumn` names the group of each
    /// row (the entity), nil puts every row in `name`.
    static func digest(_ statement: SQLiteStatement, groupColumn: Bool, name: String) throws(SQLiteError)
        -> [String: (rows: Int, hasher: SHA256)]
    {
        // Per group (entity): its row count and its rows' digests, in order.
        var digests: [String: [UInt64]] = [:]
        var currentName = name
        var current: [UInt64] = []
        var currentBytes: [UInt8] = []
        let width = statement.columnCount
        while try statement.step() {
            if groupColumn, !statement.textBytes(0, equal: currentBytes) {
                if !current.isEmpty { digests[currentName, default: []] += current }
                currentBytes = statement.textBytes(0)
                currentName = String(decoding: currentBytes, as: UTF8.self)
                current = digests.removeValue(forKey: currentName) ?? []
            }
            current.append(statement.rowDigest(columns: width))
        }
        if !current.isEmpty { digests[currentName, default: []] += current }
        var groups: [String: (rows: Int, hasher: SHA256)] = [:]
        for (group, rows) in digests {
            // The row digests are chained, and the chain is fed to SHA-256 every 16 rows: the
            // checksum depends on every row and on their order.
            var hasher = SHA256()
            var bytes: [UInt8] = []
            bytes.reserveCapacity(rows.count / 2 + 8)
            var chain: UInt64 = 0
            for (index, digest) in rows.enumerated() {
                chain = (chain ^ digest) &* 0x0000_0100_0000_01b3
                chain ^= chain >> 29
                if index % 16 == 15 || index == rows.count - 1 {
                    for shift in stride(from: 56, through: 0, by: -8) {
                        bytes.append(UInt8(truncatingIfNeeded: chain >> UInt64(shift)))
                    }
                }
            }
            hasher.update(bytes)
            groups[group] = (rows.count, hasher)
        }
        return groups
    }

    /// The checks of every entity and join table of `target`, read from the source or the target.
    static func checks(
        _ target: Target,
        reader: (String, [SQLiteValue], Bool, String) throws(SQLiteError) -> [String: (rows: Int, hasher: SHA256)],
        sourceSchema: SQLiteSchema
    ) throws(SQLiteError) -> [SplitCheck] {
        var result: [SplitCheck] = []
        for table in target.schema.tables.values.sorted(by: { $0.name < $1.name }) {
            let columns = ["\"_entity\"", "\"_pk\"", "\"_version\""] + table.columns.map { quote($0.name) }
            let (filter, arguments) = entityFilter(table, sourceSchema: sourceSchema)
            let groups = try reader(
                "SELECT \(columns.joined(separator: ", ")) FROM \(quote(table.name))\(filter) ORDER BY \"_pk\"",
                arguments, true, table.name)
            for entity in table.entities {
                var group = groups[entity] ?? (rows: 0, hasher: SHA256())
                result.append(SplitCheck(name: entity, rows: group.rows, checksum: hex(group.hasher.finalize())))
            }
            for (entity, group) in groups where !table.entities.contains(entity) {
                var hasher = group.hasher
                result.append(SplitCheck(name: entity, rows: group.rows, checksum: hex(hasher.finalize())))
            }
        }
        for join in target.schema.joinTables {
            let positions = join.isTargetOrdered ? "\"position\", \"target_position\"" : "\"position\""
            let groups = try reader(
                "SELECT \"source\", \"target\", \(positions) FROM \(quote(join.name)) ORDER BY \"source\", \"target\"",
                [], false, join.name)
            var group = groups[join.name] ?? (rows: 0, hasher: SHA256())
            result.append(SplitCheck(name: join.name, rows: group.rows, checksum: hex(group.hasher.finalize())))
        }
        return result
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
