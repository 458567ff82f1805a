import Foundation

extension PostgreSQLSchema {
    /// The column holding the words of searchable column `column`.
    static func fullTextColumn(_ column: String) -> String { "_fts_" + column }

    /// The full-text index of one hierarchy's table: for each searchable column (``SQLiteFullText``
    /// chooses them), a generated `tsvector` column (`to_tsvector('simple', …)`: no stemming and no
    /// stop words, so a word is found as it is written) and a GIN index on it. PostgreSQL keeps the
    /// column in the same statement as every insert and update, and computes it for the rows
    /// already there when the column is added.
    func fullTextStatements(_ table: SQLiteSchema.Table) -> [String] {
        let columns = SQLiteFullText.columns(of: table, model: base.model)
        guard !columns.isEmpty else { return [] }
        // Text columns hold UTF-8 bytes (`bytea`, ordered by bytes as Strata orders text); a
        // generated column may only call immutable functions, and `convert_from` is marked stable
        // (for encodings that may change), so it is wrapped for UTF-8, which does not. The wrapper
        // also folds Latin letters with diacritics as ``TextSearch/words(in:)`` does (the `simple`
        // configuration keeps them), and reads a NUL, which a string may hold and PostgreSQL's
        // text may not ("invalid byte sequence"), as the separator between words it is there.
        let text = "\(Self.quote(namespace)).\"strata_fts_text\""
        let function =
            "CREATE OR REPLACE FUNCTION \(text)(bytea) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE "
            + "AS $$ DECLARE b bytea := $1; p integer; BEGIN "
            + "LOOP p := position('\\x00'::bytea IN b); EXIT WHEN p = 0; "
            + "b := overlay(b PLACING '\\x20'::bytea FROM p FOR 1); END LOOP; "
            + "RETURN translate(convert_from(b, 'UTF8'), '\(Self.latinFolding.from)', '\(Self.latinFolding.to)'); "
            + "END $$"
        return [function]
            + columns.flatMap { column in
                let vector = Self.fullTextColumn(column)
                return [
                    "ALTER TABLE \(qualified(table.name)) ADD COLUMN \(Self.quote(vector)) tsvector GENERATED ALWAYS AS "
                        + "(to_tsvector('simple'::regconfig, coalesce(\(text)(\(Self.quote(column))), ''))) STORED",
                    "CREATE INDEX \(Self.quote(table.name + "_fts_" + column)) ON \(qualified(table.name)) USING gin (\(Self.quote(vector)))",
                ]
            }
    }
}

extension PostgreSQLSchema {
    /// The Latin letters with diacritics (U+00C0 to U+024F) and the ASCII letter each folds to.
    static let latinFolding: (from: String, to: String) = {
        var from = String.UnicodeScalarView()
        var to = String.UnicodeScalarView()
        for value in UInt32(0xC0)...0x24F {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let folded = String(scalar).lowercased().folding(options: .diacriticInsensitive, locale: nil)
            guard folded.unicodeScalars.count == 1, let ascii = folded.unicodeScalars.first, ascii.isASCII,
                ascii.properties.isAlphabetic
            else { continue }
            from.append(scalar)
            to.append(ascii)
        }
        return (String(from), String(to))
    }()
}

extension TextQuery {
    /// What PostgreSQL can check of a query in its index.
    enum TSQuery: Equatable {
        /// Nothing: every row may match (a negation, which Strata's evaluator decides).
        case any
        /// No row matches (a query without words).
        case none
        /// `tsquery` text in `to_tsquery`'s language, each word quoted as a lexeme.
        case query(String)
    }

    /// The part of the query PostgreSQL checks: words, phrases, and their `&` and `|`;
    /// negations are left to Strata's evaluator.
    var tsquery: TSQuery {
        func lexeme(_ word: String) -> String {
            "'" + word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "''") + "'"
        }
        switch self {
        case .word(let word, let prefix): return .query(lexeme(word) + (prefix ? ":*" : ""))
        case .phrase(let words):
            return words.isEmpty ? .none : .query("(" + words.map(lexeme).joined(separator: " <-> ") + ")")
        case .not: return .any
        case .and(let items):
            var parts: [String] = []
            for item in items {
                switch item.tsquery {
                case .none: return .none
                case .any: continue
                case .query(let text): parts.append(text)
                }
            }
            return parts.isEmpty ? .any : .query("(" + parts.joined(separator: " & ") + ")")
        case .or(let items):
            var parts: [String] = []
            for item in items {
                switch item.tsquery {
                case .none: continue
                case .any: return .any
                case .query(let text): parts.append(text)
                }
            }
            return parts.isEmpty ? .none : .query("(" + parts.joined(separator: " | ") + ")")
        }
    }
}

extension PostgreSQLPrefilter {
    /// The condition of a text search: the attribute's `tsvector` column `@@` the query. It is
    /// never exact (PostgreSQL's `simple` configuration reads words differently from
    /// ``TextSearch/words(in:)`` in places, and Strata's evaluator checks every row read), so a
    /// negated search reads every row.
    mutating func fullText(_ search: TextSearch) -> String? {
        guard let attribute = model.attribute(search.keyPath, of: entity), attribute.isSearchable,
            SQLiteFullText.columns(of: table, model: model).contains(attribute.columnName)
        else { return nil }
        let query: String
        switch search.query.tsquery {
        case .any: return nil
        case .none: return "false"
        case .query(let text): query = text
        }
        let column = PostgreSQLSchema.quote(PostgreSQLSchema.fullTextColumn(attribute.columnName))
        return "t.\(column) @@ to_tsquery('simple'::regconfig, \(parameter(.text(query), cast: "text")))"
    }
}
