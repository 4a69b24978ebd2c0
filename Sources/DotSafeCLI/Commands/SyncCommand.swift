import Foundation
import SystemCalls
import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore
import VaultSync

/// `dotsafe sync STORAGE REMOTE`: brings the vault a pattern opens to one state in the local
/// storage and on a remote that rclone reaches (docs/SYNC-DESIGN.md §3.4). Into a missing or
/// empty folder, it makes the storage and brings the vault down (a new device).
struct SyncCommand: Command {
    static let name = "sync"
    static let summary = "Sync a vault with a remote that rclone reaches."
    static let usesKeyring = true
    static let discussion = """
        REMOTE is anything rclone accepts as a path: name:path from your rclone
        config, an on-the-fly remote such as :webdav,url='http://host:8080':vault,
        or a folder. The remote is a storage of its own: the vault's sealed files
        under the same names, its index under names no device uses. Only this
        vault's files are listed, written or removed there, by explicit lists.

        Both sides' changes are kept: a file changed on both becomes two files, the
        other named NAME.conflict-DEVICE-YYYYMMDDTHHMMSS.EXT. A missing or empty
        STORAGE is made first and receives the vault (a new device; the keyring
        must be imported first). Refused while the vault is mounted. Prints one
        line: files moved up and down, files removed on the remote, conflicts.
        Ctrl-C (or SIGTERM, SIGHUP) stops it at the next safe point: one line
        says what the next sync does, exit 130 (143, 129); a second Ctrl-C ends
        it at once, as a kill would. Each stop ends rclone with all it started
        (a wrapper's rclone too): rclone runs without the terminal, so a
        password command cannot ask there.

        With --shared CODE, the vault that the holder of CODE shared with the vault
        the pattern opens (dotsafe share): its first sync brings it into STORAGE,
        beside your own vault, and 'dotsafe mount --shared CODE' then opens it.

        A first sync cut short (killed, a power cut) leaves the files it brought,
        and the next one goes on over them; if the remote changed them since, it is
        refused, as it cannot tell them from this vault under another pattern.
        With --replace-partial-join you say that no other pattern's state of this
        vault is in STORAGE: those files are replaced by the remote's. If there is
        one, it is destroyed.

        A remote that holds no index of the vault, or an older state of it, is
        refused to a device that synced before. With --new-remote you say that
        REMOTE replaces the one the vault synced with (the provider is gone, the
        remote was emptied, you move): an empty REMOTE receives the whole vault,
        every device's files; one that holds the vault (another device moved
        first) is merged without a common state: nothing is taken as deleted, a
        file changed on both sides is kept twice, files deleted since may come
        back (a warning says so). Each device runs it once for its first sync
        with REMOTE; later syncs are plain ones, and the old remote is refused.
        Where a plain sync works, the flag changes nothing.
        """
    static let storage = PositionalSpec("STORAGE", help: "The local storage folder (made when missing or empty).")
    static let remote = PositionalSpec("REMOTE", help: "An rclone remote path, such as mine:vault or a folder.")
    static let device = OptionSpec.value("device", placeholder: "NAME", help: "This device's name in conflict names (default: the host name).")
    static let rcloneConfig = OptionSpec.value("rclone-config", placeholder: "FILE", help: "The rclone config file for a named remote.")
    static let replacePartialJoin = OptionSpec.flag("replace-partial-join",
                                                    help: "Replace what a cut-short first sync left where the remote changed it since.")
    static let newRemote = OptionSpec.flag("new-remote", help: "REMOTE replaces the one the vault synced with: move the vault there.")
    static let signature = CommandSignature(options: PatternReader.options
                                                + [ShareCommand.sharedBy, device, rcloneConfig, replacePartialJoin, newRemote],
                                            positionals: [storage, remote])

    let storagePath: String
    let remotePath: String
    let deviceName: String
    let configFile: String?
    let patternReader: PatternReader
    let sharedBy: String?
    let replacesPartialJoin: Bool
    let replacesRemote: Bool

    init(parsing arguments: ParsedArguments) throws {
        storagePath = try arguments.required(Self.storage)
        remotePath = try arguments.required(Self.remote)
        patternReader = try PatternReader(parsing: arguments)
        configFile = arguments.value(Self.rcloneConfig)
        sharedBy = arguments.value(ShareCommand.sharedBy)
        replacesPartialJoin = arguments.flag(Self.replacePartialJoin)
        replacesRemote = arguments.flag(Self.newRemote)
        let name = arguments.value(Self.device) ?? ProcessInfo.processInfo.hostName
        guard !name.isEmpty, !name.contains("/"), !name.contains("\0"), name.utf8.count <= 64 else {
            throw CLIError.usage("--device takes a name of 1 to 64 bytes without '/'")
        }
        deviceName = name
    }

    /// Ctrl-C, SIGTERM or SIGHUP stop the sync at its next safe point (`StopSignals`): one
    /// line says so, and the exit status is 128 + the signal, as other tools give.
    func run(context: CommandContext) throws -> Int32 {
        try StopSignals.watching { try runWatched(context: context) }
    }

