import CSQLite
import Foundation

/// SQL functions that run the same Swift code as in-memory evaluation, so SQLite and the in-memory
/// store agree on text matching and case folding (SQLite's own `LIKE` and `lower()` fold ASCII only).
enum SQLiteFunctions {
    static let operators = ComparisonOperator.allCases

    static func register(on db: OpaquePointer) {
        registerFullText(on: db)
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        // strata_match(operator, options, text, pattern) → 0 or 1; 0 when either side is not text.
        sqlite3_create_function_v2(
            db, "strata_match", 4, flags, nil,
            { context, _, arguments in
                guard let arguments else { return }
                let op = Int(sqlite3_value_int(arguments[0]))
                let options = ComparisonOptions(rawValue: Int(sqlite3_value_int(arguments[1])))
                guard sqlite3_value_type(arguments[2]) == SQLITE_TEXT, sqlite3_value_type(arguments[3]) == SQLITE_TEXT,
                    SQLiteFunctions.operators.indices.contains(op)
                else {
                    sqlite3_result_int(context, 0)
                    return
                }
                let text = SQLiteFunctions.string(arguments[2])
                let pattern = SQLiteFunctions.string(arguments[3])
                do throws(PredicateError) {
                    let matched = try ValueOrdering.matchText(SQLiteFunctions.operators[op], text, pattern, options)
                    sqlite3_result_int(context, matched ? 1 : 0)
                } catch {
                    // The statement fails with this message; the store reports it as the request's fault.
                    let prefix =
                        error.isTooExpensive ? SQLiteFunctions.tooExpensivePrefix : SQLiteFunctions.refusalPrefix
                    sqlite3_result_error(context, prefix + error.message, -1)
                }
            }, nil, nil, nil)
        // strata_fold(text, options) → the folded text; other values pass through.
        sqlite3_create_function_v2(
            db, "strata_fold", 2, flags, nil,
            { context, _, arguments in
                guard let arguments else { return }
                guard sqlite3_value_type(arguments[0]) == SQLITE_TEXT else {
                    sqlite3_result_value(context, arguments[0])
                    return
                }
                let options = ComparisonOptions(rawValue: Int(sqlite3_value_int(arguments[1])))
                SQLiteFunctions.result(ValueOrdering.fold(SQLiteFunctions.string(arguments[0]), options), context)
            }, nil, nil, nil)
        // strata_decimal(number) → the decimal's order key (ValueOrdering.decimalKey); NULL for
        // NULL or text that is not a decimal.
        sqlite3_create_function_v2(
            db, "strata_decimal", 1, flags, nil,
            { context, _, arguments in
                guard let arguments else { return }
                let key: String?
                switch sqlite3_value_type(arguments[0]) {
                case SQLITE_INTEGER: key = ValueOrdering.decimalKey(Decimal(sqlite3_value_int64(arguments[0])))
                case SQLITE_FLOAT:
                    key = ValueOrdering.decimal(.double(sqlite3_value_double(arguments[0]))).map(
                        ValueOrdering.decimalKey)
                case SQLITE_TEXT: key = ValueOrdering.decimalKey(text: SQLiteFunctions.string(arguments[0]))
                default: key = nil
                }
                guard let key else {
                    sqlite3_result_null(context)
                    return
                }
                SQLiteFunctions.result(key, context)
            }, nil, nil, nil)
        registerAggregates(on: db)
    }

    /// Sets `text` as the function's result.
    static func result(_ text: String, _ context: OpaquePointer?) {
        var text = text
        text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                sqlite3_result_text(context, "", 0, nil)
                return
            }
            base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                sqlite3_result_text(context, $0, Int32(bytes.count), csqlite_transient())
            }
        }
    }

    /// Starts the message of an error a function raised for the request's sake.
    static let refusalPrefix = "strata refused: "
    /// Starts the message of an error for a predicate too expensive on one value.
    static let tooExpensivePrefix = "strata refused as too expensive: "

    static func string(_ value: OpaquePointer?) -> String {
        guard let pointer = sqlite3_value_text(value) else { return "" }
        let count = Int(sqlite3_value_bytes(value))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
}
