import Foundation
import Strata
import StrataCodegen
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
}
