import Dispatch
import Foundation
import Glibc
import SystemCalls
import VaultCore
import VaultCrypto
import VaultFileSystem
import VaultFormat
import VaultFUSE
import VaultStore
import VaultSync

/// The process that serves a mounted vault. `dotsafe mount` starts it as a detached child (or
/// becomes it with `-f`): it derives the keys, takes the vault's mount guard (`MountGuard`), opens the vault,
/// mounts, says "ready", and serves until it is unmounted, locked, signalled or idle. Every way
/// out ends in the same place: the file system is closed (final commit, keys and plaintext
/// erased), then the process exits (R-MEM-3).
struct MountDaemon {
    /// Set in the child's environment: report readiness on standard output, then detach.
    static let childVariable = "DOTSAFE_MOUNT_DAEMON"
    /// Set in the child's environment when its parent shows the first sync's progress.
    static let progressVariable = "DOTSAFE_MOUNT_PROGRESS"

    let options: MountOptions
    let storage: DiskStorageFolder

    /// `showingProgress`: the first sync's files are shown as they move, on this terminal or,
    /// detached, by the parent (told over the readiness pipe).
    func run(pattern: Pattern, salt: Keyring.PatternSalt, context: CommandContext, detached: Bool,
             showingProgress: Bool = false) throws -> Int32 {
        if detached { ProcessCalls.startSession() }
        // Freed 256 KiB chunk buffers otherwise linger in one malloc arena per FUSE thread
        // (docs/PERFORMANCE.md: 377 → 326 MiB peak for a 1 GiB write with two arenas).
        ProcessCalls.limitMallocArenas(2)
        do { try ProcessHygiene.disableMemoryDumps() } catch { throw CLIError.failure("cannot make the daemon non-dumpable: \(error)") }
        let folder = try RuntimeFolder.open(environment: context.environment)
        defer { folder.leave() }
        folder.removeStaleLocks()
        // Before any key exists: a protection asked for that cannot work stops the mount here.
        let watcher = options.lockOnSuspend ? try LogindWatcher.start(environment: context.environment) : nil
        // The defers run only when starting fails: the way out of a mount is `exit` below.
        let pointLock = try MountGuard.takeMountPoint(options.mountPoint, folder: folder)
        defer { pointLock.release() }
        // A storage nothing can be written to is mounted read-only: mounted for writing, every
        // change would be taken into memory and then lost at the lock.
        let storageReadOnly = !options.readOnly && ((try? storage.isOnReadOnlyFileSystem()) ?? false)
        if storageReadOnly, options.sync != nil {
            throw CLIError.failure("\(options.storage) is on a read-only file system: a sync cannot write it")
        }
        let readOnly = options.readOnly || storageReadOnly
        // Before the keys: a failure to open it then has nothing to wipe.
        let channel = try LockChannel.open(in: folder)
        // On every failure from here on: its socket would be left in the folder.
        defer { channel.unregister() }
        let sharedBy = try options.sharedBy.map { try ContactCommand.parseCode($0) }
        let secrets = try VaultSecrets(pattern: pattern, salt: salt)
        let vaultLock = try MountGuard.take(secrets, storage: storage, folder: folder, for: .mount(at: options.mountPoint),
                                            sharedBy: sharedBy) {
            "this vault is already \($0)"
        }
        defer { vaultLock.release() }
        let vault: Vault
        do {
            var vaultOptions = IndexThreeSwitch.options(Vault.Options(readOnly: readOnly, cacheBytes: options.cacheMebibytes << 20,
                                                                      owner: (getuid(), getgid()), writeBehind: .background(limit: 4)),
                                                        context.environment, onDemand: true)
            if vaultOptions.loadsOnDemand { vaultOptions.indexCacheLeaves = options.indexCachePages }
            if let sharedBy {
                vault = try Vault.open(storage: storage, secrets: secrets, sharedBy: sharedBy, options: vaultOptions)
            } else {
                vault = try Vault.open(storage: storage, secrets: secrets, options: vaultOptions)
            }
        } catch {
            secrets.wipe()
            throw error
        }
        // Opening decoded every index page: their bodies and records are freed, but the heap
        // keeps their pages between what stays (docs/PERFORMANCE.md, "Memory after mount").
        ProcessCalls.trimMalloc()
        let log = SystemLog(environment: context.environment, mountPoint: options.mountPoint)
        let sync: MountSync?, syncWarnings: [String]
        do {
            sync = try options.sync.map { try MountSync(remote: $0.remote, configFile: $0.configFile, device: $0.device, interval: $0.interval,
                                                        replacesPartialJoin: $0.replacesPartialJoin, vault: vault, storage: options.storage, environment: context.environment, log: log) }
            let line = showingProgress && !detached ? SyncProgressLine(to: context.standardError) : nil
            defer { line?.finish() }
            var filesMoved: ((SyncProgress) -> Void)?
            if let line { filesMoved = { line.moved($0) } } else if showingProgress { filesMoved = { Self.reportProgress($0) } }
            // A foreground mount's Ctrl-C reaches this process alone (rclone runs in a session of
            // its own): before the mount, it stops the first round's rclone and the mount.
            syncWarnings = try StopSignals.watching { () throws -> [String] in
                let outcome = Result { try sync?.first(filesMoved: filesMoved) ?? [] }
                if let signal = StopSignals.caught {
                    throw CLIError.failure("the first sync was interrupted by \(StopSignals.name(signal)): nothing was mounted")
                }
                return try outcome.get()
            }
        } catch {
            vault.discard()
            throw error
        }
        let storageFolder = storage
        let fileSystem = FileSystem(vault: vault, options: FileSystem.Options(commitObserver: { error in
            log.commitEnded(error)
            if error == nil { sync?.committed() }
        }), capacity: { try storageFolder.capacity() })
        let mount: FUSEMount
        do {
            mount = try FUSEMount.mount(fileSystem, at: options.mountPoint,
                                        options: FUSEMount.Options(allowOther: options.allowOther, readOnly: readOnly, noExec: options.noExec,
                                                                   autoUnmount: true))
        } catch {
            try? fileSystem.close()
            throw CLIError.failure("\(error)")
        }
        do { _ = try channel.register(options) } catch {
            try? mount.unmount(lazy: true)
            try? mount.waitUntilUnmounted()
            throw error
        }
        if let sync {
            mount.whenUnmounted { sync.last() }
            sync.start(mount: mount, fileSystem: fileSystem)
        }
        var notes = [Self.cacheLockNote(vault.cacheLocking)].compactMap { $0 }
        if storageReadOnly { notes.append("\(options.storage) is on a read-only file system: the vault is mounted read-only") }
        if let watcher, watcher.sessionPath == nil {
            notes.append("--lock-on-suspend: this process is in no login session, so the vault locks when the system suspends but not when a session locks")
        }
        // A root the vault committed is not in its slots (docs/FORMAT-2-DESIGN.md §E), or this
        // pattern lost the vault to an interrupted repattern, finished by this open: said once.
        let warning = vault.rollbackWarning ?? (vault.openedThroughFormerPattern ? PatternChangeError.formerPattern.description
                                                + " (this pattern opens it for this session only)" : nil)
        if vault.rollbackWarning != nil { log.rootFallback() }
        let warnings = [warning].compactMap { $0 } + syncWarnings
        // Before anyone is told it is ready: a signal that came between the two ended the daemon
        // without its final commit, losing what was written since (LockingTests).
        let signals = Self.lockOnSignals(mount)
        if detached {
            Self.reportReady(failure: nil, notes: notes, warnings: warnings)
            ProcessCalls.detachStandardStreams()
        } else {
            for warning in warnings { context.standardError.writeLine("dotsafe: warning: \(warning)") }
            for note in notes { context.standardError.writeLine("dotsafe: note: \(note)") }
            context.standardOutput.writeLine("Mounted the vault at \(options.mountPoint); Ctrl-C or 'dotsafe lock \(options.mountPoint)' locks it.")
        }
        // Only in the foreground: a detached child is not the process a service manager started.
        let notifier = ServiceNotifier(environment: detached ? [:] : context.environment)
        notifier.ready()
        let idleSeconds = options.idleSeconds
        let requests = ShareRequests(vault: vault, mountPoint: options.mountPoint)
        channel.serve(mount, state: {
            let idle = Double(SystemClock().now() - fileSystem.lastActivity) / 1e9
            return MountState(pending: MountState.pending(fileSystem.vault),
                              idleLockIn: idleSeconds.map { max(0, $0 - idle) }, idleAfter: idleSeconds, sync: sync?.status ?? "off")
        }, answer: { requests.answer($0) })
        if let seconds = options.idleSeconds { Self.lockWhenIdle(mount, fileSystem: fileSystem, seconds: seconds) }
        Self.shrinkWhenQuiet(mount, fileSystem: fileSystem)
        watcher?.watch(while: { mount.isServing }) { event in
            if event == .busLost { log.write(.warning, "the system bus went away: locking, as --lock-on-suspend can no longer see a suspend") }
            // Lazily, as for SIGTERM: the machine is about to sleep.
            try? mount.unmount(lazy: true)
        }
        var outcome = "locked"
        var status: Int32 = 0
        do { try mount.waitUntilUnmounted() } catch {
            outcome = "failed: \(error)"
            status = 1
            if case .closeFailed(let failure) = error { log.lockFailed(failure) } else { log.lockFailed(nil) }
        }
        signals.forEach { $0.cancel() }
        notifier.stopping()
        if !detached { context.standardOutput.writeLine(status == 0 ? "Locked \(options.mountPoint)." : "dotsafe: \(outcome)") }
        // The vault is closed: nothing of this mount stays findable, and the guards go (their
        // files removed while still locked, so the next mount makes new ones).
        channel.unregister()
        vaultLock.release()
        pointLock.release()
        folder.leave()
        channel.answerAll(outcome)
        // Exit with the waiting `dotsafe lock` connections still open: the kernel closes them
        // only as the process ends, so `lock` returns after the daemon is gone.
        withExtendedLifetime(channel) { exit(status) }
    }

