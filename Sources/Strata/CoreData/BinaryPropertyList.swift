import Foundation

/// A value of a binary property list (`bplist00`), as Core Data's stores hold them: the store
/// metadata, and the `NSKeyedArchiver` archives of Transformable attributes (whose object
/// references are ``uid(_:)`` values).
indirect enum PropertyListValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case real(Double)
    /// Seconds since 2001-01-01 UTC.
    case date(Double)
    case data(Data)
    case string(String)
    /// A keyed archive's reference to one of its `$objects`.
    case uid(Int)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    var string: String? { if case .string(let s) = self { s } else { nil } }
    var dictionary: [String: PropertyListValue]? { if case .dictionary(let d) = self { d } else { nil } }
    var array: [PropertyListValue]? { if case .array(let a) = self { a } else { nil } }
}

/// Reads binary property lists (format `bplist00`): header, objects, offset table and trailer,
/// every object type (sets read as arrays; dictionary keys must be strings).
enum BinaryPropertyList {
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    /// The top object of `bytes`.
    /// - Throws: ``Malformed`` for anything that is not a well-formed binary property list.
    static func parse(_ bytes: [UInt8]) throws(Malformed) -> PropertyListValue {
        guard bytes.count >= 40, bytes.starts(with: Array("bplist00".utf8)) else {
            throw Malformed(description: "not a binary property list")
        }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        let referenceSize = Int(bytes[trailer + 7])
        let count = Int(try number(bytes, trailer + 8, 8))
        let top = Int(try number(bytes, trailer + 16, 8))
        let table = Int(try number(bytes, trailer + 24, 8))
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize), count > 0, top < count,
            table >= 8, table + count * offsetSize <= trailer
        else { throw Malformed(description: "the trailer of the property list is inconsistent") }
        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for index in 0..<count {
            let offset = Int(try number(bytes, table + index * offsetSize, offsetSize))
            guard offset >= 8, offset < table else { throw Malformed(description: "an object offset is out of range") }
            offsets.append(offset)
        }
        var reader = Reader(bytes: bytes, offsets: offsets, referenceSize: referenceSize)
        return try reader.object(top, depth: 0)
    }

    static func number(_ bytes: [UInt8], _ at: Int, _ size: Int) throws(Malformed) -> UInt64 {
        guard at >= 0, at + size <= bytes.count else { throw Malformed(description: "the property list is truncated") }
        var value: UInt64 = 0
        for index in at..<at + size { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        let offsets: [Int]
        let referenceSize: Int

        /// The length of the object at `at` (its marker's low nibble, or the integer after it),
        /// and where its contents start.
        func length(_ at: Int) throws(Malformed) -> (Int, Int) {
            let nibble = Int(bytes[at] & 0x0f)
            guard nibble == 0x0f else { return (nibble, at + 1) }
            guard at + 1 < bytes.count, bytes[at + 1] >> 4 == 0x1 else {
                throw Malformed(description: "a length is not an integer")
            }
            let size = 1 << Int(bytes[at + 1] & 0x0f)
            let value = try number(bytes, at + 2, size)
            guard value < UInt64(bytes.count) else { throw Malformed(description: "a length is out of range") }
            return (Int(value), at + 2 + size)
        }

        func reference(_ at: Int) throws(Malformed) -> Int {
            let value = try number(bytes, at, referenceSize)
            guard value < UInt64(offsets.count) else { throw Malformed(description: "a reference is out of range") }
            return Int(value)
        }

        mutating func object(_ index: Int, depth: Int) throws(Malformed) -> PropertyListValue {
            guard depth < 512 else { throw Malformed(description: "the property list nests too deeply") }
            let at = offsets[index]
            let marker = bytes[at]
            switch marker >> 4 {
            case 0x0:
                switch marker {
                case 0x08: return .bool(false)
                case 0x09: return .bool(true)
                default: return .null
                }
            case 0x1:
                let size = 1 << Int(marker & 0x0f)
                guard size <= 8 else { throw Malformed(description: "an integer wider than 64 bits") }
                return .integer(Int64(bitPattern: try number(bytes, at + 1, size)))
            case 0x2:
                let size = 1 << Int(marker & 0x0f)
                let bits = try number(bytes, at + 1, size)
                if size == 4 { return .real(Double(Float(bitPattern: UInt32(bits)))) }
                guard size == 8 else { throw Malformed(description: "a real of \(size) bytes") }
                return .real(Double(bitPattern: bits))
            case 0x3:
                return .date(Double(bitPattern: try number(bytes, at + 1, 8)))
            case 0x4:
                let (count, start) = try length(at)
                guard start + count <= bytes.count else { throw Malformed(description: "data runs past the end") }
                return .data(Data(bytes[start..<start + count]))
            case 0x5:
                let (count, start) = try length(at)
                guard start + count <= bytes.count else { throw Malformed(description: "a string runs past the end") }
                return .string(String(decoding: bytes[start..<start + count], as: UTF8.self))
            case 0x6:
                let (count, start) = try length(at)
                guard start + 2 * count <= bytes.count else {
                    throw Malformed(description: "a string runs past the end")
                }
                var units: [UInt16] = []
                for index in 0..<count {
                    units.append(UInt16(bytes[start + 2 * index]) << 8 | UInt16(bytes[start + 2 * index + 1]))
                }
                return .string(String(decoding: units, as: UTF16.self))
            case 0x8:
                return .uid(Int(try number(bytes, at + 1, Int(marker & 0x0f) + 1)))
            case 0xA, 0xC:
                let (count, start) = try length(at)
                var items: [PropertyListValue] = []
                for index in 0..<count {
                    items.append(try object(try reference(start + index * referenceSize), depth: depth + 1))
                }
                return .array(items)
            case 0xD:
                let (count, start) = try length(at)
                var members: [String: PropertyListValue] = [:]
                for index in 0..<count {
                    guard
                        case .string(let key) = try object(
                            try reference(start + index * referenceSize), depth: depth + 1)
                    else { throw Malformed(description: "a dictionary key is not a string") }
                    members[key] = try object(
                        try reference(start + (count + index) * referenceSize), depth: depth + 1)
                }
                return .dictionary(members)
            default:
                throw Malformed(description: String(format: "unknown object marker 0x%02x", marker))
            }
        }
    }
}

