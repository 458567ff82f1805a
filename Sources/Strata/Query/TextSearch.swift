import Foundation

/// A full-text search of one searchable attribute (``AttributeDescription/isSearchable``): the
/// ``FetchPredicate/textSearch(_:)`` node.
///
/// Text is read as **words**: maximal runs of letters, digits, private-use characters and
/// combining marks (Unicode categories L, N, Co, M); everything else separates words. Words
/// compare with case and diacritics folded (`Café` is `cafe`). This is SQLite FTS5's `unicode61`
/// tokenizer with `remove_diacritics 2`, which the SQLite store's index uses; the in-memory store
/// and contexts (unsaved objects) read words with ``words(in:)``. PostgreSQL's index uses its
/// `simple` configuration (no stemming, no stop words); a PostgreSQL store also checks each row
/// it reads with ``words(in:)``, so an object matches there when both agree (see the README for
/// where they differ: e-mail addresses and URLs are one word to PostgreSQL, and it does not fold
/// diacritics).
public struct TextSearch: Sendable, Hashable {
    /// The searchable attribute of the fetched entity.
    public var keyPath: String
    /// What its words must satisfy.
    public var query: TextQuery

    /// Creates a search of `keyPath` for `query`.
    public init(_ keyPath: String, _ query: TextQuery) {
        self.keyPath = keyPath
        self.query = query
    }

    /// Creates a search of `keyPath` for `text` read in `syntax`.
    /// - Throws: ``PredicateError`` for text the syntax does not accept.
    public init(_ keyPath: String, matching text: String, syntax: TextQuery.Syntax = .plain) throws(PredicateError) {
        self.init(keyPath, try TextQuery(text, syntax: syntax))
    }

    /// The words of `text`, folded, in order (see ``TextSearch``).
    public static func words(in text: String) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        func flush() {
            guard !current.isEmpty else { return }
            // ASCII (most words) folds by itself, without Foundation's folding.
            if current.allSatisfy(\.isASCII) {
                let bytes = current.map { scalar -> UInt8 in
                    let byte = UInt8(scalar.value)
                    return (65...90).contains(byte) ? byte + 32 : byte
                }
                words.append(String(decoding: bytes, as: UTF8.self))
                current = String.UnicodeScalarView()
                return
            }
            let word = String(current).lowercased().folding(options: .diacriticInsensitive, locale: nil)
            // A word of combining marks only folds to nothing.
            let kept = String(word.unicodeScalars.filter { !isMark($0) })
            if !kept.isEmpty { words.append(kept) }
            current = String.UnicodeScalarView()
        }
        for scalar in text.unicodeScalars {
            if isWordScalar(scalar) { current.append(scalar) } else { flush() }
        }
        flush()
        return words
    }

    private static func isMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: true
        default: false
        }
    }

    private static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            let value = scalar.value
            return (48...57).contains(value) || (65...90).contains(value) || (97...122).contains(value)
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .decimalNumber,
            .letterNumber, .otherNumber, .privateUse, .nonspacingMark, .spacingMark, .enclosingMark:
            return true
        default: return false
        }
    }

    /// Whether `text` (nil: no words) satisfies the query.
    public func matches(_ text: String?) -> Bool { query.matches(Self.words(in: text ?? "")) }

    /// Strata's relevance of `text` for this search, the same on every store: for each word or
    /// phrase the query asks for (not under a negation), how often it occurs divided by the number
    /// of words of the text, summed. More occurrences and shorter text rank higher; 0 for no match.
    public func rank(_ text: String?) -> Double { query.rank(Self.words(in: text ?? "")) }
}

