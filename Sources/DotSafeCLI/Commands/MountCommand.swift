import Foundation
import SystemCalls
import VaultCore
import VaultFormat
import VaultStore

/// `dotsafe mount STORAGE MOUNTPOINT`: opens the vault a pattern finds (or a new, empty one) and
/// serves it at MOUNTPOINT until it is locked. Returns once the mount is ready; with `-f` it
/// stays in the foreground until unmounted.
struct MountCommand: Command {
    static let name = "mount"
    static let summary = "Open the vault a pattern finds and mount it as a folder."
    static let usesKeyring = true
    static let discussion = """
        Without a pattern option, the pattern is asked for on the terminal. Any valid
        pattern opens a vault: one never used before opens a new, empty one, which is
        written to the storage at its first change. Lock with 'dotsafe lock MOUNTPOINT'
        (or fusermount3 -u, umount, SIGTERM, the idle timeout, or with
        --lock-on-suspend a suspend or a locked session). --lock-on-suspend
        believes only signals from the owner of org.freedesktop.login1, and refuses
        to mount when the system bus or logind cannot be reached.

        From /etc/fstab (through mount.fuse3, which runs 'dotsafe STORAGE MOUNTPOINT
        -o OPTIONS'): STORAGE MOUNTPOINT fuse.dotsafe
        noauto,pattern_file=FILE,keyring=PATH 0 0. Mount options: allow_other, ro,
        noexec, pattern_file=FILE, pattern_command=CMD, keyring=PATH, idle=TIME,
        lock_on_suspend, sync=REMOTE (no commas in REMOTE), sync_interval=TIME;
        the options of mount(8) and systemd (noauto, user, nofail, _netdev,
        x-systemd.*, nodev, nosuid, ...) are accepted and ignored.

        --sync REMOTE syncs the vault with REMOTE (as 'dotsafe sync' does) while it
        is mounted: once before the mount is ready, a few seconds after changes are
        written, every --sync-interval (default 60s), and once more at lock, which
        waits for that last sync at most 15 seconds, then ends its rclone (a merge
        being committed then, which needs no network, is waited for). A remote
        that cannot be reached never stops a mount or a lock, and no change is lost:
        the mount says so on standard error, later failures go to the system log,
        'dotsafe status' shows the sync running or the last one, and the next sync
        sends what is missing. --replace-partial-join goes with --sync as with
        'dotsafe sync': a first sync cut short here is resumed over what it left,
        which is replaced where the remote changed it since (see 'dotsafe sync').
        """
    static let storage = PositionalSpec("STORAGE", help: "The storage folder (made by 'dotsafe init').")
    static let mountPoint = PositionalSpec("MOUNTPOINT", help: "An empty folder to mount the vault on.")
    static let foreground = OptionSpec.flag("foreground", short: "f", help: "Stay in the foreground until unmounted.")
    static let readOnly = OptionSpec.flag("read-only", help: "Mount read-only: nothing is written to the storage.")
    static let idle = OptionSpec.value("idle", placeholder: "TIME", help: "Lock after this long without use: 90s, 5m, 2h (at most \(DurationText.maximumText)).")
    static let cacheSize = OptionSpec.value("cache-size", placeholder: "MiB", help: "Memory for decrypted chunks (default 256).")
    static let indexCache = OptionSpec.value("index-cache", placeholder: "PAGES",
                                             help: "Index pages kept in memory between uses, each some 1,000 files' records (default \(MountOptions.standardIndexCachePages)).")
    static let fuseOptions = OptionSpec.value(nil, short: "o", placeholder: "OPTIONS", repeatable: true,
                                              help: "Mount options, comma-separated: allow_other, ro, pattern_file=FILE, ...")
    static let lockOnSuspend = OptionSpec.flag("lock-on-suspend",
                                               help: "Lock when the system suspends or this login session locks (logind, on the system bus).")
    static let quiet = OptionSpec.flag("quiet", short: "q", help: "Do not say on the terminal how many files the vault holds.")
    static let recreateBudget = OptionSpec.value("recreate-budget", placeholder: "SECONDS",
                                                 help: "Time per GiB of storage a lock may spend re-creating files to hide their metadata (default 10, at least 3 s; 0: only the files this session wrote).")
    static let sync = OptionSpec.value("sync", placeholder: "REMOTE", help: "Sync with this rclone remote while mounted (see 'dotsafe sync').")
    static let syncInterval = OptionSpec.value("sync-interval", placeholder: "TIME", help: "Time between syncs with --sync: 90s, 5m (default 60s, at most \(DurationText.maximumText)).")
    static let signature = CommandSignature(options: PatternReader.options + [ShareCommand.sharedBy, foreground, readOnly, idle, cacheSize, indexCache, recreateBudget,
                                                                              lockOnSuspend, sync, syncInterval, SyncCommand.device,
                                                                              SyncCommand.rcloneConfig, SyncCommand.replacePartialJoin,
                                                                              fuseOptions, quiet],
                                            positionals: [storage, mountPoint])

