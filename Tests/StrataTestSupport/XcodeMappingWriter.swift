import Foundation

/// A Core Data mapping model, written as Xcode saves it (see ``XcodeMappingWriter``).
public struct XcodeMappingModel: Sendable {
    /// The source model version's path as Xcode records it (`Notebook/Notes.xcdatamodeld/Notes.xcdatamodel`);
    /// Core Data and Strata take the version's name from its last component.
    public var sourceModelPath: String
    /// The destination model version's path.
    public var destinationModelPath: String
    /// The entity mappings, in the order they run (Xcode's `mappingnumber` 1, 2, …).
    public var entityMappings: [XcodeEntityMapping]

    /// A mapping model from one version of the bundle `bundle` (`Notes.xcdatamodeld`) to another.
    public init(bundle: String, from source: String, to destination: String, entityMappings: [XcodeEntityMapping]) {
        sourceModelPath = "Model/\(bundle)/\(source).xcdatamodel"
        destinationModelPath = "Model/\(bundle)/\(destination).xcdatamodel"
        self.entityMappings = entityMappings
    }
}

/// An entity mapping: its source and destination entities (Xcode names it
/// `<Source>To<Destination>`), Xcode's mapping type, a custom policy class, and the property
/// mappings.
public struct XcodeEntityMapping: Sendable {
    /// The source entity.
    public var source: String
    /// The destination entity.
    public var destination: String
    /// Xcode's `mappingtypename` (`Undefined` for the mappings Xcode generates).
    public var type: String
    /// The `NSEntityMigrationPolicy` subclass, empty for none.
    public var policyClass: String
    /// The attribute mappings.
    public var attributes: [XcodePropertyMapping]
    /// The relationship mappings.
    public var relationships: [XcodePropertyMapping]

    /// An entity mapping.
    public init(
        _ source: String, to destination: String, type: String = "Undefined", policyClass: String = "",
        attributes: [XcodePropertyMapping] = [], relationships: [XcodePropertyMapping] = []
    ) {
        self.source = source
        self.destination = destination
        self.type = type
        self.policyClass = policyClass
        self.attributes = attributes
        self.relationships = relationships
    }
}

/// A property mapping as Xcode keeps it: only the name (the generated expression, the source
/// property of that name), a custom value expression (archived), or, for a relationship, the
/// key path and entity mapping Xcode generates its expression from.
public struct XcodePropertyMapping: Sendable {
    /// The destination property.
    public var name: String
    /// A custom value expression (`valueexpressiondata`), if any.
    public var expression: ArchivedExpression?
    /// A relationship's `sourcekeypath` (`$source.folder`), if any.
    public var sourceKeyPath: String?
    /// A relationship's `sourcemappingname` (the entity mapping that made its objects), if any.
    public var sourceMappingName: String?

    /// A property mapping with Xcode's generated expression: the source property of the same name.
    public static func named(_ name: String) -> XcodePropertyMapping {
        XcodePropertyMapping(name: name, expression: nil, sourceKeyPath: nil, sourceMappingName: nil)
    }

    /// A property mapping with a custom value expression.
    public static func value(_ name: String, _ expression: ArchivedExpression) -> XcodePropertyMapping {
        XcodePropertyMapping(name: name, expression: expression, sourceKeyPath: nil, sourceMappingName: nil)
    }

    /// A relationship mapping as Xcode generates it: the key path and the entity mapping whose
    /// destination objects it takes.
    public static func objects(_ name: String, keyPath: String, mapping: String) -> XcodePropertyMapping {
        XcodePropertyMapping(name: name, expression: nil, sourceKeyPath: keyPath, sourceMappingName: mapping)
    }
}

/// Writes `.xcmappingmodel` folders as Xcode saves them: `xcmapping.xml`, a Core Data XML store
/// (`<database>` with its `<databaseInfo>`, then one `<object>` per mapping object) of Xcode's
/// mapping entities `XDDEVMAPPINGMODEL`, `XDDEVENTITYMAPPING`, `XDDEVATTRIBUTEMAPPING` and
/// `XDDEVRELATIONSHIPMAPPING`, attributes typed as Xcode types them, binary ones base64 in lines
/// of 76 characters, relationships as `idrefs`. The compiled source and destination models
/// Xcode also keeps (`sourcemodeldata`, `destinationmodeldata`) and the store metadata's version
/// hashes are left out: Core Data's mapping readers take the versions from the model bundle.
public enum XcodeMappingWriter {
    /// Writes `<name>.xcmappingmodel` into `folder`; returns its URL.
    @discardableResult
    public static func write(_ mapping: XcodeMappingModel, named name: String, in folder: URL) throws -> URL {
        let url = folder.appendingPathComponent("\(name).xcmappingmodel")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Data(xml(mapping).utf8).write(to: url.appendingPathComponent("xcmapping.xml"))
        return url
    }

