import Foundation

/// Turns the values of a Core Data store's columns into Strata attribute values: dates from
/// seconds since 2001 (REAL, or INTEGER when whole), Booleans from 0/1, UUIDs from 16-byte BLOBs,
/// decimals from their numbers, Transformable values from their `NSKeyedArchiver` archives (see
/// ``KeyedArchive``; any other bytes are kept as `{"$binary": base64}` with a warning; archives an
/// export would not write back as the same bytes from their JSON value are counted in a warning),
/// and Binary values stored outside the file (`allowsExternalBinaryDataStorage`: a marker byte,
/// then the bytes or the name of a file in `.<store>_SUPPORT/_EXTERNAL_DATA/`).
struct CoreDataValues {
    /// The store file, for external binary data next to it.
    let storeURL: URL
    /// Warnings by attribute (`Entity.attribute`), each with how many values it concerned.
    private(set) var warnings: [String: (message: String, count: Int)] = [:]

    init(storeURL: URL) { self.storeURL = storeURL }

    private mutating func warn(_ key: String, _ message: String) {
        warnings[key, default: (message, 0)].count += 1
    }

    /// The folder of external binary data: `.<store name>_SUPPORT/_EXTERNAL_DATA`.
    var externalDataFolder: URL {
        storeURL.deletingLastPathComponent().appendingPathComponent(
            ".\(storeURL.deletingPathExtension().lastPathComponent)_SUPPORT/_EXTERNAL_DATA")
    }

    /// The Strata value of `attribute` held in a Core Data column as `value`. A value that does not
    /// fit the attribute's type is left empty (Transformable bytes that do not decode are kept as
    /// `{"$binary": base64}`), most of them counted in `warnings`.
    mutating func decode(_ value: SQLiteValue, _ attribute: AttributeDescription, entity: String) -> AttributeValue {
        let key = "\(entity).\(attribute.name)"
        if case .null = value { return .null }
        switch attribute.type {
        case .string: return Self.string(value)
        case .integer16, .integer32, .integer64: return wholeNumber(value, key)
        case .double, .float: return number(value, key)
        case .decimal: return Self.decimal(value)
        case .boolean: return boolean(value, key)
        case .date: return date(value, key)
        case .binary:
            return binary(value, allowsExternal: attribute.coreData?.allowsExternalBinaryDataStorage == true, key)
        case .uuid: return uuid(value, key)
        case .uri: return Self.uri(value)
        case .json: return transformable(value, key)
        }
    }

    /// A String: text as it is, bytes as UTF-8, numbers as their digits.
    private static func string(_ value: SQLiteValue) -> AttributeValue {
        switch value {
        case .text(let text): .string(text)
        case .blob(let data): .string(String(decoding: data, as: UTF8.self))
        case .integer(let i): .string(String(i))
        case .real(let d): .string(String(d))
        case .null: .null
        }
    }

    /// An Integer 16, 32 or 64: an integer, or a real or text that holds a whole number.
    private mutating func wholeNumber(_ value: SQLiteValue, _ key: String) -> AttributeValue {
        switch value {
        case .integer(let i): return .integer(i)
        case .real(let d) where d.isFinite && d == d.rounded() && abs(d) < 9.2e18: return .integer(Int64(d))
        case .text(let text) where Int64(text) != nil: return .integer(Int64(text)!)
        default:
            warn(key, "values that are not whole numbers are left empty")
            return .null
        }
    }

    /// A Double or Float: a real, an integer, or text that holds a number.
    private mutating func number(_ value: SQLiteValue, _ key: String) -> AttributeValue {
        switch value {
        case .real(let d): return .double(d)
        case .integer(let i): return .double(Double(i))
        case .text(let text) where Double(text) != nil: return .double(Double(text)!)
        default:
            warn(key, "values that are not numbers are left empty")
            return .null
        }
    }

    /// A Decimal from its number or its digits; empty when they do not read as one.
    private static func decimal(_ value: SQLiteValue) -> AttributeValue {
        switch value {
        case .integer(let i): .decimal(Decimal(i))
        case .real(let d): Decimal(string: String(d)).map { .decimal($0) } ?? .null
        case .text(let text): Decimal(string: text).map { .decimal($0) } ?? .null
        default: .null
        }
    }

