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
