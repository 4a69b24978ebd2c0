/// `dotsafe help [COMMAND]`: the command list, or one command's help.
/// `dotsafe --help` and `dotsafe -h` run this command too.
struct HelpCommand: Command {
    static let name = "help"
    static let summary = "Show help for dotsafe or for one command."
    static let topic = PositionalSpec("COMMAND", arity: .optional,
                                      help: "The command to describe; without it, list all commands.")
    static let manual = OptionSpec.flag("man", help: "Print it as a manual page (roff) instead.")
    static let signature = CommandSignature(options: [manual], positionals: [topic])

    /// The command to describe, or `nil` for the overview.
    let topic: String?
    let asManualPage: Bool

    init(parsing arguments: ParsedArguments) throws {
        topic = arguments.positional(Self.topic)
        asManualPage = arguments.flag(Self.manual)
    }

    func run(context: CommandContext) throws -> Int32 {
        guard let topic else {
            context.standardOutput.write(asManualPage ? ManPage.program(commands: context.commands)
                                                      : HelpFormatter.programHelp(commands: context.commands))
            return 0
        }
        guard let command = context.commands.first(where: { $0.name == topic }) else {
            throw CLIError.usage("unknown command '\(topic)'")
        }
        context.standardOutput.write(asManualPage ? ManPage.command(command) : command.help)
        return 0
    }
}
