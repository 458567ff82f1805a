import Foundation
import Strata
import StrataTestSupport
import Testing

/// Core Data `.xcdatamodel` / `.xcdatamodeld` import.
@Suite struct CoreDataModelTests {
    /// The repository's `Examples` folder.
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples")

    /// Wraps entity and configuration XML in a `<model>` element as Xcode writes it.
    static func document(_ body: String, version: String? = nil) -> String {
        let identifier = version.map { #" userDefinedModelVersionIdentifier="\#($0)""# } ?? ""
        return """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22758" \
            systemVersion="23G93" minimumToolsVersion="Automatic" sourceLanguage="Swift"\(identifier)>
            \(body)
            </model>
            """
    }

    /// Writes `contents` into a new `<name>` folder under `folder`.
    @discardableResult
    static func write(_ contents: String, as name: String, in folder: URL) throws -> URL {
        let model = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: model.appendingPathComponent("contents"))
        return model
    }

    /// Writes `body` as a `.xcdatamodel` and loads it.
    static func load(_ body: String, version: String? = nil) throws -> ObjectModel {
        let folder = TemporaryDirectory()
        return try withExtendedLifetime(folder) {
            try ObjectModel.loadCoreDataModel(
                at: write(document(body, version: version), as: "Test.xcdatamodel", in: folder.url))
        }
    }

    @Test func exampleModelMatchesTheJSONExample() throws {
        let json = try ObjectModel.example
        let coreData = try ObjectModel.loadCoreDataModel(
            at: Self.examples.appendingPathComponent("Library.xcdatamodel"))
        #expect(coreData.name == "Library")
        #expect(coreData.version == "1")
        // The same model, but for what only Core Data's own hashes and imports need.
        #expect(coreData.entities.map(\.withoutCoreDataInfo) == json.entities)
        #expect(coreData.configurations == json.configurations)
        #expect(coreData.versionHash == json.versionHash)
        #expect(coreData.entityVersionHashes == json.entityVersionHashes)
        let loaded = try ObjectModel.load(contentsOf: Self.examples.appendingPathComponent("Library.xcdatamodel"))
        #expect(loaded == coreData)
        // The JSON format keeps that too.
        #expect(try ObjectModel.load(json: Array(coreData.canonicalJSON.utf8)) == coreData)
    }