extension BinaryPropertyList {
    /// The bytes of `value` as a binary property list, laid out as Core Foundation lays one out:
    /// objects depth-first from the top (a dictionary's keys, then its values), strings, numbers,
    /// data, dates and references written once however often they occur, containers each on their
    /// own, dictionary keys in `-compare:` order, integers and references in the fewest bytes.
    static func serialize(_ value: PropertyListValue) -> Data {
        var writer = Writer()
        _ = writer.flatten(value)
        return writer.finish()
    }

    private struct Writer {
        /// Every object's encoding, in object order, with references still as indexes.
        var objects: [PropertyListValue] = []
        var scalars: [PropertyListValue: Int] = [:]

        /// The object number of `value`, flattening it (and what it holds) first.
        mutating func flatten(_ value: PropertyListValue) -> Int {
            switch value {
            case .array(let items):
                let index = objects.count
                objects.append(.null)
                objects[index] = .array(items.map { .integer(Int64(flatten($0))) })
                return index
            case .dictionary(let members):
                let index = objects.count
                objects.append(.null)
                let keys = members.keys.sorted(by: ObjectModel.compare)
                let keyNumbers = keys.map { flatten(.string($0)) }
                let valueNumbers = keys.map { flatten(members[$0]!) }
                objects[index] = .array((keyNumbers + valueNumbers).map { .integer(Int64($0)) })
                dictionaries.insert(index)
                return index
            default:
                if let known = scalars[value] { return known }
                scalars[value] = objects.count
                objects.append(value)
                return objects.count - 1
            }
        }

