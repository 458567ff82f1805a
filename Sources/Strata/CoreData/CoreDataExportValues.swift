import Foundation

/// Turns Strata attribute values into the values of a Core Data store's columns, the inverse of
/// ``CoreDataValues``: dates as seconds since 2001, Booleans as 0/1, UUIDs as their 16 bytes,
/// decimals as their digits (the `DECIMAL` column keeps them as numbers), URIs as text.
///
/// - Binary values of an attribute that allows external storage: up to `externalThreshold` bytes
///   inline behind the marker byte 1; larger ones in a file named by a new UUID in
///   `.<store name>_SUPPORT/_EXTERNAL_DATA/`, the column holding the marker byte 2, that name and
///   a NUL byte (`_PFExternalReferenceData`'s two forms, which Core Data reads whatever their size).
/// - Transformable values: `{"$binary": base64}` (what Strata keeps of bytes it read and did not
///   decode, or what a client sent as bytes) as those bytes; any other JSON value as the
///   `NSKeyedArchiver` archive Core Data's keyed-archive transformers (`NSSecureUnarchiveFromData`,
///   the default, and `NSKeyedUnarchiveFromData`) read (``KeyedArchive/encode(_:)``). An attribute
///   with another transformer (an app's own) has a format Strata cannot write: its values that are
///   not bytes refuse the export.
struct CoreDataExportValues {
    /// Where external binary data goes (the `_EXTERNAL_DATA` folder of the store being built).
    let externalFolder: URL
    /// The largest value kept inline.
    let externalThreshold: Int
    /// External files written.
    private(set) var externalFiles = 0

    /// The transformers whose format is a keyed archive.
    static let archiveTransformers: Set<String> = [
        "NSSecureUnarchiveFromData", "NSSecureUnarchiveFromDataTransformer", "NSKeyedUnarchiveFromData",
    ]

    init(externalFolder: URL, externalThreshold: Int) {
        self.externalFolder = externalFolder
        self.externalThreshold = externalThreshold
    }

    /// The column value of `value` for `attribute` of `entity`.
    /// - Throws: ``StoreError`` `.invalidRequest` for a value Strata cannot write in that
    ///   attribute's format, `.io` when an external file cannot be written.
    mutating func encode(_ value: AttributeValue, _ attribute: AttributeDescription, entity: String)
        throws(StoreError) -> SQLiteValue
    {
        switch value {
        case .null: return .null
        case .string(let text): return .text(text)
        case .integer(let number): return .integer(number)
        case .double(let number): return .real(number)
        case .decimal(let number): return .text(number.description)
        case .boolean(let flag): return .integer(flag ? 1 : 0)
        case .date(let date): return .real(date.timeIntervalSinceReferenceDate)
        case .binary(let data):
            guard attribute.coreData?.allowsExternalBinaryDataStorage == true else { return .blob(data) }
            guard data.count > externalThreshold else { return .blob(Data([1]) + data) }
            return .blob(try external(data, entity: entity, attribute: attribute.name))
        case .uuid(let uuid): return .blob(withUnsafeBytes(of: uuid.uuid) { Data($0) })
        case .uri(let text): return .text(text)
        case .json(let json): return try transformable(json, attribute, entity: entity)
        }
    }

    private func transformable(_ json: JSONValue, _ attribute: AttributeDescription, entity: String)
        throws(StoreError) -> SQLiteValue
    {
        if case .object(let members) = json, members.count == 1, case .string(let base64)? = members["$binary"],
            let bytes = Data(base64Encoded: base64)
        {
            return .blob(bytes)
        }
        if case .null = json { return .null }
        if let transformer = attribute.coreData?.valueTransformerName,
            !Self.archiveTransformers.contains(transformer)
        {
            throw StoreError(
                .invalidRequest,
                "\(entity).\(attribute.name) is transformed by \(transformer), whose format Strata cannot write; "
                    + "only values held as bytes ({\"$binary\": base64}) can be exported for it")
        }
        return .blob(KeyedArchive.encode(json))
    }

    /// Writes `data` to a new external file; the column's marker and file name.
    private mutating func external(_ data: Data, entity: String, attribute: String) throws(StoreError) -> Data {
        let name = UUID().uuidString
        do {
            if externalFiles == 0 {
                try FileManager.default.createDirectory(at: externalFolder, withIntermediateDirectories: true)
            }
            try data.write(to: externalFolder.appendingPathComponent(name))
        } catch {
            throw StoreError(
                .io, "cannot write the external data of \(entity).\(attribute) in \(externalFolder.path): \(error)")
        }
        externalFiles += 1
        return Data([2]) + Data(name.utf8) + Data([0])
    }
}
