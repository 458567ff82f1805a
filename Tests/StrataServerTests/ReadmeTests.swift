import Foundation
import StrataTestSupport
import Testing

@testable import Strata
@testable import StrataServer

/// One `curl` command of the README walkthrough with what it must answer.
struct ReadmeStep {
    var command: String
    var status: Int
    var contains: String?
}

/// The `# expect: STATUS [TEXT]` + `curl …` pairs of the README's Walkthrough section.
func readmeSteps() throws -> [ReadmeStep] {
    let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("README.md")
    let text = try String(contentsOf: readme, encoding: .utf8)
    guard let start = text.range(of: "## Walkthrough") else { return [] }
    let section = text[start.upperBound...].components(separatedBy: "\n## ").first ?? ""
    var steps: [ReadmeStep] = []
    var pending: (Int, String?)?
    var command: String?
    for line in section.components(separatedBy: "\n") {
        if var current = command {
            current += "\n" + line
            if line.hasSuffix("\\") {
                command = current
            } else {
                steps.append(ReadmeStep(command: current, status: pending!.0, contains: pending!.1))
                command = nil
                pending = nil
            }
            continue
        }
        if line.hasPrefix("# expect: ") {
            let rest = line.dropFirst("# expect: ".count)
            let parts = rest.split(separator: " ", maxSplits: 1)
            pending = (Int(parts[0]) ?? -1, parts.count > 1 ? String(parts[1]) : nil)
        } else if line.hasPrefix("curl "), pending != nil {
            if line.hasSuffix("\\") {
                command = line
            } else {
                steps.append(ReadmeStep(command: line, status: pending!.0, contains: pending!.1))
                pending = nil
            }
        }
    }
    return steps
}

@Suite(.serialized) struct ReadmeTests {
    @Test func walkthroughCommandsWorkAsShown() throws {
        let steps = try readmeSteps()
        #expect(steps.count >= 10)
        let fixture = try ServerFixture()
        let bodyFile = fixture.folder.file("body.out").path
        for step in steps {
            let command =
                step.command.replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(fixture.server.port)")
                + " -o '\(bodyFile)' -w '%{http_code}'"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", command]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let status = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let body = (try? String(contentsOfFile: bodyFile, encoding: .utf8)) ?? ""
            #expect(Int(status) == step.status, "\(step.command)\n→ \(status) \(body)")
            if let expected = step.contains {
                #expect(body.contains(expected), "\(step.command)\n→ \(body)")
            }
        }
    }
}
