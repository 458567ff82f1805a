import Foundation
import Strata
import StrataCodegen
import StrataTestSupport
import Testing

/// What the generator writes for the example model, and that it writes it the same way every time.
@Suite struct SwiftGeneratorTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples")

    @Test func oneFileNamedAfterTheModelFileWithAStructPerEntity() throws {
        let path = Self.examples.appendingPathComponent("Library.xcdatamodel").path
        let model = try ObjectModel.load(contentsOf: URL(fileURLWithPath: path))
        let files = SwiftGenerator(model: model, options: .init(fileStem: "Library")).generate()
        #expect(files.map(\.fileName) == ["Library+Generated.swift"])
        #expect(SwiftGenerator.fileName(forModelAt: path) == "Library+Generated.swift")
        let source = try #require(files.first?.contents)
        for entity in model.entityNames {
            #expect(source.contains("public struct \(entity): Strata.TypedObject {"))
        }
        #expect(source.contains("public var title: Swift.String {"))
        #expect(source.contains("public var year: Swift.Int32? {"))
        #expect(source.contains("public var tags: Swift.Set<Tag> {"))
        #expect(source.contains("public func addToTags(_ value: Tag)"))
        #expect(source.contains("public var searches: [SearchLog] {"))
        // Deterministic: the same model gives the same bytes.
        #expect(SwiftGenerator(model: model, options: .init(fileStem: "Library")).generate().first?.contents == source)
    }

    @Test func internalAccessMakesEveryDeclarationInternal() throws {
        let model = try ObjectModel.load(contentsOf: Self.examples.appendingPathComponent("Library.json"))
        let source = SwiftGenerator(model: model, options: .init(access: .internal)).source()
        #expect(!source.contains("public "))
        #expect(source.contains("internal struct Book: Strata.TypedObject {"))
    }

    /// Core Data models carry documentation in `userInfo` (a `documentation` or `description`
    /// entry); an attribute of the `Undefined` type is only allowed transient, and transient
    /// attributes are left out of the model, so generated code never meets one.
    @Test func userInfoDocumentationBecomesDocCommentsAndTransientAttributesAreLeftOut() throws {
        let folder = TemporaryDirectory()
        let bundle = folder.file("Notes.xcdatamodel")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        let contents = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" minimumToolsVersion="Automatic">
                <entity name="Note" representedClassName="Note" syncable="YES">
                    <attribute name="text" optional="YES" attributeType="String">
                        <userInfo><entry key="documentation" value="What the note says."/></userInfo>
                    </attribute>
                    <attribute name="scratch" optional="YES" transient="YES" attributeType="Undefined"/>
                    <relationship name="folder" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Folder" inverseName="notes" inverseEntity="Folder">
                        <userInfo><entry key="description" value="Where it is filed."/></userInfo>
                    </relationship>
                    <userInfo><entry key="documentation" value="A note of the user."/></userInfo>
                </entity>
                <entity name="Folder" representedClassName="Folder" syncable="YES">
                    <relationship name="notes" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Note" inverseName="folder" inverseEntity="Note"/>
                </entity>
            </model>
            """
        try Data(contents.utf8).write(to: bundle.appendingPathComponent("contents"))
        let model = try ObjectModel.load(contentsOf: bundle)
        let source = SwiftGenerator(model: model).source()
        #expect(source.contains("/// A note of the user.\n///\n/// The entity `Note`"))
        #expect(source.contains("/// What the note says.\n    ///\n    /// `text`: String, optional."))
        #expect(source.contains("/// Where it is filed."))
        #expect(!source.contains("scratch"))
    }
}
