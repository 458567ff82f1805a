/// One row of a command's option table: the option's name, how it takes a value, its environment
/// twin, its help, and what it does to the command's settings.
///
/// A command declares its options once, as a table of these; ``CommandInterface`` parses the
/// environment and the command line with it and renders `--help` from it.
public struct CommandOption<Settings>: Sendable {
    /// How an option takes its value.
    public enum Arity: Sendable {
        /// No value: `--dry-run`. `--name=true|false` (or `1|0`, `yes|no`) and the environment twin
        /// set it either way.
        case flag
        /// One value: `--name VALUE` or `--name=VALUE`.
        case value
        /// A value only when the next argument is not an option: `--scale` or `--scale 10000,20000`.
        case optionalValue
    }

    /// How the environment twin's text becomes values.
    public enum EnvironmentItems: Sendable {
        /// The whole text is one value.
        case whole
        /// Comma-separated values.
        case commaSeparated
        /// Values split by a function (a list whose items may contain commas).
        case split(@Sendable (String) -> [String])

        func values(_ text: String) -> [String] {
            switch self {
            case .whole: [text]
            case .commaSeparated: text.split(separator: ",").map(String.init)
            case .split(let split): split(text)
            }
        }
    }

    /// `--name`.
    public var name: String
    /// The flag that sets it false (`--no-migrate`), if any.
    public var inverse: String?
    /// The value's placeholder in the help (`PORT`), nil for a flag.
    public var valueName: String?
    /// How the option takes its value.
    public var arity: Arity
    /// The environment variable that gives the option when the command line does not.
    public var environment: String?
    /// How the environment variable's text becomes values.
    public var environmentItems: EnvironmentItems
    /// Whether the option may be given more than once, each value adding to the others.
    public var isRepeatable: Bool
    /// Whether values on the command line replace the environment's (rather than following them).
    public var commandLineReplacesEnvironment: Bool
    /// What the option does, for `--help`.
    public var help: String
    /// The default, for `--help`.
    public var defaultText: String?
    /// Parses a value into the settings; throws ``CommandLineError`` (from ``OptionValue``'s
    /// parsers) for a value it refuses.
    public var apply: @Sendable (inout Settings, OptionValue) throws -> Void

    /// An option that takes a value.
    public static func value(
        _ name: String, _ valueName: String, environment: String? = nil, items: EnvironmentItems = .whole,
        repeatable: Bool = false, commandLineReplacesEnvironment: Bool = false, default defaultText: String? = nil,
        help: String, apply: @escaping @Sendable (inout Settings, OptionValue) throws -> Void
    ) -> Self {
        Self(
            name: name, inverse: nil, valueName: valueName, arity: .value, environment: environment,
            environmentItems: items, isRepeatable: repeatable,
            commandLineReplacesEnvironment: commandLineReplacesEnvironment, help: help, defaultText: defaultText,
            apply: apply)
    }

    /// An option whose value may be left out (`apply` then gets an empty text).
    public static func optionalValue(
        _ name: String, _ valueName: String, help: String,
        apply: @escaping @Sendable (inout Settings, OptionValue) throws -> Void
    ) -> Self {
        var option = value(name, valueName, help: help, apply: apply)
        option.arity = .optionalValue
        return option
    }

    /// A flag, with an optional inverse (`--no-migrate`).
    public static func flag(
        _ name: String, inverse: String? = nil, environment: String? = nil, default defaultText: String? = nil,
        help: String, set: @escaping @Sendable (inout Settings, Bool) -> Void
    ) -> Self {
        Self(
            name: name, inverse: inverse, valueName: nil, arity: .flag, environment: environment,
            environmentItems: .whole, isRepeatable: false, commandLineReplacesEnvironment: false, help: help,
            defaultText: defaultText, apply: { settings, value in set(&settings, try value.flag()) })
    }