    // MARK: Starting the daemon from `dotsafe mount`

    /// Starts `dotsafe … mount -f` as a detached child with the pattern on its standard input and
    /// returns when it reports the mount ready, or throws its error.
    static func spawn(options: MountOptions, pattern: Pattern, context: CommandContext, showingProgress: Bool) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = options.childArguments
        var environment = context.environment
        environment[childVariable] = "1"
        if showingProgress { environment[progressVariable] = "1" }
        process.environment = environment
        let input = Pipe(), ready = Pipe()
        process.standardInput = input
        process.standardOutput = ready
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { throw CLIError.failure("cannot start the mount daemon: \(error)") }
        // Straight from the pattern's locked memory into the pipe: no Data, no String.
        let pipe = input.fileHandleForWriting.fileDescriptor
        let newline: [UInt8] = [0x0a]
        try? pattern.withCanonicalBytes { try SystemCall.writeAll(pipe, $0) }
        try? newline.withUnsafeBytes { try SystemCall.writeAll(pipe, $0) }
        try? input.fileHandleForWriting.close()
        var answer = readAnswer(ready.fileHandleForReading, progress: SyncProgressLine(to: context.standardError))
        while answer.hasPrefix("note: ") || answer.hasPrefix("warning: "), let end = answer.firstIndex(of: "\n") {
            context.standardError.writeLine("dotsafe: " + answer[..<end])
            answer = String(answer[answer.index(after: end)...])
        }
        if answer.hasPrefix("ready") { return }
        process.waitUntilExit()
        if answer.hasPrefix("error: ") {
            throw CLIError.failure(String(answer.dropFirst("error: ".count)).trimmingCharacters(in: .newlines))
        }
        throw CLIError.failure("the mount daemon ended before the mount was ready (status \(process.terminationStatus))")
    }

    /// The child's answer up to its end, the first sync's progress lines shown as they come.
    private static func readAnswer(_ pipe: FileHandle, progress: SyncProgressLine) -> String {
        defer { progress.finish() }
        var answer = "", pending: [UInt8] = []
        while true {
            let chunk = pipe.availableData
            if chunk.isEmpty { break }
            pending.append(contentsOf: chunk)
            while let end = pending.firstIndex(of: 0x0a) {
                let line = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeSubrange(...end)
                if let moved = parseProgress(line) { progress.moved(moved) } else { answer += line + "\n" }
            }
        }
        return answer + String(decoding: pending, as: UTF8.self)
    }

    /// `progress: up 12 40`: 12 of a batch of 40 files up, from the child to its parent.
    static func reportProgress(_ moved: SyncProgress) {
        FileDescriptorOutput.standardOutput.write("progress: \(moved.direction.rawValue) \(moved.done) \(moved.total)\n")
    }

    static func parseProgress(_ line: String) -> SyncProgress? {
        let words = line.split(separator: " ")
        guard words.count == 4, words[0] == "progress:", let direction = SyncProgress.Direction(rawValue: String(words[1])),
              let done = Int(words[2]), let total = Int(words[3]) else { return nil }
        return SyncProgress(direction: direction, done: done, total: total)
    }

    /// The daemon child's one message to its parent, on standard output: "ready" or an error,
    /// after a warning and notes the parent prints on its standard error.
    static func reportReady(failure message: String?, notes: [String] = [], warnings: [String] = []) {
        let lines = warnings.map { "warning: \($0)\n" }.joined() + notes.map { "note: \($0)\n" }.joined()
        FileDescriptorOutput.standardOutput.write(lines + (message.map { "error: \($0)\n" } ?? "ready\n"))
    }

    /// What `mount` says when RLIMIT_MEMLOCK does not let the whole chunk cache be locked in RAM
    /// (R-SEC-5): not an error, the rest may be swapped out. Nil when all of it can be locked.
    static func cacheLockNote(_ locking: (lockable: Int, limit: Int)) -> String? {
        guard locking.lockable < locking.limit else { return nil }
        func mebibytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1048576) }
        let limit = MemoryLockLimit.limit.map { " (RLIMIT_MEMLOCK \(mebibytes($0)))" } ?? ""
        return "\(mebibytes(locking.lockable)) of the \(mebibytes(locking.limit)) chunk cache can be locked in memory\(limit); the rest may be swapped out"
    }

    // MARK: Ways to lock

    /// SIGTERM, SIGINT, SIGHUP and every other signal that would end the process (`LockSignals`)
    /// unmount (lazily: the system may be going down); the main thread then commits and erases
    /// the keys.
    private static func lockOnSignals(_ mount: FUSEMount) -> [any DispatchSourceSignal] {
        LockSignals.watch { try? mount.unmount(lazy: true) }
    }

    /// Seconds without a request after which the daemon gives back what it keeps for the next
    /// burst of work.
    static let quietSeconds = 10.0

    /// Once per quiet spell: the chunk cache's ready frames and the heap's freed pages go back to
    /// the system, so that a daemon in the background holds what its vault needs, not its peak
    /// (docs/PERFORMANCE.md, "A quiet daemon gives memory back"). Both are free memory: nothing
    /// in use moves, and the next burst only faults its pages in again.
    private static func shrinkWhenQuiet(_ mount: FUSEMount, fileSystem: FileSystem) {
        Thread.detachNewThread {
            var shrunkAfter: Int64?
            while mount.isServing {
                Thread.sleep(forTimeInterval: 1)
                let last = fileSystem.lastActivity
                guard last != shrunkAfter, Double(SystemClock().now() - last) / 1e9 >= quietSeconds else { continue }
                fileSystem.vault.releaseSpareMemory()
                ProcessCalls.trimMalloc()
                shrunkAfter = last
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
