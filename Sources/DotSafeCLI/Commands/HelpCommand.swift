/// `dotsafe help [COMMAND]`: the command list, or one command's help.
/// `dotsafe --help` and `dotsafe -h` run this command too.
struct HelpCommand: Command {
    static let name = "help"
    static let summary = "Show help for dotsafe or for one command."
    static let topic = PositionalSpec("COMMAND", arity: .optional,
                                      help: "The command to describe; without it, list all commands.")
    static let signature = CommandSignature(positionals: [topic])

    /// The command to describe, or `nil` for the overview.
    let topic: String?

    init(parsing arguments: ParsedArguments) throws {
        topic = arguments.positional(Self.topic)
    }

    func run(context: CommandContext) throws -> Int32 {
        guard let topic else {
            context.standardOutput.write(HelpFormatter.programHelp(commands: context.commands))
            return 0
        }
        guard let command = context.commands.first(where: { $0.name == topic }) else {
            throw CLIError.usage("unknown command '\(topic)'")
        }
        context.standardOutput.write(command.help)
        return 0
    }
}
