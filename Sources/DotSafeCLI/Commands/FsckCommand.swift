import Foundation
import VaultCore
import VaultFormat
import VaultCrypto
import VaultStore

/// `dotsafe fsck STORAGE`: opens the vault a pattern finds read-only, opens every index page,
/// chunk and pack member, checks the storage files of the vault, and reports. `--repair` drops
/// what cannot be read, after saying what, and commits.
struct FsckCommand: Command {
    static let name = "fsck"
    static let summary = "Check a vault; with --repair, drop what cannot be read."
    static let usesKeyring = true
    static let discussion = """
        Decrypts every index page, chunk and pack member of the vault the pattern
        opens, and checks its storage files (present, of the right size, none stray,
        a count in steps of 16). Damaged items are named by path. Files that an
        interrupted session left, and the download folder of a killed sync, which
        the next writable mount or sync removes, are counted on one line: no
        damage. Exit status: 0 clean, 1 damage or failure.
        Nothing is written without --repair, and never while the vault is mounted.

        --repair lists what it drops, then keeps every item and every chunk that
        opens: an unreadable chunk becomes a hole (256 KiB of zeros in its place;
        the file keeps its size and its other chunks), and a small file whose pack
        member does not open keeps its name and size but reads as zeros. Dropping
        whole items would lose the readable part of large files; the list says
        which byte ranges became zeros. Missing files of the vault are made again,
        stray ones removed. An index that does not open is never repaired: fsck
        then writes nothing.
        """
    // Index version 3: `Vault.check` also runs §15.6's rules across records, one line each, and
    // `--repair` writes the derived records again and moves folders nothing reaches into
    // /lost+found (docs/FORMAT.md §15.7).
    static let storage = PositionalSpec("STORAGE", help: "The storage folder (made by 'dotsafe init').")
    static let repair = OptionSpec.flag("repair", help: "Drop what cannot be read, then commit.")
    static let signature = CommandSignature(options: PatternReader.options + [ShareCommand.sharedBy, repair],
                                            positionals: [storage])

    let storagePath: String
    let patternReader: PatternReader
    let repairs: Bool
    let sharedBy: String?

    init(parsing arguments: ParsedArguments) throws {
        storagePath = try arguments.required(Self.storage)
        patternReader = try PatternReader(parsing: arguments)
        repairs = arguments.flag(Self.repair)
        sharedBy = arguments.value(ShareCommand.sharedBy)
    }

    func run(context: CommandContext) throws -> Int32 {
        // Keys and every decrypted page and chunk pass through this process, as in the mount
        // daemon: no core dump, no ptrace or /proc/PID/mem for other processes of the user.
        do { try ProcessHygiene.disableMemoryDumps() } catch { throw CLIError.failure("cannot make fsck non-dumpable: \(error)") }
        let out = context.standardOutput
        let sharedBy = try self.sharedBy.map { try ContactCommand.parseCode($0) }
        let storage = try Storage.open(at: storagePath)
        let keyringPath = FileKeyringBackend.path(option: context.globalOptions.keyringPath, environment: context.environment)
        let keyring = try Keyring(option: keyringPath, environment: context.environment)
        let salt = try keyring.requiredPatternSalt()
        let pattern = try patternReader.read(context)
        let secrets = try VaultSecrets(pattern: pattern, salt: salt)
        // The mount guard: a mounted vault changes under a check, and a repair would race its daemon.
        let folder: RuntimeFolder
        do { folder = try RuntimeFolder.open(environment: context.environment) } catch {
            secrets.wipe()
            throw error
        }
        defer { folder.leave() }
        let vaultLock = try MountGuard.take(secrets, storage: storage, folder: folder, for: .fsck, sharedBy: sharedBy) {
            "this vault is \($0): lock it first"
        }
        // Held until fsck ends, so that no mount starts meanwhile.
        defer { vaultLock.release() }
        let vault: Vault
        do {
            var options = IndexThreeSwitch.options(Vault.Options(readOnly: !repairs, cacheBytes: 4 << 20), context.environment)
            // Derived records that break §15.6's rules are this command's to report, not to refuse.
            options.defersIndexChecks = true
            vault = try sharedBy.map { try Vault.open(storage: storage, secrets: secrets, sharedBy: $0, options: options) }
                ?? Vault.open(storage: storage, secrets: secrets, options: options)
        } catch {
            secrets.wipe()
            throw error
        }
        defer { try? vault.lock() }
        if vault.isNew {
            throw CLIError.failure("no vault opens with this pattern in \(storagePath): nothing is at its index names")
        }
        var report = try Self.check(vault, context)
        Self.print(report, to: out)
        guard repairs, !report.isClean else { return report.isClean ? 0 : 1 }

        if !report.damagedItems.isEmpty || !report.storageProblems.isEmpty { out.writeLine("Repair drops what cannot be read:") }
        for item in report.damagedItems {
            if item.problems.contains("pack member does not open") || item.problems.contains(where: { $0.hasPrefix("pack file") }) {
                out.writeLine("  \(item.path): its content becomes zeros (size kept)")
            } else {
                let ranges = item.unreadableChunks.map { "chunk \($0 + 1) (bytes \($0 * Self.chunk)…\(($0 + 1) * Self.chunk - 1))" }
                out.writeLine("  \(item.path): \(ranges.joined(separator: ", ")) become\(ranges.count == 1 ? "s" : "") zeros")
            }
        }
        for number in report.missingFileNumbers { out.writeLine("  file \(number) of the vault: made again (random bytes)") }
        for number in report.strayFileNumbers { out.writeLine("  stray file \(number) of the vault: removed") }
        if !report.indexProblems.isEmpty { out.writeLine("Repair of the index keeps every item:") }
        for folder in report.unreachedFolders {
            out.writeLine("  folder \(folder), which nothing reaches: moved into /lost+found with what it holds")
        }
        if !report.indexProblems.isEmpty { out.writeLine("  index 3's derived records: written again from the items") }
        try vault.repair(report)
        out.writeLine("Repaired and committed (generation \(vault.generation)). Checking again:")
        report = try Self.check(vault, context)
        Self.print(report, to: out)
        return report.isClean ? 0 : 1
    }

