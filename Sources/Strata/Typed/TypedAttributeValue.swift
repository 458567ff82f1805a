import Foundation

/// A Swift type a generated property gives an attribute: how it reads from and writes to an
/// ``AttributeValue``, and what a non-optional attribute that holds no value reads as.
///
/// | Attribute type | Swift type |
/// |---|---|
/// | `string` | `String` |
/// | `integer16` / `integer32` / `integer64` | `Int16` / `Int32` / `Int64` |
/// | `double` / `float` | `Double` / `Float` |
/// | `decimal` | `Decimal` |
/// | `boolean` | `Bool` |
/// | `date` | `Date` |
/// | `binary` | `Data` |
/// | `uuid` | `UUID` |
/// | `uri` | `URL` |
/// | `json` (Core Data's Transformable) | ``JSONValue`` |
public protocol TypedAttributeValue: Sendable, Hashable {
    /// The value `attributeValue` holds, or nil when it holds none (or one of another type).
    init?(attributeValue: AttributeValue)
    /// The value as contexts and stores carry it.
    var attributeValue: AttributeValue { get }
    /// What a non-optional attribute reads as while it holds no value (inserted without a model
    /// default and not set yet): the empty string, zero, false, the 1970 epoch, no bytes, the nil
    /// UUID, `about:blank`, JSON null. A save still refuses the missing value.
    static var emptyValue: Self { get }
}

extension String: TypedAttributeValue {
    /// The string of a `.string` value.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .string(let s) = attributeValue else { return nil }
        self = s
    }
    /// `.string`.
    @inlinable public var attributeValue: AttributeValue { .string(self) }
    /// `""`.
    public static var emptyValue: String { "" }
}

extension Int16: TypedAttributeValue {
    /// The integer of an `.integer` value in range.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .integer(let i) = attributeValue, let value = Int16(exactly: i) else { return nil }
        self = value
    }
    /// `.integer`.
    @inlinable public var attributeValue: AttributeValue { .integer(Int64(self)) }
    /// 0.
    public static var emptyValue: Int16 { 0 }
}

extension Int32: TypedAttributeValue {
    /// The integer of an `.integer` value in range.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .integer(let i) = attributeValue, let value = Int32(exactly: i) else { return nil }
        self = value
    }
    /// `.integer`.
    @inlinable public var attributeValue: AttributeValue { .integer(Int64(self)) }
    /// 0.
    public static var emptyValue: Int32 { 0 }
}

extension Int64: TypedAttributeValue {
    /// The integer of an `.integer` value.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .integer(let i) = attributeValue else { return nil }
        self = i
    }
    /// `.integer`.
    @inlinable public var attributeValue: AttributeValue { .integer(self) }
    /// 0.
    public static var emptyValue: Int64 { 0 }
}

extension Double: TypedAttributeValue {
    /// The number of a `.double` (or `.integer`) value.
    @inlinable public init?(attributeValue: AttributeValue) {
        switch attributeValue {
        case .double(let d): self = d
        case .integer(let i): self = Double(i)
        default: return nil
        }
    }
    /// `.double`.
    @inlinable public var attributeValue: AttributeValue { .double(self) }
    /// 0.
    public static var emptyValue: Double { 0 }
}

extension Float: TypedAttributeValue {
    /// The number of a `.double` (or `.integer`) value, rounded to a `Float`.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard let d = Double(attributeValue: attributeValue) else { return nil }
        self = Float(d)
    }
    /// `.double` (a float attribute keeps a `Double`).
    @inlinable public var attributeValue: AttributeValue { .double(Double(self)) }
    /// 0.
    public static var emptyValue: Float { 0 }
}

extension Decimal: TypedAttributeValue {
    /// The number of a `.decimal` (or `.integer`) value.
    @inlinable public init?(attributeValue: AttributeValue) {
        switch attributeValue {
        case .decimal(let d): self = d
        case .integer(let i): self = Decimal(i)
        default: return nil
        }
    }
    /// `.decimal`.
    @inlinable public var attributeValue: AttributeValue { .decimal(self) }
    /// 0.
    public static var emptyValue: Decimal { 0 }
}

extension Bool: TypedAttributeValue {
    /// The Boolean of a `.boolean` value.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .boolean(let b) = attributeValue else { return nil }
        self = b
    }
    /// `.boolean`.
    @inlinable public var attributeValue: AttributeValue { .boolean(self) }
    /// false.
    public static var emptyValue: Bool { false }
}

extension Date: TypedAttributeValue {
    /// The date of a `.date` value.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .date(let d) = attributeValue else { return nil }
        self = d
    }
    /// `.date`.
    @inlinable public var attributeValue: AttributeValue { .date(self) }
    /// 1970-01-01T00:00:00Z.
    public static var emptyValue: Date { Date(timeIntervalSince1970: 0) }
}

extension Data: TypedAttributeValue {
    /// The bytes of a `.binary` value.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .binary(let d) = attributeValue else { return nil }
        self = d
    }
    /// `.binary`.
    @inlinable public var attributeValue: AttributeValue { .binary(self) }
    /// No bytes.
    public static var emptyValue: Data { Data() }
}

extension UUID: TypedAttributeValue {
    /// The UUID of a `.uuid` value.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .uuid(let u) = attributeValue else { return nil }
        self = u
    }
    /// `.uuid`.
    @inlinable public var attributeValue: AttributeValue { .uuid(self) }
    /// The nil UUID, 00000000-0000-0000-0000-000000000000.
    public static var emptyValue: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
}

extension URL: TypedAttributeValue {
    /// The URL of a `.uri` value.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .uri(let s) = attributeValue, let url = URL(string: s) else { return nil }
        self = url
    }
    /// `.uri`, the URL's absolute text.
    @inlinable public var attributeValue: AttributeValue { .uri(absoluteString) }
    /// `about:blank`.
    public static var emptyValue: URL { URL(string: "about:blank")! }
}

extension JSONValue: TypedAttributeValue {
    /// The JSON of a `.json` value.
    @inlinable public init?(attributeValue: AttributeValue) {
        guard case .json(let j) = attributeValue else { return nil }
        self = j
    }
    /// `.json`; JSON null is `.null` (no value).
    @inlinable public var attributeValue: AttributeValue { isNull ? .null : .json(self) }
    /// JSON null.
    public static var emptyValue: JSONValue { .null }
}

/// What generated composite structs call: an element's value read from, and written into, the
/// JSON object a composite attribute holds (each element as its type writes it: a date as an
/// RFC 3339 string, a decimal as a string, bytes as base64).
extension JSONValue {
    /// Element `name` of this composite value, of attribute type `type`; nil when it is missing,
    /// null, or not of the type.
    public func compositeElement<Value: TypedAttributeValue>(
        _ name: String, _ type: AttributeType, as valueType: Value.Type = Value.self
    ) -> Value? {
        guard let member = objectValue?[name], let value = AttributeValue(json: member, as: type) else { return nil }
        return Value(attributeValue: value)
    }

    /// Nested composite element `name` of this composite value; nil when it is missing or null.
    public func compositeMember(_ name: String) -> JSONValue? {
        guard let member = objectValue?[name], !member.isNull else { return nil }
        return member
    }

    /// The JSON form of an element's value (null for nil).
    public init<Value: TypedAttributeValue>(compositeElement value: Value?) {
        self = value?.attributeValue.json ?? .null
    }
}
