import DotSafeCLI
import Testing

/// Every usage error: one line `dotsafe: <message>`, a hint where to get help, nothing on
/// standard output, exit status 64 (EX_USAGE).
@Suite struct UsageErrorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let arguments: [String]
        let message: String
        let hint: String
        var testDescription: String { arguments.joined(separator: " ") }

        init(_ arguments: [String], _ message: String, hint: String = "Try 'dotsafe help'.") {
            self.arguments = arguments
            self.message = message
            self.hint = hint
        }
    }

    static let realCommands: [Case] = [
        Case(["--keyring", "k"], "missing command"),
        Case(["version", "--keyring=k"], "unknown option '--keyring'", hint: "Try 'dotsafe help version'."),
        Case(["lock", "--keyring", "k", "M"], "unknown option '--keyring'", hint: "Try 'dotsafe help lock'."),
        Case(["lock"], "missing argument MOUNTPOINT (or --all)", hint: "Try 'dotsafe help lock'."),
        Case(["lock", "--all", "M"], "give a MOUNTPOINT or --all, not both", hint: "Try 'dotsafe help lock'."),
        Case(["status", "--all"], "unknown option '--all'", hint: "Try 'dotsafe help status'."),
        Case(["mount", "S", "M", "--idle", "5x"], "--idle needs a time such as 90s, 5m or 2h, not '5x'", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--idle", "0s"], "--idle needs a time such as 90s, 5m or 2h, not '0s'", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--idle", "99999999999999999999h"], "--idle needs a time of at most 1000h, not '99999999999999999999h'",
             hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--idle", "9223372036854775807s"], "--idle needs a time of at most 1000h, not '9223372036854775807s'",
             hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--idle=1e308h"], "--idle needs a time of at most 1000h, not '1e308h'", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--idle", "1000.01h"], "--idle needs a time of at most 1000h, not '1000.01h'", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--idle", "-5s"], "--idle needs a time such as 90s, 5m or 2h, not '-5s': a time cannot be negative",
             hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "-o", "idle=-0"], "--idle needs a time such as 90s, 5m or 2h, not '-0': a time cannot be negative",
             hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--idle", "nan"], "--idle needs a time such as 90s, 5m or 2h, not 'nan'", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--sync", "R", "--sync-interval", "-.5m"],
             "--sync-interval needs a time of 1s or more such as 90s or 5m, not '-.5m': a time cannot be negative", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--sync", "R", "--sync-interval", "1001h"], "--sync-interval needs a time of at most 1000h, not '1001h'",
             hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--cache-size", "-1"], "--cache-size needs MiB from 4 to 65536, not '-1'", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--index-cache", "-64"], "--index-cache needs a number of pages from 2 to 1000000, not '-64'",
             hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--idle", "-x"], "option '--idle' needs a value", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--recreate-budget", "4000"], "--recreate-budget needs seconds per GiB from 0 to 3600, not '4000'", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--recreate-budget", "fast"], "--recreate-budget needs seconds per GiB from 0 to 3600, not 'fast'", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--index-cache", "1"], "--index-cache needs a number of pages from 2 to 1000000, not '1'", hint: "Try 'dotsafe help mount'."),
        Case(["mount", "S", "M", "--index-cache", "many"], "--index-cache needs a number of pages from 2 to 1000000, not 'many'", hint: "Try 'dotsafe help mount'."),
        Case(["--frob"], "unknown option '--frob'"),
        Case(["--frob=1", "version"], "unknown option '--frob'"),
        Case(["-x"], "unknown option '-x'"),
        Case(["frob"], "unknown command 'frob'"),
        Case(["--keyring"], "option '--keyring' needs a value"),
        Case(["--keyring", "--version"], "option '--keyring' needs a value"),
        Case(["--keyring="], "option '--keyring' needs a value"),
        Case(["--keyring", "a", "--keyring", "b", "version"], "option '--keyring' given more than once"),
        Case(["--version=1"], "option '--version' takes no value"),
        Case(["--version", "extra"], "unexpected argument 'extra'", hint: "Try 'dotsafe help version'."),
        Case(["version", "--frob"], "unknown option '--frob'", hint: "Try 'dotsafe help version'."),
        Case(["version", "-x"], "unknown option '-x'", hint: "Try 'dotsafe help version'."),
        Case(["version", "extra"], "unexpected argument 'extra'", hint: "Try 'dotsafe help version'."),
        Case(["version", "--", "--help"], "unexpected argument '--help'", hint: "Try 'dotsafe help version'."),
        Case(["version", "--keyring"], "unknown option '--keyring'", hint: "Try 'dotsafe help version'."),
        Case(["--keyring", "a", "fsck", "S", "--keyring=b"], "option '--keyring' given more than once",
             hint: "Try 'dotsafe help fsck'."),
        Case(["help", "frob"], "unknown command 'frob'"),
        Case(["help", "version", "extra"], "unexpected argument 'extra'"),
    ]

    static let fixtureCommands: [Case] = [
        Case(["probe"], "missing argument STORAGE", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "--pattern", "a1-b2"], "missing argument STORAGE", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "M", "extra"], "unexpected argument 'extra'", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "--pattern"], "option '--pattern' needs a value", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "--pattern", "--force", "S"], "option '--pattern' needs a value",
             hint: "Try 'dotsafe help probe'."),
        Case(["probe", "--pattern=", "S"], "option '--pattern' needs a value", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "-o"], "option '-o' needs a value", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "-fo"], "option '-o' needs a value", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "-fx"], "unknown option '-x'", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "--force=yes"], "option '--force' takes no value", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "-f", "--force"], "option '--force' given more than once",
             hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "--pattern", "a", "--pattern", "b"], "option '--pattern' given more than once",
             hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "--pattern", "invalid"], "'invalid' is not a pattern", hint: "Try 'dotsafe help probe'."),
        Case(["probe", "S", "--pattern", "other-error"], "something else went wrong",
             hint: "Try 'dotsafe help probe'."),
        Case(["files", "usage"], "bad usage found late", hint: "Try 'dotsafe help files'."),
    ]

    @Test(arguments: realCommands)
    func realCommand(_ testCase: Case) {
        #expect(CLIRun(testCase.arguments) == CLIRun(
            status: 64, standardError: "dotsafe: \(testCase.message)\n\(testCase.hint)\n"))
    }

    @Test(arguments: fixtureCommands)
    func fixtureCommand(_ testCase: Case) {
        #expect(runFixture(testCase.arguments) == CLIRun(
            status: 64, standardError: "dotsafe: \(testCase.message)\n\(testCase.hint)\n"))
    }

    @Test func errorCodes() {
        #expect(CLIError.usage("x").exitCode == 64)
        #expect(CLIError.failure("x").exitCode == 1)
    }
}

/// Failures while running: `dotsafe: <message>` and exit status 1, no hint.
@Suite struct FailureTests {
    @Test func failureExitsOne() {
        #expect(runFixture(["files", "fail"]) == CLIRun(status: 1, standardError: "dotsafe: it failed\n"))
    }

    @Test func otherErrorsExitOne() {
        #expect(runFixture(["files", "other"])
                == CLIRun(status: 1, standardError: "dotsafe: something else went wrong\n"))
    }

    @Test func commandChoosesItsStatus() {
        #expect(runFixture(["files", "status"]) == CLIRun(status: 3))
    }
}
