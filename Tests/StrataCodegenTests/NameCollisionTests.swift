import Foundation
import Strata
import StrataCodegen
import StrataTestSupport
import Testing

/// How names that collide with Swift are resolved, each shown by code that uses the resolved name
/// and type-checks (see `SwiftNames` for the rules):
///
/// - keywords as properties and functions keep their names in backticks (`` d.`class` ``);
/// - names a member cannot take even in backticks (`self`, `init`, `Type`) and names of the
///   members every generated type has (`description`, `objectID`, `context`, `version`, `hash`,
///   `entityName`, `managedObject`, `fetchRequest`, `isDeleted`) get a trailing `_`, as do
///   properties named like a module the code names (`Swift`, `Foundation`, `Strata`) or like an
///   entity's type (the attribute `Set` of the entity `Set`);
/// - a helper or template whose name a property took first gets a trailing `_` (`addToProtocol_`),
///   and a name whose `_` form is taken gets another (`Swift__` for the attribute `Swift` where
///   the entity `Swift` is the struct `Swift_`);
/// - entities named like Swift and Foundation types (`Data`, `Date`, `URL`, `Set`, `Error`,
///   `String`) keep their names, the generated code naming the standard types by module; entities
///   named like those modules, or like keywords and `Self`, `Any`, `Type`, `Protocol`, get a
///   trailing `_`;
/// - characters an identifier cannot hold become `_` and a leading digit gets a `_` before it
///   (models that load never have such names: the loader refuses them, so this is shown on the
///   naming function alone);
/// - an attribute without a type does not reach the generator: a stored attribute needs one to
///   load, and Core Data's `Undefined` type is only allowed on transient attributes, which the
///   loader leaves out.
@Suite struct NameCollisionTests {
    static let model = #"""
        {
          "name": "Collisions",
          "entities": [
            {"name": "Data", "description": "An entity named like Foundation's Data.\nIts second line.",
             "attributes": [
               {"name": "class", "type": "string"},
               {"name": "default", "type": "integer16", "optional": false, "default": 3},
               {"name": "self", "type": "boolean"}, {"name": "init", "type": "date"}, {"name": "Type", "type": "string"},
               {"name": "description", "type": "string", "description": "Named like CustomStringConvertible's."},
               {"name": "objectID", "type": "string"}, {"name": "context", "type": "string"},
               {"name": "version", "type": "integer64"}, {"name": "entityName", "type": "string"},
               {"name": "hash", "type": "integer32"}, {"name": "managedObject", "type": "string"},
               {"name": "Swift", "type": "string"}, {"name": "Foundation", "type": "string"},
               {"name": "Strata", "type": "string"}, {"name": "isDeleted", "type": "boolean"},
               {"name": "fetchRequest", "type": "string"}, {"name": "in", "type": "uri"},
               {"name": "addToProtocol", "type": "string"},
               {"name": "loud", "type": "string", "derivation": "uppercase:(class)"}
             ],
             "relationships": [
               {"name": "protocol", "destination": "Date", "toMany": true, "inverse": "data"},
               {"name": "set", "destination": "Set", "toMany": true, "ordered": true, "inverse": "data"}
             ]},
            {"name": "Date", "attributes": [{"name": "at", "type": "date"}],
             "relationships": [{"name": "data", "destination": "Data", "inverse": "protocol"}]},
            {"name": "Set", "attributes": [{"name": "Set", "type": "json"}],
             "relationships": [{"name": "data", "destination": "Data", "inverse": "set"}]},
            {"name": "URL", "attributes": [{"name": "url", "type": "uri"}]},
            {"name": "Error", "attributes": [{"name": "code", "type": "integer32"}]},
            {"name": "String", "attributes": [{"name": "value", "type": "string"}]},
            {"name": "Swift", "attributes": [{"name": "x", "type": "string"}]},
            {"name": "Strata", "attributes": [{"name": "x", "type": "string"}]},
            {"name": "Foundation", "attributes": [{"name": "x", "type": "string"}]},
            {"name": "Protocol", "attributes": [{"name": "x", "type": "string"}]},
            {"name": "Self", "attributes": [{"name": "x", "type": "string"}]},
            {"name": "Any", "attributes": [{"name": "x", "type": "string"}]},
            {"name": "Type", "attributes": [{"name": "x", "type": "string"}]},
            {"name": "class", "attributes": [{"name": "x", "type": "string"}]},
            {"name": "Item", "abstract": true, "attributes": [{"name": "name", "type": "string"}]},
            {"name": "Book", "parent": "Item", "attributes": [{"name": "year", "type": "integer32"}],
             "fetchedProperties": [{"name": "namesakes", "entity": "Item", "predicate": "name == $FETCH_SOURCE.name"}]},
            {"name": "Novel", "parent": "Book", "attributes": [{"name": "genre", "type": "string"}]}
          ],
          "fetchRequests": [
            {"name": "booksAfter", "entity": "Book", "predicate": "year > $YEAR AND name BEGINSWITH $prefix"},
            {"name": "inYears", "entity": "Book", "predicate": "year IN $years"},
            {"name": "everything", "entity": "Item", "predicate": ""},
            {"name": "ofData", "entity": "Date", "predicate": "data == $owner"},
            {"name": "class", "entity": "Data", "predicate": "class == $class"}
          ]
        }
        """#

    /// Code that uses every resolved name: it type-checks only when each is what the rules say.
    static let use = #"""
        import Strata

