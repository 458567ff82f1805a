/// The attribute names of one entity, in model order, shared by every object of the entity.
public final class AttributeLayout: Sendable {
    /// The names, in order.
    public let names: [String]
    /// The position of each name.
    let positions: [String: Int]

    /// Creates a layout of `names`, in order.
    public init(_ names: [String]) {
        self.names = names
        positions = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The layout with no attributes.
    static let empty = AttributeLayout([])

    /// This layout with `name` appended.
    func appending(_ name: String) -> AttributeLayout { AttributeLayout(names + [name]) }
}

/// The attribute values of one object, by name.
///
/// It reads like a `[String: AttributeValue]` (subscript by name, `keys`, iteration as key/value
/// pairs, dictionary literals) but keeps the values in an array ordered by a layout shared by
/// every object of the entity: building one from a row, copying it and reading it need no hashing
/// of names, which is where a dictionary per object spent most of its time.
public struct AttributeValues: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public typealias Element = (key: String, value: AttributeValue)

    /// The layout the positions follow.
    public private(set) var layout: AttributeLayout
    /// The value at each position of `layout`; nil where the name has no value.
    private(set) var slots: [AttributeValue?]

    /// No values.
    public init() {
        layout = .empty
        slots = []
    }

    /// Values in `layout`'s order (`slots.count` must equal the layout's count).
    init(layout: AttributeLayout, slots: [AttributeValue?]) {
        precondition(layout.names.count == slots.count, "one slot per name of the layout")
        self.layout = layout
        self.slots = slots
    }

    /// The values of a dictionary.
    public init(_ dictionary: [String: AttributeValue]) {
        let names = dictionary.keys.sorted()
        layout = AttributeLayout(names)
        slots = names.map { dictionary[$0] }
    }

    public init(dictionaryLiteral elements: (String, AttributeValue)...) {
        var dictionary: [String: AttributeValue] = [:]
        for (name, value) in elements { dictionary[name] = value }
        self.init(dictionary)
    }

    /// The value of attribute `name`, nil when it has none; setting nil removes it.
    public subscript(name: String) -> AttributeValue? {
        get {
            guard let position = layout.positions[name] else { return nil }
            return slots[position]
        }
        set {
            if let position = layout.positions[name] {
                slots[position] = newValue
            } else if let newValue {
                layout = layout.appending(name)
                slots.append(newValue)
            }
        }
    }

    /// The value at `position` of the layout (for paths that walk the model's attributes in order).
    public subscript(position position: Int) -> AttributeValue? { slots[position] }

    /// Sets the value at `position` of the layout.
    mutating func set(_ value: AttributeValue?, at position: Int) { slots[position] = value }

    /// The same values in storage of their own, copied in a loop compiled for `AttributeValue`:
    /// changing a shared copy makes the array copy itself through the runtime's generic copy, a
    /// call per value.
    func withOwnStorage() -> AttributeValues { AttributeValues(layout: layout, slots: slots.map { $0 }) }

    /// Whether the values follow `layout` (so positions can be used directly).
    public func follows(_ layout: AttributeLayout) -> Bool { self.layout === layout }

    /// The names that have values, in layout order.
    public var keys: [String] { zip(layout.names, slots).compactMap { $1 == nil ? nil : $0 } }

    /// How many names have values.
    public var count: Int { slots.reduce(0) { $0 + ($1 == nil ? 0 : 1) } }

    /// Whether no name has a value.
    public var isEmpty: Bool { !slots.contains { $0 != nil } }

    /// The values as a dictionary.
    public var dictionary: [String: AttributeValue] {
        var result: [String: AttributeValue] = [:]
        for (name, value) in self { result[name] = value }
        return result
    }

    public func makeIterator() -> some IteratorProtocol<Element> {
        zip(layout.names, slots).lazy.compactMap { name, value in value.map { (key: name, value: $0) } }
            .makeIterator()
    }

    public static func == (lhs: AttributeValues, rhs: AttributeValues) -> Bool {
        if lhs.layout === rhs.layout { return lhs.slots == rhs.slots }
        return lhs.dictionary == rhs.dictionary
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent, to agree with `==` across layouts.
        var combined = 0
        for (name, value) in self {
            var pair = Hasher()
            pair.combine(name)
            pair.combine(value)
            combined ^= pair.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }

    public var description: String { dictionary.description }
}
