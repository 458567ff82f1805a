import Foundation
import Strata
import StrataHTTP

/// Pages for a browser, with no JavaScript: `GET /` with `Accept: text/html` lists the
/// configurations, their stores and entities (with object counts, a curl line each, and the
/// model's diagram); a collection or object asked for as HTML is a table of what the JSON answer
/// holds, with related objects as links and the same filters and cursor, a search box where the
/// entity has searchable attributes and facets (``htmlFacets(_:_:_:)``). JSON clients (any
/// `Accept` that does not prefer `text/html`, `*/*` included) get JSON as before.
extension RESTService {
    /// Whether `request` prefers HTML to JSON: `text/html` listed with a quality at least that
    /// of `application/json` (browsers send `text/html,…,*/*;q=0.8`).
    public static func wantsHTML(_ request: HTTPRequest) -> Bool {
        guard let accept = request.header("accept")?.lowercased(), accept.contains("text/html") else { return false }
        var html = 0.0
        var json = 0.0
        for item in accept.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            let quality =
                parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            switch parts.first ?? "" {
            case "text/html": html = max(html, quality)
            case "application/json": json = max(json, quality)
            default: break
            }
        }
        return html > 0 && html >= json
    }

    /// The HTML page for a GET of `route`, or nil when the route has none (JSON answers then).
    func htmlPage(_ route: Route, _ request: HTTPRequest) throws(Problem) -> HTTPResponse? {
        switch route {
        case .index: return Self.page(title: "\(model.name) — Strata", body: indexBody(request))
        case .collection(let entity):
            if let redirect = htmlSearchRedirect(entity, request) { return redirect }
            let answer = try list(entity, htmlListRequest(entity, request))
            return Self.page(title: "\(entity) — \(model.name)", body: try tableBody(entity, answer, request))
        case .item(let entity, let id):
            let answer = try read(entity, id, request)
            guard let object = (try? JSONValue.parse(answer.body))?.objectValue else { return nil }
            return Self.page(title: "\(entity) \(id) — \(model.name)", body: objectBody(entity, object))
        default: return nil
        }
    }

    private func indexBody(_ request: HTTPRequest) -> String {
        let host = request.header("host") ?? "localhost:8080"
        var out = "<h1>\(Self.escaped(model.name))</h1>\n"
        out +=
            "<p>Model version \(Self.escaped(model.version ?? "–")), hash <code>\(Self.escaped(String(model.versionHash.prefix(12))))</code>. "
            + "<a href=\"/docs\">API docs</a> · <a href=\"/openapi.yaml\">OpenAPI document</a> · "
            + "<a href=\"/_model/diagram.svg\">diagram</a> (<a href=\"/_model/diagram.mmd\">Mermaid</a>, "
            + "<a href=\"/_model/diagram.dot\">Graphviz</a>)</p>\n"
        let stores = reads.storeSummaries
        for store in stores {
            let configuration = store.configuration ?? ObjectModel.defaultConfiguration
            let names = store.entityNames.filter { access[$0] != .hidden && resources.values.contains($0) }
            guard !names.isEmpty else { continue }
            out +=
                "<section class=\"configuration\" data-configuration=\"\(Self.escaped(configuration))\">\n"
                + "<h2>\(Self.escaped(configuration)) <small>\(Self.escaped(store.type.rawValue)) store</small></h2>\n"
                + "<table><thead><tr><th>entity</th><th>objects</th><th>try it</th></tr></thead><tbody>\n"
            for name in names {
                let path = "/" + model.resourcePath(of: name)
                var fetch = FetchRequest(
                    entityName: name, predicate: nil, sortDescriptors: [], fetchLimit: nil, fetchOffset: 0)
                fetch.affectedStores = homeStores[name]
                let count = (try? reads.count(fetch)).map(String.init) ?? "?"
                let marks = [
                    model.entity(named: name)?.isAbstract == true ? "abstract" : nil,
                    access[name] == .readOnly ? "read-only" : nil,
                ].compactMap { $0 }
                out +=
                    "<tr class=\"entity\" data-entity=\"\(Self.escaped(name))\"><td><a href=\"\(Self.escaped(path))\">"
                    + "\(Self.escaped(name))</a>\(marks.isEmpty ? "" : " <small>" + marks.joined(separator: ", ") + "</small>")"
                    + " · <a href=\"/docs#/\(Self.escaped(name))\">docs</a></td>"
                    + "<td class=\"count\">\(count)</td>"
                    + "<td><code>curl -s 'http://\(Self.escaped(host))\(Self.escaped(path))?limit=5'</code></td></tr>\n"
            }
            out += "</tbody></table>\n</section>\n"
        }
        out +=
            "<h2>Diagram</h2>\n<p><a href=\"/_model/diagram.svg\"><img src=\"/_model/diagram.svg\" "
            + "alt=\"the model's entities by configuration\"></a></p>\n"
        return out
    }

    private func tableBody(_ entity: String, _ answer: HTTPResponse, _ request: HTTPRequest) throws(Problem) -> String {
        guard let page = (try? JSONValue.parse(answer.body))?.objectValue else {
            throw Problem(500, "Internal Server Error", "the list could not be shown as HTML")
        }
        let items = page["items"]?.arrayValue ?? []
        let path = "/" + model.resourcePath(of: entity)
        var columns = [ObjectCodec.idKey, ObjectCodec.versionKey]
        columns += model.attributes(of: entity).map(\.name) + model.relationships(of: entity).map(\.name)
        var out = "<p><a href=\"/\">\(Self.escaped(model.name))</a> › \(Self.escaped(entity))</p>\n"
        out += "<h1>\(Self.escaped(entity))</h1>\n"
        let current = request.query.first { $0.name == "where" }?.value ?? ""
        out +=
            "<form method=\"get\" action=\"\(Self.escaped(path))\"><label>where <input name=\"where\" size=\"50\" "
            + "value=\"\(Self.escaped(current))\" placeholder=\"title BEGINSWITH 'A'\"></label> "
            + "<button>filter</button> <a href=\"/docs#/\(Self.escaped(entity))\">docs</a></form>\n"
        out += htmlSearchForm(entity, request) + htmlFacets(entity, page, request)
        out += "<div class=\"wide\"><table class=\"objects\"><thead><tr>"
        for column in columns { out += "<th>\(Self.escaped(column))</th>" }
        out += "</tr></thead><tbody>\n"
        for item in items {
            let object = item.objectValue ?? [:]
            let id = object[ObjectCodec.idKey]?.jsonText ?? ""
            out += "<tr>"
            for column in columns {
                if column == ObjectCodec.idKey {
                    out += "<td><a href=\"\(Self.escaped(path + "/" + id))\">\(Self.escaped(id))</a></td>"
                } else {
                    out += "<td>\(cell(entity, column, object[column] ?? .null, ownerID: id))</td>"
                }
            }
            out += "</tr>\n"
        }
        out += "</tbody></table></div>\n"
        if items.isEmpty { out += "<p>No objects.</p>\n" }
        if let next = page["next"]?.stringValue.map({ htmlNextLink($0, request) }) {
            out += "<p><a rel=\"next\" href=\"\(Self.escaped(next))\">next page</a></p>\n"
        }
        return out
    }

    private func objectBody(_ entity: String, _ object: [String: JSONValue]) -> String {
        let path = "/" + model.resourcePath(of: entity)
        let id = object[ObjectCodec.idKey]?.jsonText ?? ""
        var out =
            "<p><a href=\"/\">\(Self.escaped(model.name))</a> › <a href=\"\(Self.escaped(path))\">"
            + "\(Self.escaped(entity))</a> › \(Self.escaped(id))</p>\n<h1>\(Self.escaped(entity)) \(Self.escaped(id))</h1>\n"
        out += "<table class=\"object\"><tbody>\n"
        let names =
            [ObjectCodec.versionKey] + model.attributes(of: entity).map(\.name)
            + model.relationships(of: entity).map(\.name)
        for name in names {
            out +=
                "<tr><th>\(Self.escaped(name))</th><td>\(cell(entity, name, object[name] ?? .null, ownerID: id))</td></tr>\n"
        }
        for fetched in model.fetchedProperties(of: entity) {
            out +=
                "<tr><th>\(Self.escaped(fetched.name))</th><td><a href=\"\(Self.escaped(path + "/" + id + "/" + fetched.name))\">"
                + "\(Self.escaped(fetched.entity)) objects</a> <small>fetched</small></td></tr>\n"
        }
        return out + "</tbody></table>\n"
    }

    /// One value: related objects as links (to-one to the object, to-many to the sub-resource).
    private func cell(_ entity: String, _ name: String, _ value: JSONValue, ownerID: String) -> String {
        if let relationship = model.relationship(name, of: entity) {
            let destination = "/" + model.resourcePath(of: relationship.destination)
            if relationship.isToMany {
                let count = value.arrayValue?.count ?? 0
                let link = "/" + model.resourcePath(of: entity) + "/" + ownerID + "/" + name
                return "<a href=\"\(Self.escaped(link))\">\(count) \(Self.escaped(relationship.destination))</a>"
            }
            guard case .integer(let id) = value else { return "<span class=\"null\">null</span>" }
            return
                "<a href=\"\(Self.escaped(destination + "/" + String(id)))\">\(Self.escaped(relationship.destination)) \(id)</a>"
        }
        switch value {
        case .null: return "<span class=\"null\">null</span>"
        case .string(let text):
            let shown = text.count > 120 ? String(text.prefix(120)) + "…" : text
            return Self.escaped(shown)
        default:
            let text = value.jsonText
            return "<code>\(Self.escaped(text.count > 120 ? String(text.prefix(120)) + "…" : text))</code>"
        }
    }

    private static func page(title: String, body: String) -> HTTPResponse {
        let html = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escaped(title))</title>
            <style>
            :root{color-scheme:light dark;--fg:#1d2430;--muted:#5b6677;--bg:#fbfcfd;--line:#d5dce5;--head:#eef2f6;--link:#2358b8}
            @media (prefers-color-scheme:dark){:root{--fg:#dde4ee;--muted:#9aa6b8;--bg:#11151b;--line:#2e3846;--head:#1b222c;--link:#8fb6ee}}
            body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg);margin:24px auto;max-width:1200px;padding:0 16px}
            a{color:var(--link)}table{border-collapse:collapse;margin:8px 0 20px;width:100%}th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
            th{background:var(--head)}small,.null{color:var(--muted)}code{font-size:12px}img{max-width:100%;height:auto;border:1px solid var(--line)}
            td.count{text-align:right;font-variant-numeric:tabular-nums}.wide{overflow-x:auto}
            .facets{display:flex;flex-wrap:wrap;gap:8px 24px}.facet h3{font-size:14px;margin:8px 0 2px}.facet ul{list-style:none;margin:0;padding:0}
            </style></head>
            <body>
            \(body)
            </body></html>

            """
        return HTTPResponse(
            status: 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Vary", "Accept")],
            body: Array(html.utf8))
    }

    static func escaped(_ text: String) -> String { ModelDiagram.xmlEscaped(text) }
}
