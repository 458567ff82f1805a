import Foundation
import Strata
import StrataHTTP

/// The table page's search box and facets, with no JavaScript.
///
/// **Search**: an entity with searchable attributes gets a box; submitting it (`_search=words`,
/// and `_in=attribute` when there are several) answers 303 to the same list with the
/// `attribute=wfts.words` filter (ordered by `rank` unless the list names an order), the other
/// filters kept, so the address shows the API's own filter. **Facets**: unless the address names
/// its own `facet=`s, the page asks for a few useful ones (Boolean attributes, the first attribute
/// of each fetch index, to-one relationships, string attributes with a default: at most
/// ``htmlFacetLimit``, none searchable) and lists each one's value counts as links that add the
/// value's filter.
extension RESTService {
    /// The query parameter of the search box.
    static let searchParameter = "_search"
    /// The query parameter naming the attribute searched, when there are several.
    static let searchInParameter = "_in"
    /// The most facets a table page asks for by itself.
    static let htmlFacetLimit = 4

    /// The searchable attributes of `entity`.
    func searchableNames(_ entity: String) -> [String] {
        model.attributes(of: entity).filter(\.isSearchable).map(\.name)
    }

    /// For a submitted search box: 303 to the list with its `wfts` filter; nil otherwise.
    func htmlSearchRedirect(_ entity: String, _ request: HTTPRequest) -> HTTPResponse? {
        guard let words = request.query.first(where: { $0.name == Self.searchParameter })?.value else { return nil }
        let searchable = searchableNames(entity)
        let chosen = request.query.first { $0.name == Self.searchInParameter }?.value
        let attribute = chosen.flatMap { searchable.contains($0) ? $0 : nil } ?? searchable.first
        var kept = request.query.filter { item in
            ![Self.searchParameter, Self.searchInParameter, "after", "offset"].contains(item.name)
                && !(searchable.contains(item.name) && Self.isTextSearch(item.value))
        }
        let trimmed = words.trimmingCharacters(in: .whitespaces)
        if let attribute, !trimmed.isEmpty {
            kept.append((attribute, "wfts." + trimmed))
            if !kept.contains(where: { $0.name == "order" }) { kept.append(("order", FilterSyntax.rankName)) }
        }
        let location = "/" + model.resourcePath(of: entity) + Self.queryString(kept)
        return HTTPResponse(
            status: 303, headers: [("Location", location), ("Content-Type", "text/html; charset=utf-8")],
            body: Array("<p><a href=\"\(Self.escaped(location))\">results</a></p>\n".utf8))
    }

    /// Whether a filter's value is a text search (`[not.]fts.…` and the like).
    static func isTextSearch(_ value: String) -> Bool {
        let text = value.hasPrefix("not.") ? value.dropFirst(4) : Substring(value)
        return FilterSyntax.textSearchOperators.contains { text.hasPrefix($0 + ".") }
    }

    /// `?a=b&c=d`, percent-encoded; empty for no items.
    static func queryString(_ items: [(name: String, value: String)]) -> String {
        items.isEmpty ? "" : "?" + items.map { escape($0.name) + "=" + escape($0.value) }.joined(separator: "&")
    }

    /// The request the table page lists with: the page's own, plus its default facets.
    func htmlListRequest(_ entity: String, _ request: HTTPRequest) -> HTTPRequest {
        guard !request.query.contains(where: { $0.name == ListFacets.parameter }) else { return request }
        var listed = request
        listed.query += htmlFacetNames(entity).map { (ListFacets.parameter, $0) }
        return listed
    }

    /// `next` of a list made by ``htmlListRequest(_:_:)`` without the facets the page added.
    func htmlNextLink(_ next: String, _ request: HTTPRequest) -> String {
        guard !request.query.contains(where: { $0.name == ListFacets.parameter }),
            let mark = next.firstIndex(of: "?")
        else { return next }
        let items = next[next.index(after: mark)...].split(separator: "&").filter {
            !$0.hasPrefix(ListFacets.parameter + "=")
        }
        return String(next[..<mark]) + (items.isEmpty ? "" : "?" + items.joined(separator: "&"))
    }

