import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A Core Data mapping model (an Xcode `.xcmappingmodel` folder): how the objects of a store
/// written with one model version become the objects of the next, entity mapping by entity
/// mapping, each destination property's value given by an expression over the source object.
///
/// A mapping model replaces the inferred (lightweight) migration of the step between its two
/// versions, which it names by their `.xcdatamodel` names (`Moody 2` → `Moody 3`). The folder's
/// `xcmapping.xml` is itself a Core Data XML store of Xcode's mapping entities; it is read as it is.
public struct MappingModel: Sendable, Hashable {
    /// The mapping model's name (its folder's name without the extension).
    public var name: String
    /// The name of the model version it migrates from (the source `.xcdatamodel`'s name).
    public var sourceModelName: String
    /// The name of the model version it migrates to.
    public var destinationModelName: String
    /// The entity mappings, in the order they run.
    public var entityMappings: [EntityMapping]

    /// Creates a mapping model.
    public init(name: String, sourceModelName: String, destinationModelName: String, entityMappings: [EntityMapping]) {
        self.name = name
        self.sourceModelName = sourceModelName
        self.destinationModelName = destinationModelName
        self.entityMappings = entityMappings
    }

    /// The entity mapping named `name`.
    public func entityMapping(named name: String) -> EntityMapping? { entityMappings.first { $0.name == name } }
}

/// One entity mapping: the objects of a source entity that become objects of a destination entity.
public struct EntityMapping: Sendable, Hashable {
    /// The mapping's name, `<Source>To<Destination>` as Xcode names them (expressions refer to it).
    public var name: String
    /// The source entity; nil for a mapping that only adds a destination entity.
    public var sourceEntity: String?
    /// The destination entity; nil for a mapping that only removes a source entity.
    public var destinationEntity: String?
    /// Xcode's mapping type (`Undefined`, `Copy`, `Transform`, `Add`, `Remove`, `Custom`).
    public var mappingType: String
    /// The custom migration policy class (an `NSEntityMigrationPolicy` subclass in the app), if any.
    public var policyClassName: String?
    /// A custom source expression (which source objects the mapping takes), if any.
    public var sourceExpression: MappingExpression?
    /// How each destination attribute gets its value.
    public var attributeMappings: [PropertyMapping]
    /// How each destination relationship gets its objects.
    public var relationshipMappings: [PropertyMapping]
}

/// How one destination property gets its value.
public struct PropertyMapping: Sendable, Hashable {
    /// The destination property.
    public var name: String
    /// Its value expression; nil: the destination property keeps its default.
    public var expression: MappingExpression?
}

/// A value expression of a property mapping, as far as Strata evaluates them; anything else is
/// kept as ``unsupported(_:)`` and refused when the mapping is planned.
public indirect enum MappingExpression: Sendable, Hashable, CustomStringConvertible {
    /// `$variable.key.path` (`$source.title`, `$source.country.continent`, `$manager`).
    case keyPath(variable: String, path: [String])
    /// A constant: nil, a string, an integer, a floating-point number or a Boolean.
    case constant(MappingConstant)
    /// `FUNCTION(operand, "selector", arguments…)`.
    case function(operand: MappingExpression, selector: String, arguments: [MappingExpression])
    /// An expression Strata does not evaluate, described as well as it can be.
    case unsupported(String)

    /// The selector Xcode writes for a relationship's objects: the destination objects that the
    /// named entity mapping made of the given source objects.
    public static let destinationInstancesSelector = "destinationInstancesForEntityMappingNamed:sourceInstances:"

    /// The expression in Core Data's expression syntax.
    public var description: String {
        switch self {
        case .keyPath(let variable, let path):
            return ((variable.isEmpty ? [] : ["$" + variable]) + path).joined(separator: ".")
        case .constant(let constant): return constant.description
        case .function(let operand, let selector, let arguments):
            let parts = [operand.description, "\"\(selector)\""] + arguments.map(\.description)
            return "FUNCTION(\(parts.joined(separator: ", ")))"
        case .unsupported(let text): return text
        }
    }

    /// Parses `$variable.key.path`; anything else is ``unsupported(_:)``.
    static func parseKeyPath(_ text: String) -> MappingExpression {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let parts = trimmed.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let first = parts.first, first.hasPrefix("$"), first.count > 1,
            parts.allSatisfy({ part in
                !part.isEmpty && part.allSatisfy { $0.isLetter || $0.isNumber || "_@$".contains($0) }
            })
        else { return .unsupported(trimmed) }
        return .keyPath(variable: String(first.dropFirst()), path: Array(parts.dropFirst()))
    }
}

