import CSwaggerUI
import Foundation
import Strata
import StrataHTTP

/// The interactive API docs at `/docs`: Swagger UI over the served OpenAPI document, served from
/// this machine only (no CDN, no fonts, no validator badge). Its files are a pinned Swagger UI
/// build vendored in the repository (`scripts/fetch-assets` takes them, hash-checked, from the
/// `drf-spectacular-sidecar` wheel on PyPI) and embedded in the binary (the `CSwaggerUI` target), so
/// `strata serve` has them with no step and no file beside it. A folder of other files may replace
/// them; with none, `/docs` is a plain page listing every operation.
public struct APIDocs: Sendable {
    /// The files under `/docs/`: name → (media type, bytes).
    let files: [String: (type: String, bytes: [UInt8])]
    /// Where they came from, for the page's footer and `strata serve`'s start-up line.
    public let source: String?

    /// The files Swagger UI needs, and the licence notices shipped with them.
    static let names: [(name: String, type: String)] = [
        ("swagger-ui-bundle.js", "text/javascript; charset=utf-8"), ("swagger-ui.css", "text/css; charset=utf-8"),
        ("LICENSE", "text/plain; charset=utf-8"), ("swagger-ui-bundle.js.LICENSE.txt", "text/plain; charset=utf-8"),
        ("VERSION", "text/plain; charset=utf-8"),
    ]

    /// No assets: `/docs` is the plain page.
    public init() {
        files = [:]
        source = nil
    }

    /// The files embedded in the binary: the vendored Swagger UI build.
    public static let embedded: APIDocs = {
        var count = 0
        guard let table = strata_swagger_ui_files(&count) else { return APIDocs() }
        var bytes: [String: [UInt8]] = [:]
        for file in UnsafeBufferPointer(start: table, count: count) {
            bytes[String(cString: file.name)] = Array(
                UnsafeBufferPointer(start: file.start, count: file.end - file.start))
        }
        return APIDocs(bytes: bytes, origin: "embedded")
    }()

    /// The assets in `directory/swagger-ui`, in place of the embedded ones.
    /// - Parameter directory: a folder holding `swagger-ui/` with the files `scripts/fetch-assets` writes.
    /// - Throws: ``ServeError`` when the folder lacks one of the files.
    public init(directory: String) throws(ServeError) {
        let folder = URL(fileURLWithPath: directory).appendingPathComponent("swagger-ui")
        var bytes: [String: [UInt8]] = [:]
        for (name, _) in Self.names {
            guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) else {
                throw ServeError(
                    "the assets folder \(directory) has no swagger-ui/\(name); run scripts/fetch-assets \(folder.path)")
            }
            bytes[name] = Array(data)
        }
        self.init(bytes: bytes, origin: folder.path)
    }

    /// The files with their media types; `source` is the VERSION file's first line, else `origin`.
    private init(bytes: [String: [UInt8]], origin: String) {
        var files: [String: (type: String, bytes: [UInt8])] = [:]
        for (name, type) in Self.names {
            if let data = bytes[name] { files[name] = (type, data) }
        }
        self.files = files
        let version =
            String(decoding: files["VERSION"]?.bytes ?? [], as: UTF8.self)
            .split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        source = version.isEmpty ? origin : version
    }

    /// The answer for `/docs` (`file` nil) or `/docs/<file>`.
    func response(_ file: String?, document: (@Sendable () -> (json: String, yaml: String))?) -> HTTPResponse? {
        if let file {
            guard let asset = files[file] else { return nil }
            return HTTPResponse(
                status: 200, headers: [("Content-Type", asset.type), ("Cache-Control", "public, max-age=86400")],
                body: asset.bytes)
        }
        let page = files.isEmpty ? fallbackPage(document) : Self.swaggerPage(source: source ?? "")
        return HTTPResponse(
            status: 200, headers: [("Content-Type", "text/html; charset=utf-8")], body: Array(page.utf8))
    }

    private static func swaggerPage(source: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>API docs</title>
        <link rel="stylesheet" href="/docs/swagger-ui.css">
        <style>body{margin:0}footer{font:12px sans-serif;color:#666;padding:8px 20px}</style>
        </head><body>
        <div id="swagger-ui"></div>
        <footer>\(ModelDiagram.xmlEscaped(source)), served by this server:
        <a href="/docs/LICENSE">licence</a> · <a href="/docs/swagger-ui-bundle.js.LICENSE.txt">third-party notices</a>
        · <a href="/">home</a> · <a href="/openapi.yaml">OpenAPI document</a></footer>
        <script src="/docs/swagger-ui-bundle.js"></script>
        <script>
        window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
          validatorUrl: null, tryItOutEnabled: false});
        </script>
        </body></html>

        """
    }

    /// Every operation of the document by tag, without JavaScript, when the assets are absent.
    private func fallbackPage(_ document: (@Sendable () -> (json: String, yaml: String))?) -> String {
        var body =
            "<h1>API docs</h1>\n<p>This server was started without the interactive docs "
            + "(<code>--assets-dir ''</code>). Every operation of the <a href=\"/openapi.yaml\">OpenAPI document</a>:</p>\n"
        let parsed = document.flatMap { try? JSONValue.parse(Array($0().json.utf8)) }
        var byTag: [(tag: String, rows: [String])] = []
        for (path, item) in (parsed?.objectValue?["paths"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            for method in ["get", "post", "put", "patch", "delete"] {
                guard let operation = item.objectValue?[method]?.objectValue else { continue }
                let tag = operation["tags"]?.arrayValue?.first?.stringValue ?? "other"
                let summary = operation["summary"]?.stringValue ?? ""
                let id = operation["operationId"]?.stringValue ?? ""
                let row =
                    "<tr id=\"\(ModelDiagram.xmlEscaped(id))\"><td><code>\(method.uppercased())</code></td>"
                    + "<td><code>\(ModelDiagram.xmlEscaped(path))</code></td><td>\(ModelDiagram.xmlEscaped(summary))</td></tr>"
                if let index = byTag.firstIndex(where: { $0.tag == tag }) {
                    byTag[index].rows.append(row)
                } else {
                    byTag.append((tag, [row]))
                }
            }
        }
        for (tag, rows) in byTag {
            body +=
                "<h2 id=\"/\(ModelDiagram.xmlEscaped(tag))\">\(ModelDiagram.xmlEscaped(tag))</h2>\n<table>"
                + rows.joined(separator: "\n") + "</table>\n"
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>API docs</title>
            <style>:root{color-scheme:light dark}body{font:14px/1.45 sans-serif;margin:24px auto;max-width:1000px;padding:0 16px}
            td{padding:2px 10px 2px 0}</style></head><body>
            \(body)
            </body></html>

            """
    }
}
