import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCore
import VaultStore

/// `dotsafe mount -f --sync` on a terminal, a new device whose first round (its join) hangs in
/// its download, rclone behind a wrapper that forks it. rclone runs in a session of its own,
/// so a Ctrl-C typed there reaches the mount alone: it stops that round's rclone, with what the
/// wrapper forked, says so and mounts nothing. Nothing of rclone is left, nor the download
/// folder, and the next sync joins with every byte.
@Suite struct SyncMountFirstRoundStopTests {
    typealias Mounted = SyncMountTests
    typealias LockStop = SyncMountLockStopTests

    @Test func aCtrlCInTheFirstSyncOfAForegroundMountStopsItsRclone() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let remote = h.base + "/remote", desktop = h.base + "/desktop-storage", started = h.base + "/copy-started"
        let big = Data((0..<1_500_000).map { _ in UInt8.random(in: 0...255) })
        do {
            let vault = try Mounted.openDesktop(h, h.storage)
            let file = try vault.create(.file, in: Vault.rootID, named: Array("big.bin".utf8), mode: 0o644)
            try vault.write(file, offset: 0, bytes: Array(big))
            try vault.lock()
        }
        let sent = LockStop.sync(h, h.storage, remote, device: "laptop")
        try #require(sent.status == 0, "\(sent)")
        try #require(h.dotsafe(["init", desktop]).status == 0)
        let point = try h.mountPoint("desktop")

        let bin = try LockStop.hangingRclone(h.base, .downloadThroughAForkingWrapper, marking: started)
        let environment = h.environment.merging(["PATH": bin + ":/usr/bin:/bin"]) { $1 }
        let mount = try TerminalProcess(MountHarness.binary, ["mount", desktop, point, "-f", "--pattern", Mounted.pattern,
                                                              "--sync", remote, "--device", "desktop"], environment: environment)
        h.track(point)
        #expect(waitFor(seconds: 60) { FileManager.default.fileExists(atPath: started) }, "no download began")
        #expect(waitFor { !rcloneProcesses(naming: remote).isEmpty }, "the wrapper's rclone is not running")
        mount.type("\u{03}")
        let ended = mount.finish(seconds: 60)
        let left = LockStop.processes(naming: remote) + LockStop.processes(naming: desktop)
        for pid in left { kill(pid, SIGKILL) }
        let stopped = try #require(ended, "the mount still waited for an rclone its stop did not reach: \(left)")
        #expect(stopped.status == 1, "\(stopped)")
        #expect(stopped.output.contains("dotsafe: the first sync was interrupted by SIGINT: nothing was mounted"), "\(stopped)")
        #expect(left.isEmpty, "rclone outlived the mount: \(left)")
        #expect(!MountHarness.isMounted(point))
        let names = try FileManager.default.contentsOfDirectory(atPath: desktop)
        #expect(!names.contains { $0.hasSuffix(DownloadFolder.suffix) }, "the round's download folder stays: \(names)")

        let joined = LockStop.sync(h, desktop, remote, device: "desktop")
        #expect(joined.status == 0, "\(joined)")
        let vault = try Mounted.openDesktop(h, desktop)
        defer { try? vault.lock() }
        let id = try vault.lookup(Vault.rootID, Array("big.bin".utf8))
        #expect(try vault.read(id, offset: 0, count: big.count + 1) == Array(big))
    }
}
