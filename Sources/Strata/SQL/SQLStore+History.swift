import Foundation

/// Persistent history in the SQL stores (see ``StoreOptions/recordsHistory``): two housekeeping
/// tables written in the save's own transaction, so history is exactly as durable and atomic as
/// the data.
///
/// - `_strata_history`: one row per commit: `number` (1, 2, 3, … in commit order, never reused),
///   `at` (seconds since 1970), `author`, `context`.
/// - `_strata_history_changes`: one row per changed object: `number`, `position` (its place in
///   the transaction), `entity`, `pk`, `op` (`insert`, `update`, `delete`), `version` (after the
///   change; for a delete, the version deleted), `changed` (an update's property names, a JSON
///   array) and `tombstone` (a delete's preserved attributes, a JSON object).
enum SQLHistory {
    static let transactions = "_strata_history"
    static let changes = "_strata_history_changes"

    /// The columns of the changes table after `number` (its key is `(number, position)`).
    static let changeColumns = "entity, pk, op, version, changed, tombstone"

    /// A transaction row as read: number, time, author, context.
    struct TransactionRow {
        var number: Int64
        var at: Double
        var author: String?
        var context: String?
    }

    /// A change row as read.
    struct ChangeRow {
        var number: Int64
        var entity: String
        var pk: Int64
        var op: String
        var version: Int64
        var changed: String?
        var tombstone: String?
    }

    /// Transactions read in number order with their changes (in number, then position order),
    /// as history transactions of store `identifier`.
    static func assemble(
        _ transactions: [TransactionRow], _ changes: [ChangeRow], store identifier: String, model: ObjectModel
    ) -> [HistoryTransaction] {
        var byNumber: [Int64: [HistoryChange]] = [:]
        for row in changes {
            let id = ObjectID(store: identifier, entity: row.entity, primaryKey: row.pk)
            var change = HistoryChange(
                objectID: id, kind: HistoryChange.Kind(rawValue: row.op) ?? .update, version: row.version)
            if let changed = row.changed, let names = try? JSONValue.parse(changed).arrayValue {
                change.updatedProperties = names.compactMap(\.stringValue)
            }
            if let text = row.tombstone, let members = try? JSONValue.parse(text).objectValue {
                var tombstone: [String: AttributeValue] = [:]
                for (name, json) in members {
                    guard let type = model.attribute(name, of: row.entity)?.type,
                        let value = AttributeValue(json: json, as: type)
                    else { continue }
                    tombstone[name] = value
                }
                change.tombstone = tombstone
            }
            byNumber[row.number, default: []].append(change)
        }
        return transactions.map {
            HistoryTransaction(
                storeIdentifier: identifier, number: $0.number, timestamp: Date(timeIntervalSince1970: $0.at),
                author: $0.author, contextName: $0.context, changes: byNumber[$0.number] ?? [])
        }
    }

    /// The transactions `request` asks for, read a page at a time through `page` (transactions
    /// after a number, at most a count, with their changes), filtered by entity.
    static func collect(
        _ request: HistoryRequest, model: ObjectModel,
        page: (_ after: Int64, _ count: Int) throws(StoreError) -> [HistoryTransaction]
    ) throws(StoreError) -> [HistoryTransaction] {
        var found: [HistoryTransaction] = []
        var after = request.after
        let pageSize = 500
        while true {
            let batch = try page(after, pageSize)
            for var transaction in batch {
                if let limit = request.limit, found.count >= limit { return found }
                if request.entities != nil {
                    transaction.changes.removeAll { !model.history($0.objectID.entityName, passes: request.entities) }
                    if transaction.changes.isEmpty { continue }
                }
                found.append(transaction)
            }
            guard batch.count == pageSize, let last = batch.last else { return found }
            after = last.number
        }
    }
}

extension SQLStore {
    /// Reads, inside the open transaction and before the deletes run, the preserved attributes
    /// of every object `changes` delete (only entities that preserve any are read).
    func tombstones(_ changes: StoreChanges, _ c: Connection) throws -> [ObjectID: [String: AttributeValue]] {
        var tombstones: [ObjectID: [String: AttributeValue]] = [:]
        for deletion in changes.deletes {
            let names = model.preservedAttributes(of: deletion.id.entityName)
            guard !names.isEmpty, let row = try storedRow(deletion.id, c) else { continue }
            var tombstone: [String: AttributeValue] = [:]
            for name in names { tombstone[name] = row.attributes[name] ?? .null }
            tombstones[deletion.id] = tombstone
        }
        return tombstones
    }

    /// Writes the history transaction of `changes` inside the open transaction and returns its
    /// number.
    func writeHistory(
        _ changes: StoreChanges, versions: [ObjectID: Int64], stored: [ObjectID: Int64],
        tombstones: [ObjectID: [String: AttributeValue]], _ c: Connection
    ) throws -> Int64 {
        let number = try beginHistory(at: Date(), changes.authorship, c)
        let entries = changes.historyChanges(versions: versions, stored: stored, tombstones: tombstones)
        let table = dialect.table(SQLHistory.changes)
        let perRow = 8
        let chunk = 500
        for start in stride(from: 0, to: entries.count, by: chunk) {
            var arguments = SQLArguments(dialect)
            var tuples: [String] = []
            tuples.reserveCapacity(min(chunk, entries.count - start))
            for position in start..<min(entries.count, start + chunk) {
                let entry = entries[position]
                var values: [Dialect.Value] = [
                    Dialect.integer(number), Dialect.integer(Int64(position)), Dialect.text(entry.objectID.entityName),
                    Dialect.integer(entry.objectID.primaryKey ?? 0), Dialect.text(entry.kind.rawValue),
                    Dialect.integer(entry.version),
                ]
                values.append(
                    entry.updatedProperties.map { Dialect.text(JSONValue.array($0.map { .string($0) }).jsonText) }
                        ?? Dialect.null)
                values.append(
                    entry.tombstone.map { Dialect.text(JSONValue.object($0.mapValues(\.json)).jsonText) }
                        ?? Dialect.null)
                assert(values.count == perRow)
                tuples.append("(" + values.map { arguments.add($0) }.joined(separator: ", ") + ")")
            }
            try write(
                "INSERT INTO \(table) (number, position, \(SQLHistory.changeColumns)) VALUES "
                    + tuples.joined(separator: ", "), arguments.values, entity: SQLHistory.changes, c)
        }
        return number
    }
}