/// What the words of a text must satisfy: words (optionally as a prefix), phrases, and their
/// combinations. Words are folded as ``TextSearch/words(in:)`` folds them.
public indirect enum TextQuery: Sendable, Hashable {
    /// The word occurs; with `prefix`, a word starting with it occurs.
    case word(String, prefix: Bool)
    /// The words occur one after another. An empty phrase matches nothing.
    case phrase([String])
    /// Every operand matches.
    case and([TextQuery])
    /// Some operand matches; `or([])` matches nothing (a query without words).
    case or([TextQuery])
    /// The operand does not match.
    case not(TextQuery)

    /// The query languages of the HTTP filters, named as PostgREST names its operators.
    public enum Syntax: String, Sendable, Hashable, CaseIterable {
        /// `fts`: PostgreSQL's `to_tsquery` language: words joined by `&` (and), `|` (or), `<->`
        /// (followed by), `!` (not), parentheses, `:*` after a word for a prefix. Words written
        /// side by side are joined by `&`.
        case query = "fts"
        /// `plfts`: every word of the text (`plainto_tsquery`).
        case plain = "plfts"
        /// `phfts`: the words of the text one after another (`phraseto_tsquery`).
        case phrase = "phfts"
        /// `wfts`: a search-engine query (`websearch_to_tsquery`): words are all required,
        /// `"quoted words"` are a phrase, `-word` excludes, `or` between words accepts either.
        case websearch = "wfts"
    }

    /// Reads `text` in `syntax`.
    /// - Throws: ``PredicateError`` for `fts` text that is not well formed.
    public init(_ text: String, syntax: Syntax) throws(PredicateError) {
        switch syntax {
        case .plain: self = Self.all(TextSearch.words(in: text).map { .word($0, prefix: false) })
        case .phrase: self = Self.phraseOrWord(TextSearch.words(in: text))
        case .websearch: self = Self.websearch(text)
        case .query:
            var parser = TSQueryParser(Array(text.unicodeScalars))
            self = try parser.parse()
        }
    }

    static func all(_ items: [TextQuery]) -> TextQuery {
        items.count == 1 ? items[0] : items.isEmpty ? .or([]) : .and(items)
    }

    static func phraseOrWord(_ words: [String]) -> TextQuery {
        switch words.count {
        case 0: .or([])
        case 1: .word(words[0], prefix: false)
        default: .phrase(words)
        }
    }

    private static func websearch(_ text: String) -> TextQuery {
        var groups: [[TextQuery]] = [[]]
        var negate = false
        var scalars = Substring(text).unicodeScalars[...]
        func add(_ item: TextQuery) {
            guard item != .or([]) else { return negate = false }
            groups[groups.count - 1].append(negate ? .not(item) : item)
            negate = false
        }
        while let first = scalars.first {
            if first.properties.isWhitespace {
                scalars.removeFirst()
            } else if first == "\"" {
                scalars.removeFirst()
                let end = scalars.firstIndex(of: "\"") ?? scalars.endIndex
                add(phraseOrWord(TextSearch.words(in: String(String.UnicodeScalarView(scalars[..<end])))))
                scalars = end < scalars.endIndex ? scalars[scalars.index(after: end)...] : scalars[end...]
            } else if first == "-" {
                scalars.removeFirst()
                negate = true
            } else {
                let end = scalars.firstIndex { $0.properties.isWhitespace || $0 == "\"" } ?? scalars.endIndex
                let term = String(String.UnicodeScalarView(scalars[..<end]))
                scalars = scalars[end...]
                if term.lowercased() == "or", !negate, !(groups.last ?? []).isEmpty {
                    groups.append([])
                } else {
                    add(phraseOrWord(TextSearch.words(in: term)))
                }
            }
        }
        let alternatives = groups.filter { !$0.isEmpty }.map(all)
        return alternatives.count == 1 ? alternatives[0] : .or(alternatives)
    }

    /// Whether the words of a text (``TextSearch/words(in:)``) satisfy the query.
    public func matches(_ words: [String]) -> Bool {
        switch self {
        case .word(let word, let prefix): return words.contains { prefix ? $0.hasPrefix(word) : $0 == word }
        case .phrase(let phrase): return Self.occurrences(of: phrase, in: words) > 0
        case .and(let items): return items.allSatisfy { $0.matches(words) }
        case .or(let items): return items.contains { $0.matches(words) }
        case .not(let item): return !item.matches(words)
        }
    }

    private static func occurrences(of phrase: [String], in words: [String]) -> Int {
        guard !phrase.isEmpty, phrase.count <= words.count else { return 0 }
        var count = 0
        for start in 0...(words.count - phrase.count) where words[start] == phrase[0] {
            if words[start..<(start + phrase.count)].elementsEqual(phrase) { count += 1 }
        }
        return count
    }

    /// The words and phrases the query asks for, not under a negation (what relevance counts).
    var positiveTerms: [(words: [String], prefix: Bool)] {
        switch self {
        case .word(let word, let prefix): [([word], prefix)]
        case .phrase(let words): [(words, false)]
        case .and(let items), .or(let items): items.flatMap(\.positiveTerms)
        case .not: []
        }
    }

    /// ``TextSearch/rank(_:)`` over the words of a text.
    func rank(_ words: [String]) -> Double { Self.rank(positiveTerms, words) }

    static func rank(_ terms: [(words: [String], prefix: Bool)], _ words: [String]) -> Double {
        guard !words.isEmpty else { return 0 }
        var total = 0
        for term in terms {
            if term.prefix, let first = term.words.first {
                total += words.count { $0.hasPrefix(first) }
            } else {
                total += occurrences(of: term.words, in: words)
            }
        }
        return Double(total) / Double(words.count)
    }

    /// The query in the `fts` language (``Syntax/query``), which reads back to an equal query.
    public var text: String {
        func quoted(_ word: String) -> String { "'" + word + "'" }
        func text(_ query: TextQuery, inner: Bool) -> String {
            switch query {
            case .word(let word, let prefix): return quoted(word) + (prefix ? ":*" : "")
            case .phrase(let words): return words.isEmpty ? "''" : words.map(quoted).joined(separator: " <-> ")
            case .and(let items):
                let body = items.map { text($0, inner: true) }.joined(separator: " & ")
                return inner ? "(\(body))" : body
            case .or(let items):
                if items.isEmpty { return "''" }
                let body = items.map { text($0, inner: true) }.joined(separator: " | ")
                return inner ? "(\(body))" : body
            case .not(let item): return "!" + text(item, inner: true)
            }
        }
        return text(self, inner: false)
    }
}

