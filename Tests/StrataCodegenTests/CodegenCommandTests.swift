import Foundation
import StrataCodegen
import StrataTestSupport
import Testing

/// `strata-codegen` and `strata generate swift`: one command line, run in process here.
@Suite struct CodegenCommandTests {
    static let model = CoreDataMaterial.repositoryRoot.appendingPathComponent("Examples/Library.xcdatamodel").path

    @Test func writesOneFileAndLeavesItUntouchedWhenTheModelDidNotChange() throws {
        let folder = TemporaryDirectory()
        let output = folder.file("Generated")
        #expect(CodegenCommand.run(["--model", Self.model, "--output", output.path], name: "strata-codegen") == 0)
        let file = output.appendingPathComponent("Library+Generated.swift")
        #expect(try FileManager.default.contentsOfDirectory(atPath: output.path) == ["Library+Generated.swift"])
        let written = try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date
        // Marked old, so that a rewrite would show in the date whatever the clock's resolution.
        let old = Date(timeIntervalSince1970: 1_000_000)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: file.path)
        #expect(written != nil)
        #expect(CodegenCommand.run(["--model", Self.model, "--output", output.path], name: "strata-codegen") == 0)
        #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date == old)
        // Internal access is a different file: written.
        #expect(
            CodegenCommand.run(
                ["--model", Self.model, "--output", output.path, "--access", "internal"], name: "strata-codegen") == 0)
        #expect(try String(contentsOf: file, encoding: .utf8).contains("internal struct Book"))
    }

    @Test func mistakesAreUsageErrorsAndAnUnreadableModelFails() {
        let folder = TemporaryDirectory()
        #expect(CodegenCommand.run(["--output", folder.url.path], name: "strata-codegen") == 64)
        #expect(CodegenCommand.run(["--model", Self.model], name: "strata-codegen") == 64)
        #expect(
            CodegenCommand.run(["--model", Self.model, "--output", folder.url.path, "--access", "open"], name: "x")
                == 64)
        #expect(
            CodegenCommand.run(["--model", folder.file("none.json").path, "--output", folder.url.path], name: "x") == 1)
    }
}
