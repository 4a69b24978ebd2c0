import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// Every way a mount ends writes pending changes first, then the daemon erases its keys and
/// exits (R-MEM-3): `dotsafe lock`, fusermount3 -u, SIGTERM, SIGINT, the idle timeout.
@Suite(.serialized) struct LockingTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// Writes a file without fsync, ends the mount with `end`, and checks it was written.
    private func expectPendingChangesSurvive(_ h: MountHarness, options: [String] = [],
                                             end: (String, Int32) throws -> Void) throws {
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern, options: options).status == 0)
        h.sh("printf 'not synced' > pending.txt && mkdir folder", in: vault)
        let pid = try #require(MountHarness.daemonPID(for: vault))
        try end(vault, pid)
        for _ in 0..<100 where MountHarness.isMounted(vault) || kill(pid, 0) == 0 { usleep(50_000) }
        #expect(!MountHarness.isMounted(vault))
        #expect(kill(pid, 0) != 0, "the daemon is still running")
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("test \"$(cat pending.txt)\" = 'not synced' && test -d folder", in: vault)
        #expect(h.lock(vault).status == 0)
    }

    @Test func fusermountUnmountWritesPendingChanges() throws {
        let h = try MountHarness()
        defer { h.finish() }
        try expectPendingChangesSurvive(h) { vault, _ in h.run("/bin/fusermount3", ["-u", vault], input: nil) }
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func signalsLockAndWritePendingChanges(signal: Int32) throws {
        let h = try MountHarness()
        defer { h.finish() }
        try expectPendingChangesSurvive(h) { _, pid in kill(pid, signal) }
    }

    /// Any other signal whose default action ends a process locks too: SIGUSR1, SIGALRM or
    /// SIGQUIT used to end the daemon without its final commit, losing what was not yet written.
    /// SIGPIPE is ignored: the daemon keeps serving.
    @Test func everySignalThatWouldEndTheDaemonLocksIt() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        for number in [SIGUSR1, SIGUSR2, SIGALRM, SIGQUIT, __libc_current_sigrtmin() + 1] {
            try #require(h.mount(vault, pattern: Self.pattern).status == 0)
            h.sh("printf 'not synced' > signal-\(number).txt", in: vault)
            let pid = try #require(MountHarness.daemonPID(for: vault))
            if number == SIGUSR1 {
                kill(pid, SIGPIPE)
                usleep(200_000)
                #expect(kill(pid, 0) == 0 && MountHarness.isMounted(vault), "SIGPIPE ended the daemon")
            }
            kill(pid, number)
            for _ in 0..<100 where MountHarness.isMounted(vault) || kill(pid, 0) == 0 { usleep(50_000) }
            #expect(kill(pid, 0) != 0 && !MountHarness.isMounted(vault), "signal \(number) did not end the mount")
        }
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: vault))
        #expect(names == Set([SIGUSR1, SIGUSR2, SIGALRM, SIGQUIT, __libc_current_sigrtmin() + 1].map { "signal-\($0).txt" }), "\(names)")
        h.sh("test \"$(cat signal-*)\" = \"$(printf 'not synced%.0s' 1 2 3 4 5)\"", in: vault)
        #expect(h.lock(vault).status == 0)
    }

    @Test func idleTimeoutLocks() throws {
        let h = try MountHarness()
        defer { h.finish() }
        try expectPendingChangesSurvive(h, options: ["--idle", "1"]) { _, _ in usleep(2_500_000) }
    }

    @Test func lockOfABusyMountFailsAndKeepsServing() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("echo kept > kept.txt", in: vault)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sleep")
        holder.arguments = ["30"]
        holder.currentDirectoryURL = URL(fileURLWithPath: vault)
        try holder.run()
        defer { holder.terminate() }
        let busy = h.lock(vault)
        #expect(busy.status == 1)
        #expect(busy.error == "dotsafe: \(vault) is busy: a program has a file or folder open in it\n")
        #expect(MountHarness.isMounted(vault))
        h.sh("test \"$(cat kept.txt)\" = kept", in: vault)
        holder.terminate()
        holder.waitUntilExit()
        #expect(h.lock(vault).status == 0)
        #expect(!MountHarness.isMounted(vault))
    }

    @Test func lockWithoutAMountSaysSo() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let result = h.lock(vault)
        #expect(result.status == 1)
        #expect(result.error == "dotsafe: no vault is mounted at \(vault)\n")
    }

    @Test func foregroundMountStaysUntilInterrupted() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let (process, output) = try h.startForeground(vault, pattern: Self.pattern, standardError: FileHandle.nullDevice)
        for _ in 0..<200 where !MountHarness.isMounted(vault) { usleep(25_000) }
        #expect(MountHarness.isMounted(vault))
        h.sh("echo fg > fg.txt", in: vault)
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(!MountHarness.isMounted(vault))
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(text.contains("Mounted the vault at \(vault)") && text.contains("Locked \(vault)."))
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("test \"$(cat fg.txt)\" = fg", in: vault)
        #expect(h.lock(vault).status == 0)
    }

    @Test func readOnlyMountRefusesWritesAndChangesNothing() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("echo data > a.txt", in: vault)
        #expect(h.lock(vault).status == 0)
        let before = try h.storageSnapshot()
        try #require(h.mount(vault, pattern: Self.pattern, options: ["--read-only"]).status == 0)
        h.sh("test \"$(cat a.txt)\" = data", in: vault)
        let write = h.sh("echo more >> a.txt", in: vault, expectFailure: true)
        #expect(write.status != 0 && write.error.contains("Read-only file system"))
        #expect(h.lock(vault).status == 0)
        #expect(try h.storageSnapshot() == before)
    }

    @Test func otherUsersAreKeptOutUnlessAllowedAndPermitted() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("echo private > p.txt && chmod 755 . && chmod 644 p.txt", in: vault)
        let denied = h.sh("runuser -u nobody -- cat \(vault)/p.txt", expectFailure: true)
        #expect(denied.status != 0 && denied.error.contains("Permission denied"))
        #expect(h.lock(vault).status == 0)
        try #require(h.mount(vault, pattern: Self.pattern, options: ["-o", "allow_other"]).status == 0)
        h.sh("test \"$(runuser -u nobody -- cat \(vault)/p.txt)\" = private")
        h.sh("chmod 600 \(vault)/p.txt")
        let checked = h.sh("runuser -u nobody -- cat \(vault)/p.txt", expectFailure: true)
        #expect(checked.status != 0 && checked.error.contains("Permission denied"))
        #expect(h.lock(vault).status == 0)
    }
}