/// Reads the `fts` language (``TextQuery/Syntax/query``): `|` binds loosest, then `&` (or words
/// side by side), then `<->`, then `!`.
private struct TSQueryParser {
    let scalars: [Unicode.Scalar]
    var position = 0

    init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

    mutating func parse() throws(PredicateError) -> TextQuery {
        let query = try alternatives()
        skipSpaces()
        if position < scalars.count {
            throw PredicateError("text search: unexpected '\(Character(scalars[position]))'", offset: position)
        }
        return query
    }

    private mutating func skipSpaces() {
        while position < scalars.count, scalars[position].properties.isWhitespace { position += 1 }
    }

    private mutating func take(_ text: String) -> Bool {
        skipSpaces()
        let wanted = Array(text.unicodeScalars)
        guard position + wanted.count <= scalars.count, Array(scalars[position..<(position + wanted.count)]) == wanted
        else { return false }
        position += wanted.count
        return true
    }

    private mutating func alternatives() throws(PredicateError) -> TextQuery {
        var items = [try conjunction()]
        while take("|") { items.append(try conjunction()) }
        return items.count == 1 ? items[0] : .or(items)
    }

    private mutating func conjunction() throws(PredicateError) -> TextQuery {
        var items = [try sequence()]
        while true {
            if take("&") {
                items.append(try sequence())
                continue
            }
            skipSpaces()
            guard position < scalars.count, scalars[position] != "|", scalars[position] != ")" else { break }
            items.append(try sequence())
        }
        return items.count == 1 ? items[0] : .and(items)
    }

