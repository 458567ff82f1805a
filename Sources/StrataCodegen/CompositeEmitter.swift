import Foundation
import Strata

/// Writes the struct of a composite attribute's value (Core Data's `NSCompositeAttributeDescription`):
/// a `Sendable`, `Hashable` value with a property per element, a nested struct per nested
/// composite, and its conversions from and to the JSON object the attribute holds.
///
/// An element reads as its type; a missing non-optional element reads as the type's empty value,
/// as a non-optional attribute does (a save refuses a composite that lacks it).
struct CompositeEmitter {
    let context: GenerationContext
    let attribute: AttributeDescription
    let typeName: String

    func emit(into out: inout SwiftWriter) {
        let elements = attribute.elements ?? []
        // Element names: their own scope, keeping the struct's `json` and the type names free.
        var names = MemberNames(
            reserved: Set(context.typeNames.values).union([
                typeName, "json", "Swift", "Foundation", "FoundationEssentials", context.runtime,
            ]))
        let named = elements.map { (element: $0, name: names.claim($0.name)) }
        let nestedTypes = named.filter { $0.element.isComposite }.map {
            (element: $0.element, type: names.claim(SwiftNames.capitalized($0.name)))
        }
        let access = context.access
        out.doc("The value of the composite attribute `\(attribute.name)`: one property per element.")
        out.block("\(access)struct \(typeName): Swift.Sendable, Swift.Hashable") { out in
            for nested in nestedTypes {
                CompositeEmitter(context: context, attribute: nested.element, typeName: nested.type).emit(into: &out)
                out.line("")
            }
            for (element, name) in named {
                let type = swiftType(element, nestedTypes)
                out.doc(documentation(element))
                out.line("\(access)var \(SwiftNames.escaped(name)): \(type)")
            }
            out.line("")
            out.doc("A value with the given elements.")
            let parameters = named.map { element, name in
                "\(SwiftNames.escaped(name)): \(swiftType(element, nestedTypes)) = \(emptyValue(element, nestedTypes))"
            }
            out.block("\(access)init(\(parameters.joined(separator: ", ")))") { out in
                for (_, name) in named { out.line("self.\(SwiftNames.escaped(name)) = \(SwiftNames.escaped(name))") }
            }
            out.line("")
            out.doc("The value a composite attribute's JSON object holds (null: every element empty).")
            out.block("\(access)init(json: \(context.runtime).JSONValue)") { out in
                for (element, name) in named {
                    out.line("\(SwiftNames.escaped(name)) = \(read(element, nestedTypes))")
                }
            }
            out.line("")
            out.doc("The JSON object the composite attribute holds.")
            out.block("\(access)var json: \(context.runtime).JSONValue") { out in
                let members = named.map { element, name in
                    "\(context.literal(element.name)): \(write(element, SwiftNames.escaped(name)))"
                }
                out.line(".object([\(members.isEmpty ? ":" : members.joined(separator: ", "))])")
            }
        }
    }

    private func nestedType(_ element: AttributeDescription, _ nested: [(element: AttributeDescription, type: String)])
        -> String
    {
        nested.first { $0.element.name == element.name }?.type ?? "\(context.runtime).JSONValue"
    }

    private func swiftType(_ element: AttributeDescription, _ nested: [(element: AttributeDescription, type: String)])
        -> String
    {
        let base = element.isComposite ? nestedType(element, nested) : context.swiftType(of: element.type)
        return element.isOptional ? base + "?" : base
    }

    private func emptyValue(_ element: AttributeDescription, _ nested: [(element: AttributeDescription, type: String)])
        -> String
    {
        if element.isOptional { return "nil" }
        if element.isComposite { return "\(nestedType(element, nested))()" }
        return "\(context.swiftType(of: element.type)).emptyValue"
    }

    private func read(_ element: AttributeDescription, _ nested: [(element: AttributeDescription, type: String)])
        -> String
    {
        let key = context.literal(element.name)
        if element.isComposite {
            let type = nestedType(element, nested)
            let member = "json.compositeMember(\(key)).map(\(type).init(json:))"
            return element.isOptional ? member : "\(member) ?? \(type)()"
        }
        let valueType = context.swiftType(of: element.type)
        let value = "json.compositeElement(\(key), .\(element.type.rawValue), as: \(valueType).self)"
        return element.isOptional ? value : "\(value) ?? \(valueType).emptyValue"
    }

    private func write(_ element: AttributeDescription, _ name: String) -> String {
        if element.isComposite { return element.isOptional ? "\(name)?.json ?? .null" : "\(name).json" }
        return "\(context.runtime).JSONValue(compositeElement: \(name))"
    }

    private func documentation(_ element: AttributeDescription) -> String {
        var lines: [String] = []
        if let documentation = element.documentation, !documentation.isEmpty { lines += [documentation, ""] }
        let type = element.isComposite ? "composite" : element.type.rawValue
        lines.append("`\(element.name)`: \(type), \(element.isOptional ? "optional" : "non-optional").")
        return lines.joined(separator: "\n")
    }
}
