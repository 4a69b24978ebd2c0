import VaultFormat

/// `dotsafe share MOUNTPOINT --to CODE`: gives the vault to the holder of a contact code: its
/// daemon writes a grant (docs/FORMAT.md §14) into the storage and commits. Prints what to send
/// to the recipient, which gives no access by itself.
struct ShareCommand: Command {
    static let name = "share"
    static let summary = "Share the mounted vault with the vault of a contact code."
    static let discussion = """
        Writes a grant into the storage: the vault's key, encrypted to the contact
        code's key and authenticated as this vault's, in a file that looks like every
        other. Only the holder of CODE can find and open it; your pattern never
        leaves. The recipient needs the storage (a copy of the folder, or the remote
        it syncs with) and your contact code, which this command prints; neither
        gives access alone. They mount it with their own pattern:
        dotsafe mount STORAGE MOUNTPOINT --shared YOURCODE.
        """
    static let mountPoint = PositionalSpec("MOUNTPOINT", help: "Where the vault is mounted.")
    static let to = OptionSpec.value("to", placeholder: "CODE", help: "The recipient's contact code ('dotsafe contact' on their side).")
    static let signature = CommandSignature(options: [to], positionals: [mountPoint])
    /// The vault selector's second half, for `mount` and `fsck`: the pattern opens your vault,
    /// and CODE names who shared a vault with it.
    static let sharedBy = OptionSpec.value("shared", placeholder: "CODE",
                                           help: "Open the vault the holder of this contact code shared with the vault the pattern opens.")

    let mountPoint: String
    let code: String

    init(parsing arguments: ParsedArguments) throws {
        mountPoint = try arguments.required(Self.mountPoint)
        guard let code = arguments.value(Self.to) else { throw CLIError.usage("missing --to CODE: the recipient's contact code") }
        self.code = code
    }

    func run(context: CommandContext) throws -> Int32 {
        let recipient = try ContactCommand.parseCode(code)
        let (reply, storage) = try DaemonRequest.ask(mountPoint, ShareRequests.sharePrefix + recipient.compact,
                                                     wait: .untilDone(doing: "share it"), context: context)
        guard reply.hasPrefix("shared ") else {
            throw CLIError.failure("the daemon of \(mountPoint) gave an answer this dotsafe does not know")
        }
        let own = String(reply.dropFirst("shared ".count))
        let out = context.standardOutput
        out.writeLine("Shared the vault at \(mountPoint) with \(recipient.text).")
        out.writeLine("Send them your contact code (it gives no access by itself):")
        out.writeLine("  \(own)")
        out.writeLine("and the storage \(storage) (a copy, or the remote it syncs with). They mount it with their own pattern:")
        out.writeLine("  dotsafe mount STORAGE MOUNTPOINT --shared \(own)")
        return 0
    }
}
