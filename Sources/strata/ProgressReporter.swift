import Foundation
import Strata
import StrataCLI

/// Prints split progress on stderr: a bar that redraws itself on a terminal, plain lines otherwise.
final class ProgressReporter {
    let bar: Bool
    let quiet: Bool
    /// The command, at the start of each plain line.
    let command: String
    private var lastLine = ""
    private var drawn = false

    init(bar: Bool, quiet: Bool, command: String = "split") {
        self.bar = bar
        self.quiet = quiet
        self.command = command
    }

    func report(_ progress: SplitProgress) {
        report(
            phase: progress.phase.rawValue,
            place: [progress.configuration, progress.table].compactMap { $0 }.joined(separator: " "),
            copied: progress.copiedRows, total: progress.totalRows)
    }

    func report(phase: String, place: String, copied: Int, total: Int) {
        guard !quiet else { return }
        let fraction = total == 0 ? 1 : Double(copied) / Double(total)
        let percent = Int((fraction * 100).rounded(.down))
        let counts = "\(copied)/\(total) rows"
        if bar {
            let width = 30
            let filled = min(width, Int(fraction * Double(width)))
            let line =
                "\r[\(String(repeating: "#", count: filled))\(String(repeating: "-", count: width - filled))] \(String(percent).leftPadded(3))% \(counts) \(phase) \(place)"
            FileHandle.standardError.write(Data((line + "\u{1B}[K").utf8))
            drawn = true
        } else {
            let line = "\(command): \(percent)% (\(counts)) \(phase) \(place)"
            guard line != lastLine else { return }
            lastLine = line
            printError(line)
        }
    }

    /// Ends the bar's line.
    func end() {
        if drawn { FileHandle.standardError.write(Data("\n".utf8)) }
        drawn = false
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
