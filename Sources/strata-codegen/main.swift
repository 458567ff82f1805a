import Foundation
import StrataCodegen

/// `strata-codegen --model PATH --output DIR [--access internal]`: what the build-tool plugin runs.
exit(CodegenCommand.run(Array(CommandLine.arguments.dropFirst()), name: "strata-codegen"))