        func use(_ c: ObjectContext) throws {
            let d = Data(context: c)
            d.`class` = "x"
            d.`default` = 4
            d.self_ = true
            d.init_ = nil
            d.Type__ = "t"  // `Type_` is the entity `Type`'s struct
            d.description_ = "d"
            d.objectID_ = "o"
            d.context_ = "c"
            d.version_ = 1
            d.entityName_ = "e"
            d.hash_ = 1
            d.managedObject_ = "m"
            d.Swift__ = "s"  // `Swift_` is the entity `Swift`'s struct
            d.Foundation__ = "f"
            d.Strata__ = "s"
            d.isDeleted_ = true
            d.fetchRequest_ = "f"
            d.`in` = nil
            d.addToProtocol = "a"  // the attribute keeps it: the helper is `addToProtocol_`
            let loud: Swift.String? = d.loud
            _ = loud
            // The members every generated type has keep their meaning.
            let id: ObjectID = d.objectID
            let context: ObjectContext? = d.context
            let text: Swift.String = d.description
            let deleted: Bool = d.isDeleted
            _ = (id, context, text, deleted, Data.entityName)
            // Entities named like standard types: `Date` here is the entity.
            let when = Date(context: c)
            d.addToProtocol_(when)
            d.removeFromProtocol(when)
            d.`protocol` = [when]
            let s = Set(context: c)
            d.addToSet(s)
            d.set = [s]
            s.Set_ = .null
            _ = URL(context: c).url
            _ = Error(context: c).code
            _ = String(context: c).value
            _ = (Swift_(context: c), Strata_(context: c), Foundation_(context: c), Protocol_(context: c))
            _ = (Self_(context: c), Any_(context: c), Type_(context: c), class_(context: c))
            // Inheritance: inherited properties, conversions up and down.
            let novel = Novel(context: c)
            novel.name = "n"
            novel.year = 1
            novel.genre = "g"
            let book: Book = novel.asBook
            let item: Item = novel.asItem
            _ = (book, Novel(item), Book(item))
            let namesakes: [Item] = try novel.namesakes
            _ = namesakes
            // Templates with typed variables.
            let after: [Book] = try c.fetch(Book.booksAfter(YEAR: 1960, prefix: "K"))
            _ = after
            _ = (Book.inYears(years: [1979, 1980]), Item.everything(), Date.ofData(owner: d), Data.class__(class: "x"))
        }
        """#

    static func generated() throws -> (folder: TemporaryDirectory, file: URL, source: String) {
        let folder = TemporaryDirectory()
        let modelFile = folder.file("Collisions.json")
        try Data(model.utf8).write(to: modelFile)
        let file = try SwiftGenerator.generate(
            modelAt: modelFile.path, into: folder.file("out").path, options: .init())
        return (folder, file, try String(contentsOf: file, encoding: .utf8))
    }

    @Test func everyCollisionIsResolvedAndTheCodeCompiles() throws {
        let (folder, file, _) = try Self.generated()
        let use = folder.file("Use.swift")
        try Data(Self.use.utf8).write(to: use)
        let outcome = try TypeChecker.forThisBuild().check([file, use])
        #expect(outcome.succeeded, "\(outcome.output)")
    }

    @Test func theResolvedNamesAreTheDocumentedOnes() throws {
        let (_, _, source) = try Self.generated()
        for declaration in [
            "public struct Data: Strata.TypedObject", "public struct Date: Strata.TypedObject",
            "public struct Swift_: Strata.TypedObject", "public struct Strata_: Strata.TypedObject",
            "public struct Self_: Strata.TypedObject", "public struct class_: Strata.TypedObject",
            "public var `class`: Swift.String?", "public var description_: Swift.String?",
            "public var `default`: Swift.Int16 {", "public var init_: Foundation.Date?",
            "public var `in`: Foundation.URL?", "public var addToProtocol: Swift.String?",
            "public func addToProtocol_(_ value: Date)", "public var set: [Set] {",
            "public var loud: Swift.String? { managedObject.typedValue(forKey: \"loud\"",
            "public static func class__(`class`: Swift.String) -> Strata.TypedFetchRequest<Data>",
            "public static func booksAfter(YEAR: Swift.Int32, prefix: Swift.String)",
            "public static func inYears(years: [Swift.Int32])", "public static func ofData(owner: Data)",
            "/// Named like CustomStringConvertible's.", "/// Its second line.",
        ] {
            #expect(source.contains(declaration), "\(declaration)")
        }
        // The abstract entity cannot be inserted.
        #expect(!source.contains("managedObject = context.insertGenerated(Item.self)"))
    }

    @Test func anAbstractEntityHasNoInsertingInitializer() throws {
        let (folder, file, _) = try Self.generated()
        let use = folder.file("Use.swift")
        try Data("import Strata\nfunc use(_ c: ObjectContext) { _ = Item(context: c) }\n".utf8).write(to: use)
        let outcome = try TypeChecker.forThisBuild().check([file, use])
        #expect(!outcome.succeeded)
        #expect(outcome.output.contains("extraneous argument label 'context:' in call"), "\(outcome.output)")
    }

    @Test func namesThatAreNoIdentifiersAreMadeOne() {
        #expect(SwiftNames.identifier("first-name") == "first_name")
        #expect(SwiftNames.identifier("2fa") == "_2fa")
        #expect(SwiftNames.identifier("naïve") == "na_ve")
        #expect(SwiftNames.identifier("") == "_")
        #expect(SwiftNames.escaped("class") == "`class`")
        #expect(SwiftNames.escaped("title") == "title")
        let names = SwiftNames.typeNames(["a-b", "a_b", "Swift", "Self"], modules: ["Swift"])
        #expect(names == ["a-b": "a_b", "a_b": "a_b_", "Swift": "Swift_", "Self": "Self_"])
    }
}