    /// A Boolean from 0 or not 0.
    private mutating func boolean(_ value: SQLiteValue, _ key: String) -> AttributeValue {
        switch value {
        case .integer(let i): return .boolean(i != 0)
        case .real(let d): return .boolean(d != 0)
        default:
            warn(key, "values that are not 0 or 1 are left empty")
            return .null
        }
    }

    /// A Date from seconds since 2001 (Core Data's reference date).
    private mutating func date(_ value: SQLiteValue, _ key: String) -> AttributeValue {
        switch value {
        case .real(let seconds): return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case .integer(let seconds): return .date(Date(timeIntervalSinceReferenceDate: Double(seconds)))
        default:
            warn(key, "values that are not seconds since 2001 are left empty")
            return .null
        }
    }

    /// A Binary value from its bytes (or, with `allowsExternal`, from where the marker byte says), or text's UTF-8.
    private mutating func binary(_ value: SQLiteValue, allowsExternal: Bool, _ key: String) -> AttributeValue {
        switch value {
        case .blob(let data): allowsExternal ? external(data, key) : .binary(data)
        case .text(let text): .binary(Data(text.utf8))
        default: .null
        }
    }

    /// A UUID from its 16 bytes or its text form.
    private mutating func uuid(_ value: SQLiteValue, _ key: String) -> AttributeValue {
        switch value {
        case .blob(let data) where data.count == 16:
            let b = Array(data)
            return .uuid(
                UUID(
                    uuid: (
                        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                        b[14], b[15]
                    )))
        case .text(let text) where UUID(uuidString: text) != nil: return .uuid(UUID(uuidString: text)!)
        default:
            warn(key, "values that are not UUIDs are left empty")
            return .null
        }
    }

    /// A URI from its text, or from the keyed archive of an `NSURL` (its string), or from bytes as UTF-8.
    private static func uri(_ value: SQLiteValue) -> AttributeValue {
        switch value {
        case .text(let text): return .uri(text)
        case .blob(let data):
            if KeyedArchive.looksLikeArchive(data), case .string(let text)? = try? KeyedArchive.decode(data) {
                return .uri(text)
            }
            return .uri(String(decoding: data, as: UTF8.self))
        default: return .null
        }
    }

    /// A Transformable value: its `NSKeyedArchiver` archive decoded to JSON (other bytes kept as
    /// `{"$binary": base64}`), JSON text parsed (else kept as a string), numbers as they are.
    private mutating func transformable(_ value: SQLiteValue, _ key: String) -> AttributeValue {
        switch value {
        case .blob(let data):
            guard KeyedArchive.looksLikeArchive(data) else {
                warn(key, "values that are not keyed archives are kept as {\"$binary\": base64}")
                return .json(.object(["$binary": .string(data.base64EncodedString())]))
            }
            do {
                let json = try KeyedArchive.decode(data)
                if KeyedArchive.encode(json) != data {
                    // A key of its own: a key's first message is the one reported.
                    warn(
                        key + " archives",
                        "hold what JSON does not keep (dates, data, UUIDs, URLs, sets, mutable classes) or "
                            + "another layout: an export writes new archives of their JSON values, not these bytes")
                }
                return .json(json)
            } catch {
                warn(key, "values Strata does not decode (\(error)) are kept as {\"$binary\": base64}")
                return .json(.object(["$binary": .string(data.base64EncodedString())]))
            }
        case .text(let text): return .json((try? JSONValue.parse(Array(text.utf8))) ?? .string(text))
        case .integer(let i): return .json(.integer(i))
        case .real(let d): return .json(.double(d))
        case .null: return .null
        }
    }

    /// A Binary value of an attribute that allows external storage.
    private mutating func external(_ data: Data, _ key: String) -> AttributeValue {
        guard let marker = data.first else { return .binary(data) }
        switch marker {
        case 1: return .binary(data.dropFirst())
        case 2:
            let name = String(decoding: data.dropFirst().prefix { $0 != 0 }, as: UTF8.self)
            let file = externalDataFolder.appendingPathComponent(name)
            guard !name.isEmpty, !name.contains("/"), let contents = FileManager.default.contents(atPath: file.path)
            else {
                warn(
                    key,
                    "values stored in external files that are missing (in \(externalDataFolder.path)) are left empty")
                return .null
            }
            return .binary(contents)
        default:
            return .binary(data)
        }
    }
}