    let options: MountOptions
    let patternReader: PatternReader
    /// `-o keyring=PATH`: an fstab line cannot give `--keyring`.
    let keyringOption: String?
    let foreground: Bool
    let quiet: Bool

    init(parsing arguments: ParsedArguments) throws {
        let storage = try arguments.required(Self.storage)
        let mountPoint = try arguments.required(Self.mountPoint)
        let list = try MountOptionList(arguments.values(Self.fuseOptions))
        var patternReader = try PatternReader(parsing: arguments)
        if let source = list.patternFile.map(PatternReader.Source.file) ?? list.patternCommand.map(PatternReader.Source.command) {
            guard patternReader.source == .prompt else {
                throw CLIError.usage("a pattern option and the mount option pattern_file or pattern_command exclude each other")
            }
            patternReader = PatternReader(source: source)
        }
        self.patternReader = patternReader
        keyringOption = list.keyring
        foreground = arguments.flag(Self.foreground)
        quiet = arguments.flag(Self.quiet)
        var options = MountOptions(storage: storage, mountPoint: mountPoint)
        options.readOnly = arguments.flag(Self.readOnly) || list.readOnly
        options.allowOther = list.allowOther
        options.noExec = list.noExec
        options.lockOnSuspend = arguments.flag(Self.lockOnSuspend) || list.lockOnSuspend
        options.sharedBy = arguments.value(ShareCommand.sharedBy)
        if let text = arguments.value(Self.idle) ?? list.idle {
            options.idleSeconds = try DurationText.seconds(text, for: "--idle", expected: "a time such as 90s, 5m or 2h")
        }
        if let text = arguments.value(Self.cacheSize) {
            guard let mebibytes = Int(text), (4...65536).contains(mebibytes) else { throw CLIError.usage("--cache-size needs MiB from 4 to 65536, not '\(text)'") }
            options.cacheMebibytes = mebibytes
        }
        if let text = arguments.value(Self.indexCache) {
            guard let pages = Int(text), MountOptions.indexCachePages.contains(pages) else {
                throw CLIError.usage("--index-cache needs a number of pages from \(MountOptions.indexCachePages.lowerBound) to \(MountOptions.indexCachePages.upperBound), not '\(text)'")
            }
            options.indexCachePages = pages
        }
        if let text = arguments.value(Self.recreateBudget) {
            guard let seconds = Double(text), seconds.isFinite, (0...3600).contains(seconds) else {
                throw CLIError.usage("--recreate-budget needs seconds per GiB from 0 to 3600, not '\(text)'")
            }
            options.recreateSecondsPerGiB = seconds
        }
        options.sync = try Self.syncSettings(arguments, list, readOnly: options.readOnly)
        self.options = options
    }

