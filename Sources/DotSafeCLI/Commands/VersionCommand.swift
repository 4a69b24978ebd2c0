/// `dotsafe version` (also `dotsafe --version`): prints `dotsafe 0.1.0`.
struct VersionCommand: Command {
    static let name = "version"
    static let summary = "Print the version of dotsafe."

    init(parsing arguments: ParsedArguments) throws {}

    func run(context: CommandContext) throws -> Int32 {
        context.standardOutput.writeLine("\(DotSafeCLI.name) \(DotSafeVersion.current)")
        return 0
    }
}
