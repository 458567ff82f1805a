import Foundation
import Strata

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One answer of the server: status, headers (names lowercased) and body.
struct SyncResponse: Sendable {
    var status: Int
    var headers: [String: String]
    var body: Data

    /// The body as JSON (`.null` when it is none).
    var json: JSONValue { (try? JSONValue.parse(Array(body))) ?? .null }

    /// The header `name` (any case).
    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Why a request got no answer at all (the server is down, the network is gone, a timeout).
public struct SyncTransportError: Error, Sendable, CustomStringConvertible {
    /// What failed.
    public var description: String
}

/// Blocking HTTP requests over Foundation's `URLSession` (FoundationNetworking on Linux): the
/// replica's work runs on a thread of its own, one request at a time.
final class SyncHTTPClient: Sendable {
    let base: URL
    /// Headers every request carries (`Authorization`, say).
    let headers: [String: String]
    private let session: URLSession

    init(base: URL, headers: [String: String]) {
        self.base = base
        self.headers = headers
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 2
        session = URLSession(configuration: configuration)
    }

    deinit { session.invalidateAndCancel() }

    /// The URL of `path` (which may carry a query) on the server.
    func url(_ path: String) -> URL {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return URL(string: text + path)!
    }

    /// Sends one request and waits for its answer.
    /// - Throws: ``SyncTransportError`` when no answer came.
    func send(
        _ method: String, _ path: String, body: Data? = nil, headers extra: [String: String] = [:],
        timeout: Double = 30
    ) throws(SyncTransportError) -> SyncResponse {
        var request = URLRequest(url: url(path), timeoutInterval: timeout)
        request.httpMethod = method
        for (name, value) in headers.merging(extra, uniquingKeysWith: { $1 }) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let box = Locked<Result<SyncResponse, SyncTransportError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { data, response, error in
            let result: Result<SyncResponse, SyncTransportError>
            if let http = response as? HTTPURLResponse {
                var fields: [String: String] = [:]
                for (name, value) in http.allHeaderFields {
                    if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
                }
                result = .success(SyncResponse(status: http.statusCode, headers: fields, body: data ?? Data()))
            } else {
                let reason = error.map { "\($0.localizedDescription)" } ?? "no response"
                result = .failure(SyncTransportError(description: "\(method) \(path): \(reason)"))
            }
            box.withLock { $0 = result }
            done.signal()
        }
        task.resume()
        done.wait()
        return try box.withLock { $0! }.get()
    }

    /// Sends a JSON document.
    func send(
        _ method: String, _ path: String, json: JSONValue, headers extra: [String: String] = [:]
    ) throws(SyncTransportError) -> SyncResponse {
        try send(method, path, body: Data(json.jsonBytes), headers: extra)
    }

    /// Downloads `path` into the file `destination` (replaced).
    /// - Returns: the response, its body left empty.
    func download(_ path: String, to destination: URL, timeout: Double = 600) throws(SyncTransportError)
        -> SyncResponse
    {
        var request = URLRequest(url: url(path), timeoutInterval: timeout)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let box = Locked<Result<SyncResponse, SyncTransportError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = session.downloadTask(with: request) { file, response, error in
            let result: Result<SyncResponse, SyncTransportError>
            if let http = response as? HTTPURLResponse, let file {
                var fields: [String: String] = [:]
                for (name, value) in http.allHeaderFields {
                    if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
                }
                do {
                    try? FileManager.default.removeItem(at: destination)
                    if http.statusCode == 200 {
                        try FileManager.default.moveItem(at: file, to: destination)
                        result = .success(SyncResponse(status: http.statusCode, headers: fields, body: Data()))
                    } else {
                        let body = (try? Data(contentsOf: file)) ?? Data()
                        result = .success(SyncResponse(status: http.statusCode, headers: fields, body: body))
                    }
                } catch {
                    result = .failure(SyncTransportError(description: "GET \(path): cannot keep the file: \(error)"))
                }
            } else {
                let reason = error.map { "\($0.localizedDescription)" } ?? "no response"
                result = .failure(SyncTransportError(description: "GET \(path): \(reason)"))
            }
            box.withLock { $0 = result }
            done.signal()
        }
        task.resume()
        done.wait()
        return try box.withLock { $0! }.get()
    }
}