/// A constant of a value expression.
public enum MappingConstant: Sendable, Hashable, CustomStringConvertible {
    /// `nil`.
    case null
    /// A string.
    case string(String)
    /// An integer.
    case integer(Int64)
    /// A floating-point number.
    case double(Double)
    /// `YES` or `NO`.
    case boolean(Bool)

    /// The constant in Core Data's expression syntax.
    public var description: String {
        switch self {
        case .null: "nil"
        case .string(let s): "\"\(s)\""
        case .integer(let i): String(i)
        case .double(let d): String(d)
        case .boolean(let b): b ? "YES" : "NO"
        }
    }
}

extension MappingModel {
    /// Reads an `.xcmappingmodel` folder (or its `xcmapping.xml`).
    /// - Throws: ``ModelError`` of kind `.unreadable` or `.malformed`, naming the file.
    public static func load(contentsOf url: URL) throws(ModelError) -> MappingModel {
        let file = url.pathExtension == "xcmappingmodel" ? url.appendingPathComponent("xcmapping.xml") : url
        let name =
            (url.pathExtension == "xcmappingmodel" ? url : url.deletingLastPathComponent())
            .deletingPathExtension().lastPathComponent
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw ModelError(
                .unreadable, file: file.path,
                issues: [ModelIssue(.invalidValue, "cannot read the file: \(error.localizedDescription)")])
        }
        let objects = try MappingStoreReader.objects(in: data, file: file.path)
        return try build(name: name, objects: objects, file: file.path)
    }

    /// The `.xcmappingmodel` folders beside a model file and inside its bundle: in the folder that
    /// holds `modelURL`, inside `modelURL` when it is a folder, and beside the `.xcdatamodeld` that
    /// holds an `.xcdatamodel`.
    public static func discover(near modelURL: URL) -> [URL] {
        var folders = [modelURL.deletingLastPathComponent()]
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: modelURL.path, isDirectory: &isFolder), isFolder.boolValue {
            folders.append(modelURL)
        }
        if modelURL.deletingLastPathComponent().pathExtension == "xcdatamodeld" {
            folders.append(modelURL.deletingLastPathComponent().deletingLastPathComponent())
        }
        var found: [URL] = []
        for folder in folders {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            for name in names.sorted() where name.hasSuffix(".xcmappingmodel") {
                let url = folder.appendingPathComponent(name).standardizedFileURL
                if !found.contains(url) { found.append(url) }
            }
        }
        return found
    }

    private static func build(name: String, objects: [String: MappingStoreReader.Object], file: String)
        throws(ModelError) -> MappingModel
    {
        func malformed(_ message: String) -> ModelError {
            ModelError(.malformed, file: file, issues: [ModelIssue(.invalidValue, message)])
        }
        guard let root = objects.values.first(where: { $0.type == "XDDEVMAPPINGMODEL" }) else {
            throw malformed("no XDDEVMAPPINGMODEL object: not an Xcode mapping model")
        }
        let modelName = { (path: String?) -> String in
            URL(fileURLWithPath: path ?? "").deletingPathExtension().lastPathComponent
        }
        guard let source = root.attributes["sourcemodelpath"], let destination = root.attributes["destinationmodelpath"]
        else { throw malformed("the mapping model names no source or destination model") }
        var mappings: [(Int, EntityMapping)] = []
        for id in root.relationships["entitymappings"] ?? [] {
            guard let object = objects[id] else { throw malformed("entity mapping \(id) is missing") }
            mappings.append((Int(object.attributes["mappingnumber"] ?? "") ?? Int.max, entityMapping(object, objects)))
        }
        return MappingModel(
            name: name, sourceModelName: modelName(source), destinationModelName: modelName(destination),
            entityMappings: mappings.sorted { ($0.0, $0.1.name) < ($1.0, $1.1.name) }.map(\.1))
    }

    private static func entityMapping(
        _ object: MappingStoreReader.Object, _ objects: [String: MappingStoreReader.Object]
    ) -> EntityMapping {
        let source = object.attributes["sourcename"].flatMap { $0.isEmpty ? nil : $0 }
        let destination = object.attributes["destinationname"].flatMap { $0.isEmpty ? nil : $0 }
        let name = [source, destination].compactMap { $0 }.joined(separator: "To")
        let policy = object.attributes["migrationpolicyclassname"].flatMap { $0.isEmpty ? nil : $0 }
        var sourceExpression: MappingExpression?
        if let data = object.binary["sourceexpressiondata"] { sourceExpression = ExpressionArchive.decode(data) }
        func properties(_ key: String) -> [PropertyMapping] {
            (object.relationships[key] ?? []).compactMap { objects[$0] }.compactMap { property in
                guard let name = property.attributes["name"], !name.isEmpty else { return nil }
                return PropertyMapping(name: name, expression: expression(of: property))
            }.sorted { $0.name < $1.name }
        }
        return EntityMapping(
            name: name.isEmpty ? "(unnamed)" : name,
            sourceEntity: source, destinationEntity: destination,
            mappingType: object.attributes["mappingtypename"] ?? "Undefined", policyClassName: policy,
            sourceExpression: sourceExpression, attributeMappings: properties("attributemappings"),
            relationshipMappings: properties("relationshipmappings"))
    }

    /// A property mapping's expression: the archived one Xcode keeps for a custom expression, the
    /// one it generates from a relationship mapping's key path and entity mapping name, or nil
    /// when neither is given (``MappingPlanner`` then takes the source property of the same name).
    private static func expression(of property: MappingStoreReader.Object) -> MappingExpression? {
        if let data = property.binary["valueexpressiondata"] { return ExpressionArchive.decode(data) }
        let keyPath = property.attributes["sourcekeypath"].flatMap { $0.isEmpty ? nil : $0 }
        let mapping = property.attributes["sourcemappingname"].flatMap { $0.isEmpty ? nil : $0 }
        guard let keyPath else { return nil }
        let path = MappingExpression.parseKeyPath(keyPath)
        guard let mapping else { return path }
        return .function(
            operand: .keyPath(variable: "manager", path: []), selector: MappingExpression.destinationInstancesSelector,
            arguments: [.constant(.string(mapping)), path])
    }
}

