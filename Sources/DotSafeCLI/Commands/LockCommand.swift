import Foundation
import SystemCalls

/// `dotsafe lock MOUNTPOINT`: asks the daemon to write everything, unmount, erase its keys and
/// exit; returns only when it has, so that a mount right after cannot race it.
struct LockCommand: Command {
    static let name = "lock"
    static let summary = "Lock a vault: write changes, unmount, erase the keys."
    static let mountPoint = PositionalSpec("MOUNTPOINT", help: "Where the vault is mounted.")
    static let signature = CommandSignature(positionals: [mountPoint])

    let mountPoint: String

    init(parsing arguments: ParsedArguments) throws {
        mountPoint = try arguments.required(Self.mountPoint)
    }

    func run(context: CommandContext) throws -> Int32 {
        let path = MountTable.canonical(mountPoint)
        let folder = RuntimeFolder.existing(environment: context.environment)
        let record = folder.flatMap { folder in MountRecord.all(in: folder).last { $0.mountPoint == path } }
        guard let folder, let record, let channel = try? UnixSocket.connect(folder.file(record.socketName)) else {
            if let folder, let record { record.remove(from: folder) }
            return try Self.lockWithoutDaemon(path)
        }
        // The folder is private, so only we could have put a socket there; still, talk only to
        // the daemon the record names, running as us.
        guard let peer = try? channel.peerCredentials(), peer.userID == SystemCall.userID, peer.processID == record.pid else {
            throw CLIError.failure("the lock channel of \(path) is not served by its daemon (pid \(record.pid)): not locked")
        }
        channel.send("lock")
        let answer = channel.receiveLine() ?? "failed: the daemon ended without an answer"
        switch answer {
        case "locked":
            // The daemon's end of the channel closes when it exits: wait for that.
            while channel.receiveLine() != nil {}
            context.standardOutput.writeLine("Locked \(mountPoint).")
            return 0
        case "busy":
            throw CLIError.failure("\(mountPoint) is busy: a program has a file or folder open in it")
        default:
            throw CLIError.failure(answer.hasPrefix("failed: ") ? String(answer.dropFirst(8)) : answer)
        }
    }

    /// No daemon of ours answers for `path`: another user's mount, a dead daemon's mount, or none.
    private static func lockWithoutDaemon(_ path: String) throws -> Int32 {
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