    @Test func bundleLoadsTheCurrentVersion() throws {
        let folder = TemporaryDirectory()
        let bundle = folder.file("Library.xcdatamodeld")
        let first = #"<entity name="Author"><attribute name="name" attributeType="String"/></entity>"#
        let second = #"""
            <entity name="Author">
                <attribute name="name" attributeType="String"/>
                <attribute name="born" optional="YES" attributeType="Date"/>
            </entity>
            """#
        try Self.write(Self.document(first, version: "1"), as: "Library.xcdatamodel", in: bundle)
        try Self.write(Self.document(second, version: "2"), as: "Library 2.xcdatamodel", in: bundle)

        // Two versions and no .xccurrentversion: the newest loads, and a warning names the choices.
        let newest = try ObjectModel.loadCoreDataModelBundle(at: bundle)
        #expect(newest.version == "2")
        #expect(
            newest.warnings.contains {
                $0.message.contains("Library.xcdatamodel") && $0.message.contains("using the newest")
            })

        func makeCurrent(_ name: String) throws {
            let plist = """
                <?xml version="1.0" encoding="UTF-8"?>
                <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                <plist version="1.0">
                <dict>
                \t<key>_XCCurrentVersionName</key>
                \t<string>\(name)</string>
                </dict>
                </plist>
                """
            try Data(plist.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
        }
        try makeCurrent("Library 2.xcdatamodel")
        let current = try ObjectModel.loadCoreDataModelBundle(at: bundle)
        #expect(current.version == "2")
        #expect(current.name == "Library 2")
        #expect(current.attributes(of: "Author").map(\.name) == ["name", "born"])
        #expect(try ObjectModel.load(contentsOf: bundle) == current)

        try makeCurrent("Library.xcdatamodel")
        #expect(try ObjectModel.loadCoreDataModelBundle(at: bundle).version == "1")

        // A current version that is not in the bundle: the newest, with a warning naming it.
        try makeCurrent("Library 3.xcdatamodel")
        let fallback = try ObjectModel.loadCoreDataModelBundle(at: bundle)
        #expect(fallback.version == "2")
        #expect(fallback.warnings.contains { $0.message.contains("Library 3.xcdatamodel") })

        let versions = try ObjectModel.loadCoreDataModelVersions(at: bundle)
        #expect(versions.map(\.name) == ["Library", "Library 2"])
        #expect(versions.map(\.version) == ["1", "2"])

        // A bundle with one version needs no .xccurrentversion.
        let single = folder.file("Single.xcdatamodeld")
        try Self.write(Self.document(first, version: "1"), as: "Single.xcdatamodel", in: single)
        #expect(try ObjectModel.loadCoreDataModelBundle(at: single).entityNames == ["Author"])
    }

    /// Trio (nightscout/Trio) ships a fetch index over a to-many relationship, which Xcode and Core
    /// Data accept: the element is left out with a warning, the rest of the index kept.
    @Test func aFetchIndexOverAToManyRelationshipLeavesThatElementOut() throws {
        let model = try Self.load(
            #"""
            <entity name="Forecast" syncable="YES">
                <attribute name="date" optional="YES" attributeType="Date" usesScalarValueType="NO"/>
                <relationship name="values" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Value" inverseName="forecast" inverseEntity="Value"/>
                <fetchIndex name="byDate">
                    <fetchIndexElement property="date" type="Binary" order="descending"/>
                </fetchIndex>
                <fetchIndex name="byValue">
                    <fetchIndexElement property="values" type="Binary" order="ascending"/>
                </fetchIndex>
                <fetchIndex name="mixed">
                    <fetchIndexElement property="values" type="Binary" order="ascending"/>
                    <fetchIndexElement property="date" type="Binary" order="ascending"/>
                </fetchIndex>
            </entity>
            <entity name="Value" syncable="YES">
                <attribute name="amount" optional="YES" attributeType="Integer 32" usesScalarValueType="YES"/>
                <relationship name="forecast" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Forecast" inverseName="values" inverseEntity="Forecast"/>
            </entity>
            """#)
        let forecast = try #require(model.entity(named: "Forecast"))
        #expect(forecast.indexes.map(\.name) == ["byDate", "mixed"])
        #expect(forecast.indexes.last?.properties == ["date"])
        #expect(model.warnings.filter { $0.message.contains("to-many relationship 'values'") }.count == 2)
    }

    @Test func versionHashIgnoresOrderAndLayout() throws {
        func body(reversed: Bool, layout: Bool, yearType: String = "Integer 32") -> String {
            func ordered(_ lines: [String]) -> String { (reversed ? lines.reversed() : lines).joined(separator: "\n") }
            let author = """
                <entity name="Author" representedClassName="Author" syncable="YES" codeGenerationType="class">
                \(ordered([
                    #"<attribute name="name" attributeType="String"/>"#,
                    #"<attribute name="born" optional="YES" attributeType="Date" usesScalarValueType="NO"/>"#,
                    #"<relationship name="books" optional="YES" toMany="YES" deletionRule="Cascade" destinationEntity="Book" inverseName="author" inverseEntity="Book"/>"#,
                ]))
                </entity>
                """
            let book = """
                <entity name="Book" representedClassName="Book" syncable="YES" codeGenerationType="class">
                \(ordered([
                    #"<attribute name="title" attributeType="String"/>"#,
                    #"<attribute name="year" optional="YES" attributeType="\#(yearType)" usesScalarValueType="YES"/>"#,
                    #"<relationship name="author" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Author" inverseName="books" inverseEntity="Author"/>"#,
                ]))
                </entity>
                """
            let elements = """
                <elements>
                    <element name="Author" positionX="-63" positionY="-18" width="128" height="74"/>
                    <element name="Book" positionX="144" positionY="-18" width="128" height="74"/>
                </elements>
                """
            return ordered([author, book]) + (layout ? "\n" + elements : "")
        }
        let base = try Self.load(body(reversed: false, layout: false))
        let reordered = try Self.load(body(reversed: true, layout: false))
        let withLayout = try Self.load(body(reversed: false, layout: true))
        let reorderedWithLayout = try Self.load(body(reversed: true, layout: true))
        let retyped = try Self.load(body(reversed: false, layout: true, yearType: "Integer 64"))
        #expect(reordered.entityNames == ["Book", "Author"])
        #expect(reordered.versionHash == base.versionHash)
        #expect(withLayout.versionHash == base.versionHash)
        #expect(withLayout == base)
        #expect(reorderedWithLayout.versionHash == base.versionHash)
        #expect(retyped.versionHash != base.versionHash)
        #expect(retyped.versionHash(of: "Book") != base.versionHash(of: "Book"))
        #expect(retyped.versionHash(of: "Author") == base.versionHash(of: "Author"))
    }

    /// Found by the model-coredata fuzz target: Foundation's XMLParser traps on an element name
    /// that is not UTF-8, which took the whole server down at start-up.
    @Test func aModelThatIsNotUTF8IsRefusedNotACrash() throws {
        var bytes = Array(#"<?xml version="1.0"?><model><relati"#.utf8)
        bytes += [0xC3, 0x28]
        bytes += Array(#"onship name="x"/></model>"#.utf8)
        var thrown: ModelError?
        do {
            _ = try ObjectModel.loadCoreDataContents(Data(bytes), file: "bad.xcdatamodel", name: "Bad")
        } catch {
            thrown = error
        }
        #expect(thrown?.kind == .malformed)
        #expect("\(thrown.map { "\($0)" } ?? "")".contains("the byte at offset 35 is not valid UTF-8"))
    }

    /// Found by the model-coredata fuzz target: Foundation's XMLParser traps (strlen of a null
    /// pointer) on a processing instruction without data; such a file is refused instead.
    @Test(arguments: [
        #"<?xml <?xml version="1.0"?><model/>"#,
        #"<?xml version="1.0"?>\#n<model>\#n<?target?></model>"#,
        #"<?xml version="1.0"?>\#n<model>\#n<?target with data?></model>"#,
        #"<?target?><model/>"#,
    ])
    func processingInstructionsAreRefusedNotACrash(document: String) throws {
        var thrown: ModelError?
        do {
            _ = try ObjectModel.loadCoreDataContents(Data(document.utf8), file: "pi.xcdatamodel", name: "PI")
        } catch {
            thrown = error
        }
        #expect(thrown?.kind == .malformed)
        #expect("\(thrown.map { "\($0)" } ?? "")".contains("processing instruction"))
    }

    @Test func commentsAndCDATAMayHoldWhatLooksLikeAProcessingInstruction() throws {
        let document = #"""
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <!-- a note: <?not an instruction?> -->
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Item" syncable="YES">
                    <attribute name="code" attributeType="String"/>
                </entity>
            </model>
            """#
        let model = try ObjectModel.loadCoreDataContents(Data(document.utf8), file: "ok.xcdatamodel", name: "OK")
        #expect(model.entity(named: "Item") != nil)
    }

    /// Core Data's rule for a to-many relationship that is not optional: its value is a set, never
    /// nil, so it may be empty unless it names a minimum count (real models rely on it: Mastodon's
    /// `MastodonUser.blocking` is not optional, and a new user blocks nobody).
    @Test func aRequiredToManyRelationshipMayBeEmptyUnlessItHasAMinimumCount() throws {
        let model = try Self.load(
            """
            <entity name="User" syncable="YES">
                <attribute name="name" attributeType="String"/>
                <relationship name="blocking" toMany="YES" deletionRule="Nullify" destinationEntity="User" inverseName="blockedBy" inverseEntity="User"/>
                <relationship name="blockedBy" toMany="YES" deletionRule="Nullify" destinationEntity="User" inverseName="blocking" inverseEntity="User"/>
                <relationship name="teams" toMany="YES" minCount="1" deletionRule="Nullify" destinationEntity="Team" inverseName="members" inverseEntity="Team"/>
            </entity>
            <entity name="Team" syncable="YES">
                <relationship name="members" optional="YES" toMany="YES" minCount="2" deletionRule="Nullify" destinationEntity="User" inverseName="teams" inverseEntity="User"/>
            </entity>
            """)
        let folder = TemporaryDirectory()
        let context = try PersistentContainer(
            model: model, stores: PersistentContainer.sqliteStores(for: model, in: folder.url)
        ).viewContext
        let team = try context.insert("Team", values: [:])
        let first = try context.insert("User", values: ["name": .string("first")])
        // `teams` is not optional and needs one: the save names it, and only it.
        do {
            try context.save()
            Issue.record("a user with no team was saved")
        } catch {
            #expect(error.failures.map(\.field) == ["teams"], "\(error)")
            #expect(error.failures.map(\.rule) == [.minCount])
        }
        try first.setObjects([team], forKey: "teams")
        // The team's optional `members` (minCount 2) holds one: too few, though it may be empty.
        #expect(throws: ContextError.self) { try context.save() }
        let second = try context.insert("User", values: ["name": .string("second")])
        try second.setObjects([team], forKey: "teams")
        // Two members, and nobody blocks anybody: `blocking` is empty, which Core Data allows.
        try context.save()
        try first.setObjects([second], forKey: "blocking")
        try context.save()
        try first.setObjects([], forKey: "blocking")
        try context.save()
    }

    @Test func coreDataSpellingsMapToTheModel() throws {
        let model = try Self.load(
            #"""
            <entity name="Item" isAbstract="YES" renamingIdentifier="Thing" representedClassName="Item" versionHashModifier="2" syncable="YES">
                <attribute name="code" attributeType="Integer 16" minValueString="-5" maxValueString="500" defaultValueString="7" usesScalarValueType="YES"/>
                <userInfo>
                    <entry key="owner" value="ops"/>
                    <entry key="resource" value="things"/>
                    <entry key="access" value="read-only"/>
                </userInfo>
            </entity>
            <entity name="Document" parentEntity="Item" representedClassName="Document" syncable="YES">
                <attribute name="slug" optional="YES" attributeType="String" minValueString="2" maxValueString="40" regularExpressionString="[a-z]+" renamingIdentifier="handle">
                    <userInfo><entry key="resource" value="ignored"/></userInfo>
                </attribute>
                <attribute name="blob" optional="YES" attributeType="Binary" minValueString="1" maxValueString="64" allowsExternalBinaryDataStorage="YES"/>
                <attribute name="extra" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromDataTransformer" defaultValueString="{&quot;a&quot;: [1, 2]}"/>
                <attribute name="score" optional="YES" attributeType="Double" minValueString="-1.5" maxValueString="2.5" usesScalarValueType="YES"/>
                <attribute name="price" optional="YES" attributeType="Decimal" minValueString="0" defaultValueString="9.99"/>
                <attribute name="created" optional="YES" attributeType="Date" minValueString="2001-01-01T00:00:00Z" maxValueString="86400" defaultValueString="3600"/>
                <attribute name="updated" optional="YES" attributeType="Date" defaultValueString="2024-01-02T03:04:05Z"/>
                <attribute name="draft" attributeType="Boolean" defaultValueString="NO" usesScalarValueType="YES"/>
                <attribute name="cache" optional="YES" transient="YES" attributeType="String"/>
                <relationship name="owner" optional="YES" maxCount="1" deletionRule="Deny" destinationEntity="Person" inverseName="documents" inverseEntity="Person"/>
                <relationship name="chapters" toMany="YES" ordered="YES" minCount="1" maxCount="10" deletionRule="Cascade" destinationEntity="Chapter" inverseName="document" inverseEntity="Chapter" renamingIdentifier="sections"/>
                <fetchedProperty name="notes" optional="YES">
                    <fetchRequest name="fetchedPropertyFetchRequest" entity="Note" predicateString="text CONTAINS $FETCH_SOURCE.slug"/>
                </fetchedProperty>
                <fetchIndex name="bySlug">
                    <fetchIndexElement property="slug" type="Binary" order="ascending"/>
                    <fetchIndexElement property="code" type="Binary" order="ascending"/>
                </fetchIndex>
                <uniquenessConstraints>
                    <uniquenessConstraint>
                        <constraint value="slug"/>
                    </uniquenessConstraint>
                    <uniquenessConstraint>
                        <constraint value="code"/>
                        <constraint value="owner"/>
                    </uniquenessConstraint>
                </uniquenessConstraints>
            </entity>
            <entity name="Person" syncable="YES">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="documents" optional="YES" toMany="YES" deletionRule="No Action" destinationEntity="Document" inverseName="owner" inverseEntity="Document"/>
            </entity>
            <entity name="Chapter" syncable="YES">
                <attribute name="title" attributeType="String"/>
                <relationship name="document" maxCount="1" destinationEntity="Document" inverseName="chapters" inverseEntity="Document"/>
            </entity>
            <entity name="Note" syncable="YES">
                <attribute name="text" optional="YES" attributeType="String"/>
            </entity>
            <configuration name="Main">
                <memberEntity name="Item"/>
                <memberEntity name="Document"/>
                <memberEntity name="Person"/>
                <memberEntity name="Chapter"/>
            </configuration>
            <configuration name="Extra">
                <memberEntity name="Note"/>
            </configuration>
            <elements>
                <element name="Item" positionX="0" positionY="0" width="128" height="60"/>
            </elements>
            """#, version: "7")
        #expect(model.name == "Test")
        #expect(model.version == "7")
        #expect(
            model.configurations == [
                ConfigurationDescription(name: "Main", entities: ["Item", "Document", "Person", "Chapter"]),
                ConfigurationDescription(name: "Extra", entities: ["Note"]),
            ])

        let code = AttributeDescription(
            name: "code", type: .integer16, isOptional: false, defaultValue: .integer(7), minValue: .integer(-5),
            maxValue: .integer(500))
        #expect(
            model.entity(named: "Item")?.withoutCoreDataInfo
                == {
                    var item = EntityDescription(
                        name: "Item", isAbstract: true, attributes: [code], resource: "things", renamedFrom: "Thing")
                    item.versionHashModifier = "2"
                    item.access = .readOnly
                    return item
                }())

        let document = try #require(model.entity(named: "Document"))
        #expect(document.parent == "Item" && !document.isAbstract && document.resource == nil)
        #expect(model.attribute("code", of: "Document")?.withoutCoreDataInfo == code)
        #expect(model.resourcePath(of: "Item") == "things")
        // userInfo's access: read-only, inherited by the subentity.
        #expect(model.access(of: "Document") == .readOnly)
        #expect(model.access(of: "Document", overrides: ["Document": .hidden]) == .hidden)
        let epoch = Date(timeIntervalSinceReferenceDate: 0)
        #expect(
            document.attributes.map(\.withoutCoreDataInfo) == [
                AttributeDescription(
                    name: "slug", type: .string, minLength: 2, maxLength: 40, regex: "[a-z]+", renamedFrom: "handle"),
                AttributeDescription(name: "blob", type: .binary, minLength: 1, maxLength: 64),
                AttributeDescription(
                    name: "extra", type: .json, defaultValue: .json(.object(["a": .array([.integer(1), .integer(2)])]))),
                AttributeDescription(name: "score", type: .double, minValue: .double(-1.5), maxValue: .double(2.5)),
                AttributeDescription(
                    name: "price", type: .decimal, defaultValue: .decimal(Decimal(string: "9.99")!),
                    minValue: .decimal(0)),
                AttributeDescription(
                    name: "created", type: .date, defaultValue: .date(epoch.addingTimeInterval(3600)),
                    minValue: .date(epoch), maxValue: .date(epoch.addingTimeInterval(86400))),
                AttributeDescription(
                    name: "updated", type: .date, defaultValue: .date(AttributeValue.parseDate("2024-01-02T03:04:05Z")!)
                ),
                AttributeDescription(name: "draft", type: .boolean, isOptional: false, defaultValue: .boolean(false)),
            ])
        #expect(
            document.relationships.map(\.withoutCoreDataInfo) == [
                RelationshipDescription(name: "owner", destination: "Person", inverse: "documents", deleteRule: .deny),
                RelationshipDescription(
                    name: "chapters", destination: "Chapter", inverse: "document", isToMany: true, isOrdered: true,
                    isOptional: false, deleteRule: .cascade, minCount: 1, maxCount: 10, renamedFrom: "sections"),
            ])
        #expect(
            document.fetchedProperties == [
                FetchedPropertyDescription(name: "notes", entity: "Note", predicate: "text CONTAINS $FETCH_SOURCE.slug")
            ])
        #expect(document.uniqueness == [["slug"], ["code", "owner"]])
        #expect(document.indexes == [IndexDescription(name: "bySlug", properties: ["slug", "code"])])

        let documents = try #require(model.relationship("documents", of: "Person"))
        #expect(documents.isToMany && !documents.isOrdered && documents.isOptional && documents.deleteRule == .noAction)
        #expect(
            model.relationship("document", of: "Chapter")?.withoutCoreDataInfo
                == RelationshipDescription(
                    name: "document", destination: "Document", inverse: "chapters", isOptional: false))
        #expect(model.attribute("title", of: "Chapter")?.isOptional == false)
        #expect(model.entityAndSubentities(of: "Item") == ["Item", "Document"])
        #expect(model.configurations(containing: "Note") == ["Extra"])
    }

    @Test func unknownTypesAndBadFilesAreReported() throws {
        let unknown = try #require(throws: ModelError.self) {
            try Self.load(
                #"""
                <entity name="Shelf"><attribute name="ref" optional="YES" attributeType="Object ID"/></entity>
                """#)
        }
        #expect(unknown.kind == .invalid)
        let issue = try #require(unknown.issues.first)
        #expect(issue.code == .unknownType && issue.entity == "Shelf" && issue.property == "ref")
        #expect(unknown.file?.hasSuffix("Test.xcdatamodel/contents") == true)

        let folder = TemporaryDirectory()
        let brokenTexts = [
            #"<model><entity name="Shelf"><attribute name="a"></model>"#, #"<model><entity name="Shelf">"#,
            "<model></model><extra", "", "not xml",
        ]
        for (index, text) in brokenTexts.enumerated() {
            let broken = try Self.write(text, as: "Broken\(index).xcdatamodel", in: folder.url)
            let malformed = try #require(throws: ModelError.self) { try ObjectModel.loadCoreDataModel(at: broken) }
            #expect(malformed.kind == .malformed, "\(text)")
            #expect(malformed.file == broken.appendingPathComponent("contents").path)
        }

        let empty = folder.file("Empty.xcdatamodel")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let noContents = try #require(throws: ModelError.self) { try ObjectModel.loadCoreDataModel(at: empty) }
        #expect(noContents.kind == .unreadable)
        let missing = try #require(throws: ModelError.self) {
            try ObjectModel.loadCoreDataModel(at: folder.file("Missing.xcdatamodel"))
        }
        #expect(missing.kind == .unreadable && missing.file == folder.file("Missing.xcdatamodel").path)
        let noBundle = try #require(throws: ModelError.self) {
            try ObjectModel.loadCoreDataModelBundle(at: folder.file("Missing.xcdatamodeld"))
        }
        #expect(noBundle.kind == .unreadable)

        // Content problems are found by the model's own validation and name the file.
        let invalid = try #require(throws: ModelError.self) {
            try Self.load(
                #"""
                <entity name="Shelf">
                    <attribute name="size" optional="YES" attributeType="Integer 16" defaultValueString="70000"/>
                    <relationship name="books" optional="YES" toMany="YES" deletionRule="Shred" destinationEntity="Book"/>
                </entity>
                """#)
        }
        // A default that does not fit only loses the default (a warning), as Core Data loads it.
        #expect(invalid.issues.map(\.code) == [.invalidValue])
    }
}

extension AttributeDescription {
    /// The attribute without what a Core Data model adds (``CoreDataAttributeInfo``).
    var withoutCoreDataInfo: AttributeDescription {
        var plain = self
        plain.coreData = nil
        return plain
    }
}

extension RelationshipDescription {
    /// The relationship without what a Core Data model adds.
    var withoutCoreDataInfo: RelationshipDescription {
        var plain = self
        plain.coreData = nil
        return plain
    }
}

extension EntityDescription {
    /// The entity without what a Core Data model adds to its properties.
    var withoutCoreDataInfo: EntityDescription {
        var plain = self
        plain.attributes = attributes.map(\.withoutCoreDataInfo)
        plain.relationships = relationships.map(\.withoutCoreDataInfo)
        return plain
    }
}