    private func runWatched(context: CommandContext) throws -> Int32 {
        do { try ProcessHygiene.disableMemoryDumps() } catch { throw CLIError.failure("cannot make sync non-dumpable: \(error)") }
        let sharedBy = try self.sharedBy.map { try ContactCommand.parseCode($0) }
        let location: RemoteLocation, rclone: Rclone
        do {
            location = try RemoteLocation(remotePath)
            rclone = try Rclone(environment: context.environment, configFile: configFile)
        } catch { throw CLIError.failure(error.description) }
        let keyringPath = FileKeyringBackend.path(option: context.globalOptions.keyringPath, environment: context.environment)
        let salt = try Keyring(option: keyringPath, environment: context.environment).requiredPatternSalt()
        let existed = FileManager.default.fileExists(atPath: storagePath)
        let made = try Self.makeStorageIfEmpty(storagePath)
        // The listing needs no key: it runs while the keys are derived (issue 13).
        let remote = RemoteStorage(location, rclone: rclone)
        let listing = remote.listInBackground()
        let reached = StepReached()
        do {
            let summary = try sync(remote: remote, listing: listing, salt: salt, sharedBy: sharedBy, reached: reached, context: context)
            for warning in summary.warnings { context.standardError.writeLine("\(DotSafeCLI.name): warning: \(warning)") }
            context.standardOutput.writeLine(summary.line)
            return 0
        } catch let thrown {
            // What stays of a join is told after the failure's own words.
            let error = (thrown as? FailedAfterJoinReplaced)?.failure ?? thrown
            let replaced = (thrown as? FailedAfterJoinReplaced)?.replaced ?? 0
            // A new device's storage that did not receive the vault goes again: nothing changed.
            if made { Self.removeStorage(storagePath, folderToo: !existed) }
            if let signal = StopSignals.caught {
                context.standardError.writeLine("\(DotSafeCLI.name): "
                    + Self.interruptedLine(signal, afterLocalCommit: reached.step >= 5, replaced: replaced))
                return 128 + signal
            }
            if replaced > 0 {
                throw CLIError.failure(FailedAfterJoinReplaced.failure(DotSafeCLI.describe(error), replaced: replaced))
            }
            if let error = error as? RemoteError { throw CLIError.failure(error.description) }
            throw error
        }
    }

    /// What an interrupted sync left for the next one: before step 5 (`VaultSynchronizer`)
    /// nothing changed here or on the remote (a join's files went), but for the files a join
    /// replaced (`replaced`, `--replace-partial-join`), which keep the remote's bytes; from there
    /// on, the local commit is made and the next sync sends what did not go up, as after a kill.
    static func interruptedLine(_ signal: Int32, afterLocalCommit: Bool, replaced: Int = 0) -> String {
        let stopped = "sync interrupted by \(StopSignals.name(signal))", stays = replaced > 0 ? "; " + FailedAfterJoinReplaced.stays(replaced) : ""
        if afterLocalCommit { return stopped + " after its local commit\(stays); the next sync finishes it" }
        return stopped + (replaced > 0 ? stays + ";" : "; nothing changed,") + " the next sync starts over"
    }

    /// The last step a sync began (its progress), read once it has ended.
    private final class StepReached {
        var step = 0
    }

    private func sync(remote: RemoteStorage, listing: @escaping () throws -> RemoteListing, salt: Keyring.PatternSalt,
                      sharedBy: ContactCode?, reached: StepReached, context: CommandContext) throws -> SyncSummary {
        let storage = try Storage.open(at: storagePath)
        let secrets = try VaultSecrets(pattern: try patternReader.read(context), salt: salt)
        let folder: RuntimeFolder
        do { folder = try RuntimeFolder.open(environment: context.environment) } catch {
            secrets.wipe()
            throw error
        }
        defer { folder.leave() }
        let guardLock = try MountGuard.take(secrets, storage: storage, folder: folder, for: .sync, sharedBy: sharedBy) {
            "this vault is \($0): lock it first (a sync changes the storage under a mount)"
        }
        defer { guardLock.release() }
        let vault: Vault
        do {
            let options = IndexThreeSwitch.options(Vault.Options(cacheBytes: 16 << 20), context.environment)
            vault = try sharedBy.map { try Vault.openForSync(storage: storage, secrets: secrets, sharedBy: $0, options: options) }
                ?? Vault.open(storage: storage, secrets: secrets, options: options)
        } catch {
            secrets.wipe()
            throw error
        }
        var synchronizer = VaultSynchronizer(vault: vault, remote: remote, storageFolder: storagePath, deviceName: deviceName)
        synchronizer.listing = listing
        synchronizer.replacesPartialJoin = replacesPartialJoin
        synchronizer.replacesRemote = replacesRemote
        let progress = SyncProgressLine(to: context.standardError)
        synchronizer.progress = {
            reached.step = $0
            progress.step($0, of: $1)
        }
        // Only for a terminal: elsewhere rclone runs as it always does, reporting errors only.
        if context.standardError.isTerminal { synchronizer.filesMoved = { progress.moved($0) } }
        defer { progress.finish() }
        let lock = OverlappedLock(vault)
        synchronizer.localDone = { lock.start() }
        let summary: SyncSummary
        do { summary = try synchronizer.run() } catch {
            lock.waitIfStarted()
            vault.discard()
            throw error
        }
        try lock.finish()
        return summary
    }

    /// Removes the covers of a storage this command made (and the folder, if it made that too).
    static func removeStorage(_ path: String, folderToo: Bool) {
        if folderToo { try? FileManager.default.removeItem(atPath: path); return }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            try? FileManager.default.removeItem(atPath: path + "/" + name)
        }
    }

    /// A missing or empty folder becomes a storage (covers only); true when made here.
    static func makeStorageIfEmpty(_ path: String) throws -> Bool {
        let entries = try? FileManager.default.contentsOfDirectory(atPath: path)
        guard entries?.isEmpty ?? true else { return false }
        try Storage.initialize(at: path, random: SystemRandom())
        return true
    }
}
