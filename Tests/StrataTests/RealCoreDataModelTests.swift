import Foundation
import StrataTestSupport
import Testing

@testable import Strata

/// The Core Data models of public apps and libraries (the shared material, see
/// ``CoreDataMaterial``; not part of this repository): every one loads as Core Data loads it, or is
/// refused with the reason Core Data refuses it too, and what loads keeps one object of every
/// concrete entity through a save. Each model is named in the log as it is checked.
@Suite struct RealCoreDataModelTests {
    static var material: URL { CoreDataMaterial.folder }

    /// Every `.xcdatamodeld`, loose `.xcdatamodel` and `contents`-style XML file of the material
    /// (not inside an `.xcmappingmodel`), relative to its folder (none when it is absent).
    static let models: [String] = {
        guard let walker = FileManager.default.enumerator(at: material, includingPropertiesForKeys: nil) else {
            return []
        }
        var found: [String] = []
        for case let url as URL in walker {
            let relative = String(url.standardizedFileURL.path.dropFirst(material.path.count + 1))
            switch url.pathExtension {
            case "xcdatamodeld", "xcdatamodel", "xml":
                found.append(relative)
                walker.skipDescendants()
            // A mapping model's xcmapping.xml is not a data model (see MappingModelTests).
            case "xcmappingmodel": walker.skipDescendants()
            default: continue
            }
        }
        return found.sorted()
    }()

    /// The models Core Data itself would not load either, with what the refusal says.
    static let refused: [String: String] = [
        "models/thyme-xcode3-elements/2010-2314e7c/DataModel.xcdatamodel": "Xcode 3",
        "models/thyme-xcode3-elements/HEAD-a8ea0b2/DataModel.xcdatamodel": "Xcode 3",
        "models/twomanycontrollers-xcode3-elements-CORRUPT/MyDocument.xcdatamodel": "Xcode 3",
        "stores/apple-iphonecoredatarecipes/Recipes.xcdatamodel": "Xcode 3",
        // A hand-written test file whose uniqueness constraint names properties it does not have.
        "models/momxml/model2.xml": "uniqueness constraint names 'iD'",
    ]

    /// Models Core Data loads that Strata does not load yet.
    static let knownIssues: [String: KnownRefusal] = [:]

    @Test(.enabled(if: CoreDataMaterial.requirement.runs, "\(CoreDataMaterial.requirement.skipComment)"))
    func theMaterialIsThere() throws {
        try CoreDataMaterial.requirement.check()
        #expect(!Self.models.isEmpty, "no model under \(Self.material.path)")
        print("real Core Data material: \(Self.models.count) models at \(Self.material.path)")
    }

    @Test(
        .enabled(if: CoreDataMaterial.requirement.runs, "\(CoreDataMaterial.requirement.skipComment)"),
        arguments: models)
    func realModelLoadsAndKeepsAnObjectOfEveryEntity(path: String) throws {
        try CoreDataMaterial.requirement.check()
        if let known = Self.knownIssues[path] {
            print("real Core Data model \(path): a known issue (\(known.issue))")
            try known.expect { try Self.check(path) }
        } else {
            try Self.check(path)
        }
    }

    /// Loads the model at `path` (relative to the material), or checks its refusal; saves and
    /// reads back an object of every concrete entity of what loads.
    static func check(_ path: String) throws {
        let url = material.appendingPathComponent(path)
        let model: ObjectModel
        do {
            model = try ObjectModel.load(contentsOf: url)
        } catch {
            let expected = try #require(refused[path], "\(path) is refused: \(error)")
            #expect("\(error)".contains(expected), "\(error)")
            print("real Core Data model \(path): refused as Core Data refuses it (\(error))")
            return
        }
        #expect(refused[path] == nil, "\(path) loads, but was expected to be refused")
        let folder = TemporaryDirectory()
        let stores = PersistentContainer.sqliteStores(for: model, in: folder.url)
        let container = try PersistentContainer(model: model, stores: stores)
        let context = container.viewContext
        var maker = SampleMaker(model: model, context: context)
        // The entities a store holds: with named configurations, an entity in none has no store.
        let stored = Set(stores.flatMap { model.entityNames(inConfiguration: $0.configuration) ?? [] })
        var made: [(ManagedObject, [String: AttributeValue])] = []
        let concrete = model.entities.filter { !$0.isAbstract && stored.contains($0.name) }
        for entity in concrete {
            let object = try #require(try maker.make(entity.name), "\(path): no sample \(entity.name) could be made")
            made.append((object, maker.values[object.objectID] ?? [:]))
        }
        try context.save()
        #expect(made.count == concrete.count)
        // What was saved is what a new stack over the same files reads.
        let reopened = try PersistentContainer(model: model, stores: stores).viewContext
        for (saved, values) in made {
            #expect(!saved.objectID.isTemporary)
            let object = try reopened.object(with: saved.objectID)
            for (name, value) in values {
                #expect(try object.value(forKey: name) == value, "\(path): \(saved.entityName).\(name)")
            }
        }
        print(
            "real Core Data model \(path): loaded, an object of each of \(concrete.count) entities saved and read back")
    }
}

