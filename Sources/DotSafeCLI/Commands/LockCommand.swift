import Foundation
import SystemCalls
import VaultStore

/// `dotsafe lock MOUNTPOINT`: asks the daemon to write everything, unmount, erase its keys and
/// exit; returns only when it has, so that a mount right after cannot race it.
struct LockCommand: Command {
    static let name = "lock"
    static let summary = "Lock a vault: write changes, unmount, erase the keys."
    static let all = OptionSpec.flag("all", help: "Lock every vault you have open.")
    static let mountPoint = PositionalSpec("MOUNTPOINT", arity: .optional, help: "Where the vault is mounted.")
    static let signature = CommandSignature(options: [all], positionals: [mountPoint])

    /// One mount point, or nil for all of this user's open vaults.
    let mountPoint: String?

    init(parsing arguments: ParsedArguments) throws {
        mountPoint = arguments.positional(Self.mountPoint)
        switch (mountPoint, arguments.flag(Self.all)) {
        case (nil, false): throw CLIError.usage("missing argument MOUNTPOINT (or --all)")
        case (.some, true): throw CLIError.usage("give a MOUNTPOINT or --all, not both")
        default: break
        }
    }

    func run(context: CommandContext) throws -> Int32 {
        let folder = RuntimeFolder.existing(environment: context.environment)
        guard let mountPoint else {
            let records = folder.map { MountRecord.all(in: $0) } ?? []
            guard !records.isEmpty else {
                context.standardOutput.writeLine("No vault is open.")
                return 0
            }
            var failed = false
            for record in records.sorted(by: { $0.started < $1.started }) {
                do {
                    try Self.lock(record.mountPoint, folder: folder, context: context)
                    context.standardOutput.writeLine("Locked \(record.mountPoint).")
                } catch {
                    context.standardError.writeLine("\(DotSafeCLI.name): \((error as? CLIError)?.message ?? "\(error)")")
                    failed = true
                }
            }
            return failed ? 1 : 0
        }
        try Self.lock(MountRecord.mountPoint(mountPoint, in: folder), folder: folder, context: context)
        context.standardOutput.writeLine("Locked \(mountPoint).")
        return 0
    }

    /// Asks the daemon of `path` to lock and returns once it has exited. Each error names `path`
    /// (`lock --all` prints one per vault).
    private static func lock(_ path: String, folder: RuntimeFolder?, context: CommandContext) throws {
        let record = folder.flatMap { folder in MountRecord.all(in: folder).last { $0.mountPoint == path } }
        // A lock may take long (a big commit, its recreation budget), so it is never given up
        // on; but a stopped or hung daemon would keep this waiting in silence: say so.
        let note = record.map { WaitingNote(for: $0, doing: "lock it", patience: { [record = $0] in Self.patience(of: record) }, context: context) }
        defer { note?.cancel() }
        let channel: UnixSocket?
        do { channel = try folder.flatMap { folder in try record?.connect(in: folder) } } catch let error as CLIError {
            throw CLIError.failure(error.message + ": not locked")
        }
        guard let channel else {
            if let folder, let record { record.remove(from: folder) }
            return try lockWithoutDaemon(path)
        }
        channel.send("lock")
        let answer = channel.receiveLine() ?? "failed: the daemon ended without an answer"
        switch answer {
        case "locked":
            // The daemon's end of the channel closes when it exits: wait for that.
            while channel.receiveLine() != nil {}
        case "busy":
            throw CLIError.failure("\(path) is busy: a program has a file or folder open in it")
        default:
            throw CLIError.failure("could not lock \(path): " + (answer.hasPrefix("failed: ") ? String(answer.dropFirst(8)) : answer))
        }
    }

    /// Seconds before a running daemon's lock is called long: the note's usual patience and the
    /// daemon's re-creation budget for its storage's size (docs/FORMAT.md §11.3), which a lock
    /// after a big write spends (session 48: 5.1–6.8 s for 1.25–1.75 GiB).
    static func patience(of record: MountRecord) -> Double {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: record.storage).count) ?? 0
        var budget = RecreationBudget.standard
        if let seconds = record.recreateSecondsPerGiB { budget.secondsPerGiB = seconds }
        return Double(WaitingNote.patienceSeconds) + budget.seconds(forFiles: files)
    }

    /// No daemon of ours answers for `path`: another user's mount, a dead daemon's mount, or none.
    private static func lockWithoutDaemon(_ path: String) throws {
        guard let mount = MountTable.dotsafeMount(at: path) else {
            throw CLIError.failure("no vault is mounted at \(path)")
        }
        if let owner = mount.userID, owner != SystemCall.userID {
            throw CLIError.failure("\(path) is mounted by another user (uid \(owner)): only they can lock it")
        }
        // The daemon is gone (killed): only the dead mount is left to remove.
        let status = ProcessCalls.run("fusermount3", ["-u", "-z", path])
        throw CLIError.failure(status == 0 ? "the daemon of \(path) had died; its dead mount was removed (changes not synced were lost)"
                                           : "the daemon of \(path) has died and its mount could not be removed")
    }
}
