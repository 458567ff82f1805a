import Foundation
import _FoundationICU

/// `MATCHES` through ICU's regular expressions — the engine `NSRegularExpression` runs on — with
/// ICU's step limit (`uregex_setTimeLimit`), so a pattern that backtracks catastrophically on a
/// value (`(a+)+$` on forty `a`s and a `b`) stops with an error instead of holding a core for
/// minutes. Patterns are compiled once and cloned per match (an ICU matcher is not thread-safe).
package final class ICURegex: @unchecked Sendable {
    // Safe to share: `pattern` is only cloned, never matched on, and ICU clones are independent.
    private let pattern: OpaquePointer

    /// The longest pattern accepted, in UTF-16 units.
    static let maxPatternLength = 1024
    /// ICU match-engine steps one value may take (roughly milliseconds of CPU, ICU says).
    static let stepLimit: Int32 = 400

    private static let cache = Locked<[String: ICURegex]>([:])

    private init(pattern: OpaquePointer) { self.pattern = pattern }

    deinit { swift_uregex_close(pattern) }

    /// The compiled `text` (with `[c]`), from the cache; nil when ICU cannot compile it.
    /// - Parameter maxLength: the longest pattern accepted (``maxPatternLength`` for a request's
    ///   own; the server's filter patterns are longer).
    /// - Throws: for a pattern longer than `maxLength`.
    package static func compiled(_ text: String, caseInsensitive: Bool, maxLength: Int = maxPatternLength)
        throws(PredicateError) -> ICURegex?
    {
        let key = (caseInsensitive ? "1:" : "0:") + text
        if let known = cache.withLock({ $0[key] }) { return known }
        let units = Array(text.utf16)
        guard units.count <= maxLength else {
            throw PredicateError(
                "a MATCHES pattern is \(units.count) characters long; at most \(maxLength) are accepted")
        }
        var status = U_ZERO_ERROR
        let flags: UInt32 = caseInsensitive ? UInt32(UREGEX_CASE_INSENSITIVE.rawValue) : 0
        guard let compiled = swift_uregex_open(units, Int32(units.count), flags, nil, &status), status.rawValue <= 0
        else { return nil }
        let regex = ICURegex(pattern: compiled)
        cache.withLock { cache in
            if cache.count > 256 { cache.removeAll() }
            cache[key] = regex
        }
        return regex
    }

    /// Whether all of `text` matches.
    /// - Throws: when the match takes more than ``stepLimit`` steps.
    package func matchesWhole(_ text: String, patternText: String) throws(PredicateError) -> Bool {
        var status = U_ZERO_ERROR
        guard let matcher = swift_uregex_clone(pattern, &status), status.rawValue <= 0 else { return false }
        defer { swift_uregex_close(matcher) }
        swift_uregex_setTimeLimit(matcher, Self.stepLimit, &status)
        let units = Array(text.utf16)
        let matched = units.withUnsafeBufferPointer { buffer -> Bool in
            swift_uregex_setText(matcher, buffer.baseAddress, Int32(buffer.count), &status)
            return swift_uregex_matches(matcher, 0, &status) != 0
        }
        if status == U_REGEX_TIME_OUT || status == U_REGEX_STACK_OVERFLOW {
            var error = PredicateError(
                "MATCHES '\(patternText.prefix(80))' stopped after \(Self.stepLimit) steps on a \(units.count)-character value: the pattern backtracks too much (as (a+)+$ does); simplify it"
            )
            error.isTooExpensive = true
            throw error
        }
        return status.rawValue <= 0 && matched
    }
}
