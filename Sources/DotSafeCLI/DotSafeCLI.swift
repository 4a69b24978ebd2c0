import Foundation
import SystemCalls
import VaultCrypto

/// The `dotsafe` command line: the registry of commands and the entry point that parses the
/// arguments, runs one command and turns errors into messages and exit statuses.
public enum DotSafeCLI {
    /// The program name used in messages and help.
    public static let name = "dotsafe"

    /// Every command, in the order `dotsafe --help` lists them. Adding a command is adding its
    /// type here.
    public static let commands: [any Command.Type] = [
        InitCommand.self,
        MountCommand.self,
        LockCommand.self,
        StatusCommand.self,
        ContactCommand.self,
        ShareCommand.self,
        UnshareCommand.self,
        FsckCommand.self,
        AuditCommand.self,
        SyncCommand.self,
        KeyringCommand.self,
        RepatternCommand.self,
        UpgradeCommand.self,
        CompletionCommand.self,
        HelpCommand.self,
        VersionCommand.self,
    ]

    /// Runs `dotsafe` for this process: its arguments, environment, standard output and error.
    /// Returns the exit status.
    public static func main() -> Int32 {
        let (arguments, pattern) = ArgumentVector.takeArguments()
        defer { pattern?.wipe() }
        var environment = ProcessInfo.processInfo.environment
        // mount(8) removes HOME before it runs mount.fuse3 (util-linux's sanitize_env): the
        // keyring and the runtime folder are found from the user's home all the same.
        if environment["HOME"] == nil, let home = SystemCall.homeFolder { environment["HOME"] = home }
        return main(arguments: arguments,
                    environment: environment,
                    standardOutput: FileDescriptorOutput.standardOutput,
                    standardError: FileDescriptorOutput.standardError,
                    patternFromArguments: pattern)
    }

    /// Runs one command line (`arguments` without the program name) and returns the exit
    /// status: the command's own, 64 for a usage error, 1 for any other failure. Errors are
    /// printed to `standardError` as `dotsafe: <message>`; usage errors add a line saying where
    /// to find help.
    public static func main(arguments: [String], environment: [String: String],
                            standardOutput: any TextOutput, standardError: any TextOutput,
                            commands: [any Command.Type] = DotSafeCLI.commands,
                            standardInput: any LineInput = ProcessInput(),
                            patternFromArguments: SecretBytes? = nil) -> Int32 {
        let commands = IndexThreeSwitch.commands(commands, environment)
        var commandName: String?
        if arguments.isEmpty {
            standardOutput.write(HelpFormatter.programHelp(commands: commands))
            return 0
        }
        do {
            let leadingSignature = CommandSignature(
                options: GlobalOptions.options + [StandardOptions.help, StandardOptions.version])
            let leading: ParsedArguments
            let rest: [String]
            do {
                (leading, rest) = try CommandLineParser.parseLeadingOptions(arguments, signature: leadingSignature)
            } catch {
                guard asksForHelp(arguments) else { throw error }
                standardOutput.write(HelpFormatter.programHelp(commands: commands))
                return 0
            }
            var commandArguments = rest
            var isMountHelper = false
            let name: String
            if leading.flag(StandardOptions.help) {
                name = HelpCommand.name
            } else if leading.flag(StandardOptions.version) {
                name = VersionCommand.name
            } else if let first = rest.first, isStoragePath(first, commands: commands) {
                // mount.fuse3's form: `dotsafe STORAGE MOUNTPOINT -o OPTIONS`, from fstab or mount -t.
                name = MountCommand.name
                isMountHelper = true
            } else if let first = rest.first {
                name = first
                commandArguments.removeFirst()
            } else {
                throw CLIError.usage("missing command")
            }
            guard let command = commands.first(where: { $0.name == name }) else {
                throw CLIError.usage("unknown command '\(name)'")
            }
            commandName = name
            let runner = Runner(leading: leading, environment: environment, standardOutput: standardOutput,
                                standardError: standardError, commands: commands, standardInput: standardInput,
                                patternFromArguments: patternFromArguments, isMountHelper: isMountHelper)
            return try runner.execute(command, arguments: commandArguments)
        } catch {
            let error = error as? CLIError ?? .failure(describe(error))
            standardError.writeLine("\(name): \(error.message)")
            if case .usage = error {
                let topic = commandName.map { $0 == HelpCommand.name ? "" : " \($0)" } ?? ""
                standardError.writeLine("Try '\(name) help\(topic)'.")
            }
            return error.exitCode
        }
    }

    /// Whether `-h` or `--help` stands among the options (before any `--`), so that help is
    /// shown even when the rest of the command line is wrong.
    private static func asksForHelp(_ arguments: [String]) -> Bool {
        arguments.prefix { $0 != "--" }.contains { $0 == "-h" || $0 == "--help" }
    }

    /// Whether the first word is a path rather than a command name: it has a slash, as
    /// mount.fuse3 passes the fstab line's source (no command name has one).
    private static func isStoragePath(_ word: String, commands: [any Command.Type]) -> Bool {
        word.contains("/") && !commands.contains { $0.name == word }
    }

    /// The one-line message for an error that is not a `CLIError`.
    static func describe(_ error: any Error) -> String {
        String(describing: error)
    }

    /// Parses and runs one command once the command name is known.
    private struct Runner {
        let leading: ParsedArguments
        let environment: [String: String]
        let standardOutput: any TextOutput
        let standardError: any TextOutput
        let commands: [any Command.Type]
        let standardInput: any LineInput
        let patternFromArguments: SecretBytes?
        let isMountHelper: Bool

        func execute<C: Command>(_ command: C.Type, arguments: [String]) throws -> Int32 {
            let signature = command.signature.adding(command.globalOptions + [StandardOptions.help])
            let parsed: ParsedArguments
            do {
                parsed = try CommandLineParser.parse(arguments, signature: signature)
            } catch {
                guard asksForHelp(arguments) else { throw error }
                standardOutput.write(command.help)
                return 0
            }
            if parsed.flag(StandardOptions.help) {
                standardOutput.write(command.help)
                return 0
            }
            let globalOptions = try GlobalOptions(parsed: [leading, parsed], environment: environment)
            let instance: C
            do {
                instance = try C(parsing: parsed)
            } catch let error as CLIError {
                throw error
            } catch {
                throw CLIError.usage(describe(error))
            }
            var context = CommandContext(globalOptions: globalOptions, environment: environment,
                                         standardOutput: standardOutput, standardError: standardError,
                                         commands: commands, standardInput: standardInput,
                                         patternFromArguments: patternFromArguments)
            context.isMountHelper = isMountHelper
            do {
                return try instance.run(context: context)
            } catch let error as CLIError {
                throw error
            } catch {
                throw CLIError.failure(describe(error))
            }
        }
    }
}
