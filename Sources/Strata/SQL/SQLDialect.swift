import Foundation

/// What one SQL database spells its own way in the statements the SQL stores write: how a
/// parameter is written, how a table is named, how a value is bound, how a list of keys is
/// excluded. The statements themselves, and the order they run in, are written once (see
/// `SQLStore` and `SQLMigrationSteps`); a new SQL store brings a dialect and a connection
/// (`SQLExecutor`).
///
/// Both SQL stores lay their tables out alike (`SQLiteSchema`): one table per inheritance
/// hierarchy with `_pk`, `_entity` and `_version`, a column per attribute and to-one
/// relationship, join tables with `source`, `target`, `position` and `target_position`.
protocol SQLDialect: Sendable {
    /// A value bound to a statement's parameter.
    associatedtype Value: Hashable

    /// SQL's NULL.
    static var null: Value { get }
    /// An integer.
    static func integer(_ value: Int64) -> Value
    /// A text.
    static func text(_ value: String) -> Value
    /// An attribute's value, as its column keeps it.
    static func encode(_ value: AttributeValue) -> Value

    /// Table (or sequence) `name` of the store, quoted, and qualified where the database keeps
    /// the store's tables in a namespace of their own.
    func table(_ name: String) -> String
    /// The placeholder of a statement's `index`-th parameter (from 1); `column` is the column its
    /// value goes to where the statement does not say its type.
    func placeholder(_ index: Int, for column: SQLiteSchema.Column?) -> String
    /// A condition that `column` (quoted) holds none of `keys` (at least one), its parameters
    /// added to `arguments`.
    func excludes(_ column: String, _ keys: [Int64], _ arguments: inout SQLArguments<Self>) -> String
    /// The value of `column` (quoted), held as type `from`, converted to type `to` (both numeric,
    /// see ``MigrationPlanner/converts(_:to:)``), for a value that fits.
    func convert(_ column: String, from: AttributeType, to: AttributeType) -> String
    /// A condition true of a non-null value of `column` (quoted), held as type `from`, that does
    /// not fit type `to`: out of its range, or with a fraction for an integer type.
    func misfits(_ column: String, from: AttributeType, to: AttributeType) -> String
    /// The statement creating temporary table `name` (quoted) of (owner, member) pairs, keyed by
    /// owner, that the migration's transaction drops at its end.
    func createMembersTable(_ name: String) -> String
}

extension SQLDialect {
    /// An identifier in double quotes (SQL's own quoting; a quote inside is doubled).
    func quote(_ identifier: String) -> String { SQLiteSchema.quote(identifier) }
}

/// The parameters of one statement, numbered as they are added.
struct SQLArguments<Dialect: SQLDialect> {
    let dialect: Dialect
    /// The values bound, in parameter order.
    private(set) var values: [Dialect.Value] = []
    /// Parameters that come before these in the statement.
    private let offset: Int

    init(_ dialect: Dialect, after offset: Int = 0) {
        self.dialect = dialect
        self.offset = offset
    }

    /// The number of parameters so far, those before these included.
    var count: Int { offset + values.count }

    /// Adds `value` and returns its placeholder.
    mutating func add(_ value: Dialect.Value, for column: SQLiteSchema.Column? = nil) -> String {
        values.append(value)
        return dialect.placeholder(offset + values.count, for: column)
    }

    /// Adds the values of `other`, whose placeholders were numbered after these.
    mutating func append(_ other: SQLArguments<Dialect>) { values += other.values }
}

/// A connection that runs statements: the one thing the shared SQL layer asks of a database's
/// connection type.
protocol SQLExecutor {
    /// A value bound to a statement's parameter.
    associatedtype Value
    /// What a failed statement throws.
    associatedtype Failure: Error
    /// Runs one statement with `arguments` bound to its parameters, returning nothing.
    func run(_ sql: String, _ arguments: [Value]) throws(Failure)
    /// Runs one query with `arguments` bound to its parameters, returning every row's columns as
    /// text (nil for NULL).
    func texts(_ sql: String, _ arguments: [Value]) throws(Failure) -> [[String?]]
}

extension SQLDialect {
    /// The range of an integer type, nil for the others.
    static func range(of type: AttributeType) -> ClosedRange<Int64>? {
        switch type {
        case .integer16: Int64(Int16.min)...Int64(Int16.max)
        case .integer32: Int64(Int32.min)...Int64(Int32.max)
        case .integer64: Int64.min...Int64.max
        default: nil
        }
    }

    /// Whether `type` is held as an integer.
    static func isInteger(_ type: AttributeType) -> Bool { range(of: type) != nil }

    /// The largest magnitude a `float` holds.
    static var floatLimit: String { "3.4028234663852886e38" }
}
