import Foundation
import Strata

/// The `facet=` parameters of a list (Datasette's facets): for each named attribute or to-one
/// relationship, how many of the objects the filters match have each value, beside the page.
///
/// The answer's `facets` member holds, per name in the order asked,
/// `{"values": [{"value": …, "count": …}, …], "truncated": …}`: the most frequent values first,
/// ties by value (nulls first, as the stores sort them), at most ``maxValues`` of them; `truncated`
/// says whether more values exist. A to-one relationship counts by the related object's id.
struct ListFacets {
    /// The most facets one request may ask for.
    static let maxFacets = 5
    /// The most values one facet lists.
    static let maxValues = 30
    /// The query parameter's name (one per facet).
    static let parameter = "facet"

    /// The names asked for, in order.
    var names: [String] = []

    /// Parses every `facet=` of `query` for `entity`.
    /// - Throws: a 400 ``Problem`` naming a name that is not facetable, given twice, or one past
    ///   ``maxFacets``.
    init(_ query: [(name: String, value: String)], entity: String, model: ObjectModel) throws(Problem) {
        for (name, value) in query where name == Self.parameter {
            guard Self.isFacetable(value, entity: entity, model: model) else {
                let names = Self.facetableNames(entity, model: model)
                throw Problem.badRequest(
                    "facet: '\(value)' is not an attribute or to-one relationship of \(entity) that facets can "
                        + "count (binary, JSON and composite attributes and to-many relationships cannot be)"
                        + (names.isEmpty ? "" : "; it has: \(names.joined(separator: ", "))"),
                    errors: [.init(field: Self.parameter, code: "invalid", message: "not facetable: '\(value)'")])
            }
            guard !names.contains(value) else {
                throw Problem.badRequest(
                    "facet: '\(value)' is given more than once",
                    errors: [.init(field: Self.parameter, code: "duplicate", message: "'\(value)' twice")])
            }
            names.append(value)
        }
        guard names.count <= Self.maxFacets else {
            throw Problem.badRequest(
                "the request asks for \(names.count) facets; at most \(Self.maxFacets) are accepted",
                errors: [.init(field: Self.parameter, code: "tooMany", message: "more than \(Self.maxFacets) facets")]
            )
        }
    }

    /// Whether `name` is an attribute facets count (neither binary, JSON nor composite) or a to-one
    /// relationship of `entity`.
    static func isFacetable(_ name: String, entity: String, model: ObjectModel) -> Bool {
        if let attribute = model.attribute(name, of: entity) {
            return !attribute.isComposite && attribute.type != .binary && attribute.type != .json
        }
        if let relationship = model.relationship(name, of: entity) { return !relationship.isToMany }
        return false
    }

    /// Every facetable name of `entity`: its attributes, then its to-one relationships.
    static func facetableNames(_ entity: String, model: ObjectModel) -> [String] {
        (model.attributes(of: entity).map(\.name) + model.relationships(of: entity).map(\.name)).filter {
            isFacetable($0, entity: entity, model: model)
        }
    }

    /// Writes the `facets` member's value from each name's groups (``CommittedReads/valueCounts(_:key:)``
    /// over every object the filters match), in ``names`` order.
    func write(_ counts: [[ValueCount]], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (index, name) in names.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(name, to: &out)
            out += Array(#":{"values":["#.utf8)
            // Grouped again by the value's JSON form (what the items show), one value kept to order by.
            var groups: [[UInt8]: (value: AttributeValue, count: Int)] = [:]
            for group in index < counts.count ? counts[index] : [] {
                var key: [UInt8] = []
                ObjectCodec.write(group.value, to: &key)
                groups[key, default: (group.value, 0)].count += group.count
            }
            // The first ``maxValues`` in answer order, kept sorted while the groups pass once (a
            // facet of many distinct values is not sorted whole).
            func before(
                _ lhs: (key: [UInt8], value: (value: AttributeValue, count: Int)),
                _ rhs: (key: [UInt8], value: (value: AttributeValue, count: Int))
            ) -> Bool {
                if lhs.value.count != rhs.value.count { return lhs.value.count > rhs.value.count }
                return Self.precedes(lhs.value.value, rhs.value.value, lhs.key, rhs.key)
            }
            var first: [(key: [UInt8], value: (value: AttributeValue, count: Int))] = []
            for group in groups {
                if first.count == Self.maxValues, let last = first.last, !before(group, last) { continue }
                let index = first.firstIndex { before(group, $0) } ?? first.count
                first.insert(group, at: index)
                if first.count > Self.maxValues { first.removeLast() }
            }
            for (position, group) in first.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                out += Array(#"{"value":"#.utf8) + group.key + Array(#","count":"#.utf8)
                JSONValue.writeInteger(Int64(group.value.count), to: &out)
                out.append(UInt8(ascii: "}"))
            }
            out += Array(#"],"truncated":"#.utf8)
            out += Array((groups.count > Self.maxValues ? "true" : "false").utf8)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Value order for ties: null first, then as the stores sort (``ValueOrdering``), then by the
    /// JSON form (values that compare equal but render apart).
    private static func precedes(_ lhs: AttributeValue, _ rhs: AttributeValue, _ lhsKey: [UInt8], _ rhsKey: [UInt8])
        -> Bool
    {
        if lhs == .null || rhs == .null { return lhs == .null && rhs != .null }
        if let order = ValueOrdering.compare(lhs, rhs), order != 0 { return order < 0 }
        return lhsKey.lexicographicallyPrecedes(rhsKey)
    }
}
