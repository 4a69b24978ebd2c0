import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCore

/// A `mount --sync` daemon killed with SIGKILL while its round uploads through a wrapper rclone
/// that ignores SIGTERM and forks a child that does too (`DeafRcloneWrapper`): nothing runs in
/// the daemon any more, and the watcher in rclone's group (`ChildProcess.lifeline`) ends the
/// group once the daemon is gone; before, the wrapper and its child ran on. The next
/// `dotsafe sync` sends what the round did not.
@Suite struct SyncMountKilledDaemonTests {
    typealias Mounted = SyncMountTests

    @Test func aKilledDaemonLeavesNothingOfItsRcloneRunning() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let remote = h.base + "/remote"
        let wrapper = try DeafRcloneWrapper(base: h.base)
        defer { wrapper.kill() }
        let point = try h.mountPoint("laptop")
        let mounted = h.mount(point, pattern: Mounted.pattern, options: ["--sync", remote, "--sync-interval", "10m", "--device", "laptop"],
                              environment: ["PATH": wrapper.path])
        try #require(mounted.status == 0, "\(mounted)")
        let pid = try #require(MountHarness.daemonPID(for: point))

        h.sh("printf laptop > a.txt && sync a.txt", in: point)
        #expect(wrapper.waitUntilStarted(), "no round began its upload")
        let started = try #require(wrapper.processes, "the wrapper wrote no numbers")
        #expect(isRunning(started.wrapper) && isRunning(started.child))
        kill(pid, SIGKILL)
        #expect(waitFor(seconds: 30) { !isRunning(pid) }, "the daemon is still there")
        #expect(waitFor(seconds: 30) { wrapper.running.isEmpty }, "rclone outlived the daemon: \(wrapper.running)")
        // libfuse's auto_unmount removes the dead mount, but was seen to leave it (ProcessBoundaryTests).
        if !MountHarness.waitUntil(mounted: false, point) { h.unmount(point) }

        let again = h.dotsafe(["sync", h.storage, remote, "--pattern", Mounted.pattern, "--device", "laptop"])
        #expect(again.status == 0, "\(again)")
        let desktop = h.base + "/desktop-storage"
        let down = h.dotsafe(["sync", desktop, remote, "--pattern", Mounted.pattern, "--device", "desktop"])
        try #require(down.status == 0, "\(down)")
        let vault = try Mounted.openDesktop(h, desktop)
        defer { try? vault.lock() }
        #expect(try Mounted.contents(vault, "a.txt") == "laptop")
    }
}
