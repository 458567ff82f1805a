import Foundation

/// A Core Data value expression (`NSExpression`) as Xcode keeps a custom one in a mapping model:
/// an `NSKeyedArchiver` archive in binary property list form, stored base64 in the
/// `valueexpressiondata` attribute of the property mapping in `xcmapping.xml`.
///
/// Only the expression classes a mapping model's value expressions are made of are written, with
/// the members and class chains `NSKeyedArchiver` gives them (`NSExpressionType`, `NSOperand`,
/// `NSSelectorName`, `NSArguments`, `NSVariable`, `NSKeyPath`, `NSConstantValue`).
public indirect enum ArchivedExpression: Sendable {
    /// A constant (`NSConstantValueExpression`): a string, an integer, a double, or nil.
    case constant(Constant)
    /// `$name` (`NSVariableExpression`).
    case variable(String)
    /// A key path as an argument (`NSKeyPathSpecifierExpression`), as in
    /// `FUNCTION($source, "valueForKeyPath:", "a.b")`.
    case keyPathSpecifier(String)
    /// `FUNCTION(operand, "selector", arguments…)`: an `NSKeyPathExpression` for
    /// `valueForKeyPath:`, an `NSFunctionExpression` for any other selector.
    case function(operand: ArchivedExpression, selector: String, arguments: [ArchivedExpression])

    /// A constant value.
    public enum Constant: Sendable {
        /// A string constant.
        case string(String)
        /// An integer constant.
        case integer(Int64)
        /// A floating-point constant.
        case double(Double)
        /// `nil`.
        case null
    }

    /// `$variable.key.path` as Xcode archives it when it is typed as a value expression:
    /// `FUNCTION($variable, "valueForKeyPath:", "key.path")`.
    public static func keyPath(_ variable: String, _ path: String) -> ArchivedExpression {
        .function(operand: .variable(variable), selector: "valueForKeyPath:", arguments: [.keyPathSpecifier(path)])
    }

    /// `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "<mapping>",
    /// $source.<path>)`: the destination objects the named entity mapping made of the source's
    /// related objects.
    public static func destinationInstances(mapping: String, sourcePath: String) -> ArchivedExpression {
        .function(
            operand: .variable("manager"), selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
            arguments: [.constant(.string(mapping)), .keyPath("source", sourcePath)])
    }

    /// The keyed archive's bytes (a binary property list).
    public var archive: Data {
        var archiver = KeyedArchiver()
        let root = archiver.encode(self)
        return BinaryPropertyListWriter.data(
            .dictionary([
                ("$version", .integer(100000)), ("$archiver", .string("NSKeyedArchiver")),
                ("$top", .dictionary([("root", root)])), ("$objects", .array(archiver.objects)),
            ]))
    }
}

/// Lays an expression out as `NSKeyedArchiver` does: `$objects` starts with `$null`, each object
/// takes the next index when its encoding starts, its members are encoded in order after it, and
/// its class description follows its members (once per class).
private struct KeyedArchiver {
    var objects: [PlistValue] = [.string("$null")]
    var classes: [String: Int] = [:]

    mutating func reserve() -> Int {
        objects.append(.string("$null"))
        return objects.count - 1
    }

    mutating func add(_ value: PlistValue) -> PlistValue {
        objects.append(value)
        return .uid(objects.count - 1)
    }

    mutating func classReference(_ chain: [String]) -> PlistValue {
        if let index = classes[chain[0]] { return .uid(index) }
        let reference = add(
            .dictionary([("$classes", .array(chain.map { .string($0) })), ("$classname", .string(chain[0]))]))
        if case .uid(let index) = reference { classes[chain[0]] = index }
        return reference
    }

    mutating func encode(_ expression: ArchivedExpression) -> PlistValue {
        let index = reserve()
        var members: [(String, PlistValue)] = []
        let chain: [String]
        switch expression {
        case .constant(let constant):
            let value: PlistValue
            switch constant {
            case .string(let s): value = add(.string(s))
            case .integer(let i): value = add(.integer(i))
            case .double(let d): value = add(.real(d))
            case .null: value = .uid(0)
            }
            members = [("NSConstantValue", value), ("NSExpressionType", .integer(0))]
            chain = ["NSConstantValueExpression", "NSExpression", "NSObject"]
        case .variable(let name):
            members = [("NSVariable", add(.string(name))), ("NSExpressionType", .integer(2))]
            chain = ["NSVariableExpression", "NSExpression", "NSObject"]
        case .keyPathSpecifier(let path):
            members = [("NSKeyPath", add(.string(path))), ("NSExpressionType", .integer(10))]
            chain = ["NSKeyPathSpecifierExpression", "NSExpression", "NSObject"]
        case .function(let operand, let selector, let arguments):
            let selectorName = add(.string(selector))
            let operandReference = encode(operand)
            let list = reserve()
            let items = arguments.map { encode($0) }
            let arrayClass = classReference(["NSMutableArray", "NSArray", "NSObject"])
            objects[list] = .dictionary([("NS.objects", .array(items)), ("$class", arrayClass)])
            members = [
                ("NSSelectorName", selectorName), ("NSOperand", operandReference), ("NSExpressionType", .integer(4)),
                ("NSArguments", .uid(list)),
            ]
            chain =
                selector == "valueForKeyPath:"
                ? ["NSKeyPathExpression", "NSFunctionExpression", "NSExpression", "NSObject"]
                : ["NSFunctionExpression", "NSExpression", "NSObject"]
        }
        members.append(("$class", classReference(chain)))
        objects[index] = .dictionary(members)
        return .uid(index)
    }
}

