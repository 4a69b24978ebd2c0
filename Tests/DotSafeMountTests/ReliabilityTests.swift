import DotSafeTestSupport
import Foundation
import Testing

/// Real mounts under stress (issue 6): crashes, a full disk, tampered and hostile storage, an
/// unprivileged user with memory hygiene, concurrent processes. Each test runs a script of
/// tools/ against the `dotsafe` built next to the test binary; the scripts hold the checks (and
/// say what they check), and tools/crash-trials, tools/stress run the long variants.
@Suite(.serialized) struct ReliabilityTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// Runs a script of tools/ with the test binary; fails the test with its output.
    private func script(_ path: String, _ arguments: [String] = [], environment extra: [String: String] = [:],
                        sourceLocation: SourceLocation = #_sourceLocation) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.repository + "/" + path)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DOTSAFE_BIN"] = MountHarness.binary
        environment.merge(extra) { $1 }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            Issue.record("cannot run \(path): \(error)", sourceLocation: sourceLocation)
            return
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(path) \(arguments.joined(separator: " ")) failed:\n\(text)",
                sourceLocation: sourceLocation)
        print(text, terminator: "")
    }

    /// 50 trials of a write-heavy workload killed with SIGKILL at a random moment: the vault
    /// opens, fsynced files are intact, storage invariants hold.
    @Test func killNineAtRandomMomentsLosesNothingSynced() {
        script("tools/crash-trials", ["50"])
    }

    /// Two vaults mounted at once; one is killed with SIGKILL during its lock (commit,
    /// re-creation, times) while the other writes: nothing of either is lost, init's covers keep
    /// their bytes, the count stays whole. tools/recreation-crash-trials runs 100.
    @Test func killNineDuringTheLocksRecreationLosesNothingOfEitherVault() {
        script("tools/recreation-crash-trials", ["4"])
    }

    /// ENOSPC reaches the writer, also one that never syncs (cp); committed data survives; a
    /// delete commits on the full disk; a lock that cannot write its changes keeps them mounted.
    @Test func aFullDiskFailsWritesCleanlyAndRecovers() {
        script("tools/reliability/full-disk.sh")
    }

    /// A storage on a read-only file system mounts read-only: a write fails with EROFS at once.
    @Test func aReadOnlyStorageMountsReadOnly() {
        script("tools/reliability/read-only-storage.sh")
    }

    /// Every tampering of every vault file reads as the right bytes or EIO, never other bytes.
    @Test func tamperedStorageReadsRightBytesOrEIO() {
        script("tools/reliability/tamper.sh", ["quick"])
    }

    /// Symlinks, FIFOs, folders, odd sizes, unreadable and 1,000 extra files stay untouched.
    @Test func hostileEntriesInTheStorageAreIgnoredAndUntouched() {
        script("tools/reliability/hostile-storage.sh", ["1000"])
    }

    /// An unprivileged user mounts with fusermount3; the daemon is not dumpable, its key pages
    /// are locked within 8 MiB and excluded from core dumps, and it exits at lock.
    @Test func anUnprivilegedUserMountsAndTheDaemonKeepsItsMemory() {
        script("tools/reliability/user-and-memory.sh")
    }

    /// Several processes at once on one mount for 20 s; then lock, remount and a full check
    /// against each process's model.
    @Test func concurrentProcessesLeaveAConsistentVault() {
        script("tools/stress", ["20", "4"])
    }
}