        /// Which objects are dictionaries (their entries are references: keys, then values).
        var dictionaries: Set<Int> = []

        func finish() -> Data {
            let referenceSize = Self.width(UInt64(objects.count))
            var bytes = Array("bplist00".utf8)
            var offsets: [Int] = []
            for (index, object) in objects.enumerated() {
                offsets.append(bytes.count)
                encode(object, isDictionary: dictionaries.contains(index), referenceSize: referenceSize, into: &bytes)
            }
            let table = bytes.count
            let offsetSize = Self.width(UInt64(table))
            for offset in offsets { Self.append(UInt64(offset), size: offsetSize, to: &bytes) }
            bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
            Self.append(UInt64(objects.count), size: 8, to: &bytes)
            Self.append(0, size: 8, to: &bytes)
            Self.append(UInt64(table), size: 8, to: &bytes)
            return Data(bytes)
        }

        func encode(_ object: PropertyListValue, isDictionary: Bool, referenceSize: Int, into bytes: inout [UInt8]) {
            switch object {
            case .null: bytes.append(0x00)
            case .bool(let flag): bytes.append(flag ? 0x09 : 0x08)
            case .integer(let number): Self.appendInteger(number, to: &bytes)
            case .real(let number):
                bytes.append(0x23)
                Self.append(number.bitPattern, size: 8, to: &bytes)
            case .date(let seconds):
                bytes.append(0x33)
                Self.append(seconds.bitPattern, size: 8, to: &bytes)
            case .data(let data):
                Self.appendHeader(0x40, count: data.count, to: &bytes)
                bytes += data
            case .string(let text):
                if text.utf8.allSatisfy({ $0 < 0x80 }) {
                    Self.appendHeader(0x50, count: text.utf8.count, to: &bytes)
                    bytes += text.utf8
                } else {
                    let units = Array(text.utf16)
                    Self.appendHeader(0x60, count: units.count, to: &bytes)
                    for unit in units { bytes += [UInt8(unit >> 8), UInt8(unit & 0xff)] }
                }
            case .uid(let number):
                let size = Self.width(UInt64(number))
                bytes.append(0x80 | UInt8(size - 1))
                Self.append(UInt64(number), size: size, to: &bytes)
            case .array(let references):
                let count = isDictionary ? references.count / 2 : references.count
                Self.appendHeader(isDictionary ? 0xD0 : 0xA0, count: count, to: &bytes)
                for case .integer(let reference) in references {
                    Self.append(UInt64(reference), size: referenceSize, to: &bytes)
                }
            case .dictionary: preconditionFailure("dictionaries are flattened into references")
            }
        }

        /// The fewest bytes (1, 2, 4 or 8) that hold `value`.
        static func width(_ value: UInt64) -> Int {
            value <= 0xff ? 1 : value <= 0xffff ? 2 : value <= 0xffff_ffff ? 4 : 8
        }

        static func append(_ value: UInt64, size: Int, to bytes: inout [UInt8]) {
            for shift in stride(from: (size - 1) * 8, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            }
        }

        /// An integer object: non-negative ones in 1, 2 or 4 bytes when they fit, others in 8.
        static func appendInteger(_ number: Int64, to bytes: inout [UInt8]) {
            let size = number < 0 ? 8 : width(UInt64(number))
            bytes.append(0x10 | UInt8(size.trailingZeroBitCount))
            append(UInt64(bitPattern: number), size: size, to: &bytes)
        }

        /// A marker with its count in the low nibble, or 0xF and the count as an integer object.
        static func appendHeader(_ marker: UInt8, count: Int, to bytes: inout [UInt8]) {
            if count < 15 {
                bytes.append(marker | UInt8(count))
            } else {
                bytes.append(marker | 0x0f)
                appendInteger(Int64(count), to: &bytes)
            }
        }
    }
}
