import Foundation
import Strata
import StrataServer

/// The `strata` command line: `strata <command> [options]`.
let arguments = Array(CommandLine.arguments.dropFirst())
let status = StrataCommand.run(arguments)
exit(status)
