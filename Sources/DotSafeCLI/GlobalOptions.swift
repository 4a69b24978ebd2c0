/// The options every command accepts, before or after the command name
/// (`dotsafe --keyring K version` and `dotsafe version --keyring K` mean the same).
public struct GlobalOptions: Equatable, Sendable {
    /// `--keyring PATH`: the keyring file that holds the salt.
    public static let keyring = OptionSpec.value(
        "keyring", placeholder: "PATH",
        help: "Use the keyring file at PATH (default: $\(keyringEnvironmentVariable) if set, "
            + "else the keyring under $XDG_DATA_HOME/dotsafe/).")

    /// The environment variable that chooses the keyring when `--keyring` is not given.
    public static let keyringEnvironmentVariable = "DOTSAFE_KEYRING"

    /// All global options, in help order.
    public static let options: [OptionSpec] = [keyring]

    /// The keyring file from `--keyring`, else from `DOTSAFE_KEYRING` (if set and not empty);
    /// `nil` means the default keyring, whose location the keyring layer decides.
    public var keyringPath: String?

    public init(keyringPath: String? = nil) {
        self.keyringPath = keyringPath
    }

    /// Resolves the global options given in any of `parts` (before and after the command name)
    /// against `environment`. Each option may be given once in all.
    init(parsed parts: [ParsedArguments], environment: [String: String]) throws(CLIError) {
        for option in Self.options where parts.map({ $0.occurrences(option) }).reduce(0, +) > 1 {
            throw .usage("option '\(option.displayName)' given more than once")
        }
        let fromEnvironment = environment[Self.keyringEnvironmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        keyringPath = parts.lazy.compactMap { $0.value(Self.keyring) }.first ?? fromEnvironment
    }
}

/// The options that are handled before a command is parsed.
enum StandardOptions {
    /// `-h`, `--help`: accepted everywhere, wins over any other argument.
    static let help = OptionSpec.flag("help", short: "h", help: "Show help.")
    /// `--version`: before the command name only; the same as `dotsafe version`.
    static let version = OptionSpec.flag("version", short: "V", help: "Print the version.")
}
