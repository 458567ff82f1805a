import Foundation

/// Decodes the `NSKeyedArchiver` archives Core Data keeps for Transformable attributes (its
/// default transformers, `NSSecureUnarchiveFromData` among them, archive the value this way) into
/// the JSON form Strata serves: strings, numbers and Booleans as themselves, `NSNull` as null,
/// dates as RFC 3339 text, data as base64 text, URLs and UUIDs as text, arrays, sets and ordered
/// sets as arrays, dictionaries with string keys as objects. Anything else (an app's own classes)
/// is not decoded: ``decode(_:)`` says which class it met.
enum KeyedArchive {
    struct Unsupported: Error, CustomStringConvertible {
        var description: String
    }

    /// Whether `bytes` start like a binary property list.
    static func looksLikeArchive(_ bytes: Data) -> Bool { bytes.starts(with: Array("bplist00".utf8)) }

    /// The JSON form of the archive's root object.
    /// - Throws: ``Unsupported`` naming what could not be decoded.
    static func decode(_ bytes: Data) throws(Unsupported) -> JSONValue {
        let plist: PropertyListValue
        do {
            plist = try BinaryPropertyList.parse(Array(bytes))
        } catch {
            throw Unsupported(description: "not a keyed archive (\(error))")
        }
        guard let top = plist.dictionary, top["$archiver"]?.string == "NSKeyedArchiver",
            case .array(let objects)? = top["$objects"], case .dictionary(let roots)? = top["$top"],
            let root = roots["root"] ?? roots.values.first
        else { throw Unsupported(description: "not a keyed archive (no $archiver, $objects and $top)") }
        var decoder = Decoder(objects: objects)
        return try decoder.value(root, depth: 0)
    }

    private struct Decoder {
        let objects: [PropertyListValue]

        func object(_ reference: PropertyListValue) throws(Unsupported) -> PropertyListValue {
            guard case .uid(let index) = reference else { return reference }
            guard objects.indices.contains(index) else { throw Unsupported(description: "a reference is out of range") }
            return objects[index]
        }

        func className(_ members: [String: PropertyListValue]) throws(Unsupported) -> String {
            guard let reference = members["$class"], case .dictionary(let info) = try object(reference),
                let name = info["$classname"]?.string
            else { return "?" }
            return name
        }

        mutating func list(_ members: [String: PropertyListValue], _ key: String, depth: Int) throws(Unsupported)
            -> [JSONValue]
        {
            guard case .array(let items)? = members[key] else { return [] }
            var values: [JSONValue] = []
            for item in items { values.append(try value(item, depth: depth + 1)) }
            return values
        }

        mutating func value(_ reference: PropertyListValue, depth: Int) throws(Unsupported) -> JSONValue {
            guard depth < 256 else { throw Unsupported(description: "the archive nests too deeply") }
            switch try object(reference) {
            case .null: return .null
            case .bool(let b): return .bool(b)
            case .integer(let i): return .integer(i)
            case .real(let d): return d.isFinite ? .double(d) : .null
            case .date(let seconds): return .string(Self.rfc3339(seconds))
            case .data(let data): return .string(data.base64EncodedString())
            case .string(let s): return s == "$null" ? .null : .string(s)
            case .uid: throw Unsupported(description: "a reference to a reference")
            case .array(let items):
                var values: [JSONValue] = []
                for item in items { values.append(try value(item, depth: depth + 1)) }
                return .array(values)
            case .dictionary(let members):
                let name = try className(members)
                switch name {
                case "NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet", "NSMutableOrderedSet":
                    return .array(try list(members, "NS.objects", depth: depth))
                case "NSDictionary", "NSMutableDictionary":
                    let keys = try list(members, "NS.keys", depth: depth)
                    let values = try list(members, "NS.objects", depth: depth)
                    var result: [String: JSONValue] = [:]
                    for (key, value) in zip(keys, values) {
                        guard case .string(let text) = key else {
                            throw Unsupported(description: "a dictionary whose keys are not strings")
                        }
                        result[text] = value
                    }
                    return .object(result)
                case "NSString", "NSMutableString":
                    guard let text = members["NS.string"]?.string else { return .null }
                    return .string(text)
                case "NSData", "NSMutableData":
                    guard case .data(let data)? = members["NS.data"] else { return .null }
                    return .string(data.base64EncodedString())
                case "NSDate":
                    guard let time = members["NS.time"] else { return .null }
                    switch time {
                    case .real(let seconds): return .string(Self.rfc3339(seconds))
                    case .integer(let seconds): return .string(Self.rfc3339(Double(seconds)))
                    default: return .null
                    }
                case "NSNull": return .null
                case "NSURL":
                    guard let relativeReference = members["NS.relative"],
                        case .string(let text) = try value(relativeReference, depth: depth + 1)
                    else { return .null }
                    var base: JSONValue = .null
                    if let baseReference = members["NS.base"] { base = try value(baseReference, depth: depth + 1) }
                    if case .string(let baseText) = base, let url = URL(string: text, relativeTo: URL(string: baseText))
                    {
                        return .string(url.absoluteString)
                    }
                    return .string(text)
                case "NSUUID":
                    guard case .data(let data)? = members["NS.uuidbytes"], data.count == 16 else { return .null }
                    let bytes = Array(data)
                    let uuid = UUID(
                        uuid: (
                            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                            bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                        ))
                    return .string(uuid.uuidString)
                default:
                    throw Unsupported(description: "an archived \(name), which Strata does not decode")
                }
            }
        }

