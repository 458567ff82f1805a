import CSQLite
import Foundation

/// Aggregate SQL functions for the sums and extremes SQLite's own cannot compute exactly: integer
/// sums past 64 bits (SQLite's `sum()` fails at the first partial sum that overflows, whatever the
/// total) and decimals, which the store keeps as their digits in text.
extension SQLiteFunctions {
    /// A running exact integer sum, in the zeroed memory SQLite gives each group (`sqlite3_aggregate_context`):
    /// a 128-bit integer as two halves, 8-byte aligned as that memory is.
    struct IntegerSum {
        var high: Int64
        var low: UInt64
        var value: Int128 {
            get { Int128(high) << 64 | Int128(low) }
            set {
                high = Int64(truncatingIfNeeded: newValue >> 64)
                low = UInt64(truncatingIfNeeded: newValue)
            }
        }
    }

    /// A running decimal sum, least or greatest value, in a group's zeroed memory.
    struct DecimalState {
        var started: Bool
        var failed: Bool
        var value: Decimal
    }

    /// What a decimal function does with each value.
    enum DecimalMode: Int {
        case sum, min, max
    }

    static func registerAggregates(on db: OpaquePointer) {
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        // strata_integer_sum(integer) → the exact sum as decimal text; NULL when every value is NULL.
        sqlite3_create_function_v2(
            db, "strata_integer_sum", 1, flags, nil, nil,
            { context, _, arguments in
                guard let arguments, sqlite3_value_type(arguments[0]) != SQLITE_NULL,
                    let state = SQLiteFunctions.state(context, IntegerSum.self)
                else { return }
                state.pointee.value += Int128(sqlite3_value_int64(arguments[0]))
            },
            { context in
                guard let state = SQLiteFunctions.state(context, IntegerSum.self, existing: true) else {
                    sqlite3_result_null(context)
                    return
                }
                SQLiteFunctions.result(state.pointee.value.description, context)
            }, nil)
        // strata_decimal_sum / _min / _max(decimal text) → the exact result as text; NULL when
        // every value is NULL; an error for a sum past a decimal's 38 significant digits.
        sqlite3_create_function_v2(
            db, "strata_decimal_sum", 1, flags, nil, nil,
            { context, _, arguments in SQLiteFunctions.decimalStep(context, arguments, .sum) },
            { context in SQLiteFunctions.decimalFinal(context) }, nil)
        sqlite3_create_function_v2(
            db, "strata_decimal_min", 1, flags, nil, nil,
            { context, _, arguments in SQLiteFunctions.decimalStep(context, arguments, .min) },
            { context in SQLiteFunctions.decimalFinal(context) }, nil)
        sqlite3_create_function_v2(
            db, "strata_decimal_max", 1, flags, nil, nil,
            { context, _, arguments in SQLiteFunctions.decimalStep(context, arguments, .max) },
            { context in SQLiteFunctions.decimalFinal(context) }, nil)
    }

    /// The group's state; with `existing`, nil when no value was ever added (no memory was asked for).
    static func state<State>(_ context: OpaquePointer?, _: State.Type, existing: Bool = false)
        -> UnsafeMutablePointer<State>?
    {
        let size = existing ? 0 : Int32(MemoryLayout<State>.stride)
        guard let raw = sqlite3_aggregate_context(context, size) else { return nil }
        return raw.bindMemory(to: State.self, capacity: 1)
    }

    static func decimalStep(
        _ context: OpaquePointer?, _ arguments: UnsafeMutablePointer<OpaquePointer?>?, _ mode: DecimalMode
    ) {
        guard let arguments else { return }
        let value: Decimal?
        switch sqlite3_value_type(arguments[0]) {
        case SQLITE_NULL: return
        case SQLITE_INTEGER: value = Decimal(sqlite3_value_int64(arguments[0]))
        case SQLITE_TEXT: value = Decimal(string: string(arguments[0]))
        default: value = nil
        }
        guard var value, let state = state(context, DecimalState.self), !state.pointee.failed else { return }
        guard state.pointee.started else {
            state.pointee.value = value
            state.pointee.started = true
            return
        }
        switch mode {
        case .sum:
            var result = Decimal()
            if NSDecimalAdd(&result, &state.pointee.value, &value, .plain) != .noError {
                state.pointee.failed = true
            } else {
                state.pointee.value = result
            }
        case .min: if value < state.pointee.value { state.pointee.value = value }
        case .max: if value > state.pointee.value { state.pointee.value = value }
        }
    }

    static func decimalFinal(_ context: OpaquePointer?) {
        guard let state = state(context, DecimalState.self, existing: true), state.pointee.started else {
            sqlite3_result_null(context)
            return
        }
        if state.pointee.failed {
            let message =
                "a decimal sum in a group needs more than \(AggregatePartial.decimalDigits) significant digits, past what a decimal holds exactly"
            sqlite3_result_error(context, refusalPrefix + message, -1)
            return
        }
        result(state.pointee.value.description, context)
    }
}