    /// The option as `--help` names it: `--port PORT`, `--migrate, --no-migrate`, `--scale [SIZES]`.
    var label: String {
        var label = name + (inverse.map { ", " + $0 } ?? "")
        if let valueName { label += arity == .optionalValue ? " [\(valueName)]" : " \(valueName)" }
        return label
    }

    /// The help text with what the table knows besides: repeatable, the environment twin, the default.
    var fullHelp: String {
        var notes: [String] = []
        if isRepeatable { notes.append("repeatable") }
        if let environment {
            switch (arity, environmentItems) {
            case (.flag, _): notes.append("\(environment)=true|false")
            case (_, .whole): notes.append(environment)
            default: notes.append("\(environment), comma-separated")
            }
        }
        if let defaultText { notes.append("default: \(defaultText)") }
        return notes.isEmpty ? help : "\(help) (\(notes.joined(separator: "; ")))"
    }
}

/// One value of an option, from the command line or the environment, with parsers whose errors
/// name the option (and the variable it came from).
public struct OptionValue: Sendable {
    /// The option's name, `--port`.
    public var option: String
    /// The value as given; empty for an ``CommandOption/Arity/optionalValue`` left out.
    public var text: String
    /// The environment variable it came from, nil for the command line.
    public var environment: String?

    /// Creates a value.
    public init(option: String, text: String, environment: String? = nil) {
        self.option = option
        self.text = text
        self.environment = environment
    }

    /// `--option <phrase>, not '<text>'`, and where it came from: `invalid("is text or json")`.
    /// `shown` replaces the text (a URI with its password hidden); `note` follows.
    public func invalid(_ phrase: String, shown: String? = nil, note: String = "") -> CommandLineError {
        error("\(option) \(phrase), not '\(shown ?? text)'\(note)")
    }

    /// An error saying `message` as it is, and where the value came from.
    public func error(_ message: String) -> CommandLineError {
        CommandLineError(message + (environment.map { " (from \($0))" } ?? ""))
    }

    /// A whole number in `range`, else "--option must be `described`, not '…'".
    public func integer(_ range: ClosedRange<Int>, _ described: String) throws(CommandLineError) -> Int {
        guard let number = Int(text), range.contains(number) else { throw invalid("must be \(described)") }
        return number
    }

    /// A number within `range`, greater than its lower bound when `open`, else "--option must be
    /// `described`, not '…'".
    public func number(_ range: ClosedRange<Double>, above: Bool = false, _ described: String) throws(CommandLineError)
        -> Double
    {
        guard let number = Double(text), range.contains(number), !above || number > range.lowerBound else {
            throw invalid("must be \(described)")
        }
        return number
    }

    /// One of `choices`, else "--option is a, b or c, not '…'".
    public func choice(_ choices: [String]) throws(CommandLineError) -> String {
        guard choices.contains(text) else { throw invalid("is \(Self.list(choices))") }
        return text
    }

    /// A value a raw-representable type accepts, else "--option is a, b or c, not '…'".
    public func choice<T: RawRepresentable>(_ type: T.Type, _ choices: [String]) throws(CommandLineError) -> T
    where T.RawValue == String {
        guard let value = T(rawValue: text) else { throw invalid("is \(Self.list(choices))") }
        return value
    }

    /// true, 1 or yes; false, 0 or no.
    public func flag() throws(CommandLineError) -> Bool {
        switch text {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw invalid("is true or false")
        }
    }

    /// `a, b or c`.
    static func list(_ items: [String]) -> String {
        items.count < 2 ? items.joined() : items.dropLast().joined(separator: ", ") + " or " + items.last!
    }
}

/// A mistake on a command line or in an environment twin: printed as one line, the process exits
/// with ``CommandLineError/usageStatus``.
public struct CommandLineError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the option.
    public var message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
    /// The exit status of a usage error: 64, `EX_USAGE` of sysexits.h.
    public static let usageStatus: Int32 = 64
}
