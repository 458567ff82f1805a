import Foundation
import Testing

@testable import StrataServer

/// The pattern the document gives `If-Match` and `If-None-Match` and the server's reading agree:
/// a header matches exactly when the server reads it (so a schema-driven client never sends a
/// "valid" header that is answered 400, nor an "invalid" one that is taken).
@Suite struct EntityTagPatternTests {
    @Test func theServerReadsExactlyWhatThePatternMatches() throws {
        let regex = try! NSRegularExpression(pattern: OpenAPIBuilder.entityTagsPattern)
        func matches(_ text: String) -> Bool {
            regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
        }
        var samples = [
            "\"3\"", "W/\"3\"", "3", "0", "-4", "+5", "*", " * ", "\"1\", \"2\"", "1,2", ",,3,,", " , 3", "W/3", "\"3",
            "3\"", "\"\"", "", " ", ",", "\"1234567890123456789\"", "123456789012345678", "1234567890123456789", "a",
            "\"3\" \"4\"", "*, \"3\"", "W/ \"3\"", "\t\"7\"\t", "\"+\"", "+",
        ]
        let alphabet = Array(" \t,W/\"+-0123456789*a")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50_000 {
            let length = Int.random(in: 1...12, using: &generator)
            samples.append(String((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        var read = 0
        for text in samples {
            let taken = (try? RESTService.entityTags(text)) != nil || text.trimmingCharacters(in: .whitespaces) == "*"
            #expect(matches(text) == taken, "'\(text)'")
            if taken { read += 1 }
        }
        #expect(try RESTService.entityTags("3") == [3])
        #expect(try RESTService.entityTags("W/\"3\", 4") == [3, 4])
        #expect(read > 100)
    }
}
