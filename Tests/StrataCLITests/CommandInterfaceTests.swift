import StrataCLI
import Testing

/// The option table's parser and help, on a small command declared as the real ones are.
@Suite struct CommandInterfaceTests {
    struct Settings {
        var port = 8080
        var models: [String] = []
        var origins: [String] = []
        var migrate = true
        var sizes = "none"
        var paths: [String] = []
    }

    static let command = CommandInterface<Settings>(
        name: "tool run", synopsis: "[options] PATH", abstract: "Runs.",
        options: [
            .value("--port", "PORT", environment: "TOOL_PORT", default: "8080", help: "port") {
                $0.port = try $1.integer(0...65535, "a number from 0 to 65535")
            },
            .value(
                "--model", "PATH", environment: "TOOL_MODEL", items: .commaSeparated, repeatable: true,
                commandLineReplacesEnvironment: true, help: "model"
            ) { $0.models.append($1.text) },
            .value(
                "--origin", "ORIGIN", environment: "TOOL_ORIGINS", items: .commaSeparated, repeatable: true,
                help: "origin"
            ) {
                $0.origins.append($1.text)
            },
            .flag("--migrate", inverse: "--no-migrate", environment: "TOOL_MIGRATE", help: "migrate") {
                $0.migrate = $1
            },
            .optionalValue("--scale", "SIZES", help: "scale") { $0.sizes = $1.text.isEmpty ? "default" : $1.text },
            .value(
                "--a-very-long-option-name", "VALUE",
                help: "a help text long enough to be wrapped onto more than one line of the help, at the width the "
                    + "help is wrapped to, which is a hundred columns"
            ) { _, _ in },
        ],
        arguments: .init(count: 1...1, mismatch: "give one path") { $0.paths = $1 })

    func parse(_ arguments: [String], _ environment: [String: String] = [:]) throws(CommandLineError) -> Settings? {
        try Self.command.parse(arguments, environment: environment, defaults: Settings())
    }

    func failure(_ arguments: [String], _ environment: [String: String] = [:]) -> String? {
        do {
            _ = try parse(arguments, environment)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func theCommandLineWinsOverTheEnvironment() throws {
        #expect(try parse(["p"], ["TOOL_PORT": "81"])?.port == 81)
        #expect(try parse(["--port", "82", "p"], ["TOOL_PORT": "81"])?.port == 82)
        #expect(try parse(["--port=83", "p"])?.port == 83)
        #expect(try parse(["p"], ["TOOL_PORT": ""])?.port == 8080)
    }

    @Test func repeatableOptionsAddToOrReplaceTheEnvironment() throws {
        let environment = ["TOOL_MODEL": "a.json,b.json", "TOOL_ORIGINS": "https://a,https://b"]
        let fromEnvironment = try #require(try parse(["p"], environment))
        #expect(fromEnvironment.models == ["a.json", "b.json"])
        #expect(fromEnvironment.origins == ["https://a", "https://b"])
        let both = try #require(try parse(["--model", "c.json", "--origin", "https://c", "p"], environment))
        #expect(both.models == ["c.json"])
        #expect(both.origins == ["https://a", "https://b", "https://c"])
    }

    @Test func flagsTheirInverseAndTheirTwin() throws {
        #expect(try parse(["--no-migrate", "p"])?.migrate == false)
        #expect(try parse(["--migrate=false", "p"])?.migrate == false)
        #expect(try parse(["--no-migrate", "--migrate", "p"])?.migrate == true)
        #expect(try parse(["p"], ["TOOL_MIGRATE": "0"])?.migrate == false)
        #expect(try parse(["--migrate", "p"], ["TOOL_MIGRATE": "no"])?.migrate == true)
        #expect(failure(["--no-migrate=1", "p"]) == "--no-migrate takes no value")
        #expect(failure(["--migrate=maybe", "p"]) == "--migrate is true or false, not 'maybe'")
    }

    @Test func anOptionalValueTakesTheNextArgumentOnlyWhenItIsNoOption() throws {
        #expect(try parse(["p", "--scale"])?.sizes == "default")
        #expect(try parse(["--scale", "--port", "1", "p"])?.sizes == "default")
        #expect(try parse(["--scale", "10,20", "p"])?.sizes == "10,20")
        #expect(try parse(["--scale=30", "p"])?.paths == ["p"])
    }

    @Test func mistakesNameTheOptionOrTheVariable() {
        #expect(failure(["--colour", "red", "p"]) == "unknown option '--colour'; see tool run --help")
        #expect(failure(["-x", "p"]) == "unknown option '-x'; see tool run --help")
        #expect(failure(["p", "--port"]) == "--port needs a value")
        #expect(failure(["--port", "eighty", "p"]) == "--port must be a number from 0 to 65535, not 'eighty'")
        #expect(
            failure(["p"], ["TOOL_PORT": "eighty"])
                == "--port must be a number from 0 to 65535, not 'eighty' (from TOOL_PORT)")
        #expect(failure([]) == "give one path; see tool run --help")
        #expect(failure(["p", "q"]) == "give one path; see tool run --help")
    }

    @Test func helpIsAskedForAnywhereAndAMistakeExits64() throws {
        #expect(try parse(["p", "--help"]) == nil)
        #expect(try parse(["-h"], ["TOOL_PORT": "eighty"]) == nil)
        #expect(try parse(["--", "--help"])?.paths == ["--help"])
        #expect(Self.command.run(["--port", "x", "p"], environment: [:], defaults: Settings()) { _ in 0 } == 64)
        #expect(Self.command.run(["p"], environment: [:], defaults: Settings()) { $0.paths == ["p"] ? 7 : 1 } == 7)
    }

    @Test func theHelpComesFromTheTable() {
        let help = Self.command.help
        #expect(help.hasPrefix("usage: tool run [options] PATH\n\nRuns.\n\n"))
        #expect(help.contains("  --port PORT  ") && help.contains("port (TOOL_PORT; default: 8080)"))
        #expect(help.contains("model (repeatable; TOOL_MODEL, comma-separated)"))
        #expect(help.contains("  --migrate, --no-migrate") && help.contains("migrate (TOOL_MIGRATE=true|false)"))
        #expect(help.contains("  --scale [SIZES]"))
        #expect(help.contains("\n  --a-very-long-option-name VALUE\n"))
        #expect(help.hasSuffix("  --help                  this text"))
        let lines = help.split(separator: "\n")
        #expect(lines.allSatisfy { $0.count <= 100 }, "\(lines.map(\.count))")
        #expect(lines.filter { $0.contains("hundred columns") }.count == 1)
    }
}
