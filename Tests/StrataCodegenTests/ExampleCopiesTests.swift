import Foundation
import Strata
import StrataCodegen
import Testing

/// What the example package and strata-bench keep of the example model must stay the model: the
/// build-tool plugin sees only the files under the target it runs for, so the example package
/// (Examples/TypedLibrary) holds a copy of Examples/Library.xcdatamodel; strata-bench cannot apply
/// the plugin (a plugin's tool builds Strata a second time in every build of this package, and the
/// fuzz build's sanitizer flags would reach the tool too), so it holds the generated code itself.
@Suite struct ExampleCopiesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The files of a model folder, by path inside it, with their bytes.
    static func files(of folder: URL) throws -> [String: Data] {
        let base = folder.path + "/"
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        else { return [:] }
        var files: [String: Data] = [:]
        for case let file as URL in walker
        where (try file.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true {
            let path = file.path
            files[path.hasPrefix(base) ? String(path.dropFirst(base.count)) : path] = try Data(contentsOf: file)
        }
        return files
    }

    @Test func theExamplePackageModelIsTheExampleModel() throws {
        let original = try Self.files(of: Self.root.appendingPathComponent("Examples/Library.xcdatamodel"))
        let path = "Examples/TypedLibrary/Sources/TypedLibrary/Library.xcdatamodel"
        let copy = try Self.files(of: Self.root.appendingPathComponent(path))
        #expect(!original.isEmpty)
        #expect(copy.keys.sorted() == original.keys.sorted(), "\(path) holds other files than the model")
        for (name, bytes) in original {
            #expect(copy[name] == bytes, "\(path)/\(name) differs from Examples/Library.xcdatamodel/\(name)")
        }
    }

    @Test func theBenchGeneratedCodeIsCurrent() throws {
        let model = try ObjectModel.load(contentsOf: Self.root.appendingPathComponent("Examples/Library.xcdatamodel"))
        let file = try #require(
            SwiftGenerator(model: model, options: .init(access: .internal, fileStem: "Library")).generate().first)
        let checkedIn = Self.root.appendingPathComponent("Sources/StrataBench").appendingPathComponent(file.fileName)
        #expect(
            try String(contentsOf: checkedIn, encoding: .utf8) == file.contents,
            "regenerate: swift run strata-codegen --model Examples/Library.xcdatamodel --output Sources/StrataBench --access internal"
        )
    }
}
