/// One `dotsafe` subcommand, such as `dotsafe version`.
///
/// A command is a small value: `init(parsing:)` validates the command line (and only that: no
/// I/O), `run(context:)` does the work. To add a command, write one type conforming to
/// `Command` and add it to `DotSafeCLI.commands`; parsing, `--help`, `dotsafe help NAME`, the
/// command list and the usage line all come from `name`, `summary` and `signature`.
///
///     struct LockCommand: Command {
///         static let name = "lock"
///         static let summary = "Lock a mounted vault: write pending changes, then unmount."
///         static let mountPoint = PositionalSpec("MOUNTPOINT", help: "Where the vault is mounted.")
///         static let signature = CommandSignature(positionals: [mountPoint])
///
///         let mountPoint: String
///         init(parsing arguments: ParsedArguments) throws {
///             mountPoint = try arguments.required(Self.mountPoint)
///         }
///         func run(context: CommandContext) throws -> Int32 { … ; return 0 }
///     }
public protocol Command: Sendable {
    /// The word that selects the command: `dotsafe NAME`.
    static var name: String { get }
    /// One line, shown in the command list and at the top of the command's help.
    static var summary: String { get }
    /// Further help text printed as written after the summary (examples, notes). Default: none.
    static var discussion: String { get }
    /// The options and positional arguments the command accepts, besides the global options
    /// and `-h`/`--help`, which every command accepts. Default: none.
    static var signature: CommandSignature { get }
    /// Whether the command reads the keyring, and so accepts the global `--keyring` after its
    /// name and lists it in its help. Default: no.
    static var usesKeyring: Bool { get }
    /// The usage line, `USAGE: dotsafe NAME …`. Default: generated from `signature`.
    static var usage: String { get }
    /// The full text of `dotsafe help NAME`. Default: generated from the properties above.
    static var help: String { get }

    /// Validates the parsed command line. Throw `CLIError.usage` for a bad value (exit 64);
    /// any other error thrown here is reported the same way.
    init(parsing arguments: ParsedArguments) throws

    /// Does the work and returns the exit status (0 for success). Throw `CLIError.failure` (or
    /// any error) to print `dotsafe: <message>` and exit 1, `CLIError.usage` to exit 64.
    func run(context: CommandContext) throws -> Int32
}

extension Command {
    public static var discussion: String { "" }
    public static var signature: CommandSignature { CommandSignature() }
    public static var usesKeyring: Bool { false }
    /// The global options this command accepts after its name.
    static var globalOptions: [OptionSpec] { usesKeyring ? GlobalOptions.options : [] }
    public static var usage: String { HelpFormatter.usage(for: self) }
    public static var help: String { HelpFormatter.help(for: self) }
}
