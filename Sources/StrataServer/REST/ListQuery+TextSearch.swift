import Strata

/// The text search filters of a list, as PostgREST names them: `attr=fts.words` (PostgreSQL's
/// `to_tsquery` language), `plfts` (every word), `phfts` (a phrase), `wfts` (a search-engine
/// query), each optionally after `not.`, on attributes the model marks searchable; and
/// `order=rank`, relevance to them (``SortKey/rank``).
extension FilterSyntax {
    /// The text search operators, in ``TextQuery/Syntax`` order.
    static let textSearchOperators = TextQuery.Syntax.allCases.map(\.rawValue)

    /// The name `order` gives relevance (unless the entity has an attribute of that name).
    static let rankName = "rank"

    /// The search of filter `name=op.operand` (`op` one of ``textSearchOperators``). `fts` text
    /// that is not well formed is read as `plfts` reads text (its words, all required), so that
    /// every value the parameter's pattern admits is answered.
    static func textSearch(_ name: String, _ op: String, _ operand: String) -> TextSearch {
        let syntax = TextQuery.Syntax(rawValue: op) ?? .plain
        let query = (try? TextQuery(operand, syntax: syntax)) ?? (try? TextQuery(operand, syntax: .plain)) ?? .or([])
        return TextSearch(name, query)
    }

    /// Why a filter with a text search operator is refused, or nil when it has none: the attribute
    /// is not searchable, or the operator names a text search configuration (`fts(english)`),
    /// which Strata does not take.
    static func textSearchRefusal(_ raw: String, attribute: AttributeDescription, entity: String, model: ObjectModel)
        -> String?
    {
        var text = Substring(raw)
        if text.hasPrefix("not.") { text = text.dropFirst(4) }
        guard let op = textSearchOperators.first(where: { text.hasPrefix($0 + ".") || text.hasPrefix($0 + "(") })
        else { return nil }
        guard attribute.isSearchable else {
            let searchable = model.attributes(of: entity).filter(\.isSearchable).map(\.name)
            return "'\(attribute.name)' of \(entity) is not searchable: \(op) and the other text search operators "
                + "(\(textSearchOperators.joined(separator: ", "))) need an attribute the model marks searchable"
                + (searchable.isEmpty
                    ? " (\(entity) has none)" : " (\(entity) has: \(searchable.joined(separator: ", ")))")
        }
        return "\(op) takes no text search configuration: words are compared as written (case and diacritics "
            + "folded, no stemming); write \(op).words"
    }

    /// Whether `order` may name ``rankName`` for `entity`: it has searchable attributes and no
    /// attribute of that name.
    static func ranks(_ entity: String, model: ObjectModel) -> Bool {
        model.attribute(rankName, of: entity) == nil && model.attributes(of: entity).contains(where: \.isSearchable)
    }

    /// The sort key of `part` of `order=` when it is `rank`, `rank.desc` (the most relevant
    /// first, the default) or `rank.asc`. Without a text search filter every object's relevance
    /// is 0 and the order is by id.
    static func rankKey(_ part: Substring, entity: String, model: ObjectModel) -> SortKey? {
        guard ranks(entity, model: model) else { return nil }
        switch part {
        case Substring(rankName), Substring(rankName + ".desc"): return SortKey(SortKey.rank, ascending: false)
        case Substring(rankName + ".asc"): return SortKey(SortKey.rank, ascending: true)
        default: return nil
        }
    }
}
