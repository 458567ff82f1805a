import Foundation
import Strata

/// Writes the struct of one entity.
struct EntityEmitter {
    let context: GenerationContext
    let entity: EntityDescription

    private var model: ObjectModel { context.model }
    private var runtime: String { context.runtime }
    private var access: String { context.access }
    private var typeName: String { context.typeName(entity.name) }

    /// A property's model name and the Swift name it was given.
    struct Named<Item> {
        var item: Item
        var swiftName: String
    }

    /// The Swift names of the entity's members, handed out in a fixed order.
    struct Members {
        var attributes: [Named<AttributeDescription>] = []
        var relationships: [Named<RelationshipDescription>] = []
        /// Per to-many relationship (by model name): its `addTo…` and `removeFrom…` names.
        var helpers: [String: (add: String, remove: String)] = [:]
        var fetched: [Named<FetchedPropertyDescription>] = []
        var ancestors: [Named<String>] = []
        var templates: [Named<FetchRequestTemplate>] = []
        /// Per composite attribute (by model name): the name of the struct of its value.
        var composites: [String: String] = [:]
    }

    /// Names every member: attributes, relationships, their helpers, fetched properties,
    /// conversions to ancestors, templates; each takes the first free name.
    func members() -> Members {
        // Module names would shadow `Swift.String` and the rest; entity type names would shadow the
        // types in expressions (`Set.self`, `\Set.data`).
        var names = MemberNames(
            alsoReserved: Set(context.typeNames.values).union(["Swift", "Foundation", "FoundationEssentials", runtime]))
        var members = Members()
        for attribute in model.attributes(of: entity.name) {
            members.attributes.append(Named(item: attribute, swiftName: names.claim(attribute.name)))
        }
        let relationships = model.relationships(of: entity.name)
        for relationship in relationships {
            members.relationships.append(Named(item: relationship, swiftName: names.claim(relationship.name)))
        }
        for relationship in relationships where relationship.isToMany {
            let base = SwiftNames.capitalized(SwiftNames.identifier(relationship.name))
            members.helpers[relationship.name] = (names.claim("addTo" + base), names.claim("removeFrom" + base))
        }
        for property in model.fetchedProperties(of: entity.name) {
            members.fetched.append(Named(item: property, swiftName: names.claim(property.name)))
        }
        var ancestor = entity.parent
        while let name = ancestor {
            members.ancestors.append(Named(item: name, swiftName: names.claim("as" + context.typeName(name))))
            ancestor = model.entity(named: name)?.parent
        }
        for template in model.fetchRequestTemplates where template.entity == entity.name {
            members.templates.append(Named(item: template, swiftName: names.claim(template.name)))
        }
        for attribute in members.attributes where attribute.item.isComposite {
            members.composites[attribute.item.name] = names.claim(SwiftNames.capitalized(attribute.swiftName))
        }
        return members
    }

    func emit(into out: inout SwiftWriter) {
        let members = members()
        out.doc(entityDocumentation())
        out.block("\(access)struct \(typeName): \(runtime).TypedObject") { out in
            emitBasics(members, into: &out)
            for attribute in members.attributes {
                out.line("")
                if let composite = members.composites[attribute.item.name] {
                    emitComposite(attribute, typeName: composite, into: &out)
                } else {
                    emitAttribute(attribute, into: &out)
                }
            }
            for relationship in members.relationships {
                out.line("")
                emitRelationship(relationship, helpers: members.helpers[relationship.item.name], into: &out)
            }
            for property in members.fetched {
                out.line("")
                emitFetchedProperty(property, into: &out)
            }
            for ancestor in members.ancestors {
                let type = context.typeName(ancestor.item)
                out.line("")
                out.doc("The same object viewed as its ancestor entity `\(ancestor.item)`.")
                out.line(
                    "\(access)var \(SwiftNames.escaped(ancestor.swiftName)): \(type) { \(type)(unchecked: managedObject) }"
                )
            }
            for template in members.templates {
                out.line("")
                TemplateEmitter(context: context, template: template.item, swiftName: template.swiftName)
                    .emit(into: &out)
            }
        }
    }

    private func entityDocumentation() -> String {
        var lines: [String] = []
        if let documentation = entity.documentation, !documentation.isEmpty { lines += [documentation, ""] }
        lines.append(
            "The entity `\(entity.name)` of the model `\(model.name)`, as a typed view of its managed objects.")
        if let parent = entity.parent {
            lines.append("A subentity of `\(parent)`: it declares the inherited properties as well.")
        }
        if entity.isAbstract { lines.append("Abstract: objects are inserted as one of its subentities.") }
        lines.append(
            "Not `Sendable`, as its managed object is not: it belongs to its context; pass `typedObjectID` "
                + "to other contexts and tasks.")
        return lines.joined(separator: "\n")
    }