/// A refusal Core Data would not make: expected, named by the issue that fixes it, and matched by
/// what the refusal says, so that any other failure of the same case still fails. Once the issue
/// is fixed, Swift Testing reports that the known issue no longer occurs, and the mark goes.
struct KnownRefusal: Sendable {
    /// The issue that fixes it.
    var issue: String
    /// A part of the refusal's text.
    var says: String

    /// Runs `body`, expecting it to fail with this refusal.
    func expect(_ body: () throws -> Void) throws {
        let says = says
        try withKnownIssue(Comment(rawValue: issue)) {
            try body()
        } matching: { issue in
            "\(issue)".contains(says) || issue.comments.contains { $0.rawValue.contains(says) }
        }
    }
}

/// Makes objects that pass a model's validation rules: a value for every attribute that is not
/// derived, and the objects every required relationship needs.
struct SampleMaker {
    let model: ObjectModel
    let context: ObjectContext
    var counter = 0
    /// The attribute values given to each object made.
    var values: [ObjectID: [String: AttributeValue]] = [:]

    /// An object of `entity` (a concrete subentity when it is abstract), or nil when the model's
    /// rules cannot be met this way (a regular expression no sample matches, say).
    mutating func make(_ entity: String, skipping inverse: String? = nil, depth: Int = 0) throws -> ManagedObject? {
        guard depth < 4,
            let concrete = model.entityAndSubentities(of: entity).first(where: {
                model.entity(named: $0)?.isAbstract == false
            })
        else { return nil }
        var given: [String: AttributeValue] = [:]
        for attribute in model.attributes(of: concrete) where !model.isDerived(attribute.name, of: concrete) {
            counter += 1
            guard let value = sample(attribute) else {
                if attribute.isOptional { continue }
                return nil
            }
            given[attribute.name] = value
        }
        let object = try context.insert(concrete, values: given)
        for relationship in model.relationships(of: concrete) where relationship.name != inverse {
            let needed =
                relationship.isToMany
                ? (relationship.isOptional ? 0 : relationship.minCount ?? 0) : (relationship.isOptional ? 0 : 1)
            guard needed > 0 else { continue }
            var targets: [ManagedObject] = []
            for _ in 0..<needed {
                guard
                    let target = try make(
                        relationship.destination, skipping: model.inverse(of: relationship.name, of: concrete)?.name,
                        depth: depth + 1)
                else { return nil }
                targets.append(target)
            }
            if relationship.isToMany {
                try object.setObjects(targets, forKey: relationship.name)
            } else {
                try object.setObject(targets[0], forKey: relationship.name)
            }
        }
        values[object.objectID] = given
        return object
    }

    /// A value of `attribute` within its bounds, unique to this call.
    func sample(_ attribute: AttributeDescription) -> AttributeValue? {
        func clamped(_ value: Double) -> Double {
            var value = value
            if let min = attribute.minValue.flatMap(ModelValidator.number) { value = Swift.max(value, min) }
            if let max = attribute.maxValue.flatMap(ModelValidator.number) { value = Swift.min(value, max) }
            return value
        }
        switch attribute.type {
        case .string:
            let length = Swift.max(attribute.minLength ?? 0, 6)
            var text = String("s\(counter)xxxxxxxxxxxx".prefix(Swift.min(length, attribute.maxLength ?? length)))
            if let pattern = attribute.regex {
                let candidates = [text, "a", "abc", "a@example.org", "https://example.org/", "0", "ABC", "a1"]
                guard let match = candidates.first(where: { Self.matches(pattern, $0) }) else { return nil }
                text = match
            }
            return .string(text)
        case .integer16, .integer32, .integer64:
            let range = attribute.type.integerRange!
            let value = Int64(clamped(Double(counter % 100 + 1)))
            return range.contains(value) ? .integer(value) : nil
        case .double, .float: return .double(clamped(Double(counter % 100) + 0.5))
        case .decimal: return .decimal(Decimal(string: "\(Int(clamped(Double(counter % 100 + 1))))")!)
        case .boolean: return .boolean(counter % 2 == 0)
        case .date:
            let bounds = [attribute.minValue, attribute.maxValue].map { bound -> Date? in
                if case .date(let date) = bound { date } else { nil }
            }
            var date = Date(timeIntervalSinceReferenceDate: Double(700_000_000 + counter))
            if let min = bounds[0] { date = Swift.max(date, min) }
            if let max = bounds[1] { date = Swift.min(date, max) }
            return .date(date)
        case .binary:
            return .binary(Data(repeating: UInt8(counter % 256), count: Swift.max(attribute.minLength ?? 0, 3)))
        case .uuid: return .uuid(UUID())
        case .uri: return .uri("https://example.org/\(counter)")
        case .json:
            guard let elements = attribute.elements else { return .json(.object(["n": .integer(Int64(counter))])) }
            // A composite: every element of its type.
            var members: [String: JSONValue] = [:]
            for element in elements {
                guard let value = sample(element) else { return nil }
                members[element.name] = value.json
            }
            return .json(.object(members))
        }
    }

    static func matches(_ pattern: String, _ text: String) -> Bool {
        guard let expression = try? NSRegularExpression(pattern: "^(?:\(pattern))$") else { return false }
        return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }
}