        static func rfc3339(_ secondsSince2001: Double) -> String {
            AttributeValue.date(Date(timeIntervalSinceReferenceDate: secondsSince2001)).json.stringValue ?? ""
        }
    }
}

extension KeyedArchive {
    /// The `NSKeyedArchiver` archive of a JSON value, as Core Data's default transformer
    /// (`NSSecureUnarchiveFromData`) reads it: strings, numbers and Booleans as themselves, null as
    /// `NSNull`, arrays as `NSArray`, objects as `NSDictionary` with string keys, every one of
    /// them a class that transformer allows. Objects are numbered as `NSKeyedArchiver` numbers them:
    /// `$null` first, each object before what it holds, each class after the first object of it.
    static func encode(_ value: JSONValue) -> Data {
        var encoder = Encoder()
        let root = encoder.add(value)
        let archive: PropertyListValue = .dictionary([
            "$version": .integer(100_000), "$archiver": .string("NSKeyedArchiver"),
            "$top": .dictionary(["root": .uid(root)]), "$objects": .array(encoder.objects),
        ])
        return BinaryPropertyList.serialize(archive)
    }

    private struct Encoder {
        var objects: [PropertyListValue] = [.string("$null")]
        var classes: [String: Int] = [:]

        mutating func classReference(_ name: String) -> PropertyListValue {
            if let known = classes[name] { return .uid(known) }
            objects.append(
                .dictionary(["$classname": .string(name), "$classes": .array([.string(name), .string("NSObject")])]))
            classes[name] = objects.count - 1
            return .uid(objects.count - 1)
        }

        /// The number of `value`'s object in `$objects`.
        mutating func add(_ value: JSONValue) -> Int {
            let index = objects.count
            switch value {
            case .string(let text): objects.append(.string(text))
            case .integer(let number): objects.append(.integer(number))
            case .double(let number): objects.append(.real(number))
            case .bool(let flag): objects.append(.bool(flag))
            case .null:
                objects.append(.null)
                objects[index] = .dictionary(["$class": classReference("NSNull")])
            case .array(let items):
                objects.append(.null)
                let members = items.map { PropertyListValue.uid(add($0)) }
                objects[index] = .dictionary(["NS.objects": .array(members), "$class": classReference("NSArray")])
            case .object(let members):
                objects.append(.null)
                let keys = members.keys.sorted(by: ObjectModel.compare)
                let keyObjects = keys.map { PropertyListValue.uid(add(.string($0))) }
                let valueObjects = keys.map { PropertyListValue.uid(add(members[$0]!)) }
                objects[index] = .dictionary([
                    "NS.keys": .array(keyObjects), "NS.objects": .array(valueObjects),
                    "$class": classReference("NSDictionary"),
                ])
            }
            return index
        }
    }
}
