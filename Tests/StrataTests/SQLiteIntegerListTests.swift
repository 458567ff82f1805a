import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// The lists of keys a keyed read gets from `group_concat`, parsed without making strings.
@Suite struct SQLiteIntegerListTests {
    /// Column 0 of `SELECT expression`, parsed.
    func parse(_ expression: String) throws -> [Int64]? {
        let folder = TemporaryDirectory()
        let db = try SQLiteConnection(path: folder.url.appendingPathComponent("list.sqlite").path, readOnly: false)
        let statement = try db.statement("SELECT \(expression)")
        defer { statement.reset() }
        #expect(try statement.step())
        return statement.integerList(0)
    }

    @Test func listsOfIntegers() throws {
        #expect(try parse("NULL") == [])
        #expect(try parse("'7'") == [7])
        #expect(try parse("'4,-2,17'") == [4, -2, 17])
        #expect(try parse("'9223372036854775807,-9223372036854775807'") == [Int64.max, -Int64.max])
        #expect(
            try parse("(SELECT group_concat(x || ',' || y) FROM (SELECT 5 AS x, 1 AS y UNION ALL SELECT 3, 0))")
                .map { Set($0) } == [5, 1, 3, 0])
    }

    @Test func anythingElseIsRefused() throws {
        #expect(try parse("''") == [])
        for text in ["'1,,2'", "'1,'", "',1'", "'1.5'", "'1 ,2'", "'--1'", "'1-2'", "'99999999999999999999'", "'x'"] {
            #expect(try parse(text) == nil, "\(text)")
        }
    }
}
