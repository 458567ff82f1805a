import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// A small deterministic generator (SplitMix64), so randomized tests reproduce from their seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct PredicateParserTests {
    func parse(_ format: String, _ arguments: [PredicateArgument] = []) throws -> FetchPredicate {
        try FetchPredicate(format: format, arguments: arguments)
    }

    func comparison(_ format: String, _ arguments: [PredicateArgument] = []) throws -> Comparison {
        guard case .comparison(let comparison) = try parse(format, arguments) else {
            Issue.record("'\(format)' is not a single comparison")
            return Comparison(.constant(.null), .equal, .constant(.null))
        }
        return comparison
    }

    /// The error a format string fails with, or nil when it parses.
    func failure(_ format: String, _ arguments: [PredicateArgument] = []) -> Strata.PredicateError? {
        do {
            _ = try FetchPredicate(format: format, arguments: arguments)
            return nil
        } catch {
            return error
        }
    }

    @Test func everyComparisonOperator() throws {
        let cases: [(String, ComparisonOperator)] = [
            ("==", .equal), ("=", .equal), ("!=", .notEqual), ("<>", .notEqual), ("<", .less), ("<=", .lessOrEqual),
            ("=<", .lessOrEqual), (">", .greater), (">=", .greaterOrEqual), ("=>", .greaterOrEqual),
            ("BEGINSWITH", .beginsWith), ("endsWith", .endsWith), ("contains", .contains), ("LIKE", .like),
            ("Matches", .matches),
        ]
        for (text, op) in cases {
            #expect(
                try parse("year \(text) 5") == .comparison(Comparison(.keyPath("year"), op, .constant(.integer(5)))),
                "operator \(text)")
            // Without spaces, too.
            #expect(try comparison("year\(text.first!.isLetter ? " \(text) " : text)5").op == op)
        }
        #expect(
            try parse("year IN {1, 2}")
                == .comparison(
                    Comparison(.keyPath("year"), .in, .list([.constant(.integer(1)), .constant(.integer(2))]))))
        #expect(
            try parse("year between {1, 2}")
                == .comparison(
                    Comparison(.keyPath("year"), .between, .list([.constant(.integer(1)), .constant(.integer(2))]))))
        #expect(try comparison("year in {}").rhs == .list([]))
    }

    @Test func comparisonOptions() throws {
        #expect(try comparison("title ==[c] 'a'").options == .caseInsensitive)
        #expect(try comparison("title BEGINSWITH[d] 'a'").options == .diacriticInsensitive)
        #expect(try comparison("title CONTAINS[cd] 'a'").options == [.caseInsensitive, .diacriticInsensitive])
        #expect(try comparison("title LIKE [DC] 'a'").options == [.caseInsensitive, .diacriticInsensitive])
        #expect(try comparison("title IN[c] {'a'}").options == .caseInsensitive)
        #expect(try comparison("title == 'a'").options == [])
    }

    @Test func modifiers() throws {
        #expect(try comparison("ANY tags.name == 'sf'").modifier == .any)
        #expect(try comparison("some tags.name == 'sf'").modifier == .any)
        #expect(try comparison("ALL tags.name == 'sf'").modifier == .all)
        #expect(try comparison("NONE tags.name == 'sf'").modifier == .none)
        #expect(try comparison("tags.name == 'sf'").modifier == .direct)
        #expect(try comparison("ANY %K == 1", [.keyPath("tags.@count")]).lhs == .keyPath("tags.@count"))
    }

    @Test func literalsOfEveryKind() throws {
        func rhs(_ literal: String) throws -> PredicateTerm { try comparison("x == \(literal)").rhs }
        #expect(try rhs("'single'") == .constant(.string("single")))
        #expect(try rhs("\"double\"") == .constant(.string("double")))
        #expect(try rhs(#"'it\'s \"q\" \\ \n\t\r\0 \u00e9'"#) == .constant(.string("it's \"q\" \\ \n\t\r\0 é")))
        #expect(try rhs("'Zoë 🚀 e\u{301}'") == .constant(.string("Zoë 🚀 e\u{301}")))
        #expect(try rhs("''") == .constant(.string("")))
        #expect(try rhs("42") == .constant(.integer(42)))
        #expect(try rhs("-42") == .constant(.integer(-42)))
        #expect(try rhs("+7") == .constant(.integer(7)))
        #expect(try rhs("0x1F") == .constant(.integer(31)))
        #expect(try rhs("-9223372036854775808") == .constant(.integer(Int64.min)))
        #expect(try rhs("9223372036854775807") == .constant(.integer(Int64.max)))
        #expect(try rhs("4.5") == .constant(.double(4.5)))
        #expect(try rhs("-0.25") == .constant(.double(-0.25)))
        #expect(try rhs(".5") == .constant(.double(0.5)))
        #expect(try rhs("1e3") == .constant(.double(1000)))
        #expect(try rhs("2.5E-2") == .constant(.double(0.025)))
        for word in ["true", "TRUE", "yes", "YES"] { #expect(try rhs(word) == .constant(.boolean(true))) }
        for word in ["false", "False", "no", "NO"] { #expect(try rhs(word) == .constant(.boolean(false))) }
        for word in ["nil", "NIL", "null", "NULL"] { #expect(try rhs(word) == .constant(.null)) }
        #expect(try rhs("$LIMIT") == .variable("LIMIT"))
        #expect(try rhs("$FETCH_SOURCE.title") == .variable("FETCH_SOURCE.title"))
        #expect(try rhs("author.name") == .keyPath("author.name"))
        #expect(try rhs("tags.@count") == .keyPath("tags.@count"))
        #expect(try rhs("SELF") == .keyPath("SELF"))
        #expect(try rhs("self.title") == .keyPath("SELF.title"))
        #expect(try rhs("#in") == .keyPath("in"))
        #expect(try rhs("a.#like") == .keyPath("a.like"))
        #expect(
            try comparison("x IN {1, 'a', nil, {2}}").rhs
                == .list([
                    .constant(.integer(1)), .constant(.string("a")), .constant(.null), .list([.constant(.integer(2))]),
                ]))
    }

    @Test func argumentsOfEveryKind() throws {
        let id = ObjectID(store: "s", entity: "Author", primaryKey: 3)
        #expect(try comparison("title == %@", ["Dune"]).rhs == .constant(.string("Dune")))
        #expect(try comparison("year == %@", [1965]).rhs == .constant(.integer(1965)))
        #expect(try comparison("rating == %@", [4.5]).rhs == .constant(.double(4.5)))
        #expect(try comparison("available == %@", [true]).rhs == .constant(.boolean(true)))
        #expect(try comparison("title == %@", [nil]).rhs == .constant(.null))
        #expect(try comparison("author == %@", [.object(id)]).rhs == .object(id))
        #expect(try comparison("author == %@", [.object(nil)]).rhs == .object(nil))
        #expect(try comparison("year IN %@", [[1, 2]]).rhs == .list([.constant(.integer(1)), .constant(.integer(2))]))
        #expect(try comparison("year BETWEEN %@", [.list([1, 2])]).op == .between)
        #expect(try comparison("%K == 1", [.keyPath("author.name")]).lhs == .keyPath("author.name"))
        #expect(try comparison("%K == 1", ["title"]).lhs == .keyPath("title"))
        for placeholder in ["%d", "%i", "%ld", "%lld", "%u"] {
            #expect(try comparison("year == \(placeholder)", [7]).rhs == .constant(.integer(7)))
        }
        #expect(try comparison("rating == %f", [2]).rhs == .constant(.double(2)))
        #expect(try comparison("rating == %lf", [2.5]).rhs == .constant(.double(2.5)))
        let date = Date(timeIntervalSince1970: 1_000_000)
        #expect(try comparison("published < %@", [.value(.date(date))]).rhs == .constant(.date(date)))
        // The variadic form.
        #expect(
            try FetchPredicate(format: "title == %@ AND year > %d", "Dune", 1960)
                == parse("title == 'Dune' AND year > 1960"))
        // Several placeholders take arguments in order.
        #expect(
            try parse("%K BETWEEN {%d, %d}", ["year", 1, 2])
                == .comparison(
                    Comparison(.keyPath("year"), .between, .list([.constant(.integer(1)), .constant(.integer(2))]))))
    }

    @Test func precedenceAndGrouping() throws {
        let a = FetchPredicate.equal("a", .integer(1))
        let b = FetchPredicate.equal("b", .integer(2))
        let c = FetchPredicate.equal("c", .integer(3))
        #expect(try parse("a == 1 OR b == 2 AND c == 3") == .or([a, .and([b, c])]))
        #expect(try parse("a == 1 AND b == 2 OR c == 3") == .or([.and([a, b]), c]))
        #expect(try parse("(a == 1 OR b == 2) AND c == 3") == .and([.or([a, b]), c]))
        #expect(try parse("NOT a == 1 AND b == 2") == .and([.not(a), b]))
        #expect(try parse("NOT (a == 1 AND b == 2)") == .not(.and([a, b])))
        #expect(try parse("!a == 1 && b == 2 || c == 3") == .or([.and([.not(a), b]), c]))
        #expect(try parse("not not a == 1") == .not(.not(a)))
        #expect(try parse("a == 1 and b == 2 and c == 3") == .and([a, b, c]))
        #expect(try parse("a == 1 or b == 2 or c == 3") == .or([a, b, c]))
        #expect(try parse("((a == 1))") == a)
        #expect(try parse("TRUEPREDICATE") == .always)
        #expect(try parse("falsepredicate OR TRUEPREDICATE") == .or([.never, .always]))
        #expect(try parse("  a\n==\t1  ") == a)
    }

    @Test func variablesAreSubstituted() throws {
        let predicate = try parse("query CONTAINS[c] $FETCH_SOURCE.title AND at > $SINCE")
        #expect(predicate.variableNames == ["FETCH_SOURCE.title", "SINCE"])
        let bound = try predicate.substituting(["FETCH_SOURCE.title": "Dune", "SINCE": 5])
        #expect(bound == (try parse("query CONTAINS[c] 'Dune' AND at > 5")))
        // A bare name bound to a key path extends it.
        #expect(
            try parse("x == $SOURCE.name").substituting(["SOURCE": .keyPath("author")])
                == parse("x == author.name"))
        #expect(try parse("x IN $LIST").substituting(["LIST": [1, 2]]) == parse("x IN {1, 2}"))
        // The PredicateTerm form still works.
        #expect(try parse("x == $V").substituting(["V": PredicateTerm.constant(.integer(1))]) == parse("x == 1"))
        #expect(throws: Strata.PredicateError.self) { try parse("x == $MISSING").substituting([:]) }
        #expect(throws: Strata.PredicateError.self) { try parse("x == $S.title").substituting(["S": "value"]) }
        // A predicate with variables left cannot be evaluated or bound.
        #expect(throws: Strata.PredicateError.self) { try parse("x == $V").evaluate { _ in .value(.null) } }
        #expect(throws: Strata.PredicateError.self) { try parse("title == $V").bound(to: "Book", in: conformanceModel) }
    }

    @Test func malformedStringsGiveClearErrors() throws {
        // (format, arguments, offset, words the message must contain)
        let cases: [(String, [PredicateArgument], Int, String)] = [
            ("", [], 0, "expected a key path"),
            ("title ==", [], 8, "found the end"),
            ("title 'Dune'", [], 6, "comparison operator"),
            ("title == 'Dune", [], 9, "unterminated string"),
            ("(title == 'a'", [], 13, "')' to close the '(' at offset 0"),
            ("title == 'a')", [], 12, "AND, OR or the end"),
            ("title == 'a' AND", [], 16, "expected a key path"),
            ("title ==[x] 'a'", [], 9, "unknown comparison option 'x'"),
            ("title ==[c 'a'", [], 8, "expected ']'"),
            ("year IN 5", [], 8, "a list such as {1, 2}"),
            ("year BETWEEN {1}", [], 13, "a list of two bounds"),
            ("year == {1, 2}", [], 8, "only allowed on the right of IN or BETWEEN"),
            ("year == 1 2", [], 10, "AND, OR or the end"),
            ("title == %@", [], 9, "missing argument 1"),
            ("title == %@", ["a", "b"], 11, "1 placeholder(s) but 2 argument(s)"),
            ("%K == 1", ["x'); DROP TABLE Book; --"], 0, "not a key path"),
            ("year == %d", ["seven"], 8, "must be an integer"),
            ("title == %s", [], 9, "unknown placeholder"),
            ("year == 99999999999999999999", [], 8, "out of range"),
            ("year == 12abc", [], 10, "after a number"),
            ("title == 'a\\qb'", [], 11, "unknown escape"),
            ("title == '\\u12'", [], 10, "four hexadecimal digits"),
            ("ANY == 1", [], 4, "a key path after ANY"),
            ("author. == 1", [], 7, "a key after '.'"),
            ("@count == 1", [], 0, "'@' can only follow"),
            ("title & 'a'", [], 6, "'&&'"),
            ("title == ^", [], 9, "unexpected character '^'"),
            ("SUBQUERY(tags, $t, $t.name == 'a').@count > 0", [], 0, "not supported"),
            ("$ == 1", [], 1, "variable name"),
            ("ÿéé == ]", [], 7, "unexpected character ']'"),
            ("year == 1 AND title ==", [], 22, "found the end"),
        ]
        for (format, arguments, offset, words) in cases {
            guard let error = failure(format, arguments) else {
                Issue.record("'\(format)' parsed")
                continue
            }
            #expect(error.offset == offset, "'\(format)': \(error.message)")
            #expect(error.message.contains(words), "'\(format)': \(error.message)")
            #expect(error.message.contains("offset \(offset)"), "'\(format)': \(error.message)")
        }
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        for (opener, tail) in [("(", "a == 1"), ("NOT ", "a == 1"), ("!", "a == 1"), ("{", "1")] {
            let format = (opener == "{" ? "x IN " : "") + String(repeating: opener, count: 100_000) + tail
            let error = failure(format)
            #expect(error?.message.contains("nests more than") == true, "\(opener)")
        }
        // Moderate nesting is fine.
        #expect(failure(String(repeating: "(", count: 50) + "a == 1" + String(repeating: ")", count: 50)) == nil)
    }

    @Test func randomStringsNeverCrash() {
        var random = SplitMix64(seed: 0x5EED_0001)
        let pieces = [
            "title", "author.name", "tags.@count", "ANY", "ALL", "NONE", "SOME", "NOT", "AND", "OR", "&&", "||", "!",
            "==", "=", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE",
            "MATCHES", "IN", "BETWEEN", "[c]", "[cd]", "[", "]", "(", ")", "{", "}", ",", "'a'", "\"b\"", "'", "\"",
            "\\", "1", "-2", "3.5", "1e", "0x", "%@", "%K", "%d", "%", "$X", "$X.y", "$", "#", "@", ".", "nil",
            "TRUE", "NO", "TRUEPREDICATE", "FALSEPREDICATE", "SELF", " ", "\n", "é", "e\u{301}", "🚀", "\u{0}",
            "\u{FFFF}",
        ]
        let arguments: [[PredicateArgument]] = [[], ["a"], [1, "title"], [[1, 2]], [.keyPath("x.y")], [.object(nil)]]
        var parsed = 0
        for round in 0..<3000 {
            var format = ""
            var given = arguments[round % arguments.count]
            if round % 3 == 0 {
                // Mostly well-formed: comparisons joined by connectives, with a little noise.
                given = []
                let paths = ["title", "author.name", "tags.@count", "ANY tags.name", "SELF", "$V"]
                let ops = ["==", "!=", "<", ">=", "BEGINSWITH[c]", "LIKE", "CONTAINS[cd]", "IN", "BETWEEN"]
                let values = ["'a'", "1", "-2.5", "nil", "TRUE", "{1, 2}", "{'x', 'y'}", "$W"]
                for index in 0..<Int(1 + random.next() % 3) {
                    if index > 0 { format += [" AND ", " OR ", " && ", " || "][Int(random.next() % 4)] }
                    if random.next() % 5 == 0 { format += "NOT " }
                    format += paths[Int(random.next() % UInt64(paths.count))] + " "
                    format += ops[Int(random.next() % UInt64(ops.count))] + " "
                    format += values[Int(random.next() % UInt64(values.count))]
                }
                if random.next() % 4 == 0 {
                    format.insert(pieces[Int(random.next() % UInt64(pieces.count))].first ?? " ", at: format.startIndex)
                }
            }
            let count = round % 3 == 0 ? 0 : Int(random.next() % 12)
            for _ in 0..<count {
                if random.next() % 4 == 0 {
                    format.unicodeScalars.append(Unicode.Scalar(UInt8(random.next() % 128)))
                } else {
                    format += pieces[Int(random.next() % UInt64(pieces.count))]
                    if random.next() % 2 == 0 { format += " " }
                }
            }
            do {
                let predicate = try FetchPredicate(format: format, arguments: given)
                parsed += 1
                // Whatever parses can be printed, and binding or evaluating it fails cleanly at worst.
                _ = predicate.predicateFormat
                _ = try? predicate.bound(to: "Book", in: conformanceModel)
                _ = try? predicate.evaluate { _ in .value(.null) }
            } catch {
                let length = format.count
                #expect(error.offset.map { (0...length).contains($0) } == true, "'\(format)': \(error.message)")
                #expect(!error.message.isEmpty)
            }
        }
        // Some of the noise must be valid, or the loop tests only the first error path.
        #expect(parsed > 300, "only \(parsed) random strings parsed")
    }

    @Test func mutatedValidStringsNeverCrash() {
        var random = SplitMix64(seed: 7)
        let valid = [
            "ANY tags.name BEGINSWITH[cd] 'sf' AND (year BETWEEN {1960, 1970} OR NOT author.name == nil)",
            "title IN %@ || tags.@count > %d && $X.y == \"q\\\"\"", "SELF == %@ AND #in =< -0x1F",
        ]
        for _ in 0..<3000 {
            var scalars = Array(valid[Int(random.next() % UInt64(valid.count))].unicodeScalars)
            for _ in 0..<Int(1 + random.next() % 3) {
                let index = Int(random.next() % UInt64(scalars.count))
                switch random.next() % 3 {
                case 0: scalars.remove(at: index)
                case 1: scalars.insert(scalars[Int(random.next() % UInt64(scalars.count))], at: index)
                default: scalars[index] = Unicode.Scalar(UInt8(32 + random.next() % 95))
                }
            }
            let format = String(String.UnicodeScalarView(scalars))
            do {
                _ = try FetchPredicate(format: format, arguments: [["a"], 2, .object(nil)]).predicateFormat
            } catch {
                #expect(error.offset.map { (0...format.count).contains($0) } == true, "'\(format)': \(error.message)")
            }
        }
    }

    /// A random predicate made of terms the format language can write.
    static func randomPredicate(_ random: inout SplitMix64, depth: Int = 0) -> FetchPredicate {
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        let roll = random.next() % 10
        if depth < 3 && roll < 3 {
            let items = (0..<Int(2 + random.next() % 2)).map { _ in randomPredicate(&random, depth: depth + 1) }
            return roll == 0 ? .and(items) : roll == 1 ? .or(items) : .not(items[0])
        }
        if roll == 3 { return pick([.always, .never]) }
        let constants: [PredicateTerm] = [
            .constant(.string(pick(["", "Dune", "it's \"q\"", "a\\b", "e\u{301}🚀", "tab\there", "nul\0"]))),
            .constant(.integer(pick([0, -1, 42, Int64.min, Int64.max]))),
            .constant(.double(pick([0.5, -2.25, 1e-5, 1e20, 3.0]))),
            .constant(.boolean(random.next() % 2 == 0)), .constant(.null),
            .variable(pick(["X", "FETCH_SOURCE.title"])),
        ]
        let paths = ["title", "author.name", "tags.@count", "SELF", "in", "a.like", "_x9"]
        let op = pick(ComparisonOperator.allCases)
        let lhs = PredicateTerm.keyPath(pick(paths))
        let rhs: PredicateTerm
        switch op {
        case .in: rhs = .list((0..<Int(random.next() % 3)).map { _ in pick(constants) })
        case .between: rhs = .list([pick(constants), pick(constants)])
        default: rhs = random.next() % 4 == 0 ? .keyPath(pick(paths)) : pick(constants)
        }
        let options = ComparisonOptions(rawValue: Int(random.next() % 4))
        return .comparison(Comparison(lhs, op, rhs, options: options, modifier: pick(ComparisonModifier.allCases)))
    }

    @Test func printedPredicatesParseBack() throws {
        var random = SplitMix64(seed: 42)
        for _ in 0..<1000 {
            let predicate = Self.randomPredicate(&random)
            let text = predicate.predicateFormat
            let parsed = try FetchPredicate(format: text)
            #expect(parsed == predicate, "\(text)")
        }
    }
}