    /// `--sync` and what goes with it; each of the others without it is refused.
    static func syncSettings(_ arguments: ParsedArguments, _ list: MountOptionList, readOnly: Bool) throws -> MountOptions.Sync? {
        let intervalText = arguments.value(syncInterval) ?? list.syncInterval
        guard let remote = arguments.value(sync) ?? list.sync else {
            if intervalText != nil || arguments.value(SyncCommand.device) != nil || arguments.value(SyncCommand.rcloneConfig) != nil
                || arguments.flag(SyncCommand.replacePartialJoin) {
                throw CLIError.usage("--sync-interval, --device, --rclone-config and --replace-partial-join go with --sync REMOTE")
            }
            return nil
        }
        guard !readOnly else { throw CLIError.usage("--sync cannot go with a read-only mount (a sync writes the vault)") }
        var settings = MountOptions.Sync(remote: remote, device: ProcessInfo.processInfo.hostName)
        if let intervalText {
            settings.interval = try DurationText.seconds(intervalText, for: "--sync-interval", expected: "a time of 1s or more such as 90s or 5m",
                                                         minimum: 1)
        }
        if let name = arguments.value(SyncCommand.device) { settings.device = name }
        guard !settings.device.isEmpty, !settings.device.contains("/"), !settings.device.contains("\0"), settings.device.utf8.count <= 64 else {
            throw CLIError.usage("--device takes a name of 1 to 64 bytes without '/'")
        }
        settings.configFile = arguments.value(SyncCommand.rcloneConfig)
        settings.replacesPartialJoin = arguments.flag(SyncCommand.replacePartialJoin)
        return settings
    }

    func run(context: CommandContext) throws -> Int32 {
        let daemonChild = context.environment[MountDaemon.childVariable] == "1"
        do {
            var options = self.options
            // Absolute paths: messages, the lock channel and /proc/mounts all name the same place.
            options.mountPoint = MountTable.canonical(options.mountPoint)
            options.storage = MountTable.canonical(options.storage)
            options.keyringPath = FileKeyringBackend.path(option: keyringOption ?? context.globalOptions.keyringPath, environment: context.environment)
            // A mistyped code is said before the pattern is asked for.
            options.sharedBy = try options.sharedBy.map { try ContactCommand.parseCode($0).compact }
            try options.checkMountPoint()
            let storage = try options.openStorage()
            let keyring = try Keyring(option: options.keyringPath, environment: context.environment)
            let salt = try keyring.requiredPatternSalt()
            let pattern = try patternReader.read(daemonChild ? context.withoutHints : context)
            // The first sync's files as they move, on a terminal only (never in a log).
            let showingProgress = daemonChild ? context.environment[MountDaemon.progressVariable] == "1"
                : options.sync != nil && !quiet && context.standardError.isTerminal
            if foreground || daemonChild {
                return try MountDaemon(options: options, storage: storage).run(pattern: pattern, salt: salt, context: context,
                                                                                 detached: daemonChild, showingProgress: showingProgress)
            }
            try MountDaemon.spawn(options: options, pattern: pattern, context: context, showingProgress: showingProgress)
            if context.isMountHelper { return 0 }
            context.standardOutput.writeLine("Mounted the vault at \(options.mountPoint). Lock it with: dotsafe lock \(ShellWord.word(options.mountPoint))")
            if !quiet && context.standardError.isTerminal { OpenedVaultNote.write(mountPoint: options.mountPoint, to: context.standardError) }
            return 0
        } catch {
            guard daemonChild else { throw error }
            // The parent reports it: it is the one with a terminal.
            MountDaemon.reportReady(failure: (error as? CLIError)?.message ?? DotSafeCLI.describe(error))
            return 1
        }
    }
}

