import VaultFormat

/// `dotsafe unshare MOUNTPOINT --to CODE`: withdraws a grant `share` made. The mount's daemon
/// gives the vault new keys (docs/FORMAT.md §14.8), seals its other grants again to them and
/// leaves the withdrawn recipient an ended grant in place of theirs.
struct UnshareCommand: Command {
    static let name = "unshare"
    static let summary = "Withdraw the mounted vault from the vault of a contact code."
    static let discussion = """
        Gives the vault a new key and moves its index to new names: what is written
        from now on cannot be read with the withdrawn grant, and the other people you
        shared with keep their access. Nothing is encrypted again: the withdrawn
        person keeps what they could already read, and whatever they copied. Their
        next mount of it says that their access ended. They can still delete files
        in a storage or remote they can write to.
        """
    static let mountPoint = PositionalSpec("MOUNTPOINT", help: "Where the vault is mounted.")
    static let to = OptionSpec.value("to", placeholder: "CODE", help: "The contact code the vault was shared with.")
    static let signature = CommandSignature(options: [to], positionals: [mountPoint])

    let mountPoint: String
    let code: String

    init(parsing arguments: ParsedArguments) throws {
        mountPoint = try arguments.required(Self.mountPoint)
        guard let code = arguments.value(Self.to) else {
            throw CLIError.usage("missing --to CODE: the contact code to withdraw the vault from")
        }
        self.code = code
    }

    func run(context: CommandContext) throws -> Int32 {
        let recipient = try ContactCommand.parseCode(code)
        let (reply, _) = try DaemonRequest.ask(mountPoint, ShareRequests.unsharePrefix + recipient.compact,
                                               wait: .untilDone(doing: "withdraw it"), context: context)
        guard reply == ShareRequests.unshared else {
            throw CLIError.failure("the daemon of \(mountPoint) gave an answer this dotsafe does not know")
        }
        context.standardOutput.writeLine("Withdrew the vault at \(mountPoint) from \(recipient.text): it has new keys, "
                                         + "and what is written from now on is not theirs to read.")
        return 0
    }
}
