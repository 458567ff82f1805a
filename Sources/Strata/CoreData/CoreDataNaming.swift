import Foundation

/// Core Data's names for the parts of its SQLite stores (see `CoreDataMapping` for how a store's
/// real columns are matched against them, and `CoreDataLayout` for a whole store laid out with
/// them).
enum CoreDataNaming {
    /// Core Data's entity numbers (`Z_ENT`): entities sorted by name case-insensitively, numbered
    /// from 1 depth-first in pre-order, each root followed by its sorted subentities.
    static func entityNumbers(_ model: ObjectModel) -> [String: Int] {
        let sorted = model.entityNames.sorted { lhs, rhs in
            let order = lhs.caseInsensitiveCompare(rhs)
            return order == .orderedSame ? ObjectModel.compare(lhs, rhs) : order == .orderedAscending
        }
        var numbers: [String: Int] = [:]
        func visit(_ entity: String) {
            numbers[entity] = numbers.count + 1
            for child in sorted where model.entity(named: child)?.parent == entity { visit(child) }
        }
        for root in sorted where model.entity(named: root)?.parent == nil { visit(root) }
        return numbers
    }

    /// The table of the hierarchy whose root is `root`: `ZAUTHOR`.
    static func table(_ root: String) -> String { "Z" + root.uppercased() }

    /// The unsuffixed column of an attribute or to-one relationship: `ZTITLE`.
    static func column(_ property: String) -> String { "Z" + property.uppercased() }

    /// One column an attribute takes in its hierarchy's table.
    struct AttributeColumn {
        /// What the column holds: the attribute's name, or a composite's leaf element's key path
        /// from the entity (`address.city`).
        var key: String
        /// The name the column is derived from (see ``column(_:)``, suffixed on a clash).
        var name: String
        /// The leaf element's key path below the composite (`["position", "latitude"]`); empty
        /// for an attribute that is not a composite.
        var path: [String]
        /// The attribute, or the composite's leaf element, whose value the column holds.
        var element: AttributeDescription
    }

    /// The columns `attribute` takes, in order: its own, or for a composite one per leaf element
    /// (nested composites flattened), each named after the element alone (`address.city` →
    /// `ZCITY`, not `ZADDRESS_CITY`) with the element's own type.
    static func columns(of attribute: AttributeDescription) -> [AttributeColumn] {
        guard attribute.isComposite else {
            return [AttributeColumn(key: attribute.name, name: attribute.name, path: [], element: attribute)]
        }
        return attribute.compositeLeaves.map { leaf in
            AttributeColumn(
                key: ([attribute.name] + leaf.path).joined(separator: "."), name: leaf.element.name, path: leaf.path,
                element: leaf.element)
        }
    }

    /// The `use`th column (from 0) of a hierarchy derived from `base`: `ZTEXT`, `ZTEXT1`, ...
    static func suffixed(_ base: String, _ use: Int) -> String { use == 0 ? base : base + String(use) }

    /// The column holding the destination's `Z_ENT` beside a to-one's column, when the destination
    /// has subentities: `Z10_QUOTE` for `ZQUOTE`.
    static func entityColumn(destinationNumber: Int, column: String) -> String {
        "Z\(destinationNumber)_" + column.dropFirst()
    }

    /// The position column of an ordered to-many kept by the inverse to-one's column `column`:
    /// `Z_FOK_PARENT` for `ZPARENT`.
    static func orderColumn(foreignKey column: String) -> String { "Z_FOK_" + column.dropFirst() }

    /// A many-to-many's join table: `Z_<n><RELATIONSHIP>`, n the declaring entity's number.
    static func joinTable(number: Int, relationship: String) -> String { "Z_\(number)\(relationship.uppercased())" }

    /// The join column holding the destinations of `relationship` (entity `number`): `Z_8LABELS`.
    static func joinColumn(number: Int, relationship: String) -> String { "Z_\(number)\(relationship.uppercased())" }

    /// The position column of an ordered side whose destinations are in join column `column`:
    /// `Z_FOK_1MEMBERS` for `Z_1MEMBERS`.
    static func joinOrderColumn(_ column: String) -> String { "Z_FOK_" + column.dropFirst(2) }

    /// Core Data's SQL type of an attribute's column.
    static func sqlType(_ attribute: AttributeDescription) -> String {
        if attribute.coreData?.attributeType == "Transformable" { return "BLOB" }
        switch attribute.type {
        case .integer16, .integer32, .integer64, .boolean: return "INTEGER"
        case .decimal: return "DECIMAL"
        case .double, .float: return "FLOAT"
        case .date: return "TIMESTAMP"
        case .string, .uri: return "VARCHAR"
        case .binary, .uuid, .json: return "BLOB"
        }
    }

    /// The digest Core Data records of its entity version hashes (`NSStoreModelVersionHashesDigest`):
    /// base64 of SHA-512 over each name and hash, by name with `-compare:`.
    static func hashesDigest(_ hashes: [String: [UInt8]]) -> String {
        var hasher = SHA512()
        for name in hashes.keys.sorted(by: ObjectModel.compare) {
            hasher.update(name)
            hasher.update(hashes[name]!)
        }
        return Data(hasher.finalize()).base64EncodedString()
    }

    /// The checksum Core Data records of its entity version hashes
    /// (`NSStoreModelVersionChecksumKey`): base64 of SHA-256 over the hashes, by entity name.
    static func hashesChecksum(_ hashes: [String: [UInt8]]) -> String {
        var hasher = SHA256()
        for name in hashes.keys.sorted(by: ObjectModel.compare) { hasher.update(hashes[name]!) }
        return Data(hasher.finalize()).base64EncodedString()
    }
}