    static let chunk = Vault.Limits.payloadSize

    /// The check, with its progress on standard error when that is a terminal.
    static func check(_ vault: Vault, _ context: CommandContext) throws -> VaultCheckReport {
        let progress = ProgressReporter("fsck", unit: "chunks", to: context.standardError)
        defer { progress.finish() }
        return try vault.check { progress.update(done: $0, total: $1) }
    }

    /// What an interrupted session left, which is no damage: the line that says so, or nil.
    static func leftoverLine(_ report: VaultCheckReport) -> String? {
        let files = report.leftoverFileNumbers.count, copies = report.recreationLeftovers, folders = report.downloadLeftovers
        guard files + copies + folders > 0 else { return nil }
        let parts = [files > 0 ? "\(files) file\(files == 1 ? "" : "s") of the vault" : nil,
                     copies > 0 ? "\(copies) re-creation cop\(copies == 1 ? "y" : "ies")" : nil,
                     folders > 0 ? "\(folders) download folder\(folders == 1 ? "" : "s") of a sync" : nil].compactMap { $0 }
        let list = parts.count > 1 ? parts.dropLast().joined(separator: ", ") + " and " + parts.last! : parts[0]
        // Any writing open removes them, a sync's too; a sync's folder is named for the sync,
        // which is where its user looks next.
        let remover = folders > 0 ? "the next sync or writable mount" : "the next writable mount"
        return "left by an interrupted session: \(list); \(remover) removes " + (files + copies + folders == 1 ? "it" : "them")
    }

    /// One line per damage, then a summary.
    static func print(_ report: VaultCheckReport, to out: any TextOutput) {
        for item in report.damagedItems {
            for problem in item.problems { out.writeLine("damaged: \(item.path): \(problem)") }
        }
        for problem in report.storageProblems { out.writeLine("storage: \(problem)") }
        for problem in report.indexProblems { out.writeLine(problem) }
        if let leftovers = leftoverLine(report) { out.writeLine(leftovers) }
        let counts = "\(report.items) items, \(report.chunksChecked) chunks, \(report.membersChecked) pack members, \(report.storageFiles) storage files"
        if report.isClean {
            out.writeLine("Checked \(counts): clean.")
        } else {
            let index = report.indexProblems.isEmpty ? "" : ", \(report.indexProblems.count) index problems"
            out.writeLine("Checked \(counts): \(report.damagedItems.count) damaged items, \(report.storageProblems.count) storage problems\(index).")
        }
    }
}
