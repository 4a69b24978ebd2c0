import DotSafeCLI

/// What one in-process run of `dotsafe` produced.
struct CLIRun: Equatable, CustomStringConvertible {
    var status: Int32
    var standardOutput: String
    var standardError: String

    /// Runs `dotsafe ARGUMENTS` in-process with captured streams and the given environment
    /// (empty by default, so the caller's `DOTSAFE_KEYRING` cannot leak in).
    init(_ arguments: [String], environment: [String: String] = [:],
         commands: [any Command.Type] = DotSafeCLI.commands, input: [String] = []) {
        let output = CapturedOutput()
        let error = CapturedOutput()
        status = DotSafeCLI.main(arguments: arguments, environment: environment,
                                 standardOutput: output, standardError: error, commands: commands,
                                 standardInput: ScriptedInput(input))
        standardOutput = output.text
        standardError = error.text
    }

    init(status: Int32, standardOutput: String = "", standardError: String = "") {
        self.status = status
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    var description: String {
        "status \(status)\n--- stdout\n\(standardOutput)--- stderr\n\(standardError)---"
    }
}
