import Foundation

/// PostgreSQL's spelling of the shared SQL statements: `$n` parameters (typed where the
/// statement does not say the type), tables qualified by the store's namespace, values as text
/// or bytes (see `PostgreSQLSchema.encode(_:)`), key lists as one array parameter.
struct PostgreSQLDialect: SQLDialect {
    /// The PostgreSQL schema holding the store's tables.
    let namespace: String

    static var null: PGValue { .null }
    static func integer(_ value: Int64) -> PGValue { .integer(value) }
    static func text(_ value: String) -> PGValue { .text(value) }
    static func encode(_ value: AttributeValue) -> PGValue { PostgreSQLSchema.encode(value) }

    func table(_ name: String) -> String { quote(namespace) + "." + quote(name) }

    /// `$n`, cast to the column's type when there is one (a parameter in a `SELECT` list or a
    /// `COALESCE` would otherwise be text).
    func placeholder(_ index: Int, for column: SQLiteSchema.Column?) -> String {
        guard let column else { return "$\(index)" }
        return "$\(index)::\(PostgreSQLSchema.sqlType(column))"
    }

    /// `NOT (column = ANY($n::bigint[]))`: one parameter however many keys.
    func excludes(_ column: String, _ keys: [Int64], _ arguments: inout SQLArguments<Self>) -> String {
        let list = arguments.add(.text(PostgreSQLSchema.arrayLiteral(keys.map(String.init))))
        return "NOT (\(column) = ANY(\(list)::bigint[]))"
    }

    /// Casts between `bigint`, `double precision` and `numeric` (a decimal's column; the casts from
    /// a decimal go through `numeric`, so that they read a store whose decimals are still text too).
    func convert(_ column: String, from: AttributeType, to: AttributeType) -> String {
        switch to {
        case .boolean:
            return "CASE WHEN \(column) IS NULL THEN NULL WHEN \(column)::numeric <> 0 THEN 1 ELSE 0 END"
        case .integer16, .integer32, .integer64:
            if Self.isInteger(from) { return column }
            return from == .decimal ? "\(column)::numeric::bigint" : "\(column)::bigint"
        case .double, .float:
            return from == .double || from == .float ? column : "\(column)::double precision"
        default:
            return "\(column)::numeric"
        }
    }

    func misfits(_ column: String, from: AttributeType, to: AttributeType) -> String {
        if let range = Self.range(of: to) {
            let value = from == .decimal ? "\(column)::numeric" : column
            let bounds = "\(value) < \(range.lowerBound) OR \(value) > \(range.upperBound)"
            return Self.isInteger(from) ? "(\(bounds))" : "(\(value) <> trunc(\(value)) OR \(bounds))"
        }
        if to == .float { return "abs(\(column)::double precision) > \(Self.floatLimit)" }
        return "1 = 0"
    }

    func createMembersTable(_ name: String) -> String {
        "CREATE TEMP TABLE \(name) (\"owner\" bigint PRIMARY KEY, \"member\" bigint)"
    }
}

extension PGConnection: SQLExecutor {
    typealias Value = PGValue
    typealias Failure = PGError

    /// Runs one statement with parameters, returning nothing.
    func run(_ sql: String, _ arguments: [PGValue]) throws(PGError) { try execute(sql, arguments) }

    func texts(_ sql: String, _ arguments: [PGValue]) throws(PGError) -> [[String?]] {
        try execute(sql, arguments).rows
    }
}
