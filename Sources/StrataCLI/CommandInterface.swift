import Foundation

/// A subcommand's command line, declared once: its synopsis, prose, option table and positional
/// arguments. It parses the environment twins and the command line into the command's settings,
/// and renders `--help` from the same table.
public struct CommandInterface<Settings>: Sendable {
    /// What the command takes besides options: `strata inspect PATH`.
    public struct Arguments: Sendable {
        /// How many it takes.
        public var count: ClosedRange<Int>
        /// What to say when the count is wrong: `give one store file`.
        public var mismatch: String
        /// Puts them into the settings.
        public var apply: @Sendable (inout Settings, [String]) -> Void

        /// Creates the rule.
        public init(
            count: ClosedRange<Int>, mismatch: String, apply: @escaping @Sendable (inout Settings, [String]) -> Void
        ) {
            self.count = count
            self.mismatch = mismatch
            self.apply = apply
        }
    }

    /// `strata serve`: the start of every message and of the usage line.
    public var name: String
    /// The usage line after the name: `[options]`.
    public var synopsis: String
    /// What the command does, before the options.
    public var abstract: String
    /// The option table.
    public var options: [CommandOption<Settings>]
    /// Positional arguments, nil when it takes none.
    public var arguments: Arguments?
    /// More about the command, after the options.
    public var discussion: String

    /// Declares a command.
    public init(
        name: String, synopsis: String, abstract: String, options: [CommandOption<Settings>],
        arguments: Arguments? = nil, discussion: String = ""
    ) {
        self.name = name
        self.synopsis = synopsis
        self.abstract = abstract
        self.options = options
        self.arguments = arguments
        self.discussion = discussion
    }

    /// Parses `arguments` over `defaults`: first every environment twin in `environment`, then
    /// the command line, whose values win (or, for options that say so, replace the
    /// environment's). Nil when `--help` or `-h` asks for the help.
    public func parse(_ arguments: [String], environment: [String: String], defaults: Settings)
        throws(CommandLineError) -> Settings?
    {
        guard let (given, positional) = try scan(arguments) else { return nil }
        var settings = defaults
        let named = Set(given.map(\.index))
        for (index, option) in options.enumerated() {
            guard let variable = option.environment, let text = environment[variable], !text.isEmpty else { continue }
            if option.commandLineReplacesEnvironment && named.contains(index) { continue }
            for item in option.environmentItems.values(text) {
                try apply(option, OptionValue(option: option.name, text: item, environment: variable), to: &settings)
            }
        }
        for (index, value) in given { try apply(options[index], value, to: &settings) }
        if let rule = self.arguments {
            guard rule.count.contains(positional.count) else {
                throw CommandLineError("\(rule.mismatch); see \(name) --help")
            }
            rule.apply(&settings, positional)
        } else if let first = positional.first {
            throw CommandLineError("unexpected argument '\(first)'; see \(name) --help")
        }
        return settings
    }

    /// Runs the command: parses (printing the help, or the mistake with status 64), then `body`.
    public func run(
        _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        defaults: Settings, body: (Settings) -> Int32
    ) -> Int32 {
        do {
            guard let settings = try parse(arguments, environment: environment, defaults: defaults) else {
                print(help)
                return 0
            }
            return body(settings)
        } catch {
            return fail(error.message)
        }
    }

    /// Prints `strata serve: message` on stderr and returns the usage status, 64.
    public func fail(_ message: String) -> Int32 {
        printError("\(name): \(message)")
        return CommandLineError.usageStatus
    }

    /// The options given on the command line (by their index in the table) and the positional
    /// arguments; nil when the help is asked for.
    private func scan(_ arguments: [String]) throws(CommandLineError) -> ([(index: Int, value: OptionValue)], [String])?
    {
        var given: [(index: Int, value: OptionValue)] = []
        var positional: [String] = []
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                positional.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "--help" || argument == "-h" { return nil }
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let found = options.firstIndex(where: { $0.name == name || $0.inverse == name }) else {
                throw CommandLineError("unknown option '\(argument)'; see \(self.name) --help")
            }
            let option = options[found]
            let text: String
            switch option.arity {
            case .flag where name == option.inverse:
                guard inline == nil else { throw CommandLineError("\(name) takes no value") }
                text = "false"
            case .flag:
                text = inline ?? "true"
            case .value:
                if let inline {
                    text = inline
                } else {
                    guard index < arguments.count else { throw CommandLineError("\(name) needs a value") }
                    text = arguments[index]
                    index += 1
                }
            case .optionalValue:
                if let inline {
                    text = inline
                } else if index < arguments.count, !arguments[index].hasPrefix("-") {
                    text = arguments[index]
                    index += 1
                } else {
                    text = ""
                }
            }
            given.append((found, OptionValue(option: option.name, text: text)))
        }
        return (given, positional)
    }

    private func apply(_ option: CommandOption<Settings>, _ value: OptionValue, to settings: inout Settings)
        throws(CommandLineError)
    {
        do {
            try option.apply(&settings, value)
        } catch let error as CommandLineError {
            throw error
        } catch {
            throw value.invalid("is refused (\(error))")
        }
    }

    /// The `--help` text: the usage line, the abstract, one entry per option (and `--help`), the
    /// discussion.
    public var help: String {
        let labels = options.map(\.label) + ["--help"]
        let texts = options.map(\.fullHelp) + ["this text"]
        let column = 2 + min(labels.map(\.count).max() ?? 0, 22) + 2
        var lines = ["usage: \(name) \(synopsis)", ""]
        if !abstract.isEmpty { lines += [abstract, ""] }
        for (label, text) in zip(labels, texts) {
            let wrapped = Self.wrap(text, width: Self.width - column)
            let entry = "  " + label
            if entry.count + 2 <= column {
                lines.append(entry.padding(toLength: column, withPad: " ", startingAt: 0) + wrapped[0])
                lines += wrapped.dropFirst().map { String(repeating: " ", count: column) + $0 }
            } else {
                lines.append(entry)
                lines += wrapped.map { String(repeating: " ", count: column) + $0 }
            }
        }
        if !discussion.isEmpty { lines += ["", discussion] }
        return lines.joined(separator: "\n")
    }

    /// The width `--help` wraps option texts to.
    static var width: Int { 100 }

    /// `text`'s words in lines of at most `width` characters (a longer word stands alone).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        return lines + [line]
    }
}

/// Prints a line on stderr.
public func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
