import CSQLite
import Foundation

/// The full-text index of an SQLite store: per entity table with searchable attributes, an FTS5
/// table over those columns (external content: it reads the texts from the entity table, by
/// `_pk`), tokenized as ``TextSearch`` reads words (`unicode61 remove_diacritics 2`), and three
/// triggers that keep it in step with every insert, update and delete of the entity table, in the
/// same transaction (so a save that rolls back leaves the index as it was, and another SQLite
/// client writing the table keeps it right too).
enum SQLiteFullText {
    /// The prefix of the FTS5 tables and their triggers.
    static let prefix = "_strata_fts_"

    /// The FTS5 table of entity table `table`.
    static func tableName(_ table: String) -> String { prefix + table }

    /// The searchable columns of `table`, in column order.
    static func columns(of table: SQLiteSchema.Table, model: ObjectModel) -> [String] {
        var names: [String] = []
        for case .attribute(let attribute) in table.columns where !names.contains(attribute.columnName) {
            let searchable = table.entities.contains { entity in
                model.attributes(of: entity).contains { $0.columnName == attribute.columnName && $0.isSearchable }
            }
            if searchable { names.append(attribute.columnName) }
        }
        return names
    }

    /// The statements that create the index of every table of `schema` that has searchable
    /// columns and fill it from the rows already there (each table's last statement).
    static func createStatements(_ schema: SQLiteSchema) -> [String] {
        schema.tables.values.sorted { $0.name < $1.name }.flatMap { definition($0, model: schema.model) }
    }

    /// The statements for one table: the FTS5 table, its three triggers, and the rebuild.
    private static func definition(_ table: SQLiteSchema.Table, model: ObjectModel) -> [String] {
        let columns = columns(of: table, model: model)
        guard !columns.isEmpty else { return [] }
        let q = SQLiteSchema.quote
        let fts = q(tableName(table.name))
        let names = columns.map(q).joined(separator: ", ")
        let literal = "'" + table.name.replacingOccurrences(of: "'", with: "''") + "'"
        func values(_ row: String) -> String { columns.map { "\(row).\(q($0))" }.joined(separator: ", ") }
        let insert = "INSERT INTO \(fts)(rowid, \(names)) VALUES (new.\"_pk\", \(values("new")));"
        let delete = "INSERT INTO \(fts)(\(fts), rowid, \(names)) VALUES ('delete', old.\"_pk\", \(values("old")));"
        let trigger = { (suffix: String) in q(tableName(table.name) + suffix) }
        return [
            "CREATE VIRTUAL TABLE \(fts) USING fts5(\(names), content=\(literal), content_rowid='_pk', "
                + "tokenize='unicode61 remove_diacritics 2')",
            "CREATE TRIGGER \(trigger("_ai")) AFTER INSERT ON \(q(table.name)) BEGIN \(insert) END",
            "CREATE TRIGGER \(trigger("_ad")) AFTER DELETE ON \(q(table.name)) BEGIN \(delete) END",
            "CREATE TRIGGER \(trigger("_au")) AFTER UPDATE OF \(names) ON \(q(table.name)) BEGIN \(delete) \(insert) END",
            "INSERT INTO \(fts)(\(fts)) VALUES ('rebuild')",
        ]
    }

    /// Brings the full-text indexes of `db` in line with `schema` inside a migration's open
    /// transaction: an index whose table or triggers differ from what `schema` wants (or whose
    /// entity table was rebuilt, taking its triggers with it) is dropped and built again from the
    /// rows; an index nothing wants is dropped.
    static func align(_ schema: SQLiteSchema, db: SQLiteConnection) throws(SQLiteError) {
        var existing: [String: String] = [:]
        var triggers: [String: String] = [:]
        do {
            let rows = try db.query(
                "SELECT type, name, sql FROM sqlite_master WHERE substr(name, 1, ?) = ? AND sql IS NOT NULL",
                [.integer(Int64(prefix.utf8.count)), .text(prefix)]
            ) { ($0.text(0), $0.text(1), $0.text(2)) }
            for (type, name, sql) in rows {
                if type == "trigger" { triggers[name] = sql }
                if type == "table" && sql.hasPrefix("CREATE VIRTUAL TABLE") { existing[name] = sql }
            }
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw SQLiteError(code: SQLiteResultCode.error.rawValue, message: "\(error)")
        }
        var wanted: Set<String> = []
        for table in schema.tables.values.sorted(by: { $0.name < $1.name }) {
            let statements = definition(table, model: schema.model)
            guard !statements.isEmpty else { continue }
            let name = tableName(table.name)
            wanted.insert(name)
            let kept =
                existing[name] == statements[0]
                && ["_ai", "_ad", "_au"].enumerated().allSatisfy { triggers[name + $1] == statements[$0 + 1] }
            if kept { continue }
            try drop(name, existing: existing, triggers: triggers, db: db)
            for statement in statements { try db.execute(statement) }
        }
        for name in existing.keys.sorted() where !wanted.contains(name) {
            try drop(name, existing: existing, triggers: triggers, db: db)
        }
    }

    private static func drop(
        _ name: String, existing: [String: String], triggers: [String: String], db: SQLiteConnection
    ) throws(SQLiteError) {
        for suffix in ["_ai", "_ad", "_au"] where triggers[name + suffix] != nil {
            try db.execute("DROP TRIGGER \(SQLiteSchema.quote(name + suffix))")
        }
        if existing[name] != nil { try db.execute("DROP TABLE \(SQLiteSchema.quote(name))") }
    }
}

