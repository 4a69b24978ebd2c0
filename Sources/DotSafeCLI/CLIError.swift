/// An error that ends a command, with the exit status it becomes.
///
/// The message is printed as one line, `dotsafe: <message>`, on standard error.
/// Errors of other types thrown by `Command.init(parsing:)` count as `.usage`; thrown by
/// `Command.run(context:)` they count as `.failure`.
public enum CLIError: Error, Equatable, Sendable {
    /// The command line is wrong (unknown option, missing argument, invalid value).
    /// Exit status 64 (`EX_USAGE` from sysexits.h), followed by a hint where to get help.
    case usage(String)
    /// The command was well formed but could not do its work. Exit status 1.
    case failure(String)

    /// `EX_USAGE` from sysexits.h.
    public static let usageExitCode: Int32 = 64
    /// The status of any other failure.
    public static let failureExitCode: Int32 = 1

    /// The one-line message, without the `dotsafe: ` prefix.
    public var message: String {
        switch self {
        case .usage(let message), .failure(let message): message
        }
    }

    /// The process exit status for this error.
    public var exitCode: Int32 {
        switch self {
        case .usage: Self.usageExitCode
        case .failure: Self.failureExitCode
        }
    }
}

extension CLIError: CustomStringConvertible {
    public var description: String { message }
}
