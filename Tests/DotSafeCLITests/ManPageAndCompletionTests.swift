@testable import DotSafeCLI
import DotSafeTestSupport
import Foundation
import Testing

/// Manual pages and completions come from the command table (R-INT-1): every command and option
/// is in each, groff reads the pages without a warning, and the shells accept the scripts and
/// complete with them.
@Suite struct ManPageAndCompletionTests {
    static func output(_ arguments: [String]) -> String {
        let run = CLIRun(arguments)
        #expect(run.status == 0, "\(run)")
        return run.standardOutput
    }

    /// Runs a program with `input` on standard input; returns its status, output and error.
    static func run(_ program: String, _ arguments: [String], input: String = "") throws -> CommandResult {
        CommandResult.run(program, arguments, input: input)
    }

    static func allOptions(_ command: any Command.Type) -> [OptionSpec] {
        command.signature.options + command.globalOptions + [StandardOptions.help]
    }

    @Test func theProgramPageListsEveryCommandAndGlobalOption() {
        let page = Self.output(["help", "--man"])
        #expect(page.hasPrefix(".TH DOTSAFE 1 "))
        for command in DotSafeCLI.commands {
            #expect(page.contains(".B \(ManPage.escape(command.name))\n"), "\(command.name)")
            #expect(page.contains("\\fB\(ManPage.pageName(command))\\fR(1)"), "\(command.name)")
        }
        for option in GlobalOptions.options + [StandardOptions.help, StandardOptions.version] {
            #expect(page.contains(ManPage.escape(option.displayName)), "\(option.displayName)")
        }
    }

    @Test(arguments: DotSafeCLI.commands.map { $0.name })
    func eachCommandPageHasEveryOptionAndArgument(name: String) throws {
        let command = try #require(DotSafeCLI.commands.first { $0.name == name })
        let page = Self.output(["help", "--man", name])
        #expect(page.hasPrefix(".TH DOTSAFE-\(name.uppercased()) 1 "))
        for option in Self.allOptions(command) {
            for spelling in CompletionScript.spellings(option) { #expect(page.contains(ManPage.escape(spelling)), "\(spelling)") }
            #expect(page.contains(ManPage.escape(option.help)), "help of \(option.displayName)")
        }
        for positional in command.signature.positionals { #expect(page.contains(".I \(positional.name)\n")) }
    }

    @Test(arguments: [[String]()] + DotSafeCLI.commands.map { [$0.name] })
    func groffReadsEveryPageWithoutAWarning(topic: [String]) throws {
        let page = Self.output(["help", "--man"] + topic)
        let result = try Self.run("/usr/bin/groff", ["-man", "-Tutf8", "-ww", "-z"], input: page)
        #expect(result.status == 0 && result.error.isEmpty, "groff: \(result.error)")
        let text = try Self.run("/usr/bin/groff", ["-man", "-Tutf8", "-P", "-cbou"], input: page).output
        #expect(text.contains("NAME") && text.contains("SYNOPSIS") && text.contains("EXIT STATUS"))
    }

    @Test(arguments: CompletionScript.Shell.allCases)
    func everyScriptNamesEveryCommandAndOption(shell: CompletionScript.Shell) {
        let script = Self.output(["completion", shell.rawValue])
        for command in DotSafeCLI.commands {
            #expect(script.contains(command.name), "\(shell): \(command.name)")
            for option in Self.allOptions(command) {
                if shell == .fish {
                    if let long = option.long { #expect(script.contains("-l \(long)"), "\(shell): \(long)") }
                    if let short = option.short { #expect(script.contains("-s \(short)"), "\(shell): \(short)") }
                } else {
                    for spelling in CompletionScript.spellings(option) { #expect(script.contains(spelling), "\(shell): \(spelling)") }
                }
            }
            for positional in command.signature.positionals {
                for word in positional.values { #expect(script.contains(word), "\(shell): \(word)") }
            }
        }
    }

    @Test(arguments: [(CompletionScript.Shell.zsh, "/usr/bin/zsh", ["-n"]), (.fish, "/usr/bin/fish", ["--no-execute"]), (.bash, "/bin/bash", ["-n"])])
    func theShellsAcceptTheirScripts(shell: CompletionScript.Shell, program: String, flags: [String]) throws {
        let result = try Self.run(program, flags, input: Self.output(["completion", shell.rawValue]))
        #expect(result.status == 0 && result.error.isEmpty, "\(program): \(result.error)")
    }

    /// What bash completes for a command line typed so far (the last word is the one completed).
    static func bashCompletes(_ words: [String], in folder: String) throws -> [String] {
        let quotedWords = words.map { "'" + $0 + "'" }.joined(separator: " ")
        let script = Self.output(["completion", "bash"]) + """
            cd '\(folder)'
            COMP_WORDS=(\(quotedWords)); COMP_CWORD=\(words.count - 1)
            _dotsafe
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try run("/bin/bash", ["--norc", "-s"], input: script)
        #expect(result.status == 0, "\(result.error)")
        return result.output.split(separator: "\n").map(String.init).sorted()
    }

    @Test func bashCompletesCommandsOptionsWordsAndFolders() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("dotsafe-test-completion-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder + "/store", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: folder + "/salt.export", contents: Data())
        defer { try? FileManager.default.removeItem(atPath: folder) }

        #expect(try Self.bashCompletes(["dotsafe", "mo"], in: folder) == ["mount"])
        #expect(try Self.bashCompletes(["dotsafe", "mount", "--pat"], in: folder) == ["--pattern", "--pattern-command", "--pattern-file", "--pattern-stdin"])
        #expect(try Self.bashCompletes(["dotsafe", "keyring", ""], in: folder) == ["export", "import", "move", "show"])
        #expect(try Self.bashCompletes(["dotsafe", "keyring", "export", "sa"], in: folder) == ["salt.export"])
        #expect(try Self.bashCompletes(["dotsafe", "--keyring", "sa"], in: folder) == ["salt.export"])
        // Folders only for a storage, also after an option that takes a value.
        #expect(try Self.bashCompletes(["dotsafe", "mount", "--pattern", "a1-b2-c3-d4", "s"], in: folder) == ["store"])
        #expect(try Self.bashCompletes(["dotsafe", "mount", "--pattern", ""], in: folder) == [])
        #expect(try Self.bashCompletes(["dotsafe", "help", "ver"], in: folder) == ["version"])
        #expect(try Self.bashCompletes(["dotsafe", "completion", "z"], in: folder) == ["zsh"])
    }

    @Test func anUnknownShellIsAUsageError() {
        let run = CLIRun(["completion", "tcsh"])
        #expect(run == CLIRun(status: 64, standardError: "dotsafe: unknown shell 'tcsh': use bash, zsh or fish\nTry 'dotsafe help completion'.\n"))
    }
}
