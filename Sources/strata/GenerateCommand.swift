import Foundation
import StrataCLI
import StrataCodegen

/// `strata generate swift`: typed Swift for a model, as the build-tool plugin generates it.
enum GenerateCommand {
    static func run(_ arguments: [String]) -> Int32 {
        guard let language = arguments.first, !language.hasPrefix("-") else {
            if arguments.contains(where: { $0 == "--help" || $0 == "-h" }) {
                print(CodegenCommand.interface(name: "strata generate swift").help)
                return 0
            }
            return CodegenCommand.interface(name: "strata generate").fail("give the language: strata generate swift")
        }
        guard language == "swift" else {
            return CodegenCommand.interface(name: "strata generate").fail(
                "unknown language '\(language)'; strata generate swift")
        }
        return CodegenCommand.run(Array(arguments.dropFirst()), name: "strata generate swift")
    }
}
