import Foundation

/// One version of a Core Data model, written as Xcode saves it: an `.xcdatamodel` folder whose
/// `contents` is the model's XML.
public struct XcodeModelVersion: Sendable {
    /// The version's name, the `.xcdatamodel` folder's name without the extension (`Notes 2`).
    public var name: String
    /// The model's `userDefinedModelVersionIdentifier` (`2`).
    public var identifier: String
    /// The entities.
    public var entities: [XcodeEntity]
    /// The composites (`<composite name=…>` elements) attributes of type `Composite` name.
    public var composites: [XcodeComposite]

    /// A version named `name`.
    public init(_ name: String, identifier: String, entities: [XcodeEntity], composites: [XcodeComposite] = []) {
        self.name = name
        self.identifier = identifier
        self.entities = entities
        self.composites = composites
    }
}

/// A composite attribute type of an ``XcodeModelVersion``: its name and its elements (attributes;
/// one of type `Composite` nests another composite).
public struct XcodeComposite: Sendable {
    /// The composite's name, as attributes name it in `composite=`.
    public var name: String
    /// Its elements.
    public var elements: [XcodeAttribute]

    /// A composite with its elements.
    public init(_ name: String, elements: [XcodeAttribute]) {
        self.name = name
        self.elements = elements
    }
}

/// An entity of an ``XcodeModelVersion``.
public struct XcodeEntity: Sendable {
    /// The entity's name.
    public var name: String
    /// Its attributes.
    public var attributes: [XcodeAttribute]
    /// Its relationships.
    public var relationships: [XcodeRelationship]

    /// An entity with its properties.
    public init(_ name: String, attributes: [XcodeAttribute], relationships: [XcodeRelationship] = []) {
        self.name = name
        self.attributes = attributes
        self.relationships = relationships
    }
}

/// An attribute: its Xcode type name (`String`, `Integer 16`, `Boolean`, `Double`, `Date`),
/// whether it is optional, and its default as Xcode writes it (`defaultValueString`).
public struct XcodeAttribute: Sendable {
    /// The attribute's name.
    public var name: String
    /// The `attributeType` Xcode writes.
    public var type: String
    /// Whether it may be nil.
    public var optional: Bool
    /// The `defaultValueString`, if any.
    public var defaultValue: String?
    /// For type `Composite`: the composite it is (`composite=`).
    public var composite: String?

    /// An attribute.
    public init(
        _ name: String, _ type: String, optional: Bool = false, default defaultValue: String? = nil,
        composite: String? = nil
    ) {
        self.name = name
        self.type = type
        self.optional = optional
        self.defaultValue = defaultValue
        self.composite = composite
    }
}

/// A relationship, always declared with its inverse (as Xcode asks).
public struct XcodeRelationship: Sendable {
    /// The relationship's name.
    public var name: String
    /// The destination entity.
    public var destination: String
    /// The inverse relationship's name on the destination.
    public var inverse: String
    /// Whether it is to-many.
    public var toMany: Bool
    /// Whether it is an ordered to-many.
    public var ordered: Bool

    /// An optional relationship with its inverse, nullified on delete.
    public init(_ name: String, to destination: String, inverse: String, toMany: Bool = false, ordered: Bool = false) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.toMany = toMany
        self.ordered = ordered
    }
}

/// Writes model bundles as Xcode saves them: an `.xcdatamodeld` folder holding one `.xcdatamodel`
/// folder per version (each with its `contents` XML) and `.xccurrentversion`, the property list
/// naming the current version.
public enum XcodeModelWriter {
    /// Writes `<name>.xcdatamodeld` into `folder` with `versions`, `current` (a version's name)
    /// marked current; returns the bundle's URL.
    @discardableResult
    public static func writeBundle(named name: String, versions: [XcodeModelVersion], current: String, in folder: URL)
        throws -> URL
    {
        let bundle = folder.appendingPathComponent("\(name).xcdatamodeld")
        for version in versions {
            let model = bundle.appendingPathComponent("\(version.name).xcdatamodel")
            try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
            try Data(contents(of: version).utf8).write(to: model.appendingPathComponent("contents"))
        }
        let marker = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>_XCCurrentVersionName</key>
            \t<string>\(escaped(current)).xcdatamodel</string>
            </dict>
            </plist>

            """
        try Data(marker.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
        return bundle
    }

    /// The `contents` XML of one version, in Xcode's current layout.
    public static func contents(of version: XcodeModelVersion) -> String {
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#,
            #"<model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22522" "#
                + #"systemVersion="23F79" minimumToolsVersion="Automatic" sourceLanguage="Swift" "#
                + #"userDefinedModelVersionIdentifier="\#(escaped(version.identifier))">"#,
        ]
        for entity in version.entities {
            let name = escaped(entity.name)
            lines.append(
                #"    <entity name="\#(name)" representedClassName="\#(name)" syncable="YES" codeGenerationType="class">"#
            )
            for attribute in entity.attributes { lines.append("        " + line(of: attribute)) }
            for relationship in entity.relationships {
                let destination = escaped(relationship.destination)
                lines.append(
                    #"        <relationship name="\#(escaped(relationship.name))" optional="YES" "#
                        + (relationship.toMany ? #"toMany="YES" "# : #"maxCount="1" "#)
                        + (relationship.ordered ? #"ordered="YES" "# : "")
                        + #"deletionRule="Nullify" destinationEntity="\#(destination)" "#
                        + #"inverseName="\#(escaped(relationship.inverse))" inverseEntity="\#(destination)"/>"#)
            }
            lines.append("    </entity>")
        }
        for composite in version.composites {
            lines.append(#"    <composite name="\#(escaped(composite.name))">"#)
            for element in composite.elements { lines.append("        " + line(of: element)) }
            lines.append("    </composite>")
        }
        lines.append("</model>")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The `<attribute …/>` element of `attribute`.
    static func line(of attribute: XcodeAttribute) -> String {
        var fields = [#"name="\#(escaped(attribute.name))""#]
        if attribute.optional { fields.append(#"optional="YES""#) }
        fields.append(#"attributeType="\#(escaped(attribute.type))""#)
        if let value = attribute.defaultValue { fields.append(#"defaultValueString="\#(escaped(value))""#) }
        if ["Integer 16", "Integer 32", "Integer 64", "Double", "Float", "Boolean"].contains(attribute.type) {
            fields.append(#"usesScalarValueType="YES""#)
        }
        if let composite = attribute.composite { fields.append(#"composite="\#(escaped(composite))""#) }
        return "<attribute \(fields.joined(separator: " "))/>"
    }

    /// `text` with XML's special characters escaped.
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
