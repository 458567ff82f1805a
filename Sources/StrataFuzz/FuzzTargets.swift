import Foundation
import Strata
import StrataHTTP
import StrataServer

#if FUZZING
    import CFuzzDriver
#endif

/// The fuzz targets: each takes arbitrary bytes and must neither crash, leak nor hang.
///
/// Built with `-sanitize=fuzzer,address -DFUZZING` (scripts/fuzz), libFuzzer drives the target
/// named by `STRATA_FUZZ_TARGET`. Built normally, `strata-fuzz TARGET FILE…` runs files through a
/// target once each (a crash found becomes a seed in `Fuzz/corpus/TARGET`, replayed by CI).
enum FuzzTargets {
    static let names = ["predicate", "query", "json", "model-json", "model-coredata", "http"]

    static func run(_ target: String, _ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        switch target {
        case "predicate":
            // Parse, print and parse again; evaluate against an object of the example model.
            if let predicate = try? FetchPredicate(format: text) {
                _ = try? FetchPredicate(format: predicate.description)
                _ = try? predicate.bound(to: "Book", in: HTTPFixture.shared.model)
            }
        case "query":
            // A list request's query string, through the whole list path of the REST service.
            HTTPFixture.shared.send(HTTPRequest(method: "GET", path: "/books", query: Self.query(text)))
        case "json":
            if let value = try? JSONValue.parse(bytes) { _ = try? JSONValue.parse(value.jsonText) }
        case "model-json":
            if let model = try? ObjectModel.load(json: bytes) {
                _ = try? ObjectModel.load(json: Array(model.canonicalJSON.utf8))
            }
        case "model-coredata":
            _ = try? ObjectModel.loadCoreDataContents(Data(bytes), file: "fuzz.xcdatamodel", name: "Fuzz")
        case "http":
            // METHOD PATH\nheader: value…\n\nbody: a request to the REST service.
            HTTPFixture.shared.send(Self.request(bytes))
        default:
            fatalError("unknown fuzz target '\(target)' (known: \(names.joined(separator: ", ")))")
        }
    }

    /// `a=1&b=x` as decoded query items.
    static func query(_ text: String) -> [(name: String, value: String)] {
        text.split(separator: "&", omittingEmptySubsequences: false).map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
    }

    static func request(_ bytes: [UInt8]) -> HTTPRequest {
        let separator = bytes.firstRange(of: [10, 10])
        let head = String(decoding: separator.map { bytes[..<$0.lowerBound] } ?? bytes[...], as: UTF8.self)
        let body = separator.map { Array(bytes[$0.upperBound...]) } ?? []
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = lines.isEmpty ? [] : lines.removeFirst().split(separator: " ", maxSplits: 1).map(String.init)
        let methods = ["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"]
        let method = start.first.flatMap { methods.contains($0) ? $0 : nil } ?? "GET"
        let target = start.count > 1 ? start[1] : "/"
        let pieces = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        var headers: [String: String] = [:]
        for line in lines {
            let pair = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2 { headers[pair[0].lowercased()] = pair[1] }
        }
        return HTTPRequest(
            method: method, path: pieces[0].hasPrefix("/") ? pieces[0] : "/" + pieces[0],
            query: pieces.count > 1 ? query(pieces[1]) : [], headers: headers, body: body)
    }
}

/// The REST service over in-memory stores of the example model, seeded once.
final class HTTPFixture: Sendable {
    static let shared = HTTPFixture()
    let model: ObjectModel
    let service: RESTService

    private init() {
        model = try! ObjectModel.example
        let coordinator = StoreCoordinator(model: model)
        for configuration in model.configurations {
            _ = try! coordinator.addStore(type: .inMemory, configuration: configuration.name)
        }
        service = try! RESTService(root: ObjectContext(coordinator: coordinator), reads: coordinator)
        let author = service.handle(
            HTTPRequest(
                method: "POST", path: "/authors", headers: ["content-type": "application/json"],
                body: Array(#"{"name": "Seed"}"#.utf8)))
        precondition(author.status == 201)
        _ = service.handle(
            HTTPRequest(
                method: "POST", path: "/books", headers: ["content-type": "application/json"],
                body: Array(#"[{"title": "A", "year": 1990, "author": 1}, {"title": "B", "year": 2001}]"#.utf8)))
    }

    /// Sends `request`; a 500 is a finding, since bad input must be the client's 4xx.
    func send(_ request: HTTPRequest) {
        let response = service.handle(request)
        if response.status == 500 {
            fatalError(
                "500 for \(request.method) \(request.path) \(request.query): \(String(decoding: response.body, as: UTF8.self))"
            )
        }
    }
}

#if FUZZING
    /// libFuzzer's entry point: one input through the target `STRATA_FUZZ_TARGET` names.
    @_cdecl("LLVMFuzzerTestOneInput")
    func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        let target = ProcessInfo.processInfo.environment["STRATA_FUZZ_TARGET"] ?? "predicate"
        FuzzTargets.run(target, data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    }
#endif

/// libFuzzer's driver when built for fuzzing (`-DFUZZING`), else a replay of saved inputs.
@main struct FuzzMain {
    static func main() {
        #if FUZZING
            let target = ProcessInfo.processInfo.environment["STRATA_FUZZ_TARGET"] ?? "predicate"
            guard FuzzTargets.names.contains(target) else { fatalError("unknown STRATA_FUZZ_TARGET '\(target)'") }
            exit(strata_fuzz_run(CommandLine.argc, CommandLine.unsafeArgv, fuzzOneInput))
        #else
            replay()
        #endif
    }

    static func replay() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let target = arguments.first, FuzzTargets.names.contains(target) else {
            FileHandle.standardError.write(
                Data("usage: strata-fuzz TARGET FILE|FOLDER …  (\(FuzzTargets.names.joined(separator: ", ")))\n".utf8))
            exit(64)
        }
        var count = 0
        for path in arguments.dropFirst() {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
            let files =
                isFolder.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                FuzzTargets.run(target, Array(data))
                count += 1
            }
        }
        print("strata-fuzz: \(target): \(count) inputs, no crash")
    }
}
