/// `dotsafe completion SHELL`: the completion script for bash, zsh or fish, from the command
/// table (the Debian package installs all three).
struct CompletionCommand: Command {
    static let name = "completion"
    static let summary = "Print the shell completion script for bash, zsh or fish."
    static let discussion = """
        Try it in the running shell:  source <(dotsafe completion bash)
        To install it for yourself, save it as (the Debian package installs all three):
          bash  ~/.local/share/bash-completion/completions/dotsafe
          zsh   _dotsafe in a folder of $fpath
          fish  ~/.config/fish/completions/dotsafe.fish
        """
    static let shell = PositionalSpec("SHELL", values: CompletionScript.Shell.allCases.map(\.rawValue), help: "bash, zsh or fish.")
    static let signature = CommandSignature(positionals: [shell])

    let shell: CompletionScript.Shell

    init(parsing arguments: ParsedArguments) throws {
        let word = try arguments.required(Self.shell)
        guard let shell = CompletionScript.Shell(rawValue: word) else {
            throw CLIError.usage("unknown shell '\(word)': use bash, zsh or fish")
        }
        self.shell = shell
    }

    func run(context: CommandContext) throws -> Int32 {
        context.standardOutput.write(CompletionScript.script(for: shell, commands: context.commands))
        return 0
    }
}