/// Reads the objects of a Core Data XML store (`<database>` of `<object type= id=>` elements with
/// `<attribute>` and `<relationship idrefs=>` children), as `xcmapping.xml` is.
enum MappingStoreReader {
    struct Object {
        var type: String
        var attributes: [String: String] = [:]
        var binary: [String: Data] = [:]
        var relationships: [String: [String]] = [:]
    }

    static func objects(in data: Data, file: String) throws(ModelError) -> [String: Object] {
        let parser = XMLParser(data: data)
        let delegate = Delegate()
        parser.delegate = delegate
        parser.shouldResolveExternalEntities = false
        guard parser.parse(), parser.parserError == nil else {
            throw ModelError(
                .malformed, file: file,
                issues: [ModelIssue(.invalidValue, "line \(parser.lineNumber): not well-formed XML")])
        }
        return delegate.objects
    }

    private final class Delegate: NSObject, XMLParserDelegate {
        var objects: [String: Object] = [:]
        private var current: (id: String, object: Object)?
        private var attribute: (name: String, type: String)?
        private var text = ""

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes: [String: String] = [:]
        ) {
            switch elementName {
            case "object":
                current = (attributes["id"] ?? "", Object(type: attributes["type"] ?? ""))
            case "attribute" where current != nil:
                attribute = (attributes["name"] ?? "", attributes["type"] ?? "")
                text = ""
            case "relationship" where current != nil:
                let ids = (attributes["idrefs"] ?? "").split(separator: " ").map(String.init)
                current?.object.relationships[attributes["name"] ?? ""] = ids
            default: break
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if attribute != nil { text += string }
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
        ) {
            switch elementName {
            case "attribute":
                guard let (name, type) = attribute else { return }
                if type == "binary" {
                    current?.object.binary[name] = Data(base64Encoded: text, options: .ignoreUnknownCharacters)
                } else {
                    current?.object.attributes[name] = text
                }
                attribute = nil
            case "object":
                if let (id, object) = current { objects[id] = object }
                current = nil
            default: break
            }
        }
    }
}

