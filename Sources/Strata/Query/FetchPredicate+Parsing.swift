extension FetchPredicate {
    /// Parses a Core Data predicate format string.
    ///
    /// The language, with keywords in any case:
    /// - comparisons `==` `=` `!=` `<>` `<` `<=` `=<` `>` `>=` `=>`, `BEGINSWITH`, `ENDSWITH`,
    ///   `CONTAINS`, `LIKE`, `MATCHES`, `IN`, `BETWEEN`, each optionally followed by `[c]`, `[d]` or
    ///   `[cd]`;
    /// - `AND`/`&&`, `OR`/`||`, `NOT`/`!` (`NOT` binds tightest, then `AND`, then `OR`), parentheses,
    ///   `TRUEPREDICATE`, `FALSEPREDICATE`;
    /// - `ANY`/`SOME`, `ALL`, `NONE` before a key path through a to-many relationship;
    /// - Strata's own `attribute TEXTSEARCH 'query'`: a full-text search of a searchable attribute
    ///   (``FetchPredicate/textSearch(_:)``), the query in the `fts` language (``TextQuery/Syntax/query``);
    /// - operands: key paths (`title`, `author.name`, `tags.@count`, `SELF`; `#word` escapes a
    ///   reserved word), strings in `'…'` or `"…"` (escapes `\\ \' \" \n \r \t \0 \uHHHH`),
    ///   integers (decimal, or `0x` hexadecimal), decimals and exponents (doubles), `TRUE`/`YES`,
    ///   `FALSE`/`NO`, `NIL`/`NULL`, lists `{a, b, …}`, `$NAME` and `$NAME.key.path` variables;
    /// - placeholders, each taking the next argument: `%@` (a value, object, list, or a key path
    ///   given as ``PredicateArgument/keyPath(_:)``), `%K` (a key path, as a key path or string), `%d` `%i` `%ld` `%lld` `%u` `%lu` (an integer), `%f` `%lf` (a number, as a double).
    ///
    /// - Throws: ``PredicateError`` with the ``PredicateError/offset`` (in characters) of the problem
    ///   and what was expected there; also when the number of arguments differs from the placeholders.
    public init(format: String, arguments: [PredicateArgument] = []) throws(PredicateError) {
        var parser = try PredicateParser(format: format, arguments: arguments)
        self = try parser.parse()
    }

    /// Parses a Core Data predicate format string with its placeholder arguments; see
    /// ``init(format:arguments:)``.
    /// - Throws: ``PredicateError`` naming where the string is wrong and what was expected.
    @_disfavoredOverload
    public init(format: String, _ arguments: PredicateArgument...) throws(PredicateError) {
        try self.init(format: format, arguments: arguments)
    }
}

/// The reserved words of the predicate language, upper-cased.
let predicateKeywords: Set<String> = [
    "AND", "OR", "NOT", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES", "IN", "BETWEEN", "TRUEPREDICATE",
    "FALSEPREDICATE", "ANY", "SOME", "ALL", "NONE", "TRUE", "FALSE", "YES", "NO", "NIL", "NULL",
    TextSearch.formatOperator,
]

/// A recursive-descent parser over the tokens of a format string.
struct PredicateParser {
    enum Token: Equatable {
        /// A key path (never a keyword).
        case keyPath(String)
        /// A reserved word, upper-cased.
        case keyword(String)
        case string(String)
        case integer(Int64)
        case double(Double)
        /// A `%` placeholder: the text after `%`.
        case placeholder(String)
        /// A `$` variable: the text after `$`.
        case variable(String)
        /// Punctuation or an operator, normalized (`=` becomes `==`).
        case symbol(String)
        case options(ComparisonOptions)
        case end
    }

    struct Lexeme {
        var token: Token
        /// Offset in Unicode scalars.
        var offset: Int
    }

    /// How deeply parentheses, `NOT`s and lists may nest.
    static let maximumDepth = 100

    private let scalars: [Unicode.Scalar]
    private let arguments: [PredicateArgument]
    /// The token being looked at; tokens are read one at a time, so the first error in the text is
    /// the one reported.
    private var current: Lexeme
    /// Where the next token starts, in scalars.
    private var cursor = 0
    private var argumentIndex = 0
    private var depth = 0