    private mutating func sequence() throws(PredicateError) -> TextQuery {
        let start = position
        var items = [try unary()]
        while take("<->") { items.append(try unary()) }
        guard items.count > 1 else { return items[0] }
        var words: [String] = []
        for item in items {
            switch item {
            case .word(let word, prefix: false): words.append(word)
            case .phrase(let more): words += more
            default: throw PredicateError("text search: '<->' joins words and phrases only", offset: start)
            }
        }
        return TextQuery.phraseOrWord(words)
    }

    private mutating func unary() throws(PredicateError) -> TextQuery {
        if take("!") { return .not(try unary()) }
        if take("(") {
            let inner = try alternatives()
            guard take(")") else { throw PredicateError("text search: a '(' is not closed", offset: position) }
            return inner
        }
        skipSpaces()
        let start = position
        var term = String.UnicodeScalarView()
        if position < scalars.count, scalars[position] == "'" {
            position += 1
            while position < scalars.count, scalars[position] != "'" {
                term.append(scalars[position])
                position += 1
            }
            guard position < scalars.count else {
                throw PredicateError("text search: a quote is not closed", offset: start)
            }
            position += 1
        } else {
            while position < scalars.count, !"&|!()<:' \t\r\n".unicodeScalars.contains(scalars[position]) {
                term.append(scalars[position])
                position += 1
            }
        }
        let words = TextSearch.words(in: String(term))
        guard !words.isEmpty else {
            throw PredicateError(
                position < scalars.count
                    ? "text search: expected a word at '\(Character(scalars[position]))'"
                    : "text search: expected a word at the end", offset: position)
        }
        if take(":*") {
            guard words.count == 1 else {
                throw PredicateError("text search: ':*' follows a single word", offset: start)
            }
            return .word(words[0], prefix: true)
        }
        return TextQuery.phraseOrWord(words)
    }
}

extension TextSearch {
    /// How a format string writes a text search: `title TEXTSEARCH "'word' & 'other'"` (the query in
    /// the `fts` language).
    public static let formatOperator = "TEXTSEARCH"

    /// The search checked against `entity`: its key path must be a searchable attribute of it.
    func bound(to entity: String, in model: ObjectModel) throws(PredicateError) -> TextSearch {
        guard let attribute = model.attribute(keyPath, of: entity) else {
            throw PredicateError("'\(keyPath)' is not an attribute of '\(entity)'; a text search reads an attribute")
        }
        guard attribute.isSearchable else {
            let searchable = model.attributes(of: entity).filter(\.isSearchable).map(\.name)
            throw PredicateError(
                "'\(keyPath)' of '\(entity)' is not searchable; a text search reads a searchable attribute"
                    + (searchable.isEmpty
                        ? " (it has none: mark one \"searchable\": true in the model)"
                        : " (\(searchable.joined(separator: ", ")))"))
        }
        return self
    }
}

extension FetchPredicate {
    /// The text searches relevance counts (``SortKey/rank``): those not under a negation.
    public var rankedSearches: [TextSearch] {
        switch self {
        case .textSearch(let search): [search]
        case .and(let items), .or(let items): items.flatMap(\.rankedSearches)
        case .always, .never, .comparison, .not: []
        }
    }

    /// Whether the predicate holds a text search anywhere.
    public var hasTextSearch: Bool {
        switch self {
        case .textSearch: true
        case .and(let items), .or(let items): items.contains(where: \.hasTextSearch)
        case .not(let item): item.hasTextSearch
        case .always, .never, .comparison: false
        }
    }

    /// The relevance of a row (``SortKey/rank``): the sum of ``TextSearch/rank(_:)`` over
    /// ``rankedSearches``, reading each searched attribute with `value`.
    func rank(_ value: (String) -> AttributeValue?) -> Double {
        rankedSearches.reduce(0) { total, search in
            guard case .string(let text)? = value(search.keyPath) else { return total }
            return total + search.rank(text)
        }
    }
}
