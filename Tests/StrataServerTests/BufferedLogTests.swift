import Foundation
import StrataHTTP
import StrataTestSupport
import Testing

@testable import StrataServer

/// The default log: lines written by a thread of their own, in order, none lost without a word.
@Suite struct BufferedLogTests {
    /// A new file in `folder`, open for writing, and its path.
    static func file(in folder: TemporaryDirectory) -> (Int32, String) {
        let path = folder.file("log").path
        return (open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644), path)
    }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    @Test func linesArriveInOrderAndFlushWritesThemAll() throws {
        let folder = TemporaryDirectory()
        let (descriptor, path) = Self.file(in: folder)
        defer { close(descriptor) }
        let log = BufferedLog(descriptor: descriptor)
        let written = (0..<5_000).map { "line \($0) ünïcödé" }
        onThreads(1) { _ in for line in written { log.write(line) } }
        log.flush()
        #expect(try Self.lines(path) == written)
        // Written by the thread too, without a flush, within its interval.
        log.write("later")
        #expect(try eventually { try Self.lines(path).last == "later" })
        log.close()
    }

    @Test func linesPastTheLimitAreCountedAndSaidToBeDropped() throws {
        let folder = TemporaryDirectory()
        let (descriptor, path) = Self.file(in: folder)
        defer { close(descriptor) }
        // Room for about ten lines at a time: a burst of 2,000 cannot all be kept.
        let log = BufferedLog(descriptor: descriptor, limit: 100)
        for index in 0..<2_000 { log.write("line \(index)") }
        log.close()
        let lines = try Self.lines(path)
        let kept = lines.filter { $0.hasPrefix("line ") }
        let notes = lines.filter { $0.hasPrefix("strata: the log could not keep up:") }
        let dropped = notes.compactMap { Int($0.split(separator: " ")[7]) }.reduce(0, +)
        #expect(!notes.isEmpty)
        #expect(kept.count + dropped == 2_000, "\(kept.count) kept, \(dropped) dropped")
        // What was kept is in order.
        let numbers = kept.compactMap { Int($0.dropFirst(5)) }
        #expect(numbers == numbers.sorted())
    }

    @Test func accessLinesReadAsDocumented() {
        var request = HTTPRequest(
            method: "GET", path: "/books", query: [("limit", "2"), ("title", "a b")], remoteAddress: "10.0.0.7")
        let response = HTTPResponse(status: 200, body: Array("[1]".utf8))
        #expect(
            StrataServerInstance.accessLine(request, response, 1.5, format: "text")
                == #"10.0.0.7 "GET /books?limit=2&title=a b" 200 3 1.5ms"#)
        request.attributes["token"] = "reader"
        request.query = []
        #expect(
            StrataServerInstance.accessLine(request, response, 0.0004, format: "text")
                == #"10.0.0.7 "GET /books" 200 3 0.0ms token=reader"#)
    }

    /// The access line's duration, written by hand, reads as the rounded `Double` did.
    @Test func durationsReadAsTheRoundedDoubleDid() {
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [0, 0.0004, 0.0005, 0.001, 0.01, 0.1, 0.25, 1, 3, 12.125, 999.9996, 1_234_567.891]
        for _ in 0..<20_000 { values.append(Double.random(in: 0..<(Bool.random(using: &generator) ? 2 : 5_000))) }
        for value in values {
            #expect(
                StrataServerInstance.millisecondsText(value) == "\((value * 1000).rounded() / 1000)",
                "\(value)")
        }
    }
}
