import Foundation

/// `strata-bench [options]`: the performance targets, each against a baseline from the same run.
exit(BenchCommand.run(Array(CommandLine.arguments.dropFirst())))