/// Everything a mount needs besides the pattern; handed from the command to its daemon.
struct MountOptions: Sendable {
    var storage: String
    var mountPoint: String
    var readOnly = false
    var idleSeconds: Double?
    var cacheMebibytes = 256
    /// Index leaves kept loaded between operations when the index is held in part (issue 17,
    /// docs/PERFORMANCE.md "Pages on demand"); each holds about 1,000 items. 64 keeps a daemon
    /// that walked 10^6 files near 160 MiB, a walk no slower than with 256 (380 MiB).
    var indexCachePages = Self.standardIndexCachePages
    static let standardIndexCachePages = 64
    static let indexCachePages = 2...1_000_000
    /// Seconds per GiB of storage a lock may spend re-creating files (docs/FORMAT.md §11.3).
    var recreateSecondsPerGiB = RecreationBudget.standard.secondsPerGiB
    var allowOther = false
    var noExec = false
    var lockOnSuspend = false
    var keyringPath = ""
    /// `--shared CODE`: the vault that CODE's holder shared with the pattern's vault (§14).
    var sharedBy: String?
    /// `--sync REMOTE` and its settings.
    var sync: Sync?

    struct Sync: Sendable {
        var remote: String
        var device: String
        var interval = 60.0
        var configFile: String?
        /// `--replace-partial-join` (`dotsafe sync`'s).
        var replacesPartialJoin = false
    }

    /// An existing, empty folder that is not mounted on already. The mount a killed daemon of
    /// this user left (libfuse's auto_unmount now and then does not remove it) is removed first.
    func checkMountPoint() throws {
        if let dead = MountTable.dotsafeMount(at: mountPoint), dead.userID.map({ $0 == SystemCall.userID }) ?? true,
           SystemCall.isDisconnected(mountPoint) {
            guard ProcessCalls.run("fusermount3", ["-u", "-z", mountPoint]) == 0 else {
                throw CLIError.failure("mount point \(mountPoint) holds the mount of a vault whose daemon died, and it could not be removed")
            }
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: mountPoint, isDirectory: &isFolder) else {
            throw CLIError.failure("mount point \(mountPoint) does not exist")
        }
        guard isFolder.boolValue else { throw CLIError.failure("mount point \(mountPoint) is not a folder") }
        if MountTable.isMountPoint(mountPoint) { throw CLIError.failure("mount point \(mountPoint) is mounted on already") }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: mountPoint)) ?? ["?"]
        guard entries.isEmpty else { throw CLIError.failure("mount point \(mountPoint) is not empty") }
    }

    func openStorage() throws -> DiskStorageFolder {
        var budget = RecreationBudget.standard
        budget.secondsPerGiB = recreateSecondsPerGiB
        return try Storage.open(at: storage, recreation: budget)
    }

    /// What the daemon child is told on its command line (the pattern goes through a pipe).
    var childArguments: [String] {
        var arguments = ["--keyring", keyringPath, "mount", storage, mountPoint, "--pattern-stdin", "--foreground",
                         "--cache-size", String(cacheMebibytes),
                         "--index-cache", String(indexCachePages), "--recreate-budget", String(recreateSecondsPerGiB)]
        if readOnly { arguments.append("--read-only") }
        if let idleSeconds { arguments += ["--idle", String(idleSeconds)] }
        if allowOther { arguments += ["-o", "allow_other"] }
        if noExec { arguments += ["-o", "noexec"] }
        if lockOnSuspend { arguments.append("--lock-on-suspend") }
        if let sharedBy { arguments += ["--shared", sharedBy] }
        if let sync {
            arguments += ["--sync", sync.remote, "--sync-interval", String(sync.interval), "--device", sync.device]
            if let configFile = sync.configFile { arguments += ["--rclone-config", configFile] }
            if sync.replacesPartialJoin { arguments.append("--replace-partial-join") }
        }
        return arguments
    }
}

extension CommandContext {
    /// The daemon child parses the pattern again; its parent printed the hints already.
    var withoutHints: CommandContext {
        var copy = self
        copy.standardError = CapturedOutput()
        return copy
    }
}
