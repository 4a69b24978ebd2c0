import SystemCalls
import VaultCore
import VaultCrypto
import VaultStore

/// `dotsafe upgrade STORAGE`: converts the vault a pattern opens to index version 3 by one
/// commit (docs/FORMAT.md §15.1), after saying what that does to older releases and asking.
/// A vault of one device, never synced or shared, converts by itself at its first change; this
/// is for the others.
struct UpgradeCommand: Command {
    static let name = "upgrade"
    static let summary = "Convert a vault's index to version 3."
    static let usesKeyring = true
    static let discussion = """
        Writes the index of the vault the pattern opens again as index version 3,
        in one commit, after saying what it does and asking (unless --yes). A vault
        of one device that never synced or was shared converts by itself at its
        first change. Afterwards releases of DotSafe without index version 3 no
        longer open the vault, here or on any device or grantee that syncs with
        it: update DotSafe there first. The vault must be locked. Cut short by a
        crash, the vault opens as before or converted, with the same files.
        """
    static let storage = PositionalSpec("STORAGE", help: "The storage folder (made by 'dotsafe init').")
    static let yes = OptionSpec.flag("yes", help: "Convert without asking.")
    static let signature = CommandSignature(options: PatternReader.options + [yes], positionals: [storage])

    let storagePath: String
    let patternReader: PatternReader
    let asks: Bool

    init(parsing arguments: ParsedArguments) throws {
        storagePath = try arguments.required(Self.storage)
        patternReader = try PatternReader(parsing: arguments)
        asks = !arguments.flag(Self.yes)
    }

    func run(context: CommandContext) throws -> Int32 {
        do { try ProcessHygiene.disableMemoryDumps() } catch { throw CLIError.failure("cannot make upgrade non-dumpable: \(error)") }
        let out = context.standardOutput
        let storage = try Storage.open(at: storagePath)
        let keyringPath = FileKeyringBackend.path(option: context.globalOptions.keyringPath, environment: context.environment)
        let salt = try Keyring(option: keyringPath, environment: context.environment).requiredPatternSalt()
        let pattern = try patternReader.read(context)
        let secrets = try VaultSecrets(pattern: pattern, salt: salt)
        // One key derivation for both opens: the look (read-only) and the conversion.
        let converting: VaultSecrets
        do { converting = try secrets.copy() } catch {
            secrets.wipe()
            throw error
        }
        defer { converting.wipe() }
        let folder: RuntimeFolder
        do { folder = try RuntimeFolder.open(environment: context.environment) } catch {
            secrets.wipe()
            throw error
        }
        defer { folder.leave() }
        // Held until the conversion ends: no mount of this vault meanwhile.
        let vaultLock = try MountGuard.take(secrets, storage: storage, folder: folder, for: .upgrade) {
            "this vault is \($0): lock it first; nothing was changed"
        }
        defer { vaultLock.release() }
        // A pattern that opens nothing would make an empty vault: never here.
        guard try Vault.patternUse(secrets, in: storage) != .none else {
            secrets.wipe()
            throw CLIError.failure("no vault opens with this pattern in \(storagePath): nothing to upgrade; nothing was written")
        }
        let found = try look(storage, secrets)
        if found.version == 3 {
            out.writeLine("The vault in \(storagePath) has index version 3 already: nothing to do.")
            return 0
        }
        guard try !storage.isOnReadOnlyFileSystem() else {
            throw CLIError.failure("\(storagePath) is on a read-only file system: nothing was upgraded")
        }
        for line in Self.explanation(storagePath, version: found.version, hold: found.hold) { out.writeLine(line) }
        if asks {
            var answer = try context.standardInput.readLine(prompt: "Convert it now? [y/N] ", secret: false) ?? []
            defer { answer.wipe() }
            // A terminal echoes the line end; from a pipe the prompt's line ends here.
            if !context.standardInput.isTerminal { context.standardError.writeLine("") }
            guard answer == Array("y".utf8) || answer == Array("yes".utf8) else {
                throw CLIError.failure("not converted: nothing was changed")
            }
        }
        let vault = try Vault.open(storage: storage, secrets: converting, options: Self.indexThree(Vault.Options(cacheBytes: 4 << 20)))
        defer { try? vault.lock() }
        guard !vault.isNew else {
            throw CLIError.failure("no vault opens with this pattern in \(storagePath): nothing to upgrade; nothing was written")
        }
        guard try vault.convertToIndexThree() else {
            out.writeLine("The vault in \(storagePath) has index version 3 already: nothing to do.")
            return 0
        }
        let generation = vault.generation
        try vault.lock()
        out.writeLine("Converted the vault in \(storagePath) to index version 3 (generation \(generation)).")
        return 0
    }

    /// The vault's index version and what holds it at 2, from a read-only open (nothing
    /// written, whatever the answer).
    private func look(_ storage: DiskStorageFolder, _ secrets: VaultSecrets) throws -> (version: Int, hold: Vault.IndexThreeHold) {
        let vault = try Vault.open(storage: storage, secrets: secrets, options: Self.indexThree(Vault.Options(readOnly: true, cacheBytes: 4 << 20)))
        defer { try? vault.lock() }
        guard !vault.isNew else {
            throw CLIError.failure("no vault opens with this pattern in \(storagePath): nothing to upgrade; nothing was written")
        }
        return (vault.indexVersion, vault.indexThreeHold)
    }

    /// Opens read and write index 3 whatever the environment: the command exists only with it.
    private static func indexThree(_ options: Vault.Options) -> Vault.Options {
        var options = options
        options.indexThree = true
        return options
    }

    /// What the conversion does, and why older releases elsewhere stop opening the vault.
    static func explanation(_ path: String, version: Int, hold: Vault.IndexThreeHold) -> [String] {
        var lines = ["The vault in \(path) has index version \(version == 1 ? "1 (storage format 1)" : "2")."]
        var others: [String] = []
        if hold.devices > 1 { others.append("\(hold.devices - 1) other device\(hold.devices == 2 ? "" : "s")") }
        if hold.grants > 0 { others.append("\(hold.grants) grant\(hold.grants == 1 ? "" : "s") (people it is shared with)") }
        if hold.synced { others.append("a sync remote") }
        lines.append("Upgrade writes its whole index again as index version 3, in one commit\(version == 1 ? " that also makes it format 2" : "").")
        if others.isEmpty {
            lines.append("Releases of DotSafe without index version 3 will no longer open it.")
        } else {
            lines.append("It has \(others.joined(separator: ", ")): releases of DotSafe without index version 3")
            lines.append("will no longer open it there. Update DotSafe on every device and for every grantee first.")
        }
        return lines
    }
}
