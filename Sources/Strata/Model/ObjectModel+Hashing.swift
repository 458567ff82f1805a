extension ObjectModel {
    /// A stable hash of everything about `entity` that shapes its stored data: its name, parent,
    /// abstractness, the names and types of its attributes (a composite's elements too), whether
    /// they are optional and searchable, its relationships, uniqueness constraints and indexes. Declaration order,
    /// documentation, default values, validation rules and renaming identifiers do not change it
    /// (as in Core Data).
    public func versionHash(of entity: String) -> String? {
        guard let description = self.entity(named: entity) else { return nil }
        // Modifiers, searchability and descending index elements are hashed only when present, so
        // models without them keep the hashes stores already recorded.
        func modifier(_ value: String?) -> String { value.map { ":modifier=\($0)" } ?? "" }
        var parts = [
            "entity=\(description.name)", "parent=\(description.parent ?? "")", "abstract=\(description.isAbstract)",
        ]
        if let value = description.versionHashModifier { parts.append("modifier=\(value)") }
        // A composite's elements (each as an attribute is) shape what its values hold.
        func shape(_ attribute: AttributeDescription) -> String {
            guard let elements = attribute.elements else { return "" }
            return ":elements=("
                + elements.map { "\($0.name):\($0.type.rawValue):optional=\($0.isOptional)" + shape($0) }
                .joined(separator: ",") + ")"
        }
        parts += description.attributes.map {
            "attribute=\($0.name):\($0.type.rawValue):optional=\($0.isOptional)" + modifier($0.versionHashModifier)
                + shape($0) + ($0.isSearchable ? ":searchable" : "")
        }
        .sorted()
        parts += description.relationships.map { relationship in
            "relationship=\(relationship.name):\(relationship.destination):inverse=\(relationship.inverse ?? ""):"
                + "toMany=\(relationship.isToMany):ordered=\(relationship.isOrdered):optional=\(relationship.isOptional)"
                + modifier(relationship.versionHashModifier)
        }.sorted()
        parts += description.uniqueness.map { "unique=" + $0.sorted().joined(separator: ",") }.sorted()
        parts += description.indexes.map { index in
            "index="
                + index.properties.map { index.descending.contains($0) ? $0 + " desc" : $0 }.joined(separator: ",")
        }.sorted()
        return SHA256.hex(parts.joined(separator: "\n"))
    }

    /// The version hash of every entity, by name.
    public var entityVersionHashes: [String: String] {
        Dictionary(uniqueKeysWithValues: entities.map { ($0.name, versionHash(of: $0.name)!) })
    }

    /// A stable hash of the whole model: the entity hashes, sorted by entity name.
    public var versionHash: String {
        let hashes = entityVersionHashes
        return SHA256.hex(hashes.keys.sorted().map { "\($0)=\(hashes[$0]!)" }.joined(separator: "\n"))
    }
}