/// A property list value, with the `UID` type keyed archives use for references.
enum PlistValue {
    case string(String)
    case integer(Int64)
    case real(Double)
    case uid(Int)
    case array([PlistValue])
    case dictionary([(String, PlistValue)])
}

/// Writes the binary property list format (`bplist00`): the objects, each container holding the
/// indexes of its members, then the offset table and the trailer.
enum BinaryPropertyListWriter {
    static func data(_ root: PlistValue) -> Data {
        // Flatten: every value becomes one object; containers refer to their members by index.
        var flat: [(PlistValue, [Int])] = []
        func flatten(_ value: PlistValue) -> Int {
            let index = flat.count
            flat.append((value, []))
            switch value {
            case .array(let items): flat[index].1 = items.map { flatten($0) }
            case .dictionary(let pairs):
                let keys = pairs.map { flatten(.string($0.0)) }
                flat[index].1 = keys + pairs.map { flatten($0.1) }
            default: break
            }
            return index
        }
        _ = flatten(root)
        let referenceSize = byteCount(UInt64(flat.count))
        var out = Data("bplist00".utf8)
        var offsets: [Int] = []
        for (value, members) in flat {
            offsets.append(out.count)
            switch value {
            case .string(let s):
                if s.allSatisfy(\.isASCII) {
                    out.append(contentsOf: marker(0x50, count: s.utf8.count))
                    out.append(contentsOf: Array(s.utf8))
                } else {
                    let units = Array(s.utf16)
                    out.append(contentsOf: marker(0x60, count: units.count))
                    for unit in units { out.append(contentsOf: [UInt8(unit >> 8), UInt8(unit & 0xff)]) }
                }
            case .integer(let i): out.append(contentsOf: integer(i))
            case .real(let d):
                out.append(0x23)
                out.append(contentsOf: bigEndian(d.bitPattern, size: 8))
            case .uid(let u):
                let size = byteCount(UInt64(u))
                out.append(0x80 | UInt8(size - 1))
                out.append(contentsOf: bigEndian(UInt64(u), size: size))
            case .array:
                out.append(contentsOf: marker(0xA0, count: members.count))
                for member in members { out.append(contentsOf: bigEndian(UInt64(member), size: referenceSize)) }
            case .dictionary:
                out.append(contentsOf: marker(0xD0, count: members.count / 2))
                for member in members { out.append(contentsOf: bigEndian(UInt64(member), size: referenceSize)) }
            }
        }
        let tableOffset = out.count
        let offsetSize = byteCount(UInt64(tableOffset))
        for offset in offsets { out.append(contentsOf: bigEndian(UInt64(offset), size: offsetSize)) }
        out.append(contentsOf: [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)])
        out.append(contentsOf: bigEndian(UInt64(flat.count), size: 8))
        out.append(contentsOf: bigEndian(0, size: 8))
        out.append(contentsOf: bigEndian(UInt64(tableOffset), size: 8))
        return out
    }

    private static func byteCount(_ value: UInt64) -> Int {
        value <= 0xff ? 1 : value <= 0xffff ? 2 : value <= 0xffff_ffff ? 4 : 8
    }

    private static func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
        (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    /// An integer object: 1, 2, 4 or 8 bytes, big-endian; negative values take 8.
    private static func integer(_ value: Int64) -> [UInt8] {
        let size = value < 0 ? 8 : byteCount(UInt64(value))
        let power: UInt8 = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3
        return [0x10 | power] + bigEndian(UInt64(bitPattern: value), size: size)
    }

    /// A type marker with its count: in the low nibble below 15, else 0xF and an integer object.
    private static func marker(_ type: UInt8, count: Int) -> [UInt8] {
        count < 15 ? [type | UInt8(count)] : [type | 0x0f] + integer(Int64(count))
    }
}
