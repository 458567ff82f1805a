import Foundation
import Strata
import Testing

@testable import StrataServer

/// The `after` cursor's served pattern and the server agree: every string the pattern matches is a
/// cursor the server takes, and every other string is refused (so a client generator or a
/// schema-driven tester never sends a "valid" cursor that is answered 400).
@Suite struct CursorTests {
    static let pattern = try! NSRegularExpression(pattern: ListQuery.cursorPattern)

    static func matches(_ text: String) -> Bool {
        pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    @Test func everyIssuedCursorMatchesAndDecodes() {
        var offsets = Array(0...2_000) + [9_999, 65_536, 1_000_000, 123_456_789, 9_999_999_999_999_999]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 { offsets.append(Int.random(in: 0...9_999_999_999_999_999, using: &generator)) }
        for offset in offsets {
            let cursor = ListQuery.cursor(offset)
            #expect(Self.matches(cursor), "\(offset) → \(cursor)")
            #expect(ListQuery.decodeCursor(cursor) == offset)
        }
    }

    @Test func theServerTakesExactlyWhatThePatternMatches() {
        // Random strings over base64url and a few other characters, most starting like a cursor.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=")
        var generator = SystemRandomNumberGenerator()
        var matched = 0
        for index in 0..<50_000 {
            let length = Int.random(in: 0...24, using: &generator)
            let tail = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            // Every other string is a cursor's first characters and random ones, else all random.
            let text = index % 2 == 0 ? "bz" + tail : tail
            let decoded = ListQuery.decodeCursor(text)
            #expect(Self.matches(text) == (decoded != nil), "'\(text)'")
            if decoded != nil { matched += 1 }
        }
        // Cursors with leading zeros are cursors too, and nothing of 17 digits or more is.
        #expect(ListQuery.decodeCursor("bzAwNw") == 7)
        #expect(ListQuery.decodeCursor("bzEyMzQ1Njc4OTAxMjM0NTY3") == nil)
        #expect(!Self.matches("bzEyMzQ1Njc4OTAxMjM0NTY3"))
        #expect(ListQuery.decodeCursor("0") == nil && !Self.matches("0"))
        #expect(matched > 0)
        // Keyset cursors: a cursor, `.` and an anchor in base64url (what it decodes to is checked
        // against the order when used, and a misfit pages by position: never a 400).
        var keysets = 0
        for index in 0..<20_000 {
            let length = index == 0 ? ListQuery.maxAnchorText + 1 : Int.random(in: 0...24, using: &generator)
            let tail = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            let text = ListQuery.cursor(Int.random(in: 0...99_999, using: &generator)) + "." + tail
            let decoded = ListQuery.decodeCursor(text)
            #expect(Self.matches(text) == (decoded != nil), "'\(text)'")
            if decoded != nil { keysets += 1 }
        }
        #expect(keysets > 0)
        let issued = ListQuery.cursor(40, anchor: [.integer(1999), .string("Dune"), .null, .integer(17)])
        #expect(Self.matches(issued) && ListQuery.decodeCursor(issued) == 40)
        #expect(
            ListQuery.decodeAnchor(String(issued.split(separator: ".")[1])) == [
                .integer(1999), .string("Dune"), .null, .integer(17),
            ])
        // An anchor too long for a cursor is left out: the page after it is found by position.
        #expect(ListQuery.cursor(40, anchor: [.string(String(repeating: "x", count: 2_000))]) == ListQuery.cursor(40))
    }

    /// `after` and `offset` together: `offset` skips that many more items past the cursor, so any
    /// two values the document calls valid make a page (a sum past every item is an empty page).
    @Test func afterAndOffsetTogetherSkipPastTheCursor() throws {
        let model = try ObjectModel.example
        func offset(_ query: [(name: String, value: String)]) throws -> Int {
            try ListQuery(query, entity: "Book", model: model, objectID: { _, _ in nil }).offset
        }
        #expect(try offset([("after", ListQuery.cursor(40))]) == 40)
        #expect(try offset([("offset", "7")]) == 7)
        #expect(try offset([("after", ListQuery.cursor(40)), ("offset", "7")]) == 47)
        #expect(try offset([("offset", "7"), ("after", ListQuery.cursor(40))]) == 47)
        #expect(try offset([("after", ListQuery.cursor(9_999_999_999_999_999)), ("offset", "\(Int.max)")]) == Int.max)
    }
}
