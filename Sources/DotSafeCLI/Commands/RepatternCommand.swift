import SystemCalls
import VaultCore
import VaultCrypto
import VaultStore

/// `dotsafe repattern STORAGE`: gives the vault the current pattern opens a new pattern
/// (R-KEY-6, docs/FORMAT.md §13.12). The vault key stays: one new unlock record, the old one
/// made a cover; at every instant the old or the new pattern opens the vault.
struct RepatternCommand: Command {
    static let name = "repattern"
    static let summary = "Change the pattern that opens a vault."
    static let usesKeyring = true
    static let discussion = """
        Asks on the terminal for the current pattern, then for the new one twice;
        with --pattern-stdin, standard input gives two lines: the current pattern,
        then the new one. Afterwards the new pattern opens the vault and the old one
        opens a new, empty vault: its unlock record becomes random bytes, like a
        cover. The vault must be locked. A new pattern that already opens a vault in
        this storage is refused (the change would hide that vault). Cut short by a
        crash, the vault opens with the old or the new pattern, never neither; the
        next mount or repattern finishes the change. Copies of the storage made
        before (backups) still open with the old pattern.
        """
    static let storage = PositionalSpec("STORAGE", help: "The storage folder (made by 'dotsafe init').")
    static let patternStdin = OptionSpec.flag("pattern-stdin",
                                              help: "Read two lines from standard input: the current pattern, then the new one.")
    static let signature = CommandSignature(options: [patternStdin], positionals: [storage])

    let storagePath: String
    let fromStandardInput: Bool

    init(parsing arguments: ParsedArguments) throws {
        storagePath = try arguments.required(Self.storage)
        fromStandardInput = arguments.flag(Self.patternStdin)
    }

    func run(context: CommandContext) throws -> Int32 {
        do { try ProcessHygiene.disableMemoryDumps() } catch { throw CLIError.failure("cannot make repattern non-dumpable: \(error)") }
        let storage = try Storage.open(at: storagePath)
        let keyringPath = FileKeyringBackend.path(option: context.globalOptions.keyringPath, environment: context.environment)
        let salt = try Keyring(option: keyringPath, environment: context.environment).requiredPatternSalt()
        let (current, new) = try readPatterns(context)
        PatternReader.printHints(new, to: context.standardError)

        let progress = ProgressReporter(Self.name, unit: "steps", to: context.standardError)
        defer { progress.finish() }
        let total = 4 + Vault.patternChangeSteps
        progress.update(done: 0, total: total)
        let currentSecrets = try VaultSecrets(pattern: current, salt: salt)
        progress.update(done: 1, total: total)
        let folder: RuntimeFolder
        do { folder = try RuntimeFolder.open(environment: context.environment) } catch {
            currentSecrets.wipe()
            throw error
        }
        defer { folder.leave() }
        // Held until the change ends: no mount of either pattern's vault meanwhile.
        let currentLock = try MountGuard.take(currentSecrets, storage: storage, folder: folder, for: .repattern) {
            "this vault is \($0): lock it first; nothing was changed"
        }
        defer { currentLock.release() }
        let newSecrets: VaultSecrets
        do {
            switch try Vault.patternUse(currentSecrets, in: storage) {
            case .none: throw CLIError.failure("no vault opens with this pattern in \(storagePath); nothing was changed")
            case .formatOne: throw CLIError.failure("\(PatternChangeError.formatOne); nothing was changed")
            case .formatTwo: break
            }
            newSecrets = try VaultSecrets(pattern: new, salt: salt)
        } catch {
            currentSecrets.wipe()
            throw error
        }
        progress.update(done: 2, total: total)
        defer { newSecrets.wipe() }
        let newLock: MountGuard.Held
        do {
            newLock = try MountGuard.take(newSecrets, storage: storage, folder: folder, for: .repattern) {
                "the new pattern's vault is \($0): lock it first; nothing was changed"
            }
        } catch {
            currentSecrets.wipe()
            throw error
        }
        defer { newLock.release() }

        let vault: Vault
        do { vault = try Vault.open(storage: storage, secrets: currentSecrets, options: IndexThreeSwitch.options(Vault.Options(cacheBytes: 4 << 20), context.environment)) } catch {
            currentSecrets.wipe()
            throw error
        }
        defer { try? vault.lock() }
        progress.update(done: 3, total: total)
        if vault.openedThroughFormerPattern {
            // An interrupted change to this very pattern was finished by the open.
            guard try vault.isOwned(by: newSecrets) else { throw CLIError.failure(PatternChangeError.formerPattern.description) }
        } else {
            do {
                guard try Vault.patternUse(newSecrets, in: storage) == .none else { throw PatternChangeError.newPatternInUse }
                try vault.changePattern(to: newSecrets) { progress.update(done: 3 + $0, total: total) }
            } catch let error as PatternChangeError {
                throw CLIError.failure("\(error); nothing was changed")
            }
        }
        // A synced vault's remote keeps the old pattern's record until the next sync (§13.12).
        let remoteKeepsOldPattern = try vault.formerRemoteUnlockName() != nil
        try vault.lock()
        progress.update(done: total, total: total)
        progress.finish()
        context.standardOutput.writeLine("Changed the pattern of the vault in \(storagePath): the new pattern opens it, the old one opens nothing.")
        if remoteKeepsOldPattern {
            context.standardOutput.writeLine("The sync remote opens with the old pattern until the next 'dotsafe sync' of this storage, with the new one.")
        }
        return 0
    }

    /// The current pattern, then the new one (asked twice on a terminal; they must match, and
    /// differ from the current one).
    private func readPatterns(_ context: CommandContext) throws -> (current: Pattern, new: Pattern) {
        let current: Pattern, new: Pattern
        if fromStandardInput {
            current = try Self.line(context, missing: "no current pattern on standard input (two lines: the current pattern, then the new one)")
            new = try Self.line(context, missing: "no new pattern on standard input (two lines: the current pattern, then the new one)")
        } else {
            current = try PatternPrompt.ask("Current pattern: ")
            new = try PatternPrompt.ask("New pattern: ", drawGrid: false)
            let again = try PatternPrompt.ask("New pattern again: ", drawGrid: false)
            guard again == new else { throw CLIError.failure("the two entries of the new pattern differ; nothing was changed") }
        }
        guard new != current else { throw CLIError.failure("the new pattern is the current one; nothing was changed") }
        return (current, new)
    }

    private static func line(_ context: CommandContext, missing: String) throws -> Pattern {
        guard var line = try context.standardInput.readLine(prompt: nil, secret: true) else { throw CLIError.failure(missing) }
        defer { line.wipe() }
        return try PatternReader.parse { try Pattern(parsing: line) }
    }
}
