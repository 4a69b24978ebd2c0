import VaultFormat

/// `dotsafe contact MOUNTPOINT`: the mounted vault's contact code (docs/FORMAT.md §14.1), one
/// line, asked of its daemon. A new, empty vault is committed first, so that the key behind the
/// code is in the storage before anyone holds the code.
struct ContactCommand: Command {
    static let name = "contact"
    static let summary = "Print the mounted vault's contact code, to be shared with."
    static let discussion = """
        The code is the vault's public key: it gives no access to anything. Give it to
        someone who wants to share a vault with you ('dotsafe share MOUNTPOINT --to
        CODE' on their side). Each vault has its own code: a decoy and a hidden vault
        have different ones. On a vault shared with you, it prints your own vault's
        code (the one the vault was shared with) and says so on standard error.
        """
    static let mountPoint = PositionalSpec("MOUNTPOINT", help: "Where the vault is mounted.")
    static let signature = CommandSignature(positionals: [mountPoint])

    let mountPoint: String

    init(parsing arguments: ParsedArguments) throws {
        mountPoint = try arguments.required(Self.mountPoint)
    }

    func run(context: CommandContext) throws -> Int32 {
        let (reply, _) = try DaemonRequest.ask(mountPoint, ShareRequests.contact, wait: .atMost(seconds: WaitingNote.patienceSeconds), context: context)
        if reply.hasPrefix("shared ") {
            context.standardError.writeLine("\(DotSafeCLI.name): note: this vault was shared with you; this is your own vault's contact code")
            context.standardOutput.writeLine(String(reply.dropFirst("shared ".count)))
        } else if reply.hasPrefix("code ") {
            context.standardOutput.writeLine(String(reply.dropFirst("code ".count)))
        } else {
            throw CLIError.failure("the daemon of \(mountPoint) gave an answer this dotsafe does not know")
        }
        return 0
    }

    /// A contact code typed on the command line, or its one-line error (a typo, a wrong length...).
    static func parseCode(_ text: String) throws -> ContactCode {
        do { return try ContactCode.parse(text) } catch { throw CLIError.failure(error.description) }
    }
}
