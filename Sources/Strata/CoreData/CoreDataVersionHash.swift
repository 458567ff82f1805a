import Foundation

/// Core Data's entity version hashes, as a Core Data store records them in its metadata
/// (`NSStoreModelVersionHashes`): they tell which version of a model wrote a store.
///
/// The layout (reproduced byte for byte against the stores of real apps):
///
///     property     = SHA256(name ‖ u16le(1·optional | 2·transient | 4·readOnly) ‖ modifier?)
///     attribute    = SHA256(property ‖ u32le(type code) ‖ [01 external storage] ‖ [01 preserved])
///     composite    = SHA256(Σ its leaf elements' attribute hashes, by name)
///     relationship = SHA256(property ‖ destination ‖ inverse? ‖ u32le(maxCount) ‖ u32le(minCount)
///                           ‖ [u16le(1) ordered])
///     entity       = SHA256(name ‖ u8(abstract) ‖ parent's hash? ‖ Σ properties' hashes by name
///                           ‖ modifier? ‖ Σ uniqueness constraints joined by ".", sorted)
///
/// The inverse is left out when there is none or it is the relationship itself; a to-one's
/// maxCount is 1. Transient properties (which Strata does not load) are never part of it.
extension ObjectModel {
    /// Core Data's version hash of every entity (32 bytes each).
    public var coreDataVersionHashes: [String: [UInt8]] {
        var hashes: [String: [UInt8]] = [:]
        func hash(_ name: String) -> [UInt8] {
            if let known = hashes[name] { return known }
            guard let entity = entity(named: name) else { return [] }
            var hasher = SHA256()
            hasher.update(entity.name)
            hasher.update([entity.isAbstract ? 1 : 0])
            if let parent = entity.parent { hasher.update(hash(parent)) }
            var properties: [(String, [UInt8])] = []
            for attribute in attributes(of: name) { properties.append((attribute.name, Self.coreDataHash(attribute))) }
            for relationship in relationships(of: name) {
                properties.append((relationship.name, Self.coreDataHash(relationship)))
            }
            for (_, propertyHash) in properties.sorted(by: { Self.compare($0.0, $1.0) }) { hasher.update(propertyHash) }
            if let modifier = entity.versionHashModifier { hasher.update(modifier) }
            for constraint in entity.uniqueness.map({ $0.joined(separator: ".") }).sorted(by: Self.compare) {
                hasher.update(constraint)
            }
            let digest = hasher.finalize()
            hashes[name] = digest
            return digest
        }
        for entity in entityNames { _ = hash(entity) }
        return hashes
    }

    /// `-compare:` on ASCII names: by UTF-16 code unit.
    static func compare(_ lhs: String, _ rhs: String) -> Bool { lhs.utf16.lexicographicallyPrecedes(rhs.utf16) }

    private static func propertyHash(name: String, optional: Bool, modifier: String?) -> SHA256 {
        var hasher = SHA256()
        hasher.update(name)
        hasher.update([optional ? 1 : 0, 0])
        if let modifier { hasher.update(modifier) }
        return hasher
    }

    static func coreDataHash(_ attribute: AttributeDescription) -> [UInt8] {
        if attribute.isComposite {
            // NSCompositeAttributeDescription's hash is its leaf elements' hashes alone, by name.
            var hasher = SHA256()
            for (_, element) in attribute.compositeLeaves.sorted(by: { compare($0.element.name, $1.element.name) }) {
                hasher.update(coreDataHash(element))
            }
            return hasher.finalize()
        }
        var inner = propertyHash(
            name: attribute.name, optional: attribute.isOptional, modifier: attribute.versionHashModifier)
        var hasher = SHA256()
        hasher.update(inner.finalize())
        let code = UInt32(coreDataTypeCode(attribute))
        hasher.update([UInt8(code & 0xff), UInt8((code >> 8) & 0xff), UInt8((code >> 16) & 0xff), UInt8(code >> 24)])
        if attribute.coreData?.allowsExternalBinaryDataStorage == true { hasher.update([1]) }
        if attribute.coreData?.preservesValueInHistoryOnDeletion == true { hasher.update([1]) }
        return hasher.finalize()
    }

    static func coreDataHash(_ relationship: RelationshipDescription) -> [UInt8] {
        var inner = propertyHash(
            name: relationship.name, optional: relationship.isOptional, modifier: relationship.versionHashModifier)
        var hasher = SHA256()
        hasher.update(inner.finalize())
        hasher.update(relationship.destination)
        if let inverse = relationship.inverse, inverse != relationship.name { hasher.update(inverse) }
        let counts =
            relationship.coreData
            ?? CoreDataRelationshipInfo(
                minCount: relationship.minCount ?? 0, maxCount: relationship.isToMany ? relationship.maxCount ?? 0 : 1)
        for count in [counts.maxCount, counts.minCount] {
            let value = UInt32(truncatingIfNeeded: count)
            hasher.update([
                UInt8(value & 0xff), UInt8((value >> 8) & 0xff), UInt8((value >> 16) & 0xff), UInt8(value >> 24),
            ])
        }
        if relationship.isOrdered { hasher.update([1, 0]) }
        return hasher.finalize()
    }

    /// Core Data's `NSAttributeType` number of an attribute.
    static func coreDataTypeCode(_ attribute: AttributeDescription) -> Int {
        switch attribute.coreData?.attributeType {
        case "Transformable": return 1800
        case "Composite": return 2100
        case "Objectid", "ObjectID": return 2000
        default: break
        }
        switch attribute.type {
        case .integer16: return 100
        case .integer32: return 200
        case .integer64: return 300
        case .decimal: return 400
        case .double: return 500
        case .float: return 600
        case .string: return 700
        case .boolean: return 800
        case .date: return 900
        case .binary: return 1000
        case .uuid: return 1100
        case .uri: return 1200
        case .json: return 1800
        }
    }
}
