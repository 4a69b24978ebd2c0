import CSystem
import Dispatch
import Foundation
import Glibc
import Synchronization
import VaultCore
import VaultCrypto
import VaultFileSystem
import VaultFUSE
import VaultStore

/// The process that serves a mounted vault. `dotsafe mount` starts it as a detached child (or
/// becomes it with `-f`): it derives the keys, takes the vault's mount guard, opens the vault,
/// mounts, says "ready", and serves until it is unmounted, locked, signalled or idle. Every way
/// out ends in the same place: the file system is closed (final commit, keys and plaintext
/// erased), then the process exits (R-MEM-3).
struct MountDaemon {
    /// Set in the child's environment: report readiness on standard output, then detach.
    static let childVariable = "DOTSAFE_MOUNT_DAEMON"

    let options: MountOptions
    let storage: DiskStorageFolder

    func run(pattern: Pattern, salt: Keyring.PatternSalt, context: CommandContext, detached: Bool) throws -> Int32 {
        if detached { _ = setsid() }
        // Freed 256 KiB chunk buffers otherwise linger in one malloc arena per FUSE thread
        // (docs/PERFORMANCE.md: 377 → 326 MiB peak for a 1 GiB write with two arenas).
        _ = dotsafe_limit_malloc_arenas(2)
        do { try ProcessHygiene.disableCoreDumps() } catch { throw CLIError.failure("cannot make the daemon non-dumpable: \(error)") }
        let secrets = try VaultSecrets(pattern: pattern, salt: salt)
        let guardSocket = try MountGuard.take(secrets, storage: storage, whenHeld: "this vault is already mounted")
        let lockChannel: UnixSocket
        do { lockChannel = try UnixSocket.listen(LockCommand.channelName(for: options.mountPoint)) } catch {
            secrets.wipe()
            throw CLIError.failure(error == .inUse ? "mount point \(options.mountPoint) is served by another dotsafe"
                                                   : "cannot open the lock channel: \(error)")
        }
        let vault: Vault
        do {
            vault = try Vault.open(storage: storage, secrets: secrets,
                                   options: Vault.Options(readOnly: options.readOnly, cacheBytes: options.cacheMebibytes << 20,
                                                          owner: (getuid(), getgid()), writeBehind: .background(limit: 4)))
        } catch {
            secrets.wipe()
            throw error
        }
        let storageFolder = storage
        let fileSystem = FileSystem(vault: vault, capacity: { try storageFolder.capacity() })
        let mount: FUSEMount
        do {
            mount = try FUSEMount.mount(fileSystem, at: options.mountPoint,
                                        options: FUSEMount.Options(allowOther: options.allowOther, readOnly: options.readOnly,
                                                                   autoUnmount: true))
        } catch {
            try? fileSystem.close()
            throw CLIError.failure("\(error)")
        }
        if detached {
            Self.reportReady(failure: nil)
            Self.detachStandardStreams()
        } else {
            context.standardOutput.writeLine("Mounted the vault at \(options.mountPoint); Ctrl-C or 'dotsafe lock \(options.mountPoint)' locks it.")
        }
        let requests = LockRequests()
        let signals = Self.lockOnSignals(mount)
        Self.serveLockChannel(lockChannel, mount: mount, requests: requests)
        if let seconds = options.idleSeconds { Self.lockWhenIdle(mount, fileSystem: fileSystem, seconds: seconds) }
        var outcome = "locked"
        var status: Int32 = 0
        do { try mount.waitUntilUnmounted() } catch {
            outcome = "failed: \(error)"
            status = 1
        }
        signals.forEach { $0.cancel() }
        if !detached { context.standardOutput.writeLine(status == 0 ? "Locked \(options.mountPoint)." : "dotsafe: \(outcome)") }
        requests.answerAll(outcome)
        // Exit with the waiting `dotsafe lock` connections and the guard still open: the kernel
        // closes them only as the process ends, so `lock` returns after the daemon is gone.
        withExtendedLifetime((guardSocket, lockChannel, requests)) { exit(status) }
    }

