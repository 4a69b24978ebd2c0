import DotSafeCLI
import Testing

/// The accepted command-line forms, through a fixture command shaped like `mount`.
@Suite struct CommandLineParserTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let arguments: [String]
        let expected: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let accepted: [Case] = [
        Case(arguments: ["probe", "S"], expected: probeLine(storage: "S")),
        Case(arguments: ["probe", "S", "M"], expected: probeLine(storage: "S", mountPoint: "M")),
        Case(arguments: ["probe", "--pattern", "a1-b2", "S"], expected: probeLine(storage: "S", pattern: "a1-b2")),
        Case(arguments: ["probe", "--pattern=a1-b2", "S"], expected: probeLine(storage: "S", pattern: "a1-b2")),
        Case(arguments: ["probe", "--pattern=-x=y", "S"], expected: probeLine(storage: "S", pattern: "-x=y")),
        Case(arguments: ["probe", "S", "--force"], expected: probeLine(storage: "S", force: true)),
        Case(arguments: ["probe", "-f", "S"], expected: probeLine(storage: "S", force: true)),
        Case(arguments: ["probe", "-fv", "S"], expected: probeLine(storage: "S", force: true, verbose: true)),
        Case(arguments: ["probe", "-o", "ro", "S"], expected: probeLine(storage: "S", o: ["ro"])),
        Case(arguments: ["probe", "-oro", "S"], expected: probeLine(storage: "S", o: ["ro"])),
        Case(arguments: ["probe", "-fo", "ro", "S"], expected: probeLine(storage: "S", force: true, o: ["ro"])),
        Case(arguments: ["probe", "-o", "ro", "S", "-o", "allow_other,x=1"],
             expected: probeLine(storage: "S", o: ["ro", "allow_other,x=1"])),
        Case(arguments: ["probe", "--", "-S", "--force"], expected: probeLine(storage: "-S", mountPoint: "--force")),
        Case(arguments: ["probe", "-f", "--", "S", "-"], expected: probeLine(storage: "S", mountPoint: "-", force: true)),
        Case(arguments: ["probe", "-"], expected: probeLine(storage: "-")),
        Case(arguments: ["--keyring", "K", "probe", "S"], expected: probeLine(storage: "S", keyring: "K")),
        Case(arguments: ["probe", "S", "--keyring", "K"], expected: probeLine(storage: "S", keyring: "K")),
        Case(arguments: ["probe", "--keyring=K", "S"], expected: probeLine(storage: "S", keyring: "K")),
        Case(arguments: ["--", "probe", "-S"], expected: probeLine(storage: "-S")),
    ]

    @Test(arguments: accepted)
    func accepts(_ testCase: Case) {
        #expect(runFixture(testCase.arguments) == CLIRun(status: 0, standardOutput: testCase.expected))
    }

    @Test func variadicArgumentTakesAllTheRest() {
        #expect(runFixture(["files"]) == CLIRun(status: 0, standardOutput: "\n", standardError: "note\n"))
        #expect(runFixture(["files", "a", "b", "--", "-c"])
                == CLIRun(status: 0, standardOutput: "a,b,-c\n", standardError: "note\n"))
    }

    @Test func fixtureHelpIsGeneratedFromItsSignature() {
        #expect(runFixture(["help", "probe"]) == CLIRun(status: 0, standardOutput: """
            OVERVIEW: Print what was parsed (a test fixture).

            Example:
              dotsafe probe --pattern b2-c2-d3-d4 -o ro STORAGE

            USAGE: dotsafe probe [--pattern PATTERN] [--force] [-v] [-o OPTION]... STORAGE
                                 [MOUNTPOINT]

            ARGUMENTS:
              STORAGE            The storage folder.
              MOUNTPOINT         Where to mount it.

            OPTIONS:
              --pattern PATTERN  The unlock pattern.
              -f, --force        Go ahead.
              -v                 Say more.
              -o OPTION          A mount option; may be repeated.
              -h, --help         Show help.

            GLOBAL OPTIONS:
              --keyring PATH     Use the keyring file at PATH, or the desktop's Secret
                                 Service with 'secret-service' (default: $DOTSAFE_KEYRING if
                                 set, else the keyring under $XDG_DATA_HOME/dotsafe/).

            """))
        #expect(runFixture(["probe", "--help"]) == runFixture(["help", "probe"]))
        #expect(runFixture(["probe", "--pattern", "invalid", "-h"]) == runFixture(["help", "probe"]))
    }

    @Test func programHelpListsRegisteredCommands() {
        let lines = runFixture(["--help"]).standardOutput.split(separator: "\n", omittingEmptySubsequences: false)
        let commandList = lines.drop { $0 != "COMMANDS:" }.dropFirst().prefix { !$0.isEmpty }
        #expect(commandList.map { $0.split(separator: " ", maxSplits: 1).first ?? "" }
                == DotSafeCLI.commands.map { Substring($0.name) } + ["probe", "files"])
        #expect(commandList.last?.hasSuffix("  Fail or succeed as told (a test fixture).") == true)
    }
}
