import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCore

/// SIGTERM to a `mount --sync` daemon while one of its rounds uploads: the mount still goes
/// and the daemon ends (the round, then the last one, within the lock's bound), and nothing
/// written is lost: it reaches the remote, and the storage mounts again with it.
@Suite struct SyncMountSignalTests {
    @Test func aSigtermWhileARoundUploadsUnmountsAndLosesNothing() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let remote = h.base + "/remote", started = h.base + "/up-started", bin = h.base + "/bin"
        // rclone slowed to 1 MiB/s, marking the start of each upload batch.
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try """
            #!/bin/sh
            for last; do :; done
            case "$1:$last" in copy:*.downloading) ;; copy:*) : > '\(started)' ;; esac
            exec /usr/bin/rclone "$@" --bwlimit 1M

            """.write(toFile: bin + "/rclone.sh", atomically: false, encoding: .utf8)
        let installed = CommandResult.run("/usr/bin/install", ["-m", "755", bin + "/rclone.sh", bin + "/rclone"])
        try #require(installed.succeeded, "\(installed)")
        let point = try h.mountPoint("laptop")
        let options = ["--sync", remote, "--sync-interval", "10m", "--device", "laptop"]
        let mounted = h.mount(point, pattern: SyncMountTests.pattern, options: options, environment: ["PATH": bin + ":/usr/bin:/bin"])
        try #require(mounted.status == 0, "\(mounted)")
        let pid = try #require(MountHarness.daemonPID(for: point))
        try? FileManager.default.removeItem(atPath: started)

        h.sh("head -c 1500000 /dev/urandom > big.bin && sync big.bin", in: point)
        let written = try #require(FileManager.default.contents(atPath: point + "/big.bin"))
        #expect(waitFor(seconds: 60) { FileManager.default.fileExists(atPath: started) }, "no round began")
        kill(pid, SIGTERM)
        #expect(waitFor(seconds: 60) { kill(pid, 0) != 0 && !MountHarness.isMounted(point) }, "the daemon is still there")

        let desktop = h.base + "/desktop-storage"
        let down = h.dotsafe(["sync", desktop, remote, "--pattern", SyncMountTests.pattern, "--device", "desktop"])
        #expect(down.status == 0, "\(down)")
        let vault = try SyncMountTests.openDesktop(h, desktop)
        defer { try? vault.lock() }
        let id = try vault.lookup(Vault.rootID, Array("big.bin".utf8))
        #expect(try vault.read(id, offset: 0, count: written.count + 1) == Array(written), "the remote lacks the file")

        let again = h.mount(point, pattern: SyncMountTests.pattern)
        try #require(again.status == 0, "\(again)")
        #expect(FileManager.default.contents(atPath: point + "/big.bin") == written)
        #expect(h.lock(point).status == 0)
    }
}
