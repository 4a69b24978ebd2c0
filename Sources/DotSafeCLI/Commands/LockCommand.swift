import Foundation
import VaultCrypto

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

    /// The daemon's lock channel: named by the mount point, so `lock` needs nothing else.
    static func channelName(for mountPoint: String) -> String {
        let digest = SHA256.hash(Array(MountTable.canonical(mountPoint).utf8))
        return "dotsafe-lock-" + digest.prefix(16).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    func run(context: CommandContext) throws -> Int32 {
        let channel: UnixSocket
        do { channel = try UnixSocket.connect(Self.channelName(for: mountPoint)) } catch {
            if MountTable.dotsafeMount(at: mountPoint) != nil {
                // The daemon is gone (killed): only the dead mount is left to remove.
                let status = Self.removeDeadMount(mountPoint)
                throw CLIError.failure(status == 0 ? "the daemon of \(mountPoint) had died; its dead mount was removed (changes not synced were lost)"
                                                   : "the daemon of \(mountPoint) has died and its mount could not be removed")
            }
            throw CLIError.failure("no vault is mounted at \(mountPoint)")
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

    private static func removeDeadMount(_ path: String) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        process.arguments = ["-u", "-z", path]
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