    init(format: String, arguments: [PredicateArgument]) throws(PredicateError) {
        scalars = Array(format.unicodeScalars)
        self.arguments = arguments
        current = Lexeme(token: .end, offset: 0)
        try advance()
    }

    // MARK: Errors

    /// The character offset of a scalar offset.
    private func characterOffset(_ offset: Int) -> Int {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[0..<min(max(offset, 0), scalars.count)])
        return String(view).count
    }

    private func error(_ message: String, at offset: Int) -> PredicateError {
        let characters = characterOffset(offset)
        return PredicateError("\(message) at offset \(characters)", offset: characters)
    }

    private func expected(_ what: String, _ lexeme: Lexeme) -> PredicateError {
        let characters = characterOffset(lexeme.offset)
        return PredicateError(
            "expected \(what) at offset \(characters), found \(Self.describe(lexeme.token))", offset: characters)
    }

    static func describe(_ token: Token) -> String {
        switch token {
        case .keyPath(let text): "'\(text)'"
        case .keyword(let word): "'\(word)'"
        case .string(let text): "the string '\(text.count > 20 ? text.prefix(20) + "…" : text)'"
        case .integer(let value): "the number \(value)"
        case .double(let value): "the number \(value)"
        case .placeholder(let text): "'%\(text)'"
        case .variable(let name): "'$\(name)'"
        case .symbol(let text): "'\(text)'"
        case .options(let options): "'\(PredicateFormatter.options(options))'"
        case .end: "the end of the predicate"
        }
    }

    // MARK: Lexing

    private static func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || scalar.properties.isAlphabetic
    }

    private static func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
        isIdentifierStart(scalar) || ("0"..."9").contains(scalar)
    }

    private func scalar(_ index: Int) -> Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    /// Reads the token at `cursor` into `current`.
    private mutating func advance() throws(PredicateError) {
        var index = cursor
        current = try lex(&index)
        cursor = index
    }

    private func lex(_ index: inout Int) throws(PredicateError) -> Lexeme {
        while let s = scalar(index), s.properties.isWhitespace { index += 1 }
        guard let s = scalar(index) else { return Lexeme(token: .end, offset: index) }
        let start = index
        let next = scalar(index + 1)
        func symbol(_ text: String, _ length: Int) -> Lexeme {
            index += length
            return Lexeme(token: .symbol(text), offset: start)
        }
        switch s {
        case "(", ")", "{", "}", ",": return symbol(String(s), 1)
        case "=":
            switch next {
            case "=": return symbol("==", 2)
            case "<": return symbol("<=", 2)
            case ">": return symbol(">=", 2)
            default: return symbol("==", 1)
            }
        case "!": return next == "=" ? symbol("!=", 2) : symbol("!", 1)
        case "<":
            switch next {
            case "=": return symbol("<=", 2)
            case ">": return symbol("!=", 2)
            default: return symbol("<", 1)
            }
        case ">": return next == "=" ? symbol(">=", 2) : symbol(">", 1)
        case "&":
            guard next == "&" else { throw error("expected '&&', found a single '&'", at: start) }
            return symbol("&&", 2)
        case "|":
            guard next == "|" else { throw error("expected '||', found a single '|'", at: start) }
            return symbol("||", 2)
        case "[": return try lexOptions(&index)
        case "'", "\"": return Lexeme(token: .string(try lexString(&index)), offset: start)
        case "%": return try lexPlaceholder(&index)
        case "$":
            index += 1
            guard let first = scalar(index), Self.isIdentifierStart(first) else {
                throw error("expected a variable name after '$'", at: index)
            }
            return Lexeme(token: .variable(try lexPath(&index, variable: true)), offset: start)
        case "#":
            index += 1
            guard let first = scalar(index), Self.isIdentifierStart(first) else {
                throw error("expected a name after '#'", at: index)
            }
            return Lexeme(token: .keyPath(try lexPath(&index, variable: true)), offset: start)
        case "@":
            throw error("'@' can only follow a to-many relationship, as in tags.@count", at: start)
        default:
            if ("0"..."9").contains(s) || s == "."
                || ((s == "-" || s == "+") && next.map { ("0"..."9").contains($0) || $0 == "." } == true)
            {
                return Lexeme(token: try lexNumber(&index), offset: start)
            } else if Self.isIdentifierStart(s) {
                let path = try lexPath(&index, variable: false)
                if !path.contains("."), predicateKeywords.contains(path.uppercased()) {
                    return Lexeme(token: .keyword(path.uppercased()), offset: start)
                } else {
                    return Lexeme(token: .keyPath(path), offset: start)
                }
            } else {
                throw error("unexpected character '\(s.escaped(asASCII: true))'", at: start)
            }
        }
    }

    /// `name(.name|.@name)*`; a leading `self` is written `SELF` (unless escaped with `#`).
    private func lexPath(_ index: inout Int, variable: Bool) throws(PredicateError) -> String {
        var text = ""
        func component(_ index: inout Int) {
            while let s = scalar(index), Self.isIdentifierPart(s) {
                text.unicodeScalars.append(s)
                index += 1
            }
        }
        component(&index)
        if !variable, text.uppercased() == "SELF" { text = "SELF" }
        while scalar(index) == "." {
            let dot = index
            index += 1
            if scalar(index) == "@" {
                text += ".@"
                index += 1
                guard let first = scalar(index), Self.isIdentifierStart(first) else {
                    throw error("expected a name such as 'count' after '@'", at: index)
                }
            } else if scalar(index) == "#" {
                text += "."
                index += 1
                guard let first = scalar(index), Self.isIdentifierStart(first) else {
                    throw error("expected a name after '#'", at: index)
                }
            } else {
                guard let first = scalar(index), Self.isIdentifierStart(first) else {
                    throw error("expected a key after '.'", at: dot + 1)
                }
                text += "."
            }
            component(&index)
        }
        return text
    }

    private func lexOptions(_ index: inout Int) throws(PredicateError) -> Lexeme {
        let start = index
        index += 1
        var options: ComparisonOptions = []
        while let s = scalar(index), s != "]" {
            switch s {
            case "c", "C": options.insert(.caseInsensitive)
            case "d", "D": options.insert(.diacriticInsensitive)
            default:
                guard s.properties.isAlphabetic else {
                    throw error("expected ']' to close the options opened", at: start)
                }
                throw error("unknown comparison option '\(s.escaped(asASCII: true))'; expected c or d", at: index)
            }
            index += 1
        }
        guard scalar(index) == "]" else { throw error("expected ']' to close the options opened", at: start) }
        guard !options.isEmpty else { throw error("expected c, d or cd between '[' and ']'", at: start) }
        index += 1
        return Lexeme(token: .options(options), offset: start)
    }

    private func lexString(_ index: inout Int) throws(PredicateError) -> String {
        let start = index
        let quote = scalars[index]
        index += 1
        var text = String.UnicodeScalarView()
        while true {
            guard let s = scalar(index) else { throw error("unterminated string starting", at: start) }
            index += 1
            if s == quote { return String(text) }
            guard s == "\\" else {
                text.append(s)
                continue
            }
            guard let escaped = scalar(index) else { throw error("unterminated string starting", at: start) }
            index += 1
            switch escaped {
            case "\\", "'", "\"": text.append(escaped)
            case "n": text.append("\n")
            case "r": text.append("\r")
            case "t": text.append("\t")
            case "0": text.append("\0")
            case "u":
                var value: UInt32 = 0
                var digits = 0
                while digits < 4, let digit = scalar(index), let nibble = Self.hexValue(digit) {
                    value = value * 16 + nibble
                    index += 1
                    digits += 1
                }
                guard digits == 4, let decoded = Unicode.Scalar(value) else {
                    throw error(
                        "expected four hexadecimal digits of a Unicode scalar after '\\u'", at: index - digits - 2)
                }
                text.append(decoded)
            default:
                throw error(
                    "unknown escape '\\\(escaped.escaped(asASCII: true))' in a string (write '\\\\' for a backslash)",
                    at: index - 2)
            }
        }
    }

    private static func hexValue(_ scalar: Unicode.Scalar) -> UInt32? {
        switch scalar {
        case "0"..."9": scalar.value - 48
        case "a"..."f": scalar.value - 87
        case "A"..."F": scalar.value - 55
        default: nil
        }
    }

    private func lexNumber(_ index: inout Int) throws(PredicateError) -> Token {
        let start = index
        var text = ""
        if let s = scalar(index), s == "-" || s == "+" {
            if s == "-" { text = "-" }
            index += 1
        }
        func digits(_ index: inout Int) -> String {
            var run = ""
            while let s = scalar(index), ("0"..."9").contains(s) {
                run.unicodeScalars.append(s)
                index += 1
            }
            return run
        }
        if scalar(index) == "0", let x = scalar(index + 1), x == "x" || x == "X" {
            index += 2
            var hex = ""
            while let s = scalar(index), Self.hexValue(s) != nil {
                hex.unicodeScalars.append(s)
                index += 1
            }
            guard !hex.isEmpty else { throw error("expected hexadecimal digits after '0x'", at: start) }
            try checkNumberEnd(index)
            guard let value = Int64(text + hex, radix: 16) else {
                throw error("the integer \(text)0x\(hex) is out of range", at: start)
            }
            return .integer(value)
        }
        let whole = digits(&index)
        text += whole
        var isDouble = false
        if scalar(index) == ".", let after = scalar(index + 1), ("0"..."9").contains(after) {
            index += 1
            text += "." + digits(&index)
            isDouble = true
        } else if whole.isEmpty {
            throw error("expected a digit", at: index)
        }
        if let e = scalar(index), e == "e" || e == "E" {
            var lookahead = index + 1
            var exponent = "e"
            if let sign = scalar(lookahead), sign == "-" || sign == "+" {
                exponent.unicodeScalars.append(sign)
                lookahead += 1
            }
            let run = digits(&lookahead)
            guard !run.isEmpty else { throw error("expected the digits of an exponent", at: lookahead) }
            index = lookahead
            text += exponent + run
            isDouble = true
        }
        try checkNumberEnd(index)
        if isDouble {
            guard let value = Double(text) else { throw error("'\(text)' is not a number", at: start) }
            return .double(value)
        }
        guard let value = Int64(text) else {
            throw error("the integer \(text) is out of range (write it with a decimal point for a double)", at: start)
        }
        return .integer(value)
    }

    private func checkNumberEnd(_ index: Int) throws(PredicateError) {
        if let s = scalar(index), Self.isIdentifierPart(s) || s == "." {
            throw error("unexpected '\(s.escaped(asASCII: true))' after a number", at: index)
        }
    }

    static let placeholders: Set<String> = ["@", "K", "d", "i", "u", "ld", "li", "lu", "lld", "lli", "llu", "f", "lf"]

    private func lexPlaceholder(_ index: inout Int) throws(PredicateError) -> Lexeme {
        let start = index
        index += 1
        var text = ""
        while let s = scalar(index), s == "l" { text += "l"; index += 1 }
        if let s = scalar(index), ["@", "K", "d", "i", "u", "f"].contains(s) {
            text.unicodeScalars.append(s)
            index += 1
        }
        guard Self.placeholders.contains(text) else {
            throw error("unknown placeholder '%\(text)'; expected %@, %K, %d, %i, %ld, %lld, %u or %f", at: start)
        }
        return Lexeme(token: .placeholder(text), offset: start)
    }

    // MARK: Parsing

    private func isKeyword(_ word: String) -> Bool { current.token == .keyword(word) }

    private func isSymbol(_ text: String) -> Bool { current.token == .symbol(text) }

    private mutating func enter(_ lexeme: Lexeme) throws(PredicateError) {
        depth += 1
        if depth > Self.maximumDepth {
            throw error("the predicate nests more than \(Self.maximumDepth) levels deep", at: lexeme.offset)
        }
    }

    mutating func parse() throws(PredicateError) -> FetchPredicate {
        let predicate = try parseOr()
        guard current.token == .end else {
            throw expected("AND, OR or the end of the predicate", current)
        }
        guard argumentIndex == arguments.count else {
            throw error(
                "the format has \(argumentIndex) placeholder(s) but \(arguments.count) argument(s) were given; expected the end of the arguments",
                at: scalars.count)
        }
        return predicate
    }

    private mutating func parseOr() throws(PredicateError) -> FetchPredicate {
        var items = [try parseAnd()]
        while isKeyword("OR") || isSymbol("||") {
            try advance()
            items.append(try parseAnd())
        }
        return items.count == 1 ? items[0] : .or(items)
    }

    private mutating func parseAnd() throws(PredicateError) -> FetchPredicate {
        var items = [try parseNot()]
        while isKeyword("AND") || isSymbol("&&") {
            try advance()
            items.append(try parseNot())
        }
        return items.count == 1 ? items[0] : .and(items)
    }

    private mutating func parseNot() throws(PredicateError) -> FetchPredicate {
        guard isKeyword("NOT") || isSymbol("!") else { return try parsePrimary() }
        try enter(current)
        try advance()
        let item = try parseNot()
        depth -= 1
        return .not(item)
    }

    private mutating func parsePrimary() throws(PredicateError) -> FetchPredicate {
        if isSymbol("(") {
            let open = current
            try enter(open)
            try advance()
            let inner = try parseOr()
            guard isSymbol(")") else {
                throw expected("')' to close the '(' at offset \(characterOffset(open.offset))", current)
            }
            try advance()
            depth -= 1
            return inner
        }
        if isKeyword("TRUEPREDICATE") {
            try advance()
            return .always
        }
        if isKeyword("FALSEPREDICATE") {
            try advance()
            return .never
        }
        return try parseComparison()
    }

    private static let operatorSymbols: [String: ComparisonOperator] = [
        "==": .equal, "!=": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
    ]

    /// `keyPath TEXTSEARCH "query"`: a ``TextSearch`` with the query in the `fts` language.
    private mutating func parseTextSearch(_ lhs: PredicateTerm, _ lhsLexeme: Lexeme) throws(PredicateError)
        -> FetchPredicate
    {
        guard case .keyPath(let path) = lhs else {
            throw error("\(TextSearch.formatOperator) needs an attribute's key path on its left", at: lhsLexeme.offset)
        }
        try advance()
        let rhsLexeme = current
        guard case .constant(.string(let text)) = try parseExpression() else {
            throw expected("a string holding the words to search for after \(TextSearch.formatOperator)", rhsLexeme)
        }
        do {
            return .textSearch(try TextSearch(path, matching: text, syntax: .query))
        } catch {
            throw self.error(error.message, at: rhsLexeme.offset)
        }
    }

    private mutating func parseComparison() throws(PredicateError) -> FetchPredicate {
        var modifier = ComparisonModifier.direct
        switch current.token {
        case .keyword("ANY"), .keyword("SOME"): modifier = .any
        case .keyword("ALL"): modifier = .all
        case .keyword("NONE"): modifier = .none
        default: break
        }
        if modifier != .direct {
            try advance()
            switch current.token {
            case .keyPath, .variable: break
            case .placeholder("K"): break
            default: throw expected("a key path after \(modifier.rawValue)", current)
            }
        }
        let lhsLexeme = current
        let lhs = try parseExpression()
        if current.token == .keyword(TextSearch.formatOperator), modifier == .direct {
            return try parseTextSearch(lhs, lhsLexeme)
        }
        let op: ComparisonOperator
        switch current.token {
        case .symbol(let text) where Self.operatorSymbols[text] != nil: op = Self.operatorSymbols[text]!
        case .keyword(let word) where ComparisonOperator(rawValue: word) != nil:
            op = ComparisonOperator(rawValue: word)!
        default:
            throw expected(
                "a comparison operator (==, !=, <, <=, >, >=, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES, IN, BETWEEN)",
                current)
        }
        try advance()
        var options: ComparisonOptions = []
        if case .options(let given) = current.token {
            options = given
            try advance()
        }
        let rhsLexeme = current
        let rhs = try parseExpression()
        if case .list = lhs {
            throw error("a list is only allowed on the right of IN or BETWEEN; found one", at: lhsLexeme.offset)
        }
        switch (op, rhs) {
        case (.in, .list), (.in, .variable), (.between, .variable): break
        case (.between, .list(let bounds)) where bounds.count == 2: break
        case (.in, _): throw expected("a list such as {1, 2} (or %@ with a list) after IN", rhsLexeme)
        case (.between, _): throw expected("a list of two bounds such as {1, 5} after BETWEEN", rhsLexeme)
        case (_, .list):
            throw error("a list is only allowed on the right of IN or BETWEEN; found one", at: rhsLexeme.offset)
        default: break
        }
        return .comparison(Comparison(lhs, op, rhs, options: options, modifier: modifier))
    }

    private mutating func nextArgument(_ lexeme: Lexeme) throws(PredicateError) -> PredicateArgument {
        guard argumentIndex < arguments.count else {
            throw error(
                "missing argument \(argumentIndex + 1) for the placeholder (only \(arguments.count) given)",
                at: lexeme.offset)
        }
        argumentIndex += 1
        return arguments[argumentIndex - 1]
    }

    private mutating func parseExpression() throws(PredicateError) -> PredicateTerm {
        let lexeme = current
        switch lexeme.token {
        case .string(let text):
            try advance()
            return .constant(.string(text))
        case .integer(let value):
            try advance()
            return .constant(.integer(value))
        case .double(let value):
            try advance()
            return .constant(.double(value))
        case .keyword("TRUE"), .keyword("YES"):
            try advance()
            return .constant(.boolean(true))
        case .keyword("FALSE"), .keyword("NO"):
            try advance()
            return .constant(.boolean(false))
        case .keyword("NIL"), .keyword("NULL"):
            try advance()
            return .constant(.null)
        case .keyPath(let path):
            try advance()
            if isSymbol("(") { throw error("functions such as '\(path)(…)' are not supported", at: lexeme.offset) }
            return .keyPath(path)
        case .variable(let name):
            try advance()
            return .variable(name)
        case .symbol("{"):
            try enter(lexeme)
            try advance()
            var items: [PredicateTerm] = []
            if isSymbol("}") {
                try advance()
                depth -= 1
                return .list(items)
            }
            while true {
                items.append(try parseExpression())
                if isSymbol(",") {
                    try advance()
                    continue
                }
                guard isSymbol("}") else {
                    throw expected("',' or '}' in the list opened at offset \(characterOffset(lexeme.offset))", current)
                }
                try advance()
                depth -= 1
                return .list(items)
            }
        case .placeholder(let kind):
            try advance()
            let argument = try nextArgument(lexeme)
            return try term(for: argument, placeholder: kind, lexeme)
        default:
            throw expected("a key path, a value, a placeholder such as %@, a $VARIABLE or a {list}", lexeme)
        }
    }

    private func term(for argument: PredicateArgument, placeholder: String, _ lexeme: Lexeme) throws(PredicateError)
        -> PredicateTerm
    {
        let number = argumentIndex
        switch placeholder {
        case "@": return argument.term
        case "K":
            let path: String
            switch argument {
            case .keyPath(let text), .value(.string(let text)): path = text
            default:
                throw error(
                    "argument \(number) for %K must be a key path, not \(Self.describe(argument))", at: lexeme.offset)
            }
            guard Self.isKeyPath(path) else {
                throw error("argument \(number) for %K is not a key path: '\(path)'", at: lexeme.offset)
            }
            return .keyPath(path)
        case "f", "lf":
            switch argument {
            case .value(.double), .value(.decimal): return argument.term
            case .value(.integer(let value)): return .constant(.double(Double(value)))
            default:
                throw error(
                    "argument \(number) for %\(placeholder) must be a number, not \(Self.describe(argument))",
                    at: lexeme.offset)
            }
        default:
            guard case .value(.integer) = argument else {
                throw error(
                    "argument \(number) for %\(placeholder) must be an integer, not \(Self.describe(argument))",
                    at: lexeme.offset)
            }
            return argument.term
        }
    }

    private static func describe(_ argument: PredicateArgument) -> String {
        switch argument {
        case .value(let value): "\(value.kindName) \(value.json.jsonText)"
        case .object(let id): id.map { "the object \($0)" } ?? "a nil object"
        case .keyPath(let path): "the key path \(path)"
        case .list: "a list"
        }
    }

    /// Whether `text` is a key path: names separated by dots, `@name` after the first, `SELF` first.
    static func isKeyPath(_ text: String) -> Bool {
        let components = text.split(separator: ".", omittingEmptySubsequences: false)
        for (index, component) in components.enumerated() {
            var name = Substring(component)
            if index > 0, name.hasPrefix("@") { name = name.dropFirst() }
            guard let first = name.unicodeScalars.first, isIdentifierStart(first),
                name.unicodeScalars.allSatisfy(isIdentifierPart)
            else { return false }
        }
        return true
    }
}
