import Foundation
import Strata
import StrataHTTP
import StrataServer
import StrataTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What an attacker can send: each limit answered with a problem, and no request that holds a
/// core while others wait.
@Suite struct HostileInputTests {
    static func query(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    @Test func aCatastrophicRegularExpressionIsStoppedWhileTheServerGoesOn() throws {
        let fixture = try ServerFixture()
        for length in [36, 38, 40] {
            let name = String(repeating: "a", count: length) + "!"
            #expect(try fixture.client.send("POST", "/tags", json: #"{"name": "\#(name)"}"#).status == 201)
        }
        // Unchecked, 2.2 s of CPU for these three, doubling with every two more characters: the
        // matcher's step limit stops it, whatever the machine's speed.
        let answered = Locked<(Int, String)?>(nil)
        let worker = Thread {
            let response = try? fixture.client.send("GET", "/tags?where=" + Self.query("name MATCHES '(a+)+$'"))
            answered.withLock { $0 = (response?.status ?? 0, response?.text ?? "") }
        }
        worker.start()
        // The server answers meanwhile.
        #expect(try fixture.client.send("GET", "/live").status == 200)
        try waitUntil { answered.current != nil }
        let (status, body) = try #require(answered.current)
        #expect(status == 422, "\(body)")
        #expect(body.contains("backtracks too much"), "\(body)")
        // A pattern that behaves still works.
        let fine = try fixture.client.send("GET", "/tags?where=" + Self.query("name MATCHES 'a{36}!'"))
        #expect(fine.json.objectValue?["items"]?.arrayValue?.count == 1)
    }

    /// libmicrohttpd splits a query into its per-connection memory: past what that holds, a
    /// request got no answer at all until the idle timeout. Every request within the limits is
    /// answered, and one with more parameters than the server takes is a 414 problem at once, on
    /// a connection that goes on serving.
    @Test func manyQueryParametersAreAnsweredAtOnce() throws {
        let fixture = try ServerFixture()
        let limit = HTTPServerConfiguration.defaultMaxQueryParameters
        let connection = try TestConnection(port: fixture.server.port, receiveTimeout: 10)
        for query in [
            (0..<950).map { "a\($0)=1" }, Array(repeating: "year=gte.1", count: 1000),
            (0..<(limit + 1)).map { "a\($0)=1" },
        ] {
            let response = try connection.request("GET", "/books?" + query.joined(separator: "&"))
            #expect(response.status == 414, "\(query.count) parameters: \(response.text)")
            #expect(response.text.contains("more than \(limit) parameters"))
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        // At the limit, with a target and headers near theirs, the request is the service's.
        let long = String(repeating: "v", count: 118)
        let atLimit = (0..<limit).map { "a\($0)=\(long)" }.joined(separator: "&")
        var headers: [String: String] = [:]
        for index in 0..<200 { headers["X-Filler-\(index)"] = String(repeating: "b", count: 50) }
        let answered = try connection.request("GET", "/books?" + atLimit, headers: headers)
        #expect(answered.status == 400, "\(answered.text)")
        #expect(answered.text.contains("unknown filter"))
        // Filters have a limit of their own, which the service states.
        let filters = Array(repeating: "year=gte.1", count: limit).joined(separator: "&")
        let refused = try connection.request("GET", "/books?" + filters)
        #expect(refused.status == 400 && refused.text.contains("at most 64"), "\(refused.text)")
        let repeated = Array(repeating: "year=gte.1", count: 64).joined(separator: "&")
        #expect(try connection.request("GET", "/books?" + repeated).status == 200)
    }

    @Test func aQueryPastItsBudgetIsStoppedInTheStoreAndAnswered503() throws {
        let fixture = try ServerFixture { $0.queryBudget = 0.2 }
        // Many values each just under the per-value step limit: together far over the budget.
        var tags: [String] = []
        for index in 0..<400 { tags.append(#"{"name": "\#(String(repeating: "a", count: 17))\#(index)"}"#) }
        #expect(
            try fixture.client.send("POST", "/tags/_bulk", json: "[" + tags.joined(separator: ",") + "]").status == 201)
        let response = try fixture.client.send("GET", "/tags?where=" + Self.query("name MATCHES '(a+)+$'"))
        #expect(response.status == 503, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(response.header("Retry-After") == "1")
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(String(decoding: response.body, as: UTF8.self).contains("time budget of 0.2 s"))
        #expect(try fixture.client.send("GET", "/tags?limit=1").status == 200)
    }

    @Test func everyLimitIsAProblemWithTheRightStatus() throws {
        let fixture = try ServerFixture()
        let client = fixture.client
        func expectProblem(_ response: ClientResponse, _ status: Int, _ text: String) {
            #expect(response.status == status, "\(String(decoding: response.body, as: UTF8.self))")
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(String(decoding: response.body, as: UTF8.self).contains(text))
        }
        // 5,000 sort keys: 400 (it was a 500 from SQLite's "too many terms in ORDER BY").
        let keys = Array(repeating: "_id", count: 5000).joined(separator: ",")
        expectProblem(try client.send("GET", "/books?order=\(keys)"), 400, "at most 32 are accepted")
        // The request target and the headers: 414 and 431 as problems, not libmicrohttpd's page.
        expectProblem(
            try client.send("GET", "/books?title=eq." + String(repeating: "x", count: 40_000)), 414,
            "longer than 32768 bytes")
        expectProblem(
            try client.send("GET", "/books", headers: ["X-Padding": String(repeating: "y", count: 20_000)]), 431,
            "larger than 16384 bytes")
        // Just under both limits at once is a request like any other: libmicrohttpd's per-connection
        // memory (the target, the headers and 16 KiB) holds it.
        let longest = try client.send(
            "GET", "/books?title=eq." + String(repeating: "x", count: 32_700),
            headers: ["X-Padding": String(repeating: "y", count: 16_200)])
        #expect(longest.status == 200, "\(String(decoding: longest.body, as: UTF8.self).prefix(200))")
        // where=: length and nesting; filters; limit.
        expectProblem(
            try client.send(
                "GET", "/books?where=" + Self.query(String(repeating: "year == 1 OR ", count: 400) + "year == 2")),
            400, "at most 4096")
        expectProblem(
            try client.send(
                "GET",
                "/books?where="
                    + Self.query(String(repeating: "(", count: 150) + "year == 1" + String(repeating: ")", count: 150))),
            400, "nests more than 100 levels")
        let filters = (0..<70).map { "year=neq.\($0)" }.joined(separator: "&")
        expectProblem(try client.send("GET", "/books?\(filters)"), 400, "at most 64 are accepted")
        expectProblem(try client.send("GET", "/books?limit=100000"), 400, "limit must be an integer from 1 to 1000")
        // A body over the limit: 413 before it is read.
        expectProblem(
            try client.send("POST", "/authors", body: Array(repeating: UInt8(ascii: " "), count: 2 << 20)), 413,
            "larger than")
        #expect(try client.send("GET", "/live").status == 200)
    }
}

/// `--rate-limit`: a bucket per token, else per address.
@Suite struct RateLimitTests {
    @Test func aClientOverItsRateGets429WithRetryAfterAndOthersGoOn() throws {
        let fixture = try ServerFixture {
            $0.rateLimit = 2
            $0.rateBurst = 5
            $0.tokens = ["one:read:first-token-0123456789", "two:read:second-token-0123456789"]
        }
        let one = ["Authorization": "Bearer first-token-0123456789"]
        var statuses: [Int] = []
        for _ in 0..<7 { statuses.append(try fixture.client.send("GET", "/books", headers: one).status) }
        #expect(statuses.prefix(5).allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(statuses.suffix(2).allSatisfy { $0 == 429 }, "\(statuses)")
        let limited = try fixture.client.send("GET", "/books", headers: one)
        #expect(limited.status == 429)
        #expect(limited.header("Retry-After") == "1")
        #expect(limited.header("Content-Type") == "application/problem+json")
        #expect(String(decoding: limited.body, as: UTF8.self).contains("token one"))
        // Another token has its own bucket; health checks are never counted.
        #expect(
            try fixture.client.send("GET", "/books", headers: ["Authorization": "Bearer second-token-0123456789"])
                .status == 200)
        for _ in 0..<10 { #expect(try fixture.client.send("GET", "/live").status == 200) }
        // The bucket refills at the rate: a request of the token is answered again.
        #expect(
            try eventually(within: 30, interval: 0.05) {
                try fixture.client.send("GET", "/books", headers: one).status == 200
            })
    }
}

/// Every request-shape limit is the server's to set (`--limit NAME=N`), and the served document
/// states the ones a schema can.
@Suite struct ConfiguredLimitTests {
    @Test func eachLimitCanBeSetAndIsAnsweredWithAProblem() throws {
        var limits = RequestLimits()
        for setting in [
            "page-size=5", "order-keys=2", "filters=2", "where-length=20", "batch=2", "json-depth=4",
            "json-elements=20",
        ] {
            try limits.set(setting)
        }
        #expect(throws: ServeError.self) { try limits.set("page-size=0") }
        #expect(throws: ServeError.self) { try limits.set("pages=5") }
        let fixture = try ServerFixture { $0.limits = limits }
        let client = fixture.client
        func expectProblem(_ response: ClientResponse, _ text: String) {
            #expect(response.status == 400, "\(text): \(response.text)")
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.text.contains(text), "\(response.text)")
        }
        #expect(try client.send("GET", "/books?limit=5").status == 200)
        expectProblem(try client.send("GET", "/books?limit=6"), "from 1 to 5")
        #expect(try client.send("GET", "/books?order=year,title").status == 200)
        expectProblem(try client.send("GET", "/books?order=year,title,_id"), "at most 2 are accepted")
        expectProblem(try client.send("GET", "/books?year=gt.1&year=lt.9&title=eq.x"), "at most 2 are accepted")
        expectProblem(
            try client.send("GET", "/books?where=" + HostileInputTests.query("year > 1 AND year < 3000")), "at most 20")
        let three = Array(repeating: #"{"method": "POST", "path": "/tags", "body": {"name": "t"}}"#, count: 3)
        expectProblem(
            try client.send("POST", "/_batch", json: #"{"operations": [\#(three.joined(separator: ","))]}"#),
            "1 to 2 operations")
        expectProblem(
            try client.send("POST", "/books", json: #"{"title": "x", "metadata": {"a": {"b": {"c": {}}}}}"#),
            "nesting deeper than 4")
        #expect(try client.send("POST", "/tags/_bulk", json: #"[{"name": "a"}, {"name": "b"}]"#).status == 201)
        let eleven = (0..<11).map { #"{"name": "n\#($0)"}"# }.joined(separator: ",")
        expectProblem(try client.send("POST", "/tags/_bulk", json: "[" + eleven + "]"), "more than 20 values")
        // The served document states the page size and the batch size.
        let document = try client.send("GET", "/openapi.json").json
        let components = document.objectValue?["components"]?.objectValue
        #expect(
            components?["parameters"]?.objectValue?["Limit"]?.objectValue?["schema"]?.objectValue?["maximum"]
                == .integer(5))
        let batch = components?["schemas"]?.objectValue?["BatchRequest"]?.objectValue?["properties"]?.objectValue
        #expect(batch?["operations"]?.objectValue?["maxItems"] == .integer(2))
    }
}

/// Connections: per address, and idle ones.
@Suite struct ConnectionLimitTests {
    /// A connection to the loopback `port`, with a 3 s receive timeout.
    static func connect(_ port: UInt16) throws -> TestConnection {
        try TestConnection(port: port, receiveTimeout: 3)
    }

    /// Whether the server closes `connection` within `seconds` (watching the socket, not waiting
    /// a fixed time).
    static func closed(_ connection: TestConnection, within seconds: Double) -> Bool {
        eventually(within: seconds) {
            var peek: UInt8 = 0
            let seen = recv(connection.descriptor, &peek, 1, Int32(MSG_DONTWAIT) | Int32(MSG_PEEK))
            return seen == 0 || (seen < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        }
    }

    /// Sends a GET of /live on `connection` and returns the status line, or "" when the server
    /// closed it.
    static func live(_ connection: TestConnection) -> String {
        let fd = connection.descriptor
        let request = Array("GET /live HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        _ = send(fd, request, request.count, Int32(MSG_NOSIGNAL))
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return "" }
        return String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\r\n").first.map(String.init) ?? ""
    }

    @Test func oneAddressGetsItsShare() throws {
        // A long idle timeout: a busy machine must not close the three held connections meanwhile.
        let fixture = try ServerFixture {
            $0.maxConnectionsPerIP = 3
            $0.idleTimeoutSeconds = 60
        }
        let held = try (0..<3).map { _ in try Self.connect(fixture.server.port) }
        // Each answered first, so the server has counted all three before the fourth opens.
        for connection in held { #expect(Self.live(connection) == "HTTP/1.1 200 OK") }
        // The fourth from the same address gets a 429 problem and is closed; the three still work.
        let fourth = try Self.connect(fixture.server.port)
        // The server may answer before it reads the request: a failed send still reads the answer.
        try? fourth.send("GET /live HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = try fourth.readResponse()
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.header("content-type")?.hasPrefix("application/problem+json") == true)
        #expect(refused.header("retry-after") == "1")
        #expect(refused.text.contains("connections open already"), "\(refused.text)")
        fourth.disconnect()
        for connection in held { #expect(Self.live(connection) == "HTTP/1.1 200 OK") }
    }

    @Test func idleConnectionsAreClosed() throws {
        let fixture = try ServerFixture { $0.idleTimeoutSeconds = 1 }
        let idle = try Self.connect(fixture.server.port)
        #expect(Self.live(idle) == "HTTP/1.1 200 OK")
        // Silent past the idle timeout: the server closes it.
        #expect(Self.closed(idle, within: 30))
        #expect(Self.live(idle) == "")
        let fresh = try Self.connect(fixture.server.port)
        #expect(Self.live(fresh) == "HTTP/1.1 200 OK")
    }

    /// Sends `bytes` on `connection` one at a time, `gap` microseconds apart (the pace is what is
    /// tested), and returns whether the server closed the connection before the last one.
    static func trickle(_ bytes: [UInt8], on connection: TestConnection, gap: UInt32) -> Bool {
        let fd = connection.descriptor
        for byte in bytes {
            var peek: UInt8 = 0
            let seen = recv(fd, &peek, 1, Int32(MSG_DONTWAIT) | Int32(MSG_PEEK))
            if seen == 0 || (seen < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return true }
            if send(fd, [byte], 1, Int32(MSG_NOSIGNAL)) != 1 { return true }
            usleep(gap)
        }
        return false
    }

    /// Bytes that each arrive well inside the idle timeout no longer hold a connection for ever:
    /// a body finished after the total time is answered 408, headers trickling past it are cut,
    /// and a connection that waits between requests is not.
    @Test func aRequestThatTricklesInIsHeldToATotalTime() throws {
        let fixture = try ServerFixture {
            $0.requestTimeoutSeconds = 1
            $0.idleTimeoutSeconds = 30
        }
        let port = fixture.server.port
        // A body of 14 bytes at 100 ms each: complete after the limit, before the cut.
        let body = try Self.connect(port)
        try body.send("POST /tags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n")
        #expect(!Self.trickle(Array(#"{"name": "x1"}"#.utf8), on: body, gap: 100_000))
        let answer = try body.readResponse()
        #expect(answer.status == 408, "\(answer.text)")
        #expect(answer.header("content-type")?.hasPrefix("application/problem+json") == true)
        let created = try fixture.client.send("GET", "/tags?name=eq.x1")
        #expect(created.status == 200 && !String(decoding: created.body, as: UTF8.self).contains("x1"))
        // Headers at 200 ms a byte: cut a grace period after the limit, well before the idle timeout.
        let headers = try Self.connect(port)
        try headers.send("GET /live HTTP/1.1\r\n")
        let slow = Array("Host: x\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 40)
        #expect(Self.trickle(slow, on: headers, gap: 200_000), "the trickling headers were not cut")
        // A kept-alive connection waiting longer than the limit (not the idle timeout) stays open.
        let kept = try Self.connect(port)
        #expect(Self.live(kept) == "HTTP/1.1 200 OK")
        #expect(!Self.closed(kept, within: 2.6))
        #expect(Self.live(kept) == "HTTP/1.1 200 OK")
        #expect(try fixture.client.send("GET", "/live").status == 200)
    }
}