extension SQLPredicateBuilder {
    /// The condition of a text search (bound: its key path is a searchable attribute of the
    /// fetched entity): each word or phrase of the query is the set of rows the FTS5 index
    /// matches on the attribute's column, combined with SQL's `AND`, `OR` and `NOT` (FTS5 has no
    /// unary negation).
    func fullText(_ search: TextSearch) throws(PredicateError) -> SQLFragment {
        guard let attribute = model.attribute(search.keyPath, of: entity), attribute.isSearchable,
            let table = schema.table(for: entity),
            SQLiteFullText.columns(of: table, model: model).contains(attribute.columnName)
        else {
            throw PredicateError("'\(search.keyPath)' is not a searchable attribute of '\(entity)'")
        }
        let fts = SQLiteSchema.quote(SQLiteFullText.tableName(table.name))
        let key = "\(Self.rootAlias).\"_pk\""
        func condition(_ query: TextQuery) -> SQLFragment {
            let expression: String
            switch query {
            case .word(let word, let prefix): expression = "\"\(word)\"" + (prefix ? " *" : "")
            case .phrase(let words):
                guard !words.isEmpty else { return "0" }
                expression = "\"" + words.joined(separator: " ") + "\""
            case .and(let items):
                if items.isEmpty { return "1" }
                return "(\(SQLFragment.joined(items.map(condition), separator: " AND ")))"
            case .or(let items):
                if items.isEmpty { return "0" }
                return "(\(SQLFragment.joined(items.map(condition), separator: " OR ")))"
            case .not(let item): return "NOT \(condition(item))"
            }
            return
                "\(raw: key) IN (SELECT rowid FROM \(raw: fts) WHERE \(identifier: attribute.columnName) MATCH \(bind: .text(expression)))"
        }
        return condition(search.query)
    }

    /// The relevance of a row for every text search of `predicate` not under a negation (see
    /// ``TextSearch/rank(_:)``), as SQL over the row's columns: `strata_rank` runs the same Swift
    /// code as the other stores.
    func rank(_ predicate: FetchPredicate?) -> SQLFragment {
        let searches = predicate?.rankedSearches ?? []
        guard !searches.isEmpty else { return "0" }
        var parts: [SQLFragment] = []
        for search in searches {
            guard let attribute = model.attribute(search.keyPath, of: entity) else { continue }
            parts.append(
                "strata_rank(\(bind: .text(TextQuery.encodeTerms(search.query.positiveTerms))), \(raw: Self.rootAlias).\(identifier: attribute.columnName))"
            )
        }
        return parts.isEmpty ? "0" : SQLFragment.joined(parts, separator: " + ")
    }
}

extension TextQuery {
    /// ``positiveTerms`` as one text: a line per term, its words separated by spaces, a `*` line
    /// end for a prefix (words hold neither spaces, newlines nor `*`).
    static func encodeTerms(_ terms: [(words: [String], prefix: Bool)]) -> String {
        terms.map { $0.words.joined(separator: " ") + ($0.prefix ? "*" : "") }.joined(separator: "\n")
    }

    static func decodeTerms(_ text: String) -> [(words: [String], prefix: Bool)] {
        text.split(separator: "\n").map { line in
            let prefix = line.hasSuffix("*")
            return (line.dropLast(prefix ? 1 : 0).split(separator: " ").map(String.init), prefix)
        }
    }
}

extension SQLiteFunctions {
    /// Registers `strata_rank(terms, text)`: ``TextQuery/rank(_:_:)`` of `text` for the terms
    /// ``TextQuery/encodeTerms(_:)`` wrote; 0 for a value that is not text.
    static func registerFullText(on db: OpaquePointer) {
        sqlite3_create_function_v2(
            db, "strata_rank", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nil,
            { context, _, arguments in
                guard let arguments else { return }
                guard sqlite3_value_type(arguments[0]) == SQLITE_TEXT, sqlite3_value_type(arguments[1]) == SQLITE_TEXT
                else {
                    sqlite3_result_double(context, 0)
                    return
                }
                let terms = TextQuery.decodeTerms(SQLiteFunctions.string(arguments[0]))
                let words = TextSearch.words(in: SQLiteFunctions.string(arguments[1]))
                sqlite3_result_double(context, TextQuery.rank(terms, words))
            }, nil, nil, nil)
    }
}

extension SQLiteStore {
    /// The ORDER BY term of ``SortKey/rank``: `strata_rank` over the searched columns, its
    /// arguments appended to `arguments`; nil without a text search (every relevance is 0, and a
    /// constant in ORDER BY would name a column).
    func rankOrder(_ request: FetchRequest, ascending: Bool, arguments: inout [SQLiteValue]) throws(StoreError)
        -> String?
    {
        var predicate: FetchPredicate?
        do {
            predicate = try request.predicate?.bound(to: request.entityName, in: model)
        } catch {
            throw StoreError(.invalidRequest, error.message, storeURL: url, entity: request.entityName)
        }
        let builder = SQLPredicateBuilder(
            model: model, schema: schema, entity: request.entityName, storeIdentifier: metadata.identifier)
        guard predicate?.rankedSearches.isEmpty == false else { return nil }
        let rank = builder.rank(predicate)
        arguments += rank.arguments
        return "(\(rank.sql)) \(ascending ? "ASC" : "DESC")"
    }
}