    // MARK: Starting the daemon from `dotsafe mount`

    /// Starts `dotsafe … mount -f` as a detached child with the pattern on its standard input and
    /// returns when it reports the mount ready, or throws its error.
    static func spawn(options: MountOptions, pattern: Pattern, context: CommandContext) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = options.childArguments
        var environment = context.environment
        environment[childVariable] = "1"
        process.environment = environment
        let input = Pipe(), ready = Pipe()
        process.standardInput = input
        process.standardOutput = ready
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { throw CLIError.failure("cannot start the mount daemon: \(error)") }
        var line = pattern.canonicalBytes + [0x0a]
        input.fileHandleForWriting.write(Data(line))
        line.wipe()
        try? input.fileHandleForWriting.close()
        let answer = String(decoding: ready.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        if answer.hasPrefix("ready") { return }
        process.waitUntilExit()
        if answer.hasPrefix("error: ") {
            throw CLIError.failure(String(answer.dropFirst("error: ".count)).trimmingCharacters(in: .newlines))
        }
        throw CLIError.failure("the mount daemon ended before the mount was ready (status \(process.terminationStatus))")
    }

    /// The daemon child's one message to its parent, on standard output.
    static func reportReady(failure message: String?) {
        FileDescriptorOutput.standardOutput.write(message.map { "error: \($0)\n" } ?? "ready\n")
    }

    /// After "ready" nobody reads the daemon's output: standard streams go to /dev/null, which
    /// also closes the pipe the parent waits on.
    private static func detachStandardStreams() {
        let null = open("/dev/null", O_RDWR)
        guard null >= 0 else { return }
        for descriptor: Int32 in [0, 1, 2] { dup2(null, descriptor) }
        if null > 2 { close(null) }
    }

    // MARK: Ways to lock

    /// SIGTERM, SIGINT and SIGHUP unmount (lazily: the system may be going down); the main thread
    /// then commits and erases the keys.
    private static func lockOnSignals(_ mount: FUSEMount) -> [any DispatchSourceSignal] {
        [SIGTERM, SIGINT, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { try? mount.unmount(lazy: true) }
            source.resume()
            return source
        }
    }

    /// `dotsafe lock` connects here and sends "lock"; the answer comes once the vault is locked.
    private static func serveLockChannel(_ channel: UnixSocket, mount: FUSEMount, requests: LockRequests) {
        let owner = getuid()
        Thread.detachNewThread {
            while let (peer, uid) = try? channel.accept() {
                guard uid == owner || uid == 0 else {
                    peer.send("failed: only the user who mounted the vault can lock it")
                    continue
                }
                guard peer.receiveLine() == "lock" else { continue }
                requests.add(peer)
                Thread.detachNewThread {
                    do { try mount.unmount() } catch FUSEError.busy {
                        requests.answer(peer, "busy")
                    } catch {
                        requests.answer(peer, "failed: \(error)")
                    }
                }
            }
        }
    }

    private static func lockWhenIdle(_ mount: FUSEMount, fileSystem: FileSystem, seconds: Double) {
        Thread.detachNewThread {
            while mount.isServing {
                Thread.sleep(forTimeInterval: min(1, seconds / 4))
                let idle = Double(SystemClock().now() - fileSystem.lastActivity) / 1e9
                if idle >= seconds && fileSystem.openHandleCount == 0 {
                    try? mount.unmount(lazy: true)
                    return
                }
            }
        }
    }
}

/// Connections of `dotsafe lock` waiting for the outcome.
private final class LockRequests: Sendable {
    private let waiting = Mutex<[UnixSocket]>([])

    func add(_ peer: UnixSocket) { waiting.withLock { $0.append(peer) } }

    func answer(_ peer: UnixSocket, _ line: String) {
        peer.send(line)
        waiting.withLock { $0.removeAll { $0 === peer } }
    }

    /// Answers every waiting `lock`; the connections stay open until the process exits.
    func answerAll(_ line: String) {
        for peer in waiting.withLock({ $0 }) { peer.send(line) }
    }
}