    private func emitBasics(_ members: Members, into out: inout SwiftWriter) {
        let family = model.entityAndSubentities(of: entity.name).sorted().map(context.literal).joined(separator: ", ")
        out.doc("The model's name of the entity.")
        out.line("\(access)static let entityName = \(context.literal(entity.name))")
        out.doc("The entity and its subentities: the objects this type views.")
        out.line("\(access)static let entityFamily: Swift.Set<Swift.String> = [\(family)]")
        out.doc("The model property behind each key path, for typed filters and sorts.")
        let keyed =
            members.attributes.map { ($0.swiftName, $0.item.name) }
            + members.relationships.map { ($0.swiftName, $0.item.name) }
        if keyed.isEmpty {
            out.line("\(access)static let propertyNames = \(runtime).PropertyNames<\(typeName)>([:])")
        } else {
            out.line("\(access)static let propertyNames = \(runtime).PropertyNames<\(typeName)>([")
            for (swiftName, name) in keyed {
                out.line("    \\\(typeName).\(SwiftNames.escaped(swiftName)): \(context.literal(name)),")
            }
            out.line("])")
        }
        out.line("")
        out.doc("The object of the context this is a view of.")
        out.line("\(access)let managedObject: \(runtime).ManagedObject")
        out.line("")
        out.doc("A view of `object`, which must be a `\(entity.name)` (or of one of its subentities).")
        out.line("\(access)init(unchecked object: \(runtime).ManagedObject) { managedObject = object }")
        if !entity.isAbstract {
            out.line("")
            out.doc("Inserts a new `\(entity.name)` into `context`, with the model's default values.")
            out.line(
                "\(access)init(context: \(runtime).ObjectContext) { managedObject = context.insertGenerated(\(typeName).self) }"
            )
        }
    }

    private func emitAttribute(_ named: Named<AttributeDescription>, into out: inout SwiftWriter) {
        let attribute = named.item
        let derived = model.isDerived(attribute.name, of: entity.name)
        let valueType = context.swiftType(of: attribute.type)
        let key = context.literal(attribute.name)
        let name = SwiftNames.escaped(named.swiftName)
        out.doc(attributeDocumentation(attribute, derived: derived))
        let type = attribute.isOptional ? valueType + "?" : valueType
        let read =
            attribute.isOptional
            ? "managedObject.typedValue(forKey: \(key), as: \(valueType).self)"
            : "managedObject.typedValue(nonOptional: \(key), as: \(valueType).self)"
        if derived {
            out.line("\(access)var \(name): \(type) { \(read) }")
            return
        }
        out.block("\(access)var \(name): \(type)") { out in
            out.line("get { \(read) }")
            out.line("nonmutating set { managedObject.setTypedValue(newValue, forKey: \(key)) }")
        }
    }

    /// A composite attribute: a property of the struct of its value, and that struct.
    private func emitComposite(_ named: Named<AttributeDescription>, typeName: String, into out: inout SwiftWriter) {
        let attribute = named.item
        let key = context.literal(attribute.name)
        let json = "\(runtime).JSONValue"
        out.doc(attributeDocumentation(attribute, derived: false))
        out.block("\(access)var \(SwiftNames.escaped(named.swiftName)): \(typeName)\(attribute.isOptional ? "?" : "")")
        {
            out in
            if attribute.isOptional {
                out.line(
                    "get { managedObject.typedValue(forKey: \(key), as: \(json).self).map(\(typeName).init(json:)) }")
                out.line("nonmutating set { managedObject.setTypedValue(newValue?.json, forKey: \(key)) }")
            } else {
                out.line("get { \(typeName)(json: managedObject.typedValue(nonOptional: \(key), as: \(json).self)) }")
                out.line("nonmutating set { managedObject.setTypedValue(newValue.json, forKey: \(key)) }")
            }
        }
        out.line("")
        CompositeEmitter(context: context, attribute: attribute, typeName: typeName).emit(into: &out)
    }

