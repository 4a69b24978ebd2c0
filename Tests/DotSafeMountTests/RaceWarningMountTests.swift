import DotSafeTestSupport
import Foundation
import Testing
import VaultCore

/// A mount's first round that merges without a common state (docs/SYNC-DESIGN.md §3.4 step 3:
/// the remote holds the generation the laptop wrote, written by the desktop) says its warning
/// on the mount's standard error and in the system log, and mounts both devices' files. The
/// race is played as `RaceWarningCommandTests` plays it: a copy of the remote put back, which
/// the desktop then syncs with.
@Suite struct RaceWarningMountTests {
    static let warning = "another device's sync replaced this device's last root at the same moment: merged without a common state, "
        + "so files deleted since may come back and files changed on one side appear as conflict copies"

    @Test func theFirstRoundSaysTheWarningOnTheTerminalAndInTheLog() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let h = try MountHarness()
        defer { h.finish() }
        let laptop = try h.mountPoint("laptop")
        let desktop = h.base + "/desktop-storage"
        let pattern = SyncMountTests.pattern
        func sync(_ storage: String, _ device: String) -> CommandResult {
            h.dotsafe(["sync", storage, remote.path, "--pattern", pattern, "--device", device])
        }
        func writeOnLaptop(_ name: String, _ text: String) throws {
            try #require(h.mount(laptop, pattern: pattern).status == 0)
            h.sh("printf '\(text)' > \(name)", in: laptop)
            #expect(h.lock(laptop).status == 0)
        }
        try writeOnLaptop("hello.txt", "hello")
        try #require(sync(h.storage, "laptop").status == 0)
        try #require(sync(desktop, "desktop").status == 0)
        let copy = h.base + "/remote-copy"
        try FileManager.default.copyItem(atPath: served, toPath: copy)

        try writeOnLaptop("from-laptop.txt", "made on the laptop")
        try #require(sync(h.storage, "laptop").status == 0)
        try FileManager.default.removeItem(atPath: served)
        try FileManager.default.moveItem(atPath: copy, toPath: served)
        do {
            let vault = try SyncMountTests.openDesktop(h, desktop)
            let id = try vault.create(.file, in: Vault.rootID, named: Array("from-desktop.txt".utf8), mode: 0o644)
            try vault.write(id, offset: 0, bytes: Array("made on the desktop".utf8))
            try vault.lock()
        }
        try #require(sync(desktop, "desktop").status == 0)

        let log = try DatagramListener(name: h.base + "/log")
        let mounted = h.mount(laptop, pattern: pattern, options: SyncMountTests.syncOptions(remote, device: "laptop"),
                              environment: ["DOTSAFE_LOG_SOCKET": log.name])
        try #require(mounted.status == 0, "\(mounted)")
        #expect(mounted.error == "dotsafe: warning: \(Self.warning)\n", "\(mounted)")
        let pid = try #require(MountHarness.daemonPID(for: laptop))
        #expect(log.receive() == "<12>dotsafe[\(pid)]: \(laptop): \(Self.warning)")
        h.sh("test \"$(cat hello.txt from-laptop.txt from-desktop.txt)\" = 'hellomade on the laptopmade on the desktop'", in: laptop)
        #expect(h.lock(laptop).status == 0)

        let after = sync(desktop, "desktop")
        #expect(after.status == 0 && after.error.isEmpty, "\(after)")
        let vault = try SyncMountTests.openDesktop(h, desktop)
        defer { try? vault.lock() }
        #expect(try SyncMountTests.contents(vault, "from-laptop.txt") == "made on the laptop")
        #expect(try SyncMountTests.contents(vault, "hello.txt") == "hello")
    }
}