/// Decodes the `NSKeyedArchiver` archive of an `NSExpression` that Xcode keeps for a custom value
/// expression, as far as ``MappingExpression`` goes.
enum ExpressionArchive {
    static func decode(_ data: Data) -> MappingExpression {
        guard case .dictionary(let top)? = try? BinaryPropertyList.parse(Array(data)),
            case .array(let objects)? = top["$objects"], case .dictionary(let roots)? = top["$top"],
            let root = roots["root"]
        else { return .unsupported("an archived expression that cannot be read") }
        return Decoder(objects: objects).expression(root, depth: 0)
    }

    private struct Decoder {
        let objects: [PropertyListValue]

        func object(_ value: PropertyListValue?) -> PropertyListValue? {
            guard case .uid(let index)? = value else { return value }
            return objects.indices.contains(index) ? objects[index] : nil
        }

        func className(_ members: [String: PropertyListValue]) -> String {
            object(members["$class"])?.dictionary?["$classname"]?.string ?? "?"
        }

        func expression(_ reference: PropertyListValue, depth: Int) -> MappingExpression {
            guard depth < 64, let members = object(reference)?.dictionary else {
                return .unsupported("an archived expression that cannot be read")
            }
            let type: Int64 = if case .integer(let t)? = members["NSExpressionType"] { t } else { -1 }
            switch type {
            case 0: return constant(object(members["NSConstantValue"]), members: members)
            case 2:
                guard let name = object(members["NSVariable"])?.string else { break }
                return .keyPath(variable: name, path: [])
            case 10:
                guard let path = object(members["NSKeyPath"])?.string else { break }
                return .keyPath(variable: "", path: path.split(separator: ".").map(String.init))
            case 4:
                let operand = members["NSOperand"].map { expression($0, depth: depth + 1) } ?? .unsupported("?")
                let selector = object(members["NSSelectorName"])?.string ?? "?"
                let items = object(members["NSArguments"])?.dictionary?["NS.objects"]?.array ?? []
                let arguments = items.map { expression($0, depth: depth + 1) }
                if selector == "valueForKeyPath:", arguments.count == 1,
                    case .keyPath(let variable, let base) = operand, case .keyPath("", let path) = arguments[0]
                {
                    return .keyPath(variable: variable, path: base + path)
                }
                return .function(operand: operand, selector: selector, arguments: arguments)
            default: break
            }
            return .unsupported("an expression of class \(className(members))")
        }

        func constant(_ value: PropertyListValue?, members: [String: PropertyListValue]) -> MappingExpression {
            switch value {
            case .string("$null")?, nil: return .constant(.null)
            case .string(let s)?: return .constant(.string(s))
            case .integer(let i)?: return .constant(.integer(i))
            case .real(let d)?: return .constant(.double(d))
            case .bool(let b)?: return .constant(.boolean(b))
            case .dictionary(let d)?:
                if let s = object(d["NS.string"])?.string { return .constant(.string(s)) }
                return .unsupported("a constant of class \(className(d))")
            default: return .unsupported("a constant of class \(className(members))")
            }
        }
    }
}
