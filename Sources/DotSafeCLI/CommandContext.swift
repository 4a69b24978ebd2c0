import VaultCrypto

/// What a running command may use from its surroundings. Everything a command reads from or
/// writes to the process goes through here, so tests run commands in-process.
public struct CommandContext: Sendable {
    /// The options every command accepts (`--keyring`), already resolved against the environment.
    public var globalOptions: GlobalOptions
    /// The process environment (or a test's stand-in).
    public var environment: [String: String]
    /// Where normal output goes.
    public var standardOutput: any TextOutput
    /// Where diagnostics, hints and prompts go.
    public var standardError: any TextOutput
    /// The registered commands (for `help`).
    public var commands: [any Command.Type]
    /// Where patterns and passphrases are read.
    public var standardInput: any LineInput
    /// A pattern taken out of this process's argv (see `ArgumentVector`).
    public var patternFromArguments: SecretBytes?
    /// Run as mount.fuse3 runs it (`dotsafe STORAGE MOUNTPOINT -o ...`): from fstab or a mount
    /// unit, whose output goes to the journal, where a line per mount would be a log of sessions.
    public var isMountHelper = false

    public init(globalOptions: GlobalOptions = GlobalOptions(), environment: [String: String] = [:],
                standardOutput: any TextOutput, standardError: any TextOutput,
                commands: [any Command.Type] = DotSafeCLI.commands, standardInput: any LineInput = ProcessInput(),
                patternFromArguments: SecretBytes? = nil) {
        self.globalOptions = globalOptions
        self.environment = environment
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.commands = commands
        self.standardInput = standardInput
        self.patternFromArguments = patternFromArguments
    }
}