    /// The `xcmapping.xml` of `mapping`.
    public static func xml(_ mapping: XcodeMappingModel) -> String {
        var objects = Objects()
        let root = objects.reserve()
        var entityIDs: [String] = []
        for (index, entityMapping) in mapping.entityMappings.enumerated() {
            let id = objects.reserve()
            entityIDs.append(id)
            let attributeIDs = entityMapping.attributes.map {
                objects.property($0, type: "XDDEVATTRIBUTEMAPPING", entityMapping: id)
            }
            let relationshipIDs = entityMapping.relationships.map {
                objects.property($0, type: "XDDEVRELATIONSHIPMAPPING", entityMapping: id)
            }
            objects.set(
                id, type: "XDDEVENTITYMAPPING",
                [
                    attribute("migrationpolicyclassname", "string", entityMapping.policyClass),
                    attribute("sourcename", "string", entityMapping.source),
                    attribute("mappingtypename", "string", entityMapping.type),
                    attribute("mappingnumber", "int16", String(index + 1)),
                    attribute("destinationname", "string", entityMapping.destination),
                    attribute("autogenerateexpression", "bool", "1"),
                    relationship("mappingmodel", "1/1", "XDDEVMAPPINGMODEL", [root]),
                    relationship("attributemappings", "0/0", "XDDEVATTRIBUTEMAPPING", attributeIDs.reversed()),
                    relationship("relationshipmappings", "0/0", "XDDEVRELATIONSHIPMAPPING", relationshipIDs.reversed()),
                ])
        }
        // Xcode lists the entity mappings in no particular order: `mappingnumber` orders them.
        objects.set(
            root, type: "XDDEVMAPPINGMODEL",
            [
                attribute("sourcemodelpath", "string", mapping.sourceModelPath),
                attribute("destinationmodelpath", "string", mapping.destinationModelPath),
                relationship("entitymappings", "0/0", "XDDEVENTITYMAPPING", entityIDs.reversed()),
            ])
        return document(objects)
    }

    private static func document(_ objects: Objects) -> String {
        var text = """
            <?xml version="1.0" standalone="no"?>
            <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">

            <database>
                <databaseInfo>
                    <version>134481920</version>
                    <UUID>\(UUID().uuidString)</UUID>
                    <nextObjectID>\(objects.next)</nextObjectID>
                    <metadata>
                        <plist version="1.0">
                            <dict>
                                <key>NSPersistenceFrameworkVersion</key>
                                <integer>640</integer>
                                <key>NSStoreModelVersionHashesVersion</key>
                                <integer>3</integer>
                                <key>NSStoreModelVersionIdentifiers</key>
                                <array>
                                    <string></string>
                                </array>
                            </dict>
                        </plist>
                    </metadata>
                </databaseInfo>

            """
        for (id, type, lines) in objects.written.sorted(by: {
            $0.0.count == $1.0.count ? $0.0 < $1.0 : $0.0.count < $1.0.count
        }) {
            text += "    <object type=\"\(type)\" id=\"\(id)\">\n"
            for line in lines { text += "        \(line)\n" }
            text += "    </object>\n"
        }
        return text + "</database>"
    }

    private static func attribute(_ name: String, _ type: String, _ value: String) -> String {
        #"<attribute name="\#(name)" type="\#(type)">\#(XcodeModelWriter.escaped(value))</attribute>"#
    }

    private static func relationship(_ name: String, _ type: String, _ destination: String, _ ids: [String])
        -> String
    {
        #"<relationship name="\#(name)" type="\#(type)" destination="\#(destination)" idrefs="\#(ids.joined(separator: " "))"></relationship>"#
    }

    /// The objects of the store, numbered from `z102` as Xcode numbers them.
    private struct Objects {
        var next = 102
        var written: [(String, String, [String])] = []

        mutating func reserve() -> String {
            defer { next += 1 }
            return "z\(next)"
        }

        mutating func set(_ id: String, type: String, _ lines: [String]) { written.append((id, type, lines)) }

        mutating func property(_ mapping: XcodePropertyMapping, type: String, entityMapping: String) -> String {
            let id = reserve()
            var lines: [String] = []
            if let expression = mapping.expression {
                let encoded = expression.archive.base64EncodedString(options: [
                    .lineLength76Characters, .endLineWithLineFeed,
                ])
                lines.append(attribute("valueexpressiondata", "binary", encoded))
            }
            if let name = mapping.sourceMappingName { lines.append(attribute("sourcemappingname", "string", name)) }
            if let path = mapping.sourceKeyPath { lines.append(attribute("sourcekeypath", "string", path)) }
            if type == "XDDEVRELATIONSHIPMAPPING" { lines.append(attribute("autogenerateexpression", "bool", "1")) }
            lines.append(attribute("name", "string", mapping.name))
            lines.append(relationship("entitymapping", "1/1", "XDDEVENTITYMAPPING", [entityMapping]))
            set(id, type: type, lines)
            return id
        }
    }
}