    /// The facets a table page asks for by itself.
    func htmlFacetNames(_ entity: String) -> [String] {
        guard let description = model.entity(named: entity) else { return [] }
        let attributes = model.attributes(of: entity)
        var names = attributes.filter { $0.type == .boolean }.map(\.name)
        names += description.indexes.compactMap(\.properties.first)
        names += model.relationships(of: entity).filter { !$0.isToMany }.map(\.name)
        names += attributes.filter { $0.type == .string && $0.defaultValue != nil }.map(\.name)
        var chosen: [String] = []
        for name in names where !chosen.contains(name) && chosen.count < Self.htmlFacetLimit {
            guard ListFacets.isFacetable(name, entity: entity, model: model),
                model.attribute(name, of: entity)?.isSearchable != true
            else { continue }
            chosen.append(name)
        }
        return chosen
    }

    /// The search box, for an entity with searchable attributes: the other filters ride along as
    /// hidden fields.
    func htmlSearchForm(_ entity: String, _ request: HTTPRequest) -> String {
        let searchable = searchableNames(entity)
        guard !searchable.isEmpty else { return "" }
        let current = request.query.first { searchable.contains($0.name) && $0.value.hasPrefix("wfts.") }
        var out =
            "<form class=\"search\" method=\"get\" action=\"\(Self.escaped("/" + model.resourcePath(of: entity)))\">"
            + "<label>search <input type=\"search\" name=\"\(Self.searchParameter)\" size=\"40\" value=\""
            + Self.escaped(current.map { String($0.value.dropFirst(5)) } ?? "") + "\" placeholder=\"words, "
            + "&quot;a phrase&quot;, -excluded\"></label> "
        if searchable.count > 1 {
            out += "<select name=\"\(Self.searchInParameter)\">"
            for name in searchable {
                let selected = current?.name == name ? " selected" : ""
                out += "<option value=\"\(Self.escaped(name))\"\(selected)>\(Self.escaped(name))</option>"
            }
            out += "</select> "
        }
        let hidden = [Self.searchParameter, Self.searchInParameter, "after", "offset", ListFacets.parameter]
        for item in request.query
        where !hidden.contains(item.name) && !(searchable.contains(item.name) && Self.isTextSearch(item.value)) {
            out += "<input type=\"hidden\" name=\"\(Self.escaped(item.name))\" value=\"\(Self.escaped(item.value))\">"
        }
        return out + "<button>search</button></form>\n"
    }

    /// The answer's facets as lists of links, each adding its value's filter to the page's own.
    func htmlFacets(_ entity: String, _ page: [String: JSONValue], _ request: HTTPRequest) -> String {
        guard let facets = page["facets"]?.objectValue, !facets.isEmpty else { return "" }
        let path = "/" + model.resourcePath(of: entity)
        let asked = request.query.filter { $0.name == ListFacets.parameter }.map(\.value)
        let names = asked.isEmpty ? htmlFacetNames(entity) : asked
        var out = "<div class=\"facets\">"
        for name in names {
            guard let facet = facets[name]?.objectValue else { continue }
            out += "<section class=\"facet\" data-facet=\"\(Self.escaped(name))\"><h3>\(Self.escaped(name))</h3><ul>"
            for item in facet["values"]?.arrayValue ?? [] {
                guard let value = item.objectValue?["value"], let count = item.objectValue?["count"] else { continue }
                let filter: String
                switch value {
                case .null: filter = "is.null"
                case .bool(let flag): filter = "is.\(flag)"
                case .string(let text): filter = "eq." + text
                default: filter = "eq." + value.jsonText
                }
                var query = request.query.filter { $0.name != name && $0.name != "after" && $0.name != "offset" }
                query.append((name, filter))
                var shown = value.stringValue ?? value.jsonText
                if let relationship = model.relationship(name, of: entity), value != .null {
                    shown = relationship.destination + " " + shown
                }
                out +=
                    "<li><a href=\"\(Self.escaped(path + Self.queryString(query)))\">\(Self.escaped(shown))</a> "
                    + "<small>\(Self.escaped(count.jsonText))</small></li>"
            }
            if facet["truncated"]?.boolValue == true { out += "<li><small>…</small></li>" }
            out += "</ul></section>"
        }
        return out + "</div>\n"
    }
}