    private func attributeDocumentation(_ attribute: AttributeDescription, derived: Bool) -> String {
        var lines: [String] = []
        if let documentation = attribute.documentation, !documentation.isEmpty { lines += [documentation, ""] }
        var summary = "`\(attribute.name)`: \(attribute.coreData?.attributeType ?? attribute.type.rawValue)"
        summary += attribute.isOptional ? ", optional" : ", non-optional"
        if let value = attribute.defaultValue, !value.isNull { summary += ", default `\(value.json.jsonText)`" }
        if let derivation = attribute.derivation { summary += ", derived from `\(derivation)`" }
        lines.append(summary + ".")
        if attribute.isComposite {
            lines.append("A composite attribute: its value is a struct with one property per element.")
        }
        if derived { lines.append("Read-only: every save computes it.") }
        if !attribute.isOptional && attribute.defaultValue == nil && !derived {
            lines.append("Reads as the type's empty value until set; a save refuses it unset.")
        }
        return lines.joined(separator: "\n")
    }

    private func emitRelationship(
        _ named: Named<RelationshipDescription>, helpers: (add: String, remove: String)?, into out: inout SwiftWriter
    ) {
        let relationship = named.item
        let target = context.typeName(relationship.destination)
        let key = context.literal(relationship.name)
        let name = SwiftNames.escaped(named.swiftName)
        out.doc(relationshipDocumentation(relationship))
        guard relationship.isToMany, let helpers else {
            out.block("\(access)var \(name): \(target)?") { out in
                out.line("get { managedObject.typedObject(forKey: \(key), as: \(target).self) }")
                out.line("nonmutating set { managedObject.setTypedObject(newValue, forKey: \(key)) }")
            }
            return
        }
        let collection = relationship.isOrdered ? "[\(target)]" : "Swift.Set<\(target)>"
        let read = "managedObject.typedObjects(forKey: \(key), as: \(target).self)"
        out.block("\(access)var \(name): \(collection)") { out in
            out.line(relationship.isOrdered ? "get { \(read) }" : "get { Swift.Set(\(read)) }")
            out.line("nonmutating set { managedObject.setTypedObjects(newValue, forKey: \(key)) }")
        }
        let add = SwiftNames.escaped(helpers.add)
        let remove = SwiftNames.escaped(helpers.remove)
        let end = relationship.isOrdered ? " (at the end)" : ""
        out.doc("Adds `value` to `\(relationship.name)`\(end), keeping the inverse in step.")
        out.line("\(access)func \(add)(_ value: \(target)) { managedObject.addTypedObject(value, toKey: \(key)) }")
        out.doc("Adds `values` to `\(relationship.name)`\(end), keeping the inverses in step.")
        out.line(
            "\(access)func \(add)(_ values: \(collection)) { managedObject.addTypedObjects(values, toKey: \(key)) }")
        out.doc("Removes `value` from `\(relationship.name)`, keeping the inverse in step.")
        out.line(
            "\(access)func \(remove)(_ value: \(target)) { managedObject.removeTypedObject(value, fromKey: \(key)) }")
        out.doc("Removes `values` from `\(relationship.name)`, keeping the inverses in step.")
        out.line(
            "\(access)func \(remove)(_ values: \(collection)) { managedObject.removeTypedObjects(values, fromKey: \(key)) }"
        )
    }

    private func relationshipDocumentation(_ relationship: RelationshipDescription) -> String {
        var lines: [String] = []
        if let documentation = relationship.documentation, !documentation.isEmpty { lines += [documentation, ""] }
        let kind =
            relationship.isToMany ? (relationship.isOrdered ? "ordered to-many" : "to-many") : "to-one"
        var summary = "`\(relationship.name)`: \(kind) to `\(relationship.destination)`"
        if let inverse = relationship.inverse { summary += ", inverse `\(inverse)`" }
        summary += ", delete rule \(relationship.deleteRule.rawValue)"
        if !relationship.isOptional { summary += ", required" }
        lines.append(summary + ". Setting it keeps the inverse in step.")
        return lines.joined(separator: "\n")
    }

    private func emitFetchedProperty(_ named: Named<FetchedPropertyDescription>, into out: inout SwiftWriter) {
        let property = named.item
        let target = context.typeName(property.entity)
        var lines: [String] = []
        if let documentation = property.documentation, !documentation.isEmpty { lines += [documentation, ""] }
        lines.append(
            "Fetched property `\(property.name)`: the `\(property.entity)` objects matching `\(property.predicate)`, "
                + "fetched on every read.")
        out.doc(lines.joined(separator: "\n"))
        out.block("\(access)var \(SwiftNames.escaped(named.swiftName)): [\(target)]") { out in
            out.block("get throws(\(runtime).ContextError)") { out in
                out.line(
                    "try managedObject.typedFetchedProperty(\(context.literal(property.name)), as: \(target).self)")
            }
        }
    }
}
